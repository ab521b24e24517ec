# The property library on the ground-truth workloads (issue 7): `ameba run`
# with the default strategy and the sim backend ranks each workload's
# designed property first on its designed object; the fixed twin does not
# report it there (check_workload.sh). One test per workload pair.

# The property library on hand-made contexts (ctx.extra parsing in
# FalseSharing, the cost model, conditions on problem and fixed data).
add_executable(test_props ${AMEBA_FRAGMENT_DIR}/test_props.c)
target_include_directories(test_props PRIVATE ${AMEBA_TEST_INCLUDE})
target_link_libraries(test_props PRIVATE ameba-agent-core)
set_target_properties(test_props PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})
add_test(NAME props_unit COMMAND ${AMEBA_TEST_BIN}/test_props ${CMAKE_SOURCE_DIR})
set_tests_properties(props_unit PROPERTIES LABELS "properties")

find_program(AMEBA_JQ jq)
if(NOT AMEBA_JQ)
  message(STATUS "tests/properties: jq not found; the property workload tests are skipped")
  return()
endif()

set(PROPS_CHECK ${AMEBA_FRAGMENT_DIR}/check_workload.sh)
# props_case(<workload> <property> <object regex> [options of check_workload.sh])
function(props_case wl prop obj)
  add_test(NAME props_${wl}
    COMMAND ${PROPS_CHECK} ${CMAKE_BINARY_DIR}/bin/ameba ${AMEBA_TEST_BIN} ${wl} ${prop} ${obj}
            ${ARGN})
  set_tests_properties(props_${wl} PROPERTIES LABELS "properties;e2e" TIMEOUT 600)
endfunction()

props_case(false_sharing FalseSharing "^alloc_counters@false_sharing\\.c:" --threads "[1,2,3,4]"
           --attempts 3)
props_case(true_sharing TrueSharingContention "^total_weight$" --threads "[1,2,3,4]" --scale 4
           --attempts 3)
props_case(numa_first_touch RemoteMemAccess "^alloc_field@numa_first_touch\\.c:"
           --threads "[1,2,3,4]" --env AMEBA_NODES=2 --attempts 3)
# imbalance: the workers sweep without barriers, so on a loaded 2-vCPU
# machine the measured window can hold one worker of the fixed twin alone
# (a ctest -j2 run saw thread 4 with 68.9% of the twin's accesses; a
# clean-clone CI beside a bench, 54.8-70.5% in 3 of 3 attempts at SCALE 1).
# At SCALE 4 (12 sweeps) the workers' last-one-running tail is a small part
# of the window: 2 of 2 runs beside the same bench passed, the workload's
# thread 1 at 64.8% (5/8 designed)
props_case(imbalance UnbalancedThreadMisses "^alloc_cells@imbalance\\.c:" --threads "[1]"
           --scale 4 --attempts 3)
props_case(tlb_transpose TLBThrashing "^alloc_x@tlb_transpose\\.c:")
props_case(conflict ConflictMisses "^rows$")
props_case(hot_arrays HotObject "^alloc_grid@hot_arrays\\.c:" --twin-not-top)
props_case(hot_fig2 HotObject "^alloc_array_e@hot_fig2\\.c:" --twin-not-top)
props_case(phases HotObject "^ux$" --twin-same)
props_case(openmp FalseSharing "^alloc_dst@openmp\\.c:" --attempts 3)
# stencil_grids: temp (two sweeps per step) is the hot grid. The twin fuses
# the sweeps; over the whole run press becomes the hottest object, but only
# by 5 points (35.7% vs temp 30.6%), and the run is measured in part, so
# temp still came first in 1 of 8 twin runs. The test asserts what the fix
# changes on temp: L1D misses per access 0.27-0.29 in 7 runs, 0.13-0.17 in
# the twin's (at most 0.64x).
# Up to 3 attempts: on a loaded machine the agent may measure only part of
# the run (a clean-clone CI run at load ~4 measured 510 K of 1.68 M misses,
# and press, 27% over the run, led temp 34.9% to 32.5% in that window).
props_case(stencil_grids HotObject "^alloc_temp@stencil_grids\\.c:" --twin-miss-rate 0.75
           --attempts 3)
# hash_table: keys and values in two arrays, keys the hotter; the twin has
# one array of buckets, so nothing is allocated at alloc_keys().
props_case(hash_table HotObject "^alloc_keys@hash_table\\.c:")
# phased_solver: the matrix, streamed four times a step, is the hot object.
# The twin streams it twice (iterations fused per block) and it stays the
# hottest by design (46% of the misses), so the test asserts what the fix
# changes: every access to mat misses L1D (1.00 per access measured), in
# the twin about one in two (0.46).
# Up to 3 attempts, as stencil_grids: the twin's rate is of the window the
# agent measured, and a window that holds mostly one phase gave 0.757 once
# (clean-clone CI, 2026-11-24 21:40 UTC; 0.46-0.49 over whole runs).
props_case(phased_solver HotObject "^alloc_matrix@phased_solver\\.c:" --twin-miss-rate 0.75
           --attempts 3)
# The four workloads that stress the MRI's limits (docs/mri.md, "Decisions
# on the message limit"): a million blocks (sampled ranges, a listing spread
# over refreshes), thousands of threads (sparse rows, totals-only readings).
# many_blocks: the particle bin is the hot one; the twin's pools carry
# other names. The `objects` strategy measures each site by its bin, which
# the monitor resolves per access (docs/mri.md, `start`, `bins`): every
# block counts, also blocks allocated after the last listing. Before, the
# blocks were measured on a sample of their ranges and listed seconds after
# they were allocated, and the bin's share of the run came out ~5% instead
# of 58% (rank 1 in about half the runs). On by default since it passed 3
# runs in a row (65-106 s each, with a bench running). Turn off with
# -DAMEBA_PROPS_MANY_BLOCKS=OFF.
option(AMEBA_PROPS_MANY_BLOCKS "Run the property test of many_blocks" ON)
if(AMEBA_PROPS_MANY_BLOCKS)
  props_case(many_blocks HotObject "^new_particle@many_blocks\\.c:" --twin-not-top)
endif()
# cxx: the tally's block and the shapes' vector both come from
# std::allocator (allocate@new_allocator.h); the tally is the one named with
# its caller in cxx.cpp ("<- main@cxx.cpp:141", make_tally() inlined).
# WriteMissesToReadMostly does not fire on the tally (its fetch_adds count as
# reads and writes: not read-mostly, test_props). The threads interleave in
# simulated time (docs/simulator.md), so the tally's coherence misses no
# longer depend on how the host schedules the workers (SCALE 8 and 3
# attempts were for host order, where a loaded machine could keep all of
# them on one vCPU): FalseSharing 0.652, 0.658, 0.658 in three runs at
# SCALE 1, first each time. SCALE 2 (~25 s a run with the what-if's two
# re-simulations, against ~200 s at SCALE 8); attempts kept for a run the
# window cuts short.
props_case(cxx FalseSharing "<- (main|make_tally)@cxx\\.cpp:[0-9]+$|^make_tally@cxx\\.cpp:"
           --threads "[1,2,3,4]" --scale 2 --attempts 3)
# thread_churn (no twin): the four threads alive together write adjacent
# slots of one line.
# Up to 3 attempts: three full ctest runs on a machine loaded by other
# builds and tests (load 10-13 on 2 vCPUs) had a run with no finding at all
# (the output was not kept then; check_workload.sh now prints what such a
# run measured); alone, beside two busy loops or beside props_cxx it
# passed all 16 runs tried.
props_case(thread_churn FalseSharing "^slots$" --no-twin --attempts 3)
# million_live (no twin): the 834 K blocks of new_small() (734 K, plus the
# second round's 100 K) hold the most misses (oracle: 51% of L1D misses, the
# table of a million pointers 25%); with site bins the agent measures the
# site whole and finds it (before bins it saw only the listed blocks, and the
# table ranked first).
props_case(million_live HotObject "^new_small@million_live\\.c:" --no-twin)

# asl.extra() on a synthetic ctx.extra (extra_parse.lua): the test property
# fires (it errors, and is disabled, when a parsed value is wrong).
add_test(NAME props_extra_parse
  COMMAND ${AMEBA_FRAGMENT_DIR}/extra_parse.sh ${CMAKE_BINARY_DIR}/bin/ameba
          ${AMEBA_FRAGMENT_DIR}/extra_parse.lua ${AMEBA_TEST_BIN}/wl_false_sharing)
set_tests_properties(props_extra_parse PROPERTIES LABELS "properties" TIMEOUT 120)


# Objects a user would name (issue 18, item 6). mmap_input: the column walk
# of a matrix read through a file-backed mmap; the mapping is an object
# named by its file and its mapping site. The twin walks rows: the mapping
# stays the hottest object (99.4% of the misses), so the test asserts what
# the fix changes: L1D misses per access 1.00 -> 0.0625 (oracle, skylake-sp).
props_case(mmap_input HotObject "^matrix\\.bin <- map_input@mmap_input\\.c:[0-9]+$"
           --env AMEBA_PRESET=skylake-sp --twin-miss-rate 0.5)
# wrapper_alloc: the table comes from xmalloc() and is named by its caller;
# the twin reads it in address order and it stays the hottest (71% of the
# misses): misses per access 0.82 -> 0.125.
props_case(wrapper_alloc HotObject "^make_table@wrapper_alloc\\.c:[0-9]+$"
           --env AMEBA_PRESET=skylake-sp --twin-miss-rate 0.5)

# Ground truth for bench/diagnosis (issue 18), pinned to skylake-sp.
# fs_behind_stream: the matrix's column walk holds 2/3 of the L1D misses
# (3.28 M of 4.85 M, oracle), the packed counters 1/3 but as much stall as
# the matrix (1.57 M coherence misses, all false sharing): FalseSharing on
# the counters ranks first (severity 0.44-0.49 in 5 runs; ThreadReadMissRate
# on the matrix second, 0.28-0.30). With 2 passes instead of 3 one run of 2
# came out at 0.40 vs 0.30 (fewer coherence misses measured).
props_case(fs_behind_stream FalseSharing "^alloc_counters@fs_behind_stream\\.c:"
           --threads "[1,2,3,4]" --env AMEBA_PRESET=skylake-sp --attempts 3)
# accum_calloc: per-thread accumulators in one calloc'd block, plain code.
# At -O0 every element loads and stores acc[id] (3.6 M coherence misses, all
# false sharing); at -O2 they live in registers and are stored once per pass
# (objdump), so there is no false sharing to report on the block, in the
# workload or its twin.
props_case(accum_calloc_O0 FalseSharing "^alloc_accumulators@accum_calloc\\.c:"
           --threads "[1,2,3,4]" --env AMEBA_PRESET=skylake-sp --attempts 3)
props_case(accum_calloc_O2 FalseSharing "^alloc_accumulators@accum_calloc\\.c:" --absent
           --env AMEBA_PRESET=skylake-sp)
# loop_order: the column walk of a 32 MiB grid (16 KiB stride) misses the
# dTLB on every access (4.2 M, oracle); TLBThrashing ranks first (it was the
# only finding in the runs seen; HotObject does not fire). The twin walks
# rows: HotObject on the grid first, no TLBThrashing.
props_case(loop_order TLBThrashing "^alloc_grid@loop_order\\.c:" --env AMEBA_PRESET=skylake-sp)
