# The ThreadSanitizer ABI of libameba-rt (monitor/tsan_abi.c, tsan_atomic.c).
#
#   abi_delivery                  hooks and atomics against a recording stub of
#                                 the mon layer: delivered addr/size/flags/pc,
#                                 dormant silence, ignore nesting, exact atomic
#                                 results for every width and memory order
#   abi_symbols                   every tsan symbol defined in libameba-rt.a and
#                                 exported by libameba-rt.so; no libatomic calls
#   abi_atomics_stress_*          4-thread stress of every atomic (C and C++),
#                                 instrumented output == native output ==
#                                 expected file, dormant and active
#   abi_counts_*                  exact reads/writes per object that the atomic
#                                 hooks deliver (count backend, oracle file)
#   abi_constructs_*              C / C++ constructs at -O0..-O3 with gcc and
#                                 clang (+ volatile, compound, OpenMP variants):
#                                 link, run, print the expected values, call the
#                                 hooks directly (no PLT)
set(ABI_DIR ${AMEBA_FRAGMENT_DIR})
set(ABI_RUN ${ABI_DIR}/abi_run.sh)

# ---- delivery, against a stub (independent of the rest of the runtime) ----
add_executable(abi_delivery ${ABI_DIR}/abi_delivery.c)
target_include_directories(abi_delivery PRIVATE ${AMEBA_TEST_INCLUDE} ${CMAKE_SOURCE_DIR}/monitor
  ${CMAKE_SOURCE_DIR}/mri)
target_compile_definitions(abi_delivery PRIVATE _GNU_SOURCE)
target_compile_options(abi_delivery PRIVATE -mcx16 -fno-sanitize=all)
target_link_libraries(abi_delivery PRIVATE Threads::Threads)
set_target_properties(abi_delivery PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})
add_test(NAME abi_delivery COMMAND ${AMEBA_TEST_BIN}/abi_delivery)

# ---- completeness of the exported symbol set ----
add_test(NAME abi_symbols
  COMMAND ${ABI_DIR}/abi_symbols.sh $<TARGET_FILE:ameba-rt> $<TARGET_FILE:ameba-rt-shared>
          ${ABI_DIR}/tsan_abi_symbols.txt)

# ---- atomics stress: C and C++, gcc and clang, -O0 and -O2 ----
# -mcx16: clang inlines 16-byte atomics only with it (else libatomic calls
# that bypass the hooks); gcc always lowers them to __tsan_atomic128_*.
# The native twins need libatomic for their 16-byte atomics; FLAGS come
# before the sources, hence --no-as-needed.
set(ABI_LIBATOMIC -Wl,--push-state,--no-as-needed -latomic -Wl,--pop-state)
ameba_instrumented(NAME atomics_stress_native NATIVE OPT -O2
  SOURCES ${ABI_DIR}/atomics_stress.c FLAGS -mcx16 ${ABI_LIBATOMIC})
ameba_instrumented(NAME atomics_stress_cxx_native NATIVE LANG CXX OPT -O2
  SOURCES ${ABI_DIR}/atomics_stress_cxx.cpp FLAGS ${ABI_LIBATOMIC})
foreach(cc gcc clang)
  foreach(opt O0 O2)
    set(n atomics_stress_${cc}_${opt})
    ameba_instrumented(NAME ${n} COMPILER ${cc} OPT -${opt}
      SOURCES ${ABI_DIR}/atomics_stress.c FLAGS -mcx16)
    # 128-bit atomics must reach the runtime, not libatomic
    set(calls __tsan_atomic128_fetch_add,__tsan_atomic128_load,__tsan_atomic64_fetch_nand,__tsan_atomic_thread_fence)
    add_test(NAME abi_${n}
      COMMAND ${ABI_RUN} --expected ${ABI_DIR}/atomics_stress.expected
              --native ${AMEBA_TEST_BIN}/atomics_stress_native --calls ${calls}
              -- ${AMEBA_TEST_BIN}/${n})
    add_test(NAME abi_${n}_active
      COMMAND ${ABI_RUN} --expected ${ABI_DIR}/atomics_stress.expected --active
              -- ${AMEBA_TEST_BIN}/${n})

    # clang++ 14 keeps 16-byte struct atomics in libatomic even with -mcx16
    set(n atomics_stress_cxx_${cc}_${opt})
    if(cc STREQUAL "clang")
      set(cxx_flags -mcx16 ${ABI_LIBATOMIC})
      set(calls __tsan_atomic32_compare_exchange_val,__tsan_atomic8_fetch_add)
    else()
      set(cxx_flags "")
      set(calls __tsan_atomic128_compare_exchange_strong,__tsan_atomic128_load,__tsan_atomic8_fetch_add)
    endif()
    ameba_instrumented(NAME ${n} COMPILER ${cc} LANG CXX OPT -${opt}
      SOURCES ${ABI_DIR}/atomics_stress_cxx.cpp FLAGS ${cxx_flags})
    add_test(NAME abi_${n}
      COMMAND ${ABI_RUN} --expected ${ABI_DIR}/atomics_stress_cxx.expected
              --native ${AMEBA_TEST_BIN}/atomics_stress_cxx_native --calls ${calls}
              -- ${AMEBA_TEST_BIN}/${n})
    add_test(NAME abi_${n}_active
      COMMAND ${ABI_RUN} --expected ${ABI_DIR}/atomics_stress_cxx.expected --active
              -- ${AMEBA_TEST_BIN}/${n})
  endforeach()
endforeach()

# ---- constructs: every optimisation level, both compilers, C and C++ ----
# abi_add_constructs(<name> <C|CXX> <gcc|clang> <opt> <required hooks> [flags...])
function(abi_add_constructs name lang cc opt calls)
  if(lang STREQUAL "CXX")
    set(src ${ABI_DIR}/abi_constructs_cxx.cpp)
    set(expected ${ABI_DIR}/abi_constructs_cxx.expected)
  else()
    set(src ${ABI_DIR}/abi_constructs.c)
    set(expected ${ABI_DIR}/abi_constructs.expected)
  endif()
  ameba_instrumented(NAME ${name} COMPILER ${cc} LANG ${lang} OPT ${opt}
    SOURCES ${src} FLAGS ${ARGN})
  add_test(NAME ${name}
    COMMAND ${ABI_RUN} --expected ${expected} --calls ${calls} -- ${AMEBA_TEST_BIN}/${name})
  add_test(NAME ${name}_active
    COMMAND ${ABI_RUN} --expected ${expected} --active -- ${AMEBA_TEST_BIN}/${name})
endfunction()

# Hooks every build of the C program must call: sized plain accesses,
# 16-byte scalars, entry/exit, C11 atomics, and for packed fields clang's
# unaligned hooks or gcc's ranges (gcc 12 never emits __tsan_unaligned_*).
set(ABI_C_CALLS __tsan_read4,__tsan_write8,__tsan_read16,__tsan_write16,__tsan_func_entry,__tsan_func_exit,__tsan_atomic64_fetch_add)
set(ABI_C_CALLS_gcc ${ABI_C_CALLS},__tsan_read_range,__tsan_write_range)
set(ABI_C_CALLS_clang ${ABI_C_CALLS},__tsan_unaligned_read4,__tsan_unaligned_write8)
set(ABI_CXX_CALLS __tsan_read8,__tsan_write8,__tsan_vptr_update,__tsan_func_entry,__tsan_func_exit)
foreach(cc gcc clang)
  foreach(opt O0 O1 O2 O3)
    abi_add_constructs(abi_constructs_${cc}_${opt} C ${cc} -${opt} ${ABI_C_CALLS_${cc}} -mcx16)
    abi_add_constructs(abi_constructs_cxx_${cc}_${opt} CXX ${cc} -${opt} ${ABI_CXX_CALLS})
  endforeach()
endforeach()

# Volatile accesses get their own hooks only on request.
abi_add_constructs(abi_constructs_clang_volatile C clang -O2
  __tsan_volatile_read4,__tsan_volatile_write4,__tsan_volatile_read16,__tsan_volatile_write1,__tsan_unaligned_volatile_write4,__tsan_unaligned_volatile_read8
  -mcx16 -mllvm -tsan-distinguish-volatile=1)
abi_add_constructs(abi_constructs_clang_volatile_O0 C clang -O0
  __tsan_volatile_read2,__tsan_volatile_write8,__tsan_unaligned_volatile_read4
  -mcx16 -mllvm -tsan-distinguish-volatile=1)
abi_add_constructs(abi_constructs_cxx_clang_volatile CXX clang -O2 ${ABI_CXX_CALLS}
  -mllvm -tsan-distinguish-volatile=1)
abi_add_constructs(abi_constructs_gcc_volatile C gcc -O2
  __tsan_volatile_read4,__tsan_volatile_write4,__tsan_volatile_write1
  -mcx16 --param=tsan-distinguish-volatile=1)
# x op= y as one read-write hook (clang).
abi_add_constructs(abi_constructs_clang_compound C clang -O2
  __tsan_read_write4 -mcx16 -mllvm -tsan-compound-read-before-write=1)
# OpenMP runtimes are not instrumented; the parallel regions are.
abi_add_constructs(abi_constructs_gcc_openmp C gcc -O2 ${ABI_C_CALLS_gcc} -mcx16 -fopenmp)
abi_add_constructs(abi_constructs_clang_openmp C clang -O2 ${ABI_C_CALLS_clang} -mcx16 -fopenmp)

# ---- exact counts of what the atomic hooks deliver, through the real runtime ----
foreach(cc gcc clang)
  foreach(opt O0 O2)
    set(n abi_counts_${cc}_${opt})
    ameba_instrumented(NAME ${n} COMPILER ${cc} OPT -${opt}
      SOURCES ${ABI_DIR}/abi_counts.c FLAGS -mcx16)
    add_test(NAME ${n}
      COMMAND ${AMEBA_FRAGMENT_DIR}/oracle_check.sh ${AMEBA_TEST_BIN}/${n} ${ABI_DIR}/abi_counts.expect)
    set_tests_properties(${n} PROPERTIES ENVIRONMENT "ORACLE_EXPECT=${AMEBA_TEST_BIN}/oracle_expect")
    add_test(NAME ${n}_output
      COMMAND ${ABI_RUN} --expected ${ABI_DIR}/abi_counts.stdout --calls __tsan_atomic128_exchange
              -- ${AMEBA_TEST_BIN}/${n})
  endforeach()
endforeach()
