# The sim backend on the ground-truth workloads (issue 3): each workload's
# oracle shows the effect it was built to have, and its fixed twin does not.
# A fixed preset keeps the geometry the same on every host.
set(SIM_EFFECT_ENV "AMEBA_BACKEND=sim;AMEBA_PRESET=skylake-sp;AMEBA_SIM_3C=1;ORACLE_EXPECT=${AMEBA_TEST_BIN}/oracle_expect")
foreach(w false_sharing numa_first_touch tlb_transpose conflict)
  foreach(v "" _fixed)
    add_test(NAME sim_effect_${w}${v}
      COMMAND ${CMAKE_SOURCE_DIR}/tests/monitor/oracle_check.sh ${AMEBA_TEST_BIN}/wl_${w}${v}
              ${AMEBA_FRAGMENT_DIR}/${w}${v}.expect)
    set(env ${SIM_EFFECT_ENV})
    if(w STREQUAL "numa_first_touch")
      list(APPEND env AMEBA_NODES=2)
    endif()
    set_tests_properties(sim_effect_${w}${v} PROPERTIES ENVIRONMENT "${env}" LABELS sim TIMEOUT 600)
  endforeach()
endforeach()
# The remembered lines' object tags (backend_sim.c, sim_line_fast): a line
# remembered with an object that was unmapped and mapped again at the same
# address, and a line shared by two objects, count exactly.
ameba_instrumented(NAME sim_line_tags COMPILER gcc OPT -O2 FLAGS -fno-toplevel-reorder
  SOURCES ${AMEBA_FRAGMENT_DIR}/line_tags.c)
add_test(NAME sim_line_tags
  COMMAND ${CMAKE_SOURCE_DIR}/tests/monitor/oracle_check.sh ${AMEBA_TEST_BIN}/sim_line_tags
          ${AMEBA_FRAGMENT_DIR}/line_tags.expect)
set_tests_properties(sim_line_tags PROPERTIES
  ENVIRONMENT "AMEBA_BACKEND=sim;AMEBA_PRESET=skylake-sp;ORACLE_EXPECT=${AMEBA_TEST_BIN}/oracle_expect"
  LABELS sim)
# The line filter's split entries (backend_sim_lf.c mon_sim_lf_split_hit):
# blocks that share their lines with others count exactly, through them.
ameba_instrumented(NAME sim_split_lines COMPILER gcc OPT -O2
  SOURCES ${AMEBA_FRAGMENT_DIR}/split_lines.c)
add_test(NAME sim_split_lines
  COMMAND ${AMEBA_FRAGMENT_DIR}/split_lines.sh ${AMEBA_TEST_BIN}/sim_split_lines
          ${AMEBA_FRAGMENT_DIR}/split_lines.expect)
set_tests_properties(sim_split_lines PROPERTIES
  ENVIRONMENT "ORACLE_EXPECT=${AMEBA_TEST_BIN}/oracle_expect" LABELS sim)
# The assembly line entry (x86-64, backend_sim.c sim_line_fast_x86) counts
# exactly what the C one does (AMEBA_SIM_ASM=0), on single-threaded
# workloads with heap, global and stack objects, stale line tags, and on
# bench/sim_validate's kernels, under two geometries.
ameba_instrumented(NAME sim_kernels COMPILER gcc OPT -O2
  SOURCES ${CMAKE_SOURCE_DIR}/bench/sim_validate/kernels.c)
set(k ${AMEBA_TEST_BIN}/sim_kernels)
add_test(NAME sim_asm_entry
  COMMAND ${AMEBA_FRAGMENT_DIR}/asm_entry.sh ${AMEBA_TEST_BIN}/wl_tlb_transpose
          ${AMEBA_TEST_BIN}/wl_phases ${AMEBA_TEST_BIN}/wl_phased_solver ${AMEBA_TEST_BIN}/sim_line_tags
          ${k}:dense ${k}:strided ${k}:random ${k}:stencil ${k}:chase)
set_tests_properties(sim_asm_entry PROPERTIES LABELS sim TIMEOUT 600)
# The lean miss path (issue 24) against the general one: the same counts;
# with a second thread (batch_sync.c, ordered mode), the merger's as well.
add_test(NAME sim_lean_path
  COMMAND ${AMEBA_FRAGMENT_DIR}/lean_path.sh ${AMEBA_TEST_BIN}/wl_tlb_transpose
          ${AMEBA_TEST_BIN}/wl_phases ${AMEBA_TEST_BIN}/wl_hash_table ${AMEBA_TEST_BIN}/wl_conflict
          ${AMEBA_TEST_BIN}/sim_batch_sync
          ${k}:dense ${k}:strided ${k}:random ${k}:stencil ${k}:chase)
set_tests_properties(sim_lean_path PROPERTIES LABELS sim TIMEOUT 600)
# The same with an L2 (the lean path's L2 kinds) and with 3C, under zen4,
# a small L2 and the bench geometry.
add_test(NAME sim_lean_l2_3c
  COMMAND ${AMEBA_FRAGMENT_DIR}/lean_l2_3c.sh ${AMEBA_TEST_BIN}/wl_tlb_transpose
          ${AMEBA_TEST_BIN}/wl_hash_table ${AMEBA_TEST_BIN}/wl_conflict
          ${k}:random ${k}:stencil ${k}:chase)
set_tests_properties(sim_lean_l2_3c PROPERTIES LABELS sim TIMEOUT 900)
# The access batch (issue 24) against the hooks delivering each access: the
# same counts, through frees and reuse, mmap, copies, atomics, a packed
# field across lines and a second thread (batch_sync.c); and its policy: a
# batch of mostly misses (chase) rests, one of few (batch_hits.c) does not.
ameba_instrumented(NAME sim_batch_sync COMPILER gcc OPT -O1 SOURCES ${AMEBA_FRAGMENT_DIR}/batch_sync.c)
ameba_instrumented(NAME sim_batch_hits COMPILER gcc OPT -O1 SOURCES ${AMEBA_FRAGMENT_DIR}/batch_hits.c)
ameba_instrumented(NAME sim_merger_filter COMPILER gcc OPT -O1
  SOURCES ${AMEBA_FRAGMENT_DIR}/merger_filter.c)
add_test(NAME sim_batch
  COMMAND ${AMEBA_FRAGMENT_DIR}/batch.sh ${k}:chase ${AMEBA_TEST_BIN}/sim_batch_hits
          ${AMEBA_TEST_BIN}/sim_batch_sync
          ${AMEBA_TEST_BIN}/wl_tlb_transpose ${AMEBA_TEST_BIN}/wl_hash_table
          ${AMEBA_TEST_BIN}/wl_conflict ${k}:dense ${k}:random ${k}:stencil ${k}:chase)
set_tests_properties(sim_batch PROPERTIES LABELS sim TIMEOUT 600)
# Sized accesses across two lines, right after the second was accessed
# whole (cross_lines.c): the line filter's hit never takes them.
ameba_instrumented(NAME sim_cross_lines COMPILER gcc OPT -O2
  SOURCES ${AMEBA_FRAGMENT_DIR}/cross_lines.c)
# Lines 2^30 lines apart in one L1 set and one filter entry (l1_twins.c):
# the keys' low halves agree, the whole keys tell them apart.
ameba_instrumented(NAME sim_l1_twins COMPILER gcc OPT -O2
  SOURCES ${AMEBA_FRAGMENT_DIR}/l1_twins.c)
# The line filter (issue 24): an L1 hit taken in the hook counts what the
# simulator would, through frees and reuse, mmap, atomics, a packed field
# across lines and a second thread (batch_sync.c), sized accesses across
# lines (cross_lines.c), L1 twins (l1_twins.c), with either line entry;
# and the modes: pinned, each runs (stencil); chosen, the cheapest (random).
# The merger's filter (ordered mode): the same counts with a second thread
# (batch_sync.c), and it takes the hits of two threads (merger_filter.c).
add_test(NAME sim_line_filter
  COMMAND ${AMEBA_FRAGMENT_DIR}/line_filter.sh ${k}:stencil ${k}:random
          ${AMEBA_TEST_BIN}/sim_merger_filter
          ${AMEBA_TEST_BIN}/sim_batch_hits ${AMEBA_TEST_BIN}/sim_batch_sync
          ${AMEBA_TEST_BIN}/sim_cross_lines ${AMEBA_TEST_BIN}/sim_l1_twins
          ${AMEBA_TEST_BIN}/wl_tlb_transpose ${AMEBA_TEST_BIN}/wl_hash_table
          ${AMEBA_TEST_BIN}/wl_conflict ${AMEBA_TEST_BIN}/wl_phases ${AMEBA_TEST_BIN}/sim_line_tags
          ${AMEBA_TEST_BIN}/sim_split_lines
          ${k}:dense ${k}:strided ${k}:stencil ${k}:chase)
set_tests_properties(sim_line_filter PROPERTIES LABELS sim TIMEOUT 900)
# Threads interleaved in simulated time (monitor/seq.c): the same coherence
# misses whatever the host's CPUs, no access lost in blocking programs.
ameba_instrumented(NAME sim_order_sync COMPILER gcc OPT -O1 SOURCES ${AMEBA_FRAGMENT_DIR}/order_sync.c)
ameba_instrumented(NAME sim_order_sync_native NATIVE COMPILER gcc OPT -O1
  SOURCES ${AMEBA_FRAGMENT_DIR}/order_sync.c)
ameba_instrumented(NAME sim_barrier_wake COMPILER gcc OPT -O1
  SOURCES ${AMEBA_FRAGMENT_DIR}/barrier_wake.c)
add_test(NAME sim_order
  COMMAND ${AMEBA_FRAGMENT_DIR}/order.sh ${AMEBA_TEST_BIN}/wl_false_sharing
          ${AMEBA_TEST_BIN}/wl_false_sharing_fixed ${AMEBA_TEST_BIN}/sim_order_sync
          ${AMEBA_TEST_BIN}/sim_order_sync_native ${AMEBA_TEST_BIN}/sim_barrier_wake)
set_tests_properties(sim_order PROPERTIES
  ENVIRONMENT "AMEBA_PRESET=skylake-sp" LABELS sim TIMEOUT 900)
