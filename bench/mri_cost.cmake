# MRI control-plane cost (mri/, monitor/mri_server.c): one request/response
# round trip, and one read of 64 conditional counters, against a live idle
# instrumented target (tests/mri/mri_target.c). `make bench-mri` runs it.
add_executable(bench_mri_cost ${CMAKE_CURRENT_SOURCE_DIR}/mri_cost.c)
target_link_libraries(bench_mri_cost PRIVATE ameba-mri)
set_target_properties(bench_mri_cost PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench/bin EXCLUDE_FROM_ALL ON)
add_custom_target(bench-mri COMMAND bench_mri_cost ${CMAKE_BINARY_DIR}/tests/bin/mri_target
  DEPENDS bench_mri_cost mri_target COMMENT "MRI cost benchmark" VERBATIM USES_TERMINAL)
