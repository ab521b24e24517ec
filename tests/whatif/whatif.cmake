# What-if (docs/whatif.md): ameba run's predicted_speedup for a false-sharing
# finding agrees with the simulated run times of the workload and its real
# padded twin, and the what-if runtime mode pads only the named object.
add_test(NAME whatif_false_sharing
  COMMAND ${AMEBA_FRAGMENT_DIR}/whatif.sh ${CMAKE_BINARY_DIR}/bin/ameba ${AMEBA_TEST_BIN})
set_tests_properties(whatif_false_sharing PROPERTIES
  ENVIRONMENT "AMEBA_PRESET=skylake-sp" LABELS "whatif;e2e" TIMEOUT 600)

# The other what-ifs: transpose and rowpad learn the row stride and predict
# the loop-interchanged and row-padded twins' simulated gains; balance the
# even split's; private the privatised counter's.
add_test(NAME whatif_fixes
  COMMAND ${AMEBA_FRAGMENT_DIR}/fixes.sh ${CMAKE_BINARY_DIR}/bin/ameba ${AMEBA_TEST_BIN})
set_tests_properties(whatif_fixes PROPERTIES LABELS "whatif;e2e" TIMEOUT 600)
