# The cache simulator (monitor/sim/) on synthetic traces, without the rest of
# the runtime: hand-computed counts (sim_test), the same with a 4-slot
# mailbox so that every overflow/resync path runs (sim_test_ring), and real
# threads in parallel under ThreadSanitizer (sim_tsan, sim_tsan_ring).

add_executable(sim_test ${AMEBA_FRAGMENT_DIR}/sim_test.c)
target_include_directories(sim_test PRIVATE ${AMEBA_TEST_INCLUDE})
target_link_libraries(sim_test PRIVATE ameba-sim)
set_target_properties(sim_test PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})
add_test(NAME sim COMMAND ${AMEBA_TEST_BIN}/sim_test)
set_tests_properties(sim PROPERTIES TIMEOUT 300 LABELS sim)

add_executable(sim_test_ring ${AMEBA_FRAGMENT_DIR}/sim_test.c ${AMEBA_SIM_SOURCES})
target_include_directories(sim_test_ring PRIVATE ${AMEBA_TEST_INCLUDE}
  ${CMAKE_SOURCE_DIR}/monitor/sim ${CMAKE_SOURCE_DIR}/mri)
target_link_libraries(sim_test_ring PRIVATE ameba-common)
target_compile_definitions(sim_test_ring PRIVATE _GNU_SOURCE SIM_RING_BITS=2)
target_compile_options(sim_test_ring PRIVATE -O2 -g)
set_target_properties(sim_test_ring PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})
add_test(NAME sim_ring COMMAND ${AMEBA_TEST_BIN}/sim_test_ring)
set_tests_properties(sim_ring PROPERTIES TIMEOUT 300 LABELS sim)

include(CheckCSourceCompiles)
set(CMAKE_REQUIRED_FLAGS -fsanitize=thread)
set(CMAKE_REQUIRED_LINK_OPTIONS -fsanitize=thread)
check_c_source_compiles("int main(void) { return 0; }" AMEBA_SIM_HAVE_TSAN)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
if(AMEBA_SIM_HAVE_TSAN)
  foreach(variant sim_tsan sim_tsan_ring)
    add_executable(${variant} ${AMEBA_FRAGMENT_DIR}/sim_mt.c ${AMEBA_SIM_SOURCES})
    target_include_directories(${variant} PRIVATE ${AMEBA_TEST_INCLUDE}
      ${CMAKE_SOURCE_DIR}/monitor/sim ${CMAKE_SOURCE_DIR}/mri)
    target_compile_definitions(${variant} PRIVATE _GNU_SOURCE)
    if(variant STREQUAL "sim_tsan_ring")
      target_compile_definitions(${variant} PRIVATE SIM_RING_BITS=2)
    endif()
    target_compile_options(${variant} PRIVATE -fsanitize=thread -O1 -g)
    target_link_options(${variant} PRIVATE -fsanitize=thread)
    target_link_libraries(${variant} PRIVATE ameba-common Threads::Threads)
    set_target_properties(${variant} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})
    add_test(NAME ${variant} COMMAND ${AMEBA_TEST_BIN}/${variant})
    set_tests_properties(${variant} PROPERTIES TIMEOUT 600 LABELS sim
      ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1 exitcode=66")
  endforeach()
endif()
