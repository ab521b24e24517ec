# Object map cost with one million live blocks (monitor/objmap.c): insert,
# lookup (cache-missing and cached), delete. `make bench-objmap` runs it.
add_executable(bench_objmap_lookup ${CMAKE_CURRENT_SOURCE_DIR}/objmap_lookup.c
  ${AMEBA_RT_OBJECTS})
target_include_directories(bench_objmap_lookup PRIVATE ${CMAKE_SOURCE_DIR}/monitor)
target_compile_definitions(bench_objmap_lookup PRIVATE _GNU_SOURCE)
target_compile_options(bench_objmap_lookup PRIVATE -O2)
target_link_libraries(bench_objmap_lookup PRIVATE PkgConfig::LIBDW PkgConfig::LIBELF
  ${CMAKE_DL_LIBS} Threads::Threads m)
target_link_options(bench_objmap_lookup PRIVATE
  -Wl,--dynamic-list=${CMAKE_SOURCE_DIR}/monitor/ameba-rt.dynlist)
set_target_properties(bench_objmap_lookup PROPERTIES
  RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench/bin EXCLUDE_FROM_ALL ON)
add_custom_target(bench-objmap COMMAND bench_objmap_lookup DEPENDS bench_objmap_lookup
  COMMENT "objmap lookup benchmark" VERBATIM USES_TERMINAL)
