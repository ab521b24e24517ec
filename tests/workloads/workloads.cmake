# Ground-truth workloads (design.md section 9; see tests/workloads/README.md).
#
# For every workload <w> and, unless it has no twin, its fixed twin <w>_fixed
# (the same source built with -DWL_FIXED=1), this builds in tests/bin/:
#   wl_<w>              instrumented, gcc -O2   (the build the agent tests use)
#   wl_<w>_native       plain compiler, -O2     (the reference output)
#   wl_<w>_gcc_O0       instrumented, gcc -O0
#   wl_<w>_clang_O0     instrumented, clang -O0
#   wl_<w>_clang_O2     instrumented, clang -O2
# and adds the CTest tests (label "workload")
#   workload_<w>_{gcc_O2,gcc_O0,clang_O0,clang_O2}   instrumented stdout == native stdout,
#                                                    dormant and active (AMEBA_ORACLE set;
#                                                    AMEBA_BACKEND from the environment)
#   workload_<w>_twin_output                         <w> and <w>_fixed print the same (native)
# Run them with: ctest --test-dir <build> -L workload   (or -R workload)
#
# AMEBA_WORKLOAD_ALL_COMPILERS=OFF keeps only the native and gcc -O2 builds;
# AMEBA_WORKLOAD_ACTIVE_RUNS=OFF compares the dormant runs only.

option(AMEBA_WORKLOAD_ALL_COMPILERS
  "Build every workload also with gcc -O0, clang -O0 and clang -O2 (instrumented)" ON)
option(AMEBA_WORKLOAD_ACTIVE_RUNS
  "Workload output tests also run the instrumented build with AMEBA_ORACLE set" ON)

set(WL_DIR ${CMAKE_CURRENT_LIST_DIR})
set(WL_COMPARE ${WL_DIR}/compare_output.sh)

# clang (and, for the OpenMP workload, clang -fopenmp with libomp) may be
# missing on a build machine: probe once, and skip those variants if so.
find_program(WL_CLANG clang)
find_program(WL_CLANGXX clang++)
set(WL_HAVE_CLANG_OPENMP OFF)
if(WL_CLANG)
  set(wl_probe ${CMAKE_CURRENT_BINARY_DIR}/wl_probe_omp.c)
  file(WRITE ${wl_probe}
    "#include <omp.h>\nint main(void){int n=0;\n#pragma omp parallel reduction(+:n)\nn+=1;\nreturn n<1;}\n")
  execute_process(COMMAND ${WL_CLANG} -fopenmp ${wl_probe} -o ${CMAKE_CURRENT_BINARY_DIR}/wl_probe_omp
    RESULT_VARIABLE wl_probe_rc OUTPUT_QUIET ERROR_QUIET)
  if(wl_probe_rc EQUAL 0)
    set(WL_HAVE_CLANG_OPENMP ON)
  else()
    message(STATUS "workloads: clang -fopenmp does not link (install libomp-dev, "
      "e.g. libomp-14-dev); skipping the clang builds of the OpenMP workload")
  endif()
endif()

# wl_add_test(<test name> <mode option or ""> <reference target> <candidate target> [args...])
function(wl_add_test test mode ref cand)
  if(mode STREQUAL "" AND NOT AMEBA_WORKLOAD_ACTIVE_RUNS)
    set(mode --dormant-only)
  endif()
  add_test(NAME ${test}
    COMMAND sh ${WL_COMPARE} ${mode} ${AMEBA_TEST_BIN}/${ref} ${AMEBA_TEST_BIN}/${cand} ${ARGN})
  set_tests_properties(${test} PROPERTIES LABELS workload TIMEOUT 900)
endfunction()

# wl_workload(<name> <source> [CXX] [NO_TWIN] [NEEDS_OPENMP] [OPT O0|O1|O2|O3]
#             [FLAGS flags...] [ARGS args...] [DEPENDS headers...])
#   CXX              the source is C++ (built with g++ / clang++)
#   NO_TWIN          the workload has no fixed twin (stress programs)
#   NEEDS_OPENMP     skip the clang builds when clang -fopenmp does not work
#   OPT              the bottleneck depends on the optimisation level
#                    (accum_calloc): wl_<name> and wl_<name>_native are built
#                    at that level, and the other builds are clang at that
#                    level only (wl_<name>_clang_<OPT>); the tests are
#                    workload_<name>_{gcc,clang}_<OPT>. Default: the builds above.
#   FLAGS            extra compiler flags for every build (e.g. -fopenmp)
#   ARGS             arguments for the test runs (default: none, SCALE 1)
#   DEPENDS          headers of tests/workloads/ the source includes besides wl.h
function(wl_workload name src)
  cmake_parse_arguments(W "CXX;NO_TWIN;NEEDS_OPENMP" "OPT" "FLAGS;ARGS;DEPENDS" ${ARGN})
  if(W_OPT)
    set(opt ${W_OPT})
    set(extra_builds clang_${opt})
  else()
    set(opt O2)
    set(extra_builds gcc_O0 clang_O0 clang_O2)
  endif()
  if(W_CXX)
    set(lang CXX)
    set(have_clang ${WL_CLANGXX})
  else()
    set(lang C)
    set(have_clang ${WL_CLANG})
  endif()
  if(W_NEEDS_OPENMP AND NOT WL_HAVE_CLANG_OPENMP)
    set(have_clang "")
  endif()

  set(variants ${name})
  if(NOT W_NO_TWIN)
    list(APPEND variants ${name}_fixed)
  endif()
  foreach(v ${variants})
    set(flags ${W_FLAGS})
    if(v STREQUAL "${name}_fixed")
      list(APPEND flags -DWL_FIXED=1)
    endif()
    set(common SOURCES ${WL_DIR}/${src} LANG ${lang} FLAGS ${flags})

    ameba_instrumented(NAME wl_${v}_native ${common} NATIVE OPT -${opt})
    ameba_instrumented(NAME wl_${v} ${common} COMPILER gcc OPT -${opt})
    set(outputs wl_${v}_native wl_${v})
    wl_add_test(workload_${v}_gcc_${opt} "" wl_${v}_native wl_${v} ${W_ARGS})
    if(AMEBA_WORKLOAD_ALL_COMPILERS)
      foreach(b ${extra_builds})
        string(REPLACE "_" ";" b_parts ${b})
        list(GET b_parts 0 b_cc)
        list(GET b_parts 1 b_opt)
        if(b_cc STREQUAL "clang" AND NOT have_clang)
          continue()
        endif()
        ameba_instrumented(NAME wl_${v}_${b} ${common} COMPILER ${b_cc} OPT -${b_opt})
        wl_add_test(workload_${v}_${b} "" wl_${v}_native wl_${v}_${b} ${W_ARGS})
        list(APPEND outputs wl_${v}_${b})
      endforeach()
    endif()
    # ameba_instrumented() knows only the source; rebuild on header changes too.
    set(headers ${WL_DIR}/wl.h)
    foreach(h ${W_DEPENDS})
      list(APPEND headers ${WL_DIR}/${h})
    endforeach()
    foreach(o ${outputs})
      add_custom_command(OUTPUT ${AMEBA_TEST_BIN}/${o} APPEND DEPENDS ${headers})
    endforeach()
  endforeach()

  if(NOT W_NO_TWIN)
    wl_add_test(workload_${name}_twin_output --native-pair wl_${name}_native wl_${name}_fixed_native ${W_ARGS})
  endif()
endfunction()

wl_workload(hot_arrays hot_arrays.c)
wl_workload(hot_fig2 hot_fig2.c)
wl_workload(phases phases.c)
wl_workload(false_sharing false_sharing.c)
wl_workload(true_sharing true_sharing.c)
wl_workload(numa_first_touch numa_first_touch.c)
wl_workload(imbalance imbalance.c)
wl_workload(tlb_transpose tlb_transpose.c)
wl_workload(conflict conflict.c)
wl_workload(many_blocks many_blocks.c)
wl_workload(openmp openmp.c NEEDS_OPENMP FLAGS -fopenmp)
wl_workload(cxx cxx.cpp CXX FLAGS -std=c++17)
wl_workload(thread_churn thread_churn.c NO_TWIN)
wl_workload(million_live million_live.c NO_TWIN)
wl_workload(stencil_grids stencil_grids.c)
wl_workload(hash_table hash_table.c)
wl_workload(phased_solver phased_solver.c)
wl_workload(mmap_input mmap_input.c)
wl_workload(wrapper_alloc wrapper_alloc.c DEPENDS wrap_alloc.h)
wl_workload(fs_behind_stream fs_behind_stream.c)
# One source, two workloads: false sharing at -O0, none at -O2 (registers).
wl_workload(accum_calloc_O0 accum_calloc.c OPT O0)
wl_workload(accum_calloc_O2 accum_calloc.c OPT O2)
wl_workload(loop_order loop_order.c)

# Oracle checks of the multi-object workloads' designed shares (sim backend,
# a fixed preset): tests/workloads/<w>.expect, rows as in tests/monitor/oracle_expect.c.
foreach(w stencil_grids hash_table phased_solver mmap_input wrapper_alloc fs_behind_stream
          accum_calloc_O0 accum_calloc_O2 loop_order)
  foreach(v "" _fixed)
    add_test(NAME workload_${w}${v}_oracle
      COMMAND ${CMAKE_SOURCE_DIR}/tests/monitor/oracle_check.sh ${AMEBA_TEST_BIN}/wl_${w}${v}
              ${WL_DIR}/${w}${v}.expect)
    set_tests_properties(workload_${w}${v}_oracle PROPERTIES LABELS "workload;sim" TIMEOUT 600
      ENVIRONMENT "AMEBA_BACKEND=sim;AMEBA_PRESET=skylake-sp;ORACLE_EXPECT=${AMEBA_TEST_BIN}/oracle_expect")
  endforeach()
endforeach()
# Allocation wrappers without their names (AMEBA_ALLOC_WRAPPERS empty): the
# header rule alone (docs/objmap.md, "Allocation wrappers").
add_test(NAME workload_wrapper_alloc_nolist_oracle
  COMMAND ${CMAKE_SOURCE_DIR}/tests/monitor/oracle_check.sh ${AMEBA_TEST_BIN}/wl_wrapper_alloc
          ${WL_DIR}/wrapper_alloc_nolist.expect)
set_tests_properties(workload_wrapper_alloc_nolist_oracle PROPERTIES LABELS "workload;sim" TIMEOUT 600
  ENVIRONMENT "AMEBA_BACKEND=sim;AMEBA_PRESET=skylake-sp;AMEBA_ALLOC_WRAPPERS=;ORACLE_EXPECT=${AMEBA_TEST_BIN}/oracle_expect")
