# Cache simulator benchmarks (print `name: value` lines; never part of ctest).
#
#   sim_synth            simulated accesses per second on synthetic traces,
#                        without instrumentation (the simulator's own cost):
#                        build/bin/sim_synth [preset] [accesses]
#   bench-sim-validate   miss counts of five single-threaded kernels against
#                        cachegrind with the same geometry
#                        (d1_miss_diff_pct_<k>, ll_miss_diff_pct_<k>)
#   bench-sim-speed      time against cachegrind (speedup_vs_cachegrind_<k>)
#                        of the same kernels and two 2-thread ones, and
#                        simulated accesses per second per thread
# Both run bench/sim_validate/run.sh on bench/sim_validate/kernels.c built
# natively (for cachegrind) and with `ameba cc` (AMEBA_BACKEND=sim).
#   bench/sim_validate/paired.py  two instrumented builds of the kernels
#                        against each other (CPU time, both at once, one
#                        per vCPU: the median per-round ratio)
add_executable(sim_synth ${CMAKE_CURRENT_SOURCE_DIR}/sim_synth.c)
target_link_libraries(sim_synth PRIVATE ameba-sim)

set(SV_DIR ${CMAKE_CURRENT_SOURCE_DIR}/sim_validate)
set(SV_BIN ${CMAKE_BINARY_DIR}/bench/sim_validate)
file(MAKE_DIRECTORY ${SV_BIN})
add_custom_command(OUTPUT ${SV_BIN}/kernels_native
  COMMAND gcc -O2 -g -fno-tree-vectorize -pthread ${SV_DIR}/kernels.c -o ${SV_BIN}/kernels_native
  DEPENDS ${SV_DIR}/kernels.c COMMENT "sim_validate: native kernels" VERBATIM)
ameba_bench_program(${SV_BIN}/kernels_ameba ${SV_DIR}/kernels.c
  "sim_validate: instrumented kernels" -O2 -g -pthread)
add_custom_target(bench-sim-validate
  COMMAND ${SV_DIR}/run.sh validate ${SV_BIN}
  DEPENDS ${SV_BIN}/kernels_native ${SV_BIN}/kernels_ameba
  COMMENT "cache simulator vs cachegrind: miss counts" VERBATIM USES_TERMINAL)
add_custom_target(bench-sim-speed
  COMMAND ${SV_DIR}/run.sh speed ${SV_BIN}
  DEPENDS ${SV_BIN}/kernels_native ${SV_BIN}/kernels_ameba
  COMMENT "cache simulator vs cachegrind: speed" VERBATIM USES_TERMINAL)

# bench-sim-speed-long (issue 24): six single-threaded kernels of 10^9 or
# more accesses each (25-40 s under cachegrind: run.sh's lengths) and two
# 2-thread ones, the simulator against cachegrind in CPU seconds (wall for
# two threads), best of 3 interleaved rounds (bench/sim_speed_long/run.sh;
# about 30 minutes),
# then bench-sim-speed's two 2-thread kernels.
set(SL_DIR ${CMAKE_CURRENT_SOURCE_DIR}/sim_speed_long)
add_custom_command(OUTPUT ${SV_BIN}/long_native
  COMMAND gcc -O2 -g -fno-tree-vectorize -pthread ${SL_DIR}/kernels.c -o ${SV_BIN}/long_native
  DEPENDS ${SL_DIR}/kernels.c COMMENT "sim_speed_long: native kernels" VERBATIM)
ameba_bench_program(${SV_BIN}/long_ameba ${SL_DIR}/kernels.c
  "sim_speed_long: instrumented kernels" -O2 -g -pthread)
add_custom_target(bench-sim-speed-long
  COMMAND ${SL_DIR}/run.sh ${SV_BIN}
  COMMAND env SIM_KERNELS=dense_2t\ stencil_2t BENCH_RUNS=3 ${SV_DIR}/run.sh speed ${SV_BIN}
  DEPENDS ${SV_BIN}/long_native ${SV_BIN}/long_ameba ${SV_BIN}/kernels_native
          ${SV_BIN}/kernels_ameba
  COMMENT "cache simulator vs cachegrind on long runs" VERBATIM USES_TERMINAL)
# bench-sim-speed-others: the same comparison on programs this repository
# did not write - bzip2 and Lua's interpreter, Debian's sources fetched
# once with apt-get source into build/bench/others (bench/sim_speed_long/
# others.sh; about 10 minutes).
add_custom_target(bench-sim-speed-others
  COMMAND env AMEBA=${CMAKE_BINARY_DIR}/bin/ameba ${SL_DIR}/others.sh
          ${CMAKE_BINARY_DIR}/bench/others
  DEPENDS ameba ameba-runtime ameba-rt
  COMMENT "cache simulator vs cachegrind on other people's programs" VERBATIM USES_TERMINAL)
# bench-sim-geometry: the exact run under the host's own preset (an L2,
# 3C and the TLB model, as `ameba run` has them) against cachegrind given
# the host's caches, with 3C and the TLB model off and each on the general
# path as well (bench/sim_speed_long/geometry.sh; about 10 minutes).
add_custom_target(bench-sim-geometry
  COMMAND ${SL_DIR}/geometry.sh ${SV_BIN}
  DEPENDS ${SV_BIN}/long_native ${SV_BIN}/long_ameba
  COMMENT "the default geometry's exact run vs cachegrind" VERBATIM USES_TERMINAL)
# Two builds of the runtime (or up to six) against each other in time,
# interleaved: bench/sim_speed_long/ab.sh A_DIR B_DIR [C_DIR ...] (no
# target: the directories are the caller's).
# bench-sim-ipa: the same kernels' instructions per simulated access under
# callgrind (bench/sim_speed_long/ipa.sh; deterministic, ~5 minutes), by
# part of the access path.
add_custom_target(bench-sim-ipa
  COMMAND ${SL_DIR}/ipa.sh ${SV_BIN}
  DEPENDS ${SV_BIN}/long_ameba
  COMMENT "instructions per simulated access (callgrind)" VERBATIM USES_TERMINAL)
