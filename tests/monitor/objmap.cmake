# Object map, allocation sites and ELF symbols (monitor/objmap.c, site.c,
# elfsyms.c), driven directly through mon.h with the whole runtime linked in.

# An instrumented DSO: compiled with -fsanitize=thread, linked without libtsan,
# so its __tsan_* references bind to the test executable's runtime.
add_library(objmap_dso SHARED ${AMEBA_FRAGMENT_DIR}/objmap_dso.c)
target_compile_options(objmap_dso PRIVATE -fsanitize=thread -g)
set_target_properties(objmap_dso PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})

add_executable(objmap_test ${AMEBA_FRAGMENT_DIR}/objmap_test.c ${AMEBA_FRAGMENT_DIR}/objmap_conc.c
  ${AMEBA_RT_OBJECTS})
target_include_directories(objmap_test PRIVATE ${AMEBA_TEST_INCLUDE} ${CMAKE_SOURCE_DIR}/monitor)
target_compile_definitions(objmap_test PRIVATE _GNU_SOURCE)
# Frame pointers: the site test walks through this file's frames.
target_compile_options(objmap_test PRIVATE -fno-omit-frame-pointer -g)
target_link_libraries(objmap_test PRIVATE PkgConfig::LIBDW PkgConfig::LIBELF ${CMAKE_DL_LIBS}
  Threads::Threads m)
target_link_options(objmap_test PRIVATE
  -Wl,--dynamic-list=${CMAKE_SOURCE_DIR}/monitor/ameba-rt.dynlist)
set_target_properties(objmap_test PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})
add_dependencies(objmap_test objmap_dso)
add_test(NAME objmap COMMAND ${AMEBA_TEST_BIN}/objmap_test $<TARGET_FILE:objmap_dso>)
set_tests_properties(objmap PROPERTIES TIMEOUT 300)

# The same concurrent stress with objmap.c, site.c and elfsyms.c built with
# the real ThreadSanitizer (a data race in their lock-free protocols fails the
# test), linked with a test-local stub instead of the rest of the runtime.
include(CheckCSourceCompiles)
set(CMAKE_REQUIRED_FLAGS -fsanitize=thread)
set(CMAKE_REQUIRED_LINK_OPTIONS -fsanitize=thread)
check_c_source_compiles("int main(void) { return 0; }" AMEBA_HAVE_TSAN)
unset(CMAKE_REQUIRED_FLAGS)
unset(CMAKE_REQUIRED_LINK_OPTIONS)
if(AMEBA_HAVE_TSAN)
  add_executable(objmap_tsan ${CMAKE_SOURCE_DIR}/monitor/rt_text_begin.c
    ${AMEBA_FRAGMENT_DIR}/objmap_tsan_stub.c ${AMEBA_FRAGMENT_DIR}/objmap_conc.c
    ${CMAKE_SOURCE_DIR}/monitor/objmap.c ${CMAKE_SOURCE_DIR}/monitor/objmap_globals.c
    ${CMAKE_SOURCE_DIR}/monitor/site.c
    ${CMAKE_SOURCE_DIR}/monitor/elfsyms.c ${CMAKE_SOURCE_DIR}/monitor/rt_text_end.c)
  target_include_directories(objmap_tsan PRIVATE ${AMEBA_TEST_INCLUDE} ${CMAKE_SOURCE_DIR}/monitor)
  target_compile_definitions(objmap_tsan PRIVATE _GNU_SOURCE AMEBA_RT=1)
  # TSan does not model the seqlock's fences (-Wtsan); the relaxed atomics it
  # does model are what matters for race reports.
  target_compile_options(objmap_tsan PRIVATE -fsanitize=thread -O1 -g
    $<$<C_COMPILER_ID:GNU>:-Wno-tsan>)
  target_link_options(objmap_tsan PRIVATE -fsanitize=thread)
  target_link_libraries(objmap_tsan PRIVATE PkgConfig::LIBDW PkgConfig::LIBELF ${CMAKE_DL_LIBS}
    Threads::Threads)
  set_target_properties(objmap_tsan PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})
  add_test(NAME objmap_tsan COMMAND ${AMEBA_TEST_BIN}/objmap_tsan)
  set_tests_properties(objmap_tsan PROPERTIES TIMEOUT 300
    ENVIRONMENT "TSAN_OPTIONS=halt_on_error=1 exitcode=66")
endif()
