# The agent (issue 5): unit tests of its core over a scripted provider, the
# plugin ABI checks, and end-to-end runs of `ameba run` / `ameba attach` on
# the ground-truth workloads through the MRI.

# C property plugins for the loader tests, one source built seven ways.
set(AMEBA_AGENT_TEST_PLUGINS "")
foreach(v good abi2 abi3 newer newer_zero older crash)
  string(TOUPPER ${v} V)
  add_library(prop_c_${v} MODULE ${AMEBA_FRAGMENT_DIR}/prop_c.c)
  target_compile_definitions(prop_c_${v} PRIVATE VARIANT=V_${V})
  target_link_libraries(prop_c_${v} PRIVATE ameba-common)
  set_target_properties(prop_c_${v} PROPERTIES PREFIX "" C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN}/agent-plugins)
  list(APPEND AMEBA_AGENT_TEST_PLUGINS prop_c_${v})
endforeach()

# ameba_doc_example(DOC FILE TARGET): the ```c block after the line
# "<!-- example: FILE -->" of docs/DOC, written out and built as a plugin as
# it is printed there (so the documentation stays correct).
function(ameba_doc_example doc file target)
  set(path ${CMAKE_SOURCE_DIR}/docs/${doc})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${path})
  file(READ ${path} text)
  set(marker "<!-- example: ${file} -->\n```c\n")
  string(FIND "${text}" "${marker}" at)
  if(at LESS 0)
    message(FATAL_ERROR "${path}: the ${file} example is missing")
  endif()
  string(LENGTH "${marker}" len)
  math(EXPR at "${at} + ${len}")
  string(SUBSTRING "${text}" ${at} -1 text)
  string(FIND "${text}" "\n```" end)
  string(SUBSTRING "${text}" 0 ${end} text)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/doc-examples/${file} "${text}\n")
  add_library(${target} MODULE ${CMAKE_CURRENT_BINARY_DIR}/doc-examples/${file})
  set_target_properties(${target} PROPERTIES PREFIX "" C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN}/agent-plugins)
endfunction()
ameba_doc_example(writing-properties.md shared_writes.c prop_doc_shared_writes)
ameba_doc_example(writing-strategies.md totals.c strategy_doc_totals)
list(APPEND AMEBA_AGENT_TEST_PLUGINS prop_doc_shared_writes strategy_doc_totals)

add_executable(test_agent ${AMEBA_FRAGMENT_DIR}/test_agent.c
  ${AMEBA_FRAGMENT_DIR}/test_agent_search.c)
target_include_directories(test_agent PRIVATE ${AMEBA_TEST_INCLUDE})
target_link_libraries(test_agent PRIVATE ameba-agent-core)
set_target_properties(test_agent PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})
add_dependencies(test_agent strategy-objects ${AMEBA_AGENT_TEST_PLUGINS})
add_test(NAME agent_unit COMMAND ${AMEBA_TEST_BIN}/test_agent ${CMAKE_SOURCE_DIR}
  ${AMEBA_LIBDIR}/strategies ${AMEBA_TEST_BIN}/agent-plugins)
set_tests_properties(agent_unit PROPERTIES LABELS agent TIMEOUT 120)

# report_check: validates a report against docs/report-schema.json and checks
# the expectations of the end-to-end cases.
add_executable(report_check ${AMEBA_FRAGMENT_DIR}/report_check.c)
target_link_libraries(report_check PRIVATE ameba-agent-core)
set_target_properties(report_check PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})

# A target that crashes or frees an invalid pointer, native and instrumented.
ameba_instrumented(NAME crash_target_native SOURCES ${AMEBA_FRAGMENT_DIR}/crash_target.c NATIVE OPT -O1)
ameba_instrumented(NAME crash_target SOURCES ${AMEBA_FRAGMENT_DIR}/crash_target.c OPT -O1)
list(APPEND AMEBA_AGENT_TEST_PLUGINS crash_target crash_target_native)

# End to end through the MRI: the acceptance of issue 5.
foreach(c run_false_sharing attach lua_properties wrong_abi sigterm target_status
    not_instrumented usage nothing_significant plugin_crash fail_fast bad_free escapes sampled)
  add_test(NAME agent_e2e_${c}
    COMMAND ${AMEBA_FRAGMENT_DIR}/e2e.sh ${c} ${CMAKE_BINARY_DIR}/bin/ameba ${AMEBA_TEST_BIN}
            ${CMAKE_SOURCE_DIR}/docs/report-schema.json ${AMEBA_TEST_BIN}/report_check
            ${AMEBA_TEST_BIN}/agent-plugins)
  set_tests_properties(agent_e2e_${c} PROPERTIES LABELS "agent;e2e" TIMEOUT 300)
endforeach()
# The programs and plugins the cases run.
add_custom_target(agent-e2e-deps ALL DEPENDS report_check ${AMEBA_AGENT_TEST_PLUGINS})
