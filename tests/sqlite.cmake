# sqlite.cmake: SQLite output (.sqlite) in the tools, checked from outside with Python's sqlite3
# (included from tests/CMakeLists.txt): every slice, argument, flow, counter and metadata event
# of the JSON, depth and parent_id, errors, and the queries of docs/sql.md. sqlite_real is
# skipped (77) without the real traces.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
foreach(mode cli real)
  set(needs uses)
  if(mode STREQUAL real)
    set(needs needs)
  endif()
  add_test(NAME sqlite_${mode}
    COMMAND ${TK_SKIPS} ${needs} sqlite_${mode} ${TK_SKIP_LOG} ${TK_REALTRACES}
            ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/cli/test_sqlite.py ${mode}
            $<TARGET_FILE:trace-convert> $<TARGET_FILE:trace-merge> $<TARGET_FILE:trace-stats>
            ${PROJECT_SOURCE_DIR}/testdata @REALTRACES@ ${PROJECT_SOURCE_DIR}/docs/sql.md)
  set_tests_properties(sqlite_${mode} PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
endforeach()
# the sanitizer build runs the tools on every real trace and leaves the checks
# made in Python (and protoc) to the plain build (TK_TEST_SANITIZED in the script)
if(TK_SANITIZE)
  set_tests_properties(sqlite_real PROPERTIES ENVIRONMENT TK_TEST_SANITIZED=1)
endif()
