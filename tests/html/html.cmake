# The HTML report (agent/report_html.c, agent/html/) loaded in headless
# Chromium; screenshots of every view land in <build>/tests/report_html/shots.
add_test(NAME report_html
  COMMAND ${AMEBA_FRAGMENT_DIR}/html_report.sh ${CMAKE_BINARY_DIR}/bin/ameba ${AMEBA_TEST_BIN}
          ${CMAKE_SOURCE_DIR}/docs/report-schema.json ${AMEBA_TEST_BIN}/report_check
          ${CMAKE_CURRENT_BINARY_DIR}/report_html)
set_tests_properties(report_html PROPERTIES LABELS "report;e2e" TIMEOUT 900 SKIP_RETURN_CODE 77)
