# Runtime core: exact counts in the oracle, output equality, the wrapper.

add_executable(oracle_expect ${AMEBA_FRAGMENT_DIR}/oracle_expect.c)
target_include_directories(oracle_expect PRIVATE ${AMEBA_TEST_INCLUDE})
target_link_libraries(oracle_expect PRIVATE PkgConfig::CJSON)
set_target_properties(oracle_expect PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})

ameba_instrumented(NAME exact_counts_native NATIVE SOURCES ${AMEBA_FRAGMENT_DIR}/exact_counts.c)
foreach(cc gcc clang)
  foreach(opt O0 O2)
    set(n exact_counts_${cc}_${opt})
    ameba_instrumented(NAME ${n} COMPILER ${cc} OPT -${opt}
      SOURCES ${AMEBA_FRAGMENT_DIR}/exact_counts.c)
    add_test(NAME oracle_exact_${cc}_${opt}
      COMMAND ${AMEBA_FRAGMENT_DIR}/oracle_check.sh ${AMEBA_TEST_BIN}/${n}
              ${AMEBA_FRAGMENT_DIR}/exact_counts.expect)
    set_tests_properties(oracle_exact_${cc}_${opt} PROPERTIES
      ENVIRONMENT "ORACLE_EXPECT=${AMEBA_TEST_BIN}/oracle_expect")
    add_test(NAME output_same_exact_counts_${cc}_${opt}
      COMMAND sh ${CMAKE_SOURCE_DIR}/tests/workloads/compare_output.sh ${AMEBA_TEST_BIN}/exact_counts_native
              ${AMEBA_TEST_BIN}/${n})
  endforeach()
endforeach()

# fork and exec
ameba_instrumented(NAME fork_exec_native NATIVE SOURCES ${AMEBA_FRAGMENT_DIR}/fork_exec.c)
ameba_instrumented(NAME fork_exec SOURCES ${AMEBA_FRAGMENT_DIR}/fork_exec.c)
add_test(NAME runtime_fork_exec
  COMMAND ${AMEBA_FRAGMENT_DIR}/fork_exec.sh ${AMEBA_TEST_BIN}/fork_exec_native
          ${AMEBA_TEST_BIN}/fork_exec ${AMEBA_TEST_BIN}/oracle_expect)

# A test program linked with the runtime's objects (not instrumented): it
# drives the monitor's internals directly.
function(ameba_runtime_test name)
  add_executable(${name} ${AMEBA_FRAGMENT_DIR}/${name}.c ${AMEBA_RT_OBJECTS})
  target_include_directories(${name} PRIVATE ${AMEBA_TEST_INCLUDE} ${CMAKE_SOURCE_DIR}/monitor)
  target_compile_definitions(${name} PRIVATE _GNU_SOURCE)
  target_link_libraries(${name} PRIVATE PkgConfig::LIBDW PkgConfig::LIBELF ${CMAKE_DL_LIBS}
    Threads::Threads m)
  target_link_options(${name} PRIVATE
    -Wl,--dynamic-list=${CMAKE_SOURCE_DIR}/monitor/ameba-rt.dynlist)
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})
endfunction()

# Conditional counters and sample streams, driven directly (exact values).
ameba_runtime_test(test_cond)
# every counter matched per access ...
add_test(NAME runtime_cond_sample COMMAND ${AMEBA_TEST_BIN}/test_cond)
set_tests_properties(runtime_cond_sample PROPERTIES ENVIRONMENT "AMEBA_COND_SERVED=0")
# ... and the same values with whole-object counters served from the
# per-object counts (the default)
add_test(NAME runtime_cond_served COMMAND ${AMEBA_TEST_BIN}/test_cond)

# Sampled mode (monitor/sampled.c): estimates against exact counts through
# the real hooks; threads churning and forks while bursts run; a program
# exiting mid-burst (issue 22). The preset pinned: the warm-up's floor is 4
# times the L2's lines, and the time marks' workers are sized to the L1.
ameba_runtime_test(test_sampled)
add_test(NAME runtime_sampled COMMAND ${AMEBA_TEST_BIN}/test_sampled)
set_tests_properties(runtime_sampled PROPERTIES ENVIRONMENT "AMEBA_MRI=0;AMEBA_PRESET=skylake-sp"
  TIMEOUT 300)
ameba_runtime_test(test_replay)
add_test(NAME runtime_sampled_replay COMMAND ${AMEBA_TEST_BIN}/test_replay)
set_tests_properties(runtime_sampled_replay PROPERTIES
  ENVIRONMENT "AMEBA_MRI=0;AMEBA_PRESET=skylake-sp" TIMEOUT 120)

# The backend table's runtime rows (mri/common.c): resolved to rt.c's ops
# with the row's metrics, listed by the MRI in table order (issue 21).
ameba_runtime_test(test_backends)
target_include_directories(test_backends PRIVATE ${CMAKE_SOURCE_DIR}/mri)
add_test(NAME runtime_backend_table COMMAND ${AMEBA_TEST_BIN}/test_backends)
set_tests_properties(runtime_backend_table PROPERTIES TIMEOUT 60)

# The dual path (docs/dual-path.md), with each compiler this build has the
# plugin for: a program built by `ameba cc -O2` switches measurement on and
# off 1,000 times while four threads run long loop nests; exact counts in
# every burst, none between, the native build's output, both bodies in the
# binary.
set(dual_flags -I${AMEBA_TEST_INCLUDE} -I${CMAKE_SOURCE_DIR}/monitor -I${CMAKE_SOURCE_DIR}/include
  -D_GNU_SOURCE)
foreach(cc gcc clang)
  if(cc STREQUAL "gcc")
    set(plugin ameba-dual-gcc)
    set(sfx "")
  else()
    set(plugin ameba-dual-llvm)
    set(sfx _clang)
  endif()
  if(TARGET ${plugin})
    ameba_instrumented(NAME test_dual${sfx} COMPILER ${cc}
      SOURCES ${AMEBA_FRAGMENT_DIR}/test_dual.c FLAGS ${dual_flags})
    ameba_instrumented(NAME test_dual_native${sfx} NATIVE COMPILER ${cc}
      SOURCES ${AMEBA_FRAGMENT_DIR}/test_dual.c FLAGS -DDUAL_NATIVE)
    add_test(NAME runtime_dual_switch${sfx} COMMAND sh ${AMEBA_FRAGMENT_DIR}/dual_check.sh
      ${AMEBA_TEST_BIN}/test_dual${sfx} ${AMEBA_TEST_BIN}/test_dual_native${sfx})
    set_tests_properties(runtime_dual_switch${sfx} PROPERTIES TIMEOUT 300)
    # loop shapes (counts around gcc's strip-mining chunk) switched at random
    ameba_instrumented(NAME dual_loops${sfx} COMPILER ${cc}
      SOURCES ${AMEBA_FRAGMENT_DIR}/dual_loops.c FLAGS ${dual_flags})
    ameba_instrumented(NAME dual_loops_native${sfx} NATIVE COMPILER ${cc}
      SOURCES ${AMEBA_FRAGMENT_DIR}/dual_loops.c FLAGS -DDUAL_NATIVE)
    add_test(NAME runtime_dual_loops${sfx} COMMAND sh ${AMEBA_FRAGMENT_DIR}/dual_check.sh
      ${AMEBA_TEST_BIN}/dual_loops${sfx} ${AMEBA_TEST_BIN}/dual_loops_native${sfx} -)
    set_tests_properties(runtime_dual_loops${sfx} PROPERTIES TIMEOUT 300)
  endif()
endforeach()
