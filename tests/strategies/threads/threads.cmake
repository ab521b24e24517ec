# The `threads` strategy and strategy chains (issue 6, part 3): a unit test
# over the scripted provider, and end-to-end runs of
# `ameba run --strategy objects,threads` on the false-sharing workload and
# its padded twin.
add_executable(test_threads ${AMEBA_FRAGMENT_DIR}/test_threads.c)
target_include_directories(test_threads PRIVATE ${AMEBA_TEST_INCLUDE})
target_link_libraries(test_threads PRIVATE ameba-agent-core)
set_target_properties(test_threads PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})
add_dependencies(test_threads strategy-objects strategy-threads)
add_test(NAME agent_threads_unit COMMAND ${AMEBA_TEST_BIN}/test_threads ${CMAKE_SOURCE_DIR}
  ${AMEBA_LIBDIR}/strategies ${AMEBA_FRAGMENT_DIR})
set_tests_properties(agent_threads_unit PROPERTIES LABELS agent TIMEOUT 120)

foreach(c packed padded chain_exit usage)
  add_test(NAME agent_threads_e2e_${c}
    COMMAND ${AMEBA_FRAGMENT_DIR}/e2e_threads.sh ${c} ${CMAKE_BINARY_DIR}/bin/ameba
            ${AMEBA_TEST_BIN} ${AMEBA_FRAGMENT_DIR})
  set_tests_properties(agent_threads_e2e_${c} PROPERTIES LABELS "agent;e2e" TIMEOUT 300)
endforeach()
