# The nway strategy (issue 6): unit tests on synthetic counters, and the
# end-to-end search of the hot_arrays workload through `ameba run`.
#
#   strategy_nway_unit        test_nway drives nway.so directly against a
#                             hand-computed world (Fig. 2 layout, straddling
#                             object, phases, each termination rule, more=1,
#                             per_thread=1)
#   strategy_nway_hot_arrays  `ameba run --strategy nway` on wl_hot_arrays
#                             ends with the six designed objects in order
#   strategy_nway_window      wl_true_sharing with AMEBA_ORACLE: one window
#                             for all objects (after the rescan), shares that
#                             add up to <= 1, each within 0.5 points of the
#                             oracle over the same window (exit - mark)
#   strategy_nway_churn       ... on wl_thread_churn returns the scratch
#                             buffers' site and [tls] (units apart from the
#                             address space), shares near the oracle's
#   strategy_nway_cxx_names   ... on wl_cxx names what it returns as the
#                             oracle's bins at exit (a site deepened after
#                             it was listed) and returns every bin >= 10%
add_executable(test_nway ${AMEBA_FRAGMENT_DIR}/test_nway.c)
target_include_directories(test_nway PRIVATE ${AMEBA_TEST_INCLUDE} ${CMAKE_SOURCE_DIR}/include)
target_compile_definitions(test_nway PRIVATE _GNU_SOURCE)
target_link_libraries(test_nway PRIVATE ${CMAKE_DL_LIBS} m)
set_target_properties(test_nway PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})
add_dependencies(test_nway strategy-nway)
add_test(NAME strategy_nway_unit COMMAND ${AMEBA_TEST_BIN}/test_nway ${AMEBA_LIBDIR}/strategies)
set_tests_properties(strategy_nway_unit PROPERTIES LABELS strategy TIMEOUT 120)

add_test(NAME strategy_nway_hot_arrays
  COMMAND ${AMEBA_FRAGMENT_DIR}/nway_e2e.sh ${CMAKE_BINARY_DIR}/bin/ameba ${AMEBA_TEST_BIN})
set_tests_properties(strategy_nway_hot_arrays PROPERTIES LABELS "strategy;e2e" TIMEOUT 300)

add_test(NAME strategy_nway_window
  COMMAND ${AMEBA_FRAGMENT_DIR}/nway_window_e2e.sh ${CMAKE_BINARY_DIR}/bin/ameba ${AMEBA_TEST_BIN})
set_tests_properties(strategy_nway_window PROPERTIES LABELS "strategy;e2e" TIMEOUT 300)

# A window's counts on whole objects, read from the per-object counts, equal
# the oracle's over the same window exactly (issue 19).
add_test(NAME strategy_served_exact
  COMMAND ${AMEBA_FRAGMENT_DIR}/served_exact_e2e.sh ${CMAKE_BINARY_DIR}/bin/ameba ${AMEBA_TEST_BIN})
set_tests_properties(strategy_served_exact PROPERTIES LABELS "strategy;e2e" TIMEOUT 300)
# The same in batch mode (the access batch holds up to 256 accesses before
# simulating them): batch_tail's mem_ref, its last accesses batched at exit.
ameba_instrumented(NAME nway_batch_tail COMPILER gcc OPT -O1
  SOURCES ${AMEBA_FRAGMENT_DIR}/batch_tail.c)
add_test(NAME strategy_served_exact_batch
  COMMAND env AMEBA_PRESET=${CMAKE_SOURCE_DIR}/bench/sim_validate/cachegrind.conf
          AMEBA_SIM_MODE=batch
          ${AMEBA_FRAGMENT_DIR}/served_exact_e2e.sh ${CMAKE_BINARY_DIR}/bin/ameba ${AMEBA_TEST_BIN}
          ${AMEBA_TEST_BIN}/nway_batch_tail mem_ref "150 400" 2)
set_tests_properties(strategy_served_exact_batch PROPERTIES LABELS "strategy;e2e" TIMEOUT 300)

add_test(NAME strategy_nway_churn
  COMMAND ${AMEBA_FRAGMENT_DIR}/nway_bins_e2e.sh ${CMAKE_BINARY_DIR}/bin/ameba ${AMEBA_TEST_BIN}
          churn)
set_tests_properties(strategy_nway_churn PROPERTIES LABELS "strategy;e2e" TIMEOUT 300)

add_test(NAME strategy_nway_cxx_names
  COMMAND ${AMEBA_FRAGMENT_DIR}/nway_bins_e2e.sh ${CMAKE_BINARY_DIR}/bin/ameba ${AMEBA_TEST_BIN}
          cxx)
set_tests_properties(strategy_nway_cxx_names PROPERTIES LABELS "strategy;e2e" TIMEOUT 300)
