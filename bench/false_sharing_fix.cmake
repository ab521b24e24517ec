# The false-sharing fix pays natively (issue 7): `make bench-false-sharing-fix`
# builds tests/workloads/false_sharing.c and its padded twin with plain gcc -O2,
# runs both (quiet machine wanted: the workers must overlap), and prints false_sharing_fix_speedup (packed / padded kernel time),
# and cxx_false_sharing_fix_speedup for the C++ workload's atomic tally.
add_custom_target(bench-false-sharing-fix
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/false_sharing_fix/run.sh ${CMAKE_SOURCE_DIR}
          ${CMAKE_BINARY_DIR}/bench/false_sharing_fix
  COMMENT "false-sharing fix benchmark (native)" VERBATIM USES_TERMINAL)
