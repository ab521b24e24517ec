# The compiler wrapper, as build systems use it.
foreach(cc gcc clang)
  add_test(NAME cc_wrapper_${cc}
    COMMAND ${AMEBA_FRAGMENT_DIR}/cc_wrapper.sh ${CMAKE_BINARY_DIR}/bin/ameba
            ${AMEBA_TEST_BIN}/oracle_expect ${cc})
endforeach()
