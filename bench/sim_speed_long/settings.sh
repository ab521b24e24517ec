# settings.sh - sourced by run.sh, ipa.sh and ab.sh: what they measure. Needs
# `here` (this directory). Sets conf (the geometry both sides simulate:
# bench/sim_validate/cachegrind.conf) and kernels (LONG_KERNELS, default
# all eight of kernels.c), sim_env (the instrumented kernels' environment:
# the sim backend, that geometry, 3C and the TLB model off, as cachegrind
# has neither).
# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154  # here: set by, conf, kernels and sim_env: used by, the scripts that source this
conf=$here/../sim_validate/cachegrind.conf
kernels=${LONG_KERNELS:-"gemm jacobi stream rmw chase hashtab jacobi_2t rmw_2t"}
sim_env=(AMEBA_BACKEND=sim AMEBA_PRESET="$conf" AMEBA_SIM_3C=0 AMEBA_SIM_TLB=0)
