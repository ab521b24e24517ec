# The HTML report's size and load time for 100,000 objects, and what the
# views' sampling costs a run (bench/report_html/run.sh).
add_custom_target(bench-report-html
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/report_html/run.sh ${CMAKE_BINARY_DIR}/bin/ameba
          ${CMAKE_BINARY_DIR}/tests/bin ${CMAKE_CURRENT_BINARY_DIR}/report_html
  DEPENDS ameba wl_false_sharing wl_phases report_check
  COMMENT "HTML report benchmark" VERBATIM USES_TERMINAL)
