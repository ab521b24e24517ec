# settings.sh - sourced by run.sh and ipa.sh: what both measure. Needs
# `here` (this directory). Sets conf (the geometry both sides simulate:
# bench/sim_validate/cachegrind.conf) and kernels (LONG_KERNELS, default
# all eight of kernels.c).
# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154  # here: set by, conf and kernels: used by, the scripts that source this
conf=$here/../sim_validate/cachegrind.conf
kernels=${LONG_KERNELS:-"gemm jacobi stream rmw chase hashtab jacobi_2t rmw_2t"}
