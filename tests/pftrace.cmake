# pftrace.cmake: the Perfetto protobuf format (.pftrace) in the tools, checked from outside
# (included from tests/CMakeLists.txt). Each converted trace must pass protoc's decoding
# against Perfetto's own schema and pftrace_check.py's semantic checks, come back to the
# same JSON, and give trace-stats the same tables. Skipped (77) without protoc or the
# schema; pftrace_real also without the real traces.
if(DEFINED ENV{TK_PERFETTO_PROTO})
  set(TK_PERFETTO_PROTO $ENV{TK_PERFETTO_PROTO})
else()
  set(TK_PERFETTO_PROTO ${PROJECT_SOURCE_DIR}/../shared/perfetto/perfetto_trace.proto)
endif()
find_package(Python3 COMPONENTS Interpreter REQUIRED)
foreach(mode cli real)
  set(needs uses)
  if(mode STREQUAL real)
    set(needs needs)
  endif()
  add_test(NAME pftrace_${mode}
    COMMAND ${TK_SKIPS} ${needs} pftrace_${mode} ${TK_SKIP_LOG} ${TK_REALTRACES}
            ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/cli/test_pftrace.py ${mode}
            $<TARGET_FILE:trace-convert> $<TARGET_FILE:trace-merge> $<TARGET_FILE:trace-stats>
            $<TARGET_FILE:trace-split> ${PROJECT_SOURCE_DIR}/testdata @REALTRACES@
            ${TK_PERFETTO_PROTO} ${CMAKE_CURRENT_LIST_DIR}/pftrace_check.py)
  set_tests_properties(pftrace_${mode} PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
endforeach()
# the sanitizer build runs the tools on every real trace and leaves the checks
# made in Python (and protoc) to the plain build (TK_TEST_SANITIZED in the script)
if(TK_SANITIZE)
  set_tests_properties(pftrace_real PROPERTIES ENVIRONMENT TK_TEST_SANITIZED=1)
endif()
