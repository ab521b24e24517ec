# ameba_instrumented(NAME <name> SOURCES <files...> [COMPILER gcc|clang]
#                    [LANG C|CXX] [OPT <-O level>] [FLAGS <extra...>] [NATIVE])
#
# Builds tests/bin/<name> from SOURCES through `ameba cc` (or `ameba c++` for
# LANG CXX) with the given compiler and optimisation level. With NATIVE the
# same sources are built by the plain compiler instead (the reference build
# whose output an instrumented build must match).
# The target is named <name> and can be used in add_test(COMMAND $<...>) via
# ${AMEBA_TEST_BIN}/<name>.
set(AMEBA_TEST_BIN ${CMAKE_BINARY_DIR}/tests/bin)
file(MAKE_DIRECTORY ${AMEBA_TEST_BIN})

function(ameba_instrumented)
  cmake_parse_arguments(A "NATIVE" "NAME;COMPILER;LANG;OPT" "SOURCES;FLAGS" ${ARGN})
  if(NOT A_COMPILER)
    set(A_COMPILER gcc)
  endif()
  if(NOT A_LANG)
    set(A_LANG C)
  endif()
  if(NOT A_OPT)
    set(A_OPT -O2)
  endif()
  set(srcs "")
  foreach(s ${A_SOURCES})
    if(IS_ABSOLUTE ${s})
      list(APPEND srcs ${s})
    else()
      list(APPEND srcs ${CMAKE_CURRENT_SOURCE_DIR}/${s})
    endif()
  endforeach()
  if(A_LANG STREQUAL "CXX")
    if(A_COMPILER STREQUAL "clang")
      set(cc clang++)
    else()
      set(cc g++)
    endif()
    set(sub c++)
  else()
    set(cc ${A_COMPILER})
    set(sub cc)
  endif()
  set(out ${AMEBA_TEST_BIN}/${A_NAME})
  if(A_NATIVE)
    set(cmd ${cc} ${A_OPT} -g -pthread ${A_FLAGS} ${srcs} -o ${out} -lm)
    set(deps ${srcs})
  else()
    set(cmd ${CMAKE_BINARY_DIR}/bin/ameba ${sub} --compiler ${cc} ${A_OPT} -pthread
        ${A_FLAGS} ${srcs} -o ${out} -lm)
    # File-level dependencies, so a rebuilt runtime or wrapper relinks the program.
    set(deps ${srcs} ameba ameba-runtime $<TARGET_FILE:ameba> $<TARGET_FILE:ameba-rt>)
    # and the dual path's plugins, which compile the program too
    foreach(p ameba-dual-gcc ameba-dual-llvm)
      if(TARGET ${p})
        list(APPEND deps ${p} $<TARGET_FILE:${p}>)
      endif()
    endforeach()
  endif()
  add_custom_command(OUTPUT ${out} COMMAND ${cmd} DEPENDS ${deps}
    COMMENT "ameba_instrumented ${A_NAME}" VERBATIM)
  add_custom_target(${A_NAME} ALL DEPENDS ${out})
endfunction()
