# Search accuracy against the oracle, in the layout of seed 002's Tables 1
# and 2 (search_accuracy.py): `make bench-search-accuracy` prints, for every
# ground-truth workload, actual / sampling / 10-way / 2-way rank and share,
# then nway10_top5_found, nway10_max_abs_err_pts, sampling_max_abs_err_pts,
# nway10_intervals_median (and a few more). Runs every workload several
# times under the simulator: minutes, not seconds.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_custom_target(bench-search-accuracy
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/search_accuracy.py
            ${CMAKE_BINARY_DIR}/bin/ameba ${CMAKE_BINARY_DIR}/tests/bin
            ${CMAKE_SOURCE_DIR}/tests/workloads/workloads.cmake ${AMEBA_LIBDIR}/strategies
    DEPENDS ameba
    COMMENT "search accuracy benchmark (seed 002, Tables 1 and 2)" VERBATIM USES_TERMINAL)
else()
  add_custom_target(bench-search-accuracy
    COMMAND ${CMAKE_COMMAND} -E echo "bench-search-accuracy: python3 not found; skipped"
    VERBATIM)
endif()
