# Dormant cost of the access hooks (monitor/tsan_abi.c): the kernels of
# bench/instrument_overhead built natively and through `ameba cc`, timed side
# by side. `make bench-instrument-overhead` runs it; never part of ctest.
# Results and the investigation of what the hooks cost: docs/instrument-overhead.md.
set(IO_DIR ${CMAKE_CURRENT_SOURCE_DIR}/instrument_overhead)
set(IO_BIN ${CMAKE_BINARY_DIR}/bench/instrument_overhead)
set(IO_SRC ${IO_DIR}/kernels.c)
file(MAKE_DIRECTORY ${IO_BIN})

set(IO_COMMON -O2 -g -pthread)
set(IO_AMEBA ${CMAKE_BINARY_DIR}/bin/ameba)
set(IO_SHIM ${AMEBA_LIBDIR}/gcc-shim)

# name; command
set(IO_VARIANTS native dormant dormant_single dormant_noentry floor native_clang dormant_clang
  dormant_clang_single)
set(IO_CMD_native gcc ${IO_COMMON} ${IO_SRC} -o ${IO_BIN}/native)
set(IO_CMD_dormant ${IO_AMEBA} cc --compiler gcc ${IO_COMMON} ${IO_SRC} -o ${IO_BIN}/dormant)
# one instrumented body per function, as before the dual path (docs/dual-path.md)
set(IO_CMD_dormant_single ${IO_AMEBA} cc --compiler gcc --ameba-single-path ${IO_COMMON}
  ${IO_SRC} -o ${IO_BIN}/dormant_single)
set(IO_CMD_dormant_noentry ${IO_AMEBA} cc --compiler gcc --ameba-single-path ${IO_COMMON}
  --param=tsan-instrument-func-entry-exit=0 ${IO_SRC} -o ${IO_BIN}/dormant_noentry)
# The floor: instrumented, linked with empty hooks (compiled without
# instrumentation) instead of the runtime; gcc's libtsan is kept out through
# the same shim `ameba cc` uses.
set(IO_CMD_floor gcc -O2 -c ${IO_DIR}/empty_hooks.c -o ${IO_BIN}/empty_hooks.o
  COMMAND gcc ${IO_COMMON} -fsanitize=thread -B${IO_SHIM}/ -L${IO_SHIM}
  ${IO_SRC} ${IO_BIN}/empty_hooks.o -o ${IO_BIN}/floor)
set(IO_CMD_native_clang clang ${IO_COMMON} ${IO_SRC} -o ${IO_BIN}/native_clang)
set(IO_CMD_dormant_clang ${IO_AMEBA} cc --compiler clang ${IO_COMMON} ${IO_SRC}
  -o ${IO_BIN}/dormant_clang)
set(IO_CMD_dormant_clang_single ${IO_AMEBA} cc --compiler clang --ameba-single-path ${IO_COMMON}
  ${IO_SRC} -o ${IO_BIN}/dormant_clang_single)

# clang ThinLTO with the hook fast path inlined (the prototype of
# `ameba cc --lto`, see docs/instrument-overhead.md). The hooks ship as
# ThinLTO bitcode: built with -fsanitize=thread so that their sanitize_thread
# attribute matches the instrumented callers (LLVM inlines only between
# functions that agree on it), every TSan instrumentation switched off so
# that they do not instrument themselves, no -g (the calls the TSan pass
# inserts carry no debug location, which the verifier rejects once the
# callee has debug info) and no -mcx16 (a callee with target features the
# caller lacks is not inlined). The rest of the runtime links as usual, from
# a copy of the archive without tsan_abi.c.o.
find_program(IO_CLANG clang)
find_program(IO_LLD ld.lld)
if(IO_CLANG AND IO_LLD)
  list(APPEND IO_VARIANTS dormant_clang_thinlto)
  set(IO_THIN_FLAGS -O2 -fPIC -fno-omit-frame-pointer -fvisibility=hidden
    -ftls-model=initial-exec -fno-stack-protector -D_GNU_SOURCE -DAMEBA_RT=1
    -I${CMAKE_SOURCE_DIR}/monitor -I${CMAKE_SOURCE_DIR}/include -I${CMAKE_SOURCE_DIR}/mri
    -fsanitize=thread -mllvm -tsan-instrument-memory-accesses=0
    -mllvm -tsan-instrument-func-entry-exit=0 -mllvm -tsan-instrument-atomics=0
    -mllvm -tsan-instrument-memintrinsics=0 -flto=thin)
  set(IO_CMD_dormant_clang_thinlto
    ${IO_CLANG} ${IO_THIN_FLAGS} -c ${CMAKE_SOURCE_DIR}/monitor/tsan_abi.c
      -o ${IO_BIN}/tsan_abi.thin.o
    COMMAND ${CMAKE_COMMAND} -E copy $<TARGET_FILE:ameba-rt> ${IO_BIN}/libameba-rt-nohooks.a
    COMMAND ${CMAKE_AR} d ${IO_BIN}/libameba-rt-nohooks.a tsan_abi.c.o
    COMMAND ${IO_CLANG} -flto=thin -fuse-ld=lld ${IO_COMMON} -fsanitize=thread
      -fno-omit-frame-pointer -fno-sanitize-link-runtime ${IO_SRC} ${IO_BIN}/tsan_abi.thin.o
      -Wl,--whole-archive ${IO_BIN}/libameba-rt-nohooks.a -Wl,--no-whole-archive
      -Wl,--dynamic-list=${AMEBA_LIBDIR}/ameba-rt.dynlist -ldw -lelf -ldl -lpthread -lm
      -o ${IO_BIN}/dormant_clang_thinlto)
endif()

# The switch's latency (switch.c), for each compiler `ameba cc` has the dual
# path for.
foreach(cc gcc clang)
  if(TARGET ameba-dual-${cc} OR (cc STREQUAL "clang" AND TARGET ameba-dual-llvm))
    list(APPEND IO_VARIANTS switch_${cc})
    set(IO_CMD_switch_${cc} ${IO_AMEBA} cc --compiler ${cc} ${IO_COMMON}
      -I${CMAKE_SOURCE_DIR}/monitor -I${CMAKE_SOURCE_DIR}/include
      -D_GNU_SOURCE ${IO_DIR}/switch.c -o ${IO_BIN}/switch_${cc})
    list(APPEND IO_VARIANTS switch_back_${cc})
    set(IO_CMD_switch_back_${cc} ${IO_AMEBA} cc --compiler ${cc} ${IO_COMMON}
      -I${CMAKE_SOURCE_DIR}/monitor -I${CMAKE_SOURCE_DIR}/include
      -D_GNU_SOURCE ${IO_DIR}/switch_back.c -o ${IO_BIN}/switch_back_${cc})
  endif()
endforeach()

set(IO_OUTPUTS "")
foreach(v ${IO_VARIANTS})
  add_custom_command(OUTPUT ${IO_BIN}/${v} COMMAND ${IO_CMD_${v}}
    DEPENDS ${IO_SRC} ${IO_DIR}/empty_hooks.c ${IO_DIR}/switch.c ${IO_DIR}/switch_back.c
            ${CMAKE_SOURCE_DIR}/monitor/tsan_abi.c ameba ameba-runtime
    COMMENT "instrument_overhead: ${v}" VERBATIM)
  list(APPEND IO_OUTPUTS ${IO_BIN}/${v})
endforeach()

add_custom_target(bench-instrument-overhead
  COMMAND ${IO_DIR}/run.sh ${IO_BIN}
  DEPENDS ${IO_OUTPUTS}
  COMMENT "instrument overhead benchmark (dormant hooks)" VERBATIM USES_TERMINAL)
