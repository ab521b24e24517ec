# Builtins the compilers expand inline (issue 18, item 7): builtins.c built
# with `ameba cc` by gcc and clang at -O0 and -O2 (label "cc").
#   cc_builtins_norep_<cc>_<opt>   no x86 string instruction (rep movs/stos...)
#                                  in the program's own functions
#   cc_builtins_oracle_<cc>_<opt>  the oracle counts of builtins.expect
#   cc_builtins_output_<cc>_<opt>  stdout equals the native build's
#   cc_workloads_norep             the same disassembly check over every
#                                  instrumented workload build (tests/workloads)
set(BI_DIR ${AMEBA_FRAGMENT_DIR})
ameba_instrumented(NAME builtins_native NATIVE SOURCES ${BI_DIR}/builtins.c)
set(bi_compilers gcc)
find_program(BI_CLANG clang)
if(BI_CLANG)
  list(APPEND bi_compilers clang)
endif()
foreach(cc ${bi_compilers})
  foreach(opt O0 O2)
    set(n builtins_${cc}_${opt})
    ameba_instrumented(NAME ${n} COMPILER ${cc} OPT -${opt} SOURCES ${BI_DIR}/builtins.c)
    add_test(NAME cc_builtins_norep_${cc}_${opt}
      COMMAND ${BI_DIR}/norep.sh ${AMEBA_TEST_BIN}/${n})
    add_test(NAME cc_builtins_oracle_${cc}_${opt}
      COMMAND ${CMAKE_SOURCE_DIR}/tests/monitor/oracle_check.sh ${AMEBA_TEST_BIN}/${n}
              ${BI_DIR}/builtins.expect)
    set_tests_properties(cc_builtins_oracle_${cc}_${opt} PROPERTIES
      ENVIRONMENT "ORACLE_EXPECT=${AMEBA_TEST_BIN}/oracle_expect")
    add_test(NAME cc_builtins_output_${cc}_${opt}
      COMMAND sh ${CMAKE_SOURCE_DIR}/tests/workloads/compare_output.sh
              ${AMEBA_TEST_BIN}/builtins_native ${AMEBA_TEST_BIN}/${n})
    set_tests_properties(cc_builtins_norep_${cc}_${opt} cc_builtins_oracle_${cc}_${opt}
      cc_builtins_output_${cc}_${opt} PROPERTIES LABELS cc)
  endforeach()
endforeach()

# Every instrumented workload build (wl_<w>, wl_<w>_{gcc_O0,clang_O0,clang_O2},
# their _fixed twins): found by name at test time, the native builds left out.
add_test(NAME cc_workloads_norep
  COMMAND sh -c "ls -d ${AMEBA_TEST_BIN}/wl_* | grep -v '_native$' | xargs ${BI_DIR}/norep.sh")
set_tests_properties(cc_workloads_norep PROPERTIES LABELS cc)
