# The Monitoring Request Interface (mri/, monitor/mri_server.c):
#   mri_protocol        framing: headers, the incremental reader, limits, timeouts
#   mri_dispatch        the dispatcher against a fake monitor: a table of
#                       malformed and out-of-order requests, whole sessions
#   mri_attach_count    attach by pid to a live target, list, count over
#                       intervals, detach: exact against the target and the oracle
#   mri_killed_client   kill -9 of a client mid-experiment; the target goes on
#   mri_target_exit     the target exits under a client: EEXITED + final counts
#   mri_oracle_mark     an oracle mark between phases holds exactly the counts so far
#   mri_provider_exit   the agent's provider: a switch that finds the target gone
#                       gives the kept counters the old experiment's final counts
#   mri_replace_exit    the target exits while the monitor replies to a replace:
#                       the reply still precedes the exit event (no interval lost)
#   mri_local           the API in-process (mri_open_local) and by pid on itself
#   mri_env             AMEBA_MRI=0, refused socket directories, discovery
#   mri_other_user      another uid cannot attach (runs clients as nobody; root only)
#   mri_fuzz            a bounded libFuzzer run of parser + dispatcher (needs clang)
set(MRI_TEST_DIR ${AMEBA_FRAGMENT_DIR})

add_executable(mri_test_protocol ${MRI_TEST_DIR}/test_protocol.c)
target_include_directories(mri_test_protocol PRIVATE ${AMEBA_TEST_INCLUDE})
target_link_libraries(mri_test_protocol PRIVATE ameba-mri)
set_target_properties(mri_test_protocol PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})
add_test(NAME mri_protocol COMMAND ${AMEBA_TEST_BIN}/mri_test_protocol)

add_executable(mri_test_dispatch ${MRI_TEST_DIR}/test_dispatch.c ${MRI_TEST_DIR}/fake_ops.c)
target_include_directories(mri_test_dispatch PRIVATE ${AMEBA_TEST_INCLUDE} ${MRI_TEST_DIR})
target_link_libraries(mri_test_dispatch PRIVATE ameba-mri)
set_target_properties(mri_test_dispatch PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})
add_test(NAME mri_dispatch COMMAND ${AMEBA_TEST_BIN}/mri_test_dispatch)

# The live target, instrumented and native (the reference output).
ameba_instrumented(NAME mri_target SOURCES ${MRI_TEST_DIR}/mri_target.c)
ameba_instrumented(NAME mri_target_native NATIVE SOURCES ${MRI_TEST_DIR}/mri_target.c)

add_executable(mri_attach_test ${MRI_TEST_DIR}/mri_attach_test.c
  ${CMAKE_SOURCE_DIR}/agent/provider_mri.c ${CMAKE_SOURCE_DIR}/agent/provider_mri_world.c)
target_include_directories(mri_attach_test PRIVATE ${AMEBA_TEST_INCLUDE} ${CMAKE_SOURCE_DIR}/agent)
target_link_libraries(mri_attach_test PRIVATE ameba-mri ameba-agent-core Threads::Threads)
target_compile_definitions(mri_attach_test PRIVATE _GNU_SOURCE)
set_target_properties(mri_attach_test PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})
add_dependencies(mri_attach_test mri_target mri_target_native)
foreach(scenario count killed exit mark provider_exit replace_exit fold provider_fold rows)
  if(scenario STREQUAL "count")
    set(name mri_attach_count)
  elseif(scenario STREQUAL "provider_exit")
    set(name mri_provider_exit)
  elseif(scenario STREQUAL "replace_exit")
    set(name mri_replace_exit)
  elseif(scenario STREQUAL "mark")
    set(name mri_oracle_mark)
  elseif(scenario STREQUAL "killed")
    set(name mri_killed_client)
  elseif(scenario STREQUAL "fold")
    set(name mri_fold)
  elseif(scenario STREQUAL "provider_fold")
    set(name mri_provider_fold)
  elseif(scenario STREQUAL "rows")
    set(name mri_thread_rows)
  else()
    set(name mri_target_exit)
  endif()
  add_test(NAME ${name} COMMAND ${AMEBA_TEST_BIN}/mri_attach_test ${scenario}
    ${AMEBA_TEST_BIN}/mri_target ${AMEBA_TEST_BIN}/mri_target_native)
  set_tests_properties(${name} PROPERTIES TIMEOUT 120)
endforeach()
# The fold scenario again with each thread simulating its own accesses in
# host order: invalidations then reach lines of freed blocks too.
add_test(NAME mri_fold_host COMMAND ${AMEBA_TEST_BIN}/mri_attach_test fold
  ${AMEBA_TEST_BIN}/mri_target ${AMEBA_TEST_BIN}/mri_target_native)
set_tests_properties(mri_fold_host PROPERTIES TIMEOUT 120 ENVIRONMENT AMEBA_SIM_ORDER=host)

# In-process: the program gets mri.h's API from libameba-rt itself.
ameba_instrumented(NAME mri_local SOURCES ${MRI_TEST_DIR}/mri_local.c
  FLAGS -I${CMAKE_SOURCE_DIR}/mri -I${CMAKE_SOURCE_DIR}/include -I${AMEBA_TEST_INCLUDE})
add_test(NAME mri_local COMMAND ${AMEBA_TEST_BIN}/mri_local)
set_tests_properties(mri_local PROPERTIES TIMEOUT 60)

add_test(NAME mri_env COMMAND sh ${MRI_TEST_DIR}/mri_env.sh $<TARGET_FILE:ameba>
  ${AMEBA_TEST_BIN}/mri_target)
set_tests_properties(mri_env PROPERTIES TIMEOUT 120)

add_executable(mri_peer_check ${MRI_TEST_DIR}/mri_peer_check.c)
target_link_libraries(mri_peer_check PRIVATE ameba-mri)
set_target_properties(mri_peer_check PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMEBA_TEST_BIN})
add_test(NAME mri_other_user COMMAND sh ${MRI_TEST_DIR}/mri_other_user.sh $<TARGET_FILE:ameba>
  ${AMEBA_TEST_BIN}/mri_target ${AMEBA_TEST_BIN}/mri_peer_check)
set_tests_properties(mri_other_user PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77)
add_test(NAME mri_squat COMMAND sh ${MRI_TEST_DIR}/mri_squat.sh $<TARGET_FILE:ameba>
  ${AMEBA_TEST_BIN}/mri_target)
set_tests_properties(mri_squat PROPERTIES TIMEOUT 90 SKIP_RETURN_CODE 77)

# libFuzzer: the parser and dispatcher over the fake monitor, built by clang
# with ASan + UBSan as a program of its own (it never links the runtime,
# whose allocator interposers do not mix with ASan). CI runs a bounded
# number of inputs from the committed seed corpus; new inputs go to the
# build tree, never to the source tree.
find_program(AMEBA_CLANG NAMES clang clang-14)
if(AMEBA_CLANG)
  set(MRI_FUZZ ${AMEBA_TEST_BIN}/mri_fuzz_dispatch)
  set(MRI_FUZZ_SOURCES ${MRI_TEST_DIR}/fuzz_dispatch.c ${MRI_TEST_DIR}/fake_ops.c
    ${CMAKE_SOURCE_DIR}/mri/dispatch.c ${CMAKE_SOURCE_DIR}/mri/dispatch_ops.c
    ${CMAKE_SOURCE_DIR}/mri/dispatch_exp.c
    ${CMAKE_SOURCE_DIR}/mri/protocol.c
    ${CMAKE_SOURCE_DIR}/mri/common.c)
  add_custom_command(OUTPUT ${MRI_FUZZ}
    COMMAND ${AMEBA_CLANG} -g -O1 -fsanitize=fuzzer,address,undefined
            -fno-sanitize-recover=undefined -D_GNU_SOURCE -I${CMAKE_SOURCE_DIR}/include
            -I${CMAKE_SOURCE_DIR}/mri -I${MRI_TEST_DIR} ${MRI_FUZZ_SOURCES} -lcjson -o ${MRI_FUZZ}
    DEPENDS ${MRI_FUZZ_SOURCES} ${CMAKE_SOURCE_DIR}/mri/dispatch.h
            ${CMAKE_SOURCE_DIR}/mri/dispatch_int.h ${CMAKE_SOURCE_DIR}/mri/json.h
            ${CMAKE_SOURCE_DIR}/mri/protocol.h ${MRI_TEST_DIR}/fake_ops.h
    COMMENT "libFuzzer target mri_fuzz_dispatch" VERBATIM)
  add_custom_target(mri_fuzz_dispatch ALL DEPENDS ${MRI_FUZZ})
  set(MRI_FUZZ_WORK ${CMAKE_BINARY_DIR}/tests/mri-fuzz-corpus)
  file(MAKE_DIRECTORY ${MRI_FUZZ_WORK})
  add_test(NAME mri_fuzz COMMAND ${MRI_FUZZ} -runs=20000 -seed=1 -max_len=65536 -timeout=10
    -rss_limit_mb=2048 -dict=${MRI_TEST_DIR}/fuzz.dict ${MRI_FUZZ_WORK} ${MRI_TEST_DIR}/corpus)
  set_tests_properties(mri_fuzz PROPERTIES TIMEOUT 300)
else()
  message(STATUS "clang not found: the MRI fuzz target (mri_fuzz) is not built")
endif()
