# What an `ameba run` costs over the simulation alone (issue 19):
# `make bench-run-cost` prints run_over_oracle_<k> and
# run_all_metrics_over_one_<k> for four programs (bench/run_cost/run_cost.py).
set(RC_BIN ${CMAKE_BINARY_DIR}/bench/run_cost)
file(MAKE_DIRECTORY ${RC_BIN})
ameba_bench_program(${RC_BIN}/programs ${CMAKE_CURRENT_SOURCE_DIR}/run_cost/programs.c
  "run_cost: instrumented programs" -O2 -g -pthread)
add_custom_target(bench-run-cost
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/run_cost/run_cost.py ${CMAKE_BINARY_DIR}
  DEPENDS ${RC_BIN}/programs
  COMMENT "ameba run's cost over the simulation (long)" VERBATIM USES_TERMINAL)
