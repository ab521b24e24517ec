# Peak memory of the target and the agent (issue 20): `make
# bench-memory-growth` prints target_growth_mb_alloc (10,000,000
# allocations, at most 64 live), target_growth_mb_pool (a pool 6 threads
# share) and agent_peak_rss_mb_threads (10,000 threads)
# (bench/memory_growth/memory_growth.py).
set(MG_BIN ${CMAKE_BINARY_DIR}/bench/memory_growth)
file(MAKE_DIRECTORY ${MG_BIN})
ameba_bench_program(${MG_BIN}/churn_alloc
  ${CMAKE_CURRENT_SOURCE_DIR}/memory_growth/churn_alloc.c "memory_growth: instrumented program")
ameba_bench_program(${MG_BIN}/pool_churn
  ${CMAKE_CURRENT_SOURCE_DIR}/memory_growth/pool_churn.c "memory_growth: shared pool" -O2 -g -pthread)
add_custom_target(bench-memory-growth
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/memory_growth/memory_growth.py ${CMAKE_BINARY_DIR}
  DEPENDS ${MG_BIN}/churn_alloc ${MG_BIN}/pool_churn
  COMMENT "peak memory of target and agent (long)" VERBATIM USES_TERMINAL)
