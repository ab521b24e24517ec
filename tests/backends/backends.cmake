# The out-of-process monitor (issue 8): unit tests of its pure parts, and
# end-to-end runs of the pagefault and watch backends on uninstrumented
# (plain cc) programs. Cases needing perf events or breakpoints exit 77
# (skipped) with the reason when the machine or the permissions lack them.
add_executable(test_perfmon ${AMEBA_FRAGMENT_DIR}/test_perfmon.c)
target_include_directories(test_perfmon PRIVATE ${AMEBA_TEST_INCLUDE})
target_compile_definitions(test_perfmon PRIVATE _GNU_SOURCE)
target_link_libraries(test_perfmon PRIVATE ameba-perfmon)
set_target_properties(test_perfmon PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})
foreach(c ring dsrc scale procmap record table)
  add_test(NAME backends_unit_${c} COMMAND ${AMEBA_TEST_BIN}/test_perfmon ${c})
  set_tests_properties(backends_unit_${c} PROPERTIES LABELS backends SKIP_RETURN_CODE 77
    TIMEOUT 60)
endforeach()
# libpfm4 encodings for models this machine need not have
foreach(model skx spr amd64_fam19h_zen3 amd64_fam19h_zen4)
  add_test(NAME backends_pfm_${model} COMMAND ${AMEBA_TEST_BIN}/test_perfmon pfm ${model})
  set_tests_properties(backends_pfm_${model} PROPERTIES LABELS backends TIMEOUT 60
    ENVIRONMENT LIBPFM_FORCE_PMU=${model})
endforeach()
add_test(NAME backends_pfm_generic COMMAND ${AMEBA_TEST_BIN}/test_perfmon pfm generic)
set_tests_properties(backends_pfm_generic PROPERTIES LABELS backends TIMEOUT 60
  SKIP_RETURN_CODE 77)

# Uninstrumented targets, built as plain programs.
foreach(p first_touch false_sharing heap_blocks probe_check)
  add_executable(backends_${p} ${AMEBA_FRAGMENT_DIR}/${p}.c)
  target_link_libraries(backends_${p} PRIVATE Threads::Threads)
  set_target_properties(backends_${p} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})
endforeach()
foreach(c detect no_pmu pagefault_attach pagefault_run watch_attach watch_nothing sigkill heap_uprobes)
  add_test(NAME backends_e2e_${c}
    COMMAND ${AMEBA_FRAGMENT_DIR}/e2e.sh ${c} ${CMAKE_BINARY_DIR}/bin/ameba ${AMEBA_TEST_BIN})
  set_tests_properties(backends_e2e_${c} PROPERTIES LABELS "backends;e2e" TIMEOUT 300
    SKIP_RETURN_CODE 77)
endforeach()
add_custom_target(backends-e2e-deps ALL DEPENDS backends_first_touch backends_false_sharing
  backends_heap_blocks backends_probe_check)
