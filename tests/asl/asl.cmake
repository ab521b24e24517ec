# The ASL front-end (issue 7, part 2): unit tests of the compiler through the
# real loader, sandbox and evaluation path, and end-to-end runs of seed 004's
# property on the imbalance workload.
add_executable(test_asl ${AMEBA_FRAGMENT_DIR}/test_asl.c)
target_include_directories(test_asl PRIVATE ${AMEBA_TEST_INCLUDE})
target_link_libraries(test_asl PRIVATE ameba-agent-core)
set_target_properties(test_asl PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})
add_test(NAME asl_unit COMMAND ${AMEBA_TEST_BIN}/test_asl ${CMAKE_SOURCE_DIR})
set_tests_properties(asl_unit PROPERTIES LABELS "agent;asl" TIMEOUT 120)

foreach(c seed004_imbalance broken_asl)
  add_test(NAME asl_e2e_${c}
    COMMAND ${AMEBA_FRAGMENT_DIR}/e2e.sh ${c} ${CMAKE_BINARY_DIR}/bin/ameba ${AMEBA_TEST_BIN}
            ${CMAKE_SOURCE_DIR}/docs/report-schema.json ${AMEBA_TEST_BIN}/report_check)
  set_tests_properties(asl_e2e_${c} PROPERTIES LABELS "agent;asl;e2e" TIMEOUT 300)
endforeach()
