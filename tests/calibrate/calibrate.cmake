# `ameba calibrate` and `ameba run --preset`: the preset file it writes loads
# back through the runtime's own geometry code, user presets are found by
# name, and bad input is a usage error naming the value.
add_test(NAME calibrate_cli
  COMMAND ${AMEBA_FRAGMENT_DIR}/calibrate.sh ${CMAKE_BINARY_DIR}/bin/ameba
          ${AMEBA_TEST_BIN}/wl_false_sharing)
# It times the host (an L1D hit must come out 1..10 cycles): alone, since
# beside other tests on a 2-vCPU machine a chase measured 13 cycles once.
set_tests_properties(calibrate_cli PROPERTIES LABELS "calibrate" TIMEOUT 300 RUN_SERIAL TRUE)
