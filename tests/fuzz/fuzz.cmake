# libFuzzer targets beyond the MRI dispatcher's (tests/mri/mri.cmake): the
# ASL compiler, the report reader (`ameba report`) and the oracle reader
# (`ameba oracle`), each built by clang with ASan + UBSan from the sources
# it fuzzes. CI runs a bounded number of inputs from the committed seed
# corpus (tests/fuzz/corpus_*); long runs: run the binary by hand, e.g.
#   build/tests/bin/fuzz_asl -runs=1000000 build/tests/fuzz-corpus-asl tests/fuzz/corpus_asl
# New inputs go to the build tree, never to the source tree.
find_program(AMEBA_FUZZ_CLANG NAMES clang clang-14)
if(AMEBA_FUZZ_CLANG)
  set(fuzz_dir ${AMEBA_FRAGMENT_DIR})
  set(fuzz_flags -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
    -D_GNU_SOURCE -I${CMAKE_SOURCE_DIR}/include -I${CMAKE_SOURCE_DIR}/agent -I${CMAKE_SOURCE_DIR}
    -I${CMAKE_SOURCE_DIR}/mri)
  set(fuzz_asl_src ${fuzz_dir}/fuzz_asl.c ${CMAKE_SOURCE_DIR}/agent/asl.c
    ${CMAKE_SOURCE_DIR}/agent/asl_parse.c ${CMAKE_SOURCE_DIR}/mri/common.c)
  set(fuzz_report_src ${fuzz_dir}/fuzz_report.c ${CMAKE_SOURCE_DIR}/agent/report.c
    ${CMAKE_SOURCE_DIR}/agent/agent_util.c ${CMAKE_SOURCE_DIR}/mri/common.c)
  set(fuzz_oracle_src ${fuzz_dir}/fuzz_oracle.c ${CMAKE_SOURCE_DIR}/agent/oracle_cmd.c
    ${CMAKE_SOURCE_DIR}/agent/agent_util.c ${CMAKE_SOURCE_DIR}/mri/common.c)
  foreach(t asl report oracle)
    set(bin ${AMEBA_TEST_BIN}/fuzz_${t})
    file(GLOB hdrs ${CMAKE_SOURCE_DIR}/agent/*.h)
    add_custom_command(OUTPUT ${bin}
      COMMAND ${AMEBA_FUZZ_CLANG} ${fuzz_flags} ${fuzz_${t}_src} -lcjson -lm -o ${bin}
      DEPENDS ${fuzz_${t}_src} ${hdrs}
      COMMENT "libFuzzer target fuzz_${t}" VERBATIM)
    add_custom_target(fuzz_${t} ALL DEPENDS ${bin})
    set(work ${CMAKE_BINARY_DIR}/tests/fuzz-corpus-${t})
    file(MAKE_DIRECTORY ${work})
    add_test(NAME fuzz_${t} COMMAND ${bin} -runs=20000 -seed=1 -max_len=65536 -timeout=10
      -rss_limit_mb=2048 -close_fd_mask=1 ${work} ${fuzz_dir}/corpus_${t})
    set_tests_properties(fuzz_${t} PROPERTIES TIMEOUT 300 LABELS fuzz)
  endforeach()
else()
  message(STATUS "clang not found: the fuzz targets fuzz_asl, fuzz_report, fuzz_oracle are not built")
endif()
