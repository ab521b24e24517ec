# Can the ranking be trusted? (issue 18) `make bench-diagnosis` runs every
# ground-truth workload with a fixed twin under `ameba run` RUNS times and
# prints top1_correct_<k>, severity_cv_<k>, predicted/simulated/measured
# speedups and the host's line round trip (bench/diagnosis/diagnosis.py).
add_custom_target(bench-diagnosis
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/diagnosis/diagnosis.py ${CMAKE_BINARY_DIR}
  COMMENT "diagnosis benchmark (long: ameba run 5x per workload)" VERBATIM USES_TERMINAL)
