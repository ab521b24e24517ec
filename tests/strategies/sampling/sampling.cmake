# The `sampling` strategy (issue 6, part 2): unit tests of attribution and
# scaling on a synthetic host, and end-to-end runs on the hot-arrays workload.
add_executable(test_sampling ${AMEBA_FRAGMENT_DIR}/test_sampling.c)
target_include_directories(test_sampling PRIVATE ${AMEBA_TEST_INCLUDE} ${CMAKE_SOURCE_DIR}/include)
target_link_libraries(test_sampling PRIVATE ${CMAKE_DL_LIBS} m)
set_target_properties(test_sampling PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})
add_dependencies(test_sampling strategy-sampling)
add_test(NAME strategy_sampling_unit COMMAND ${AMEBA_TEST_BIN}/test_sampling ${AMEBA_LIBDIR}/strategies)
set_tests_properties(strategy_sampling_unit PROPERTIES LABELS "strategy;sampling" TIMEOUT 60)

add_executable(sampling_check ${AMEBA_FRAGMENT_DIR}/sampling_check.c)
target_link_libraries(sampling_check PRIVATE PkgConfig::CJSON m)
set_target_properties(sampling_check PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})

# `ameba run --strategy sampling` on wl_hot_arrays: randomised and prime
# periods; on wl_thread_churn: short threads are sampled.
foreach(c random prime churn)
  add_test(NAME strategy_sampling_e2e_${c}
    COMMAND ${AMEBA_FRAGMENT_DIR}/e2e_sampling.sh ${c} ${CMAKE_BINARY_DIR}/bin/ameba ${AMEBA_TEST_BIN}
            ${CMAKE_SOURCE_DIR}/docs/report-schema.json)
  set_tests_properties(strategy_sampling_e2e_${c} PROPERTIES LABELS "strategy;sampling;e2e"
    TIMEOUT 300)
endforeach()
add_custom_target(sampling-e2e-deps ALL DEPENDS sampling_check report_check)
