# sqlite.cmake: SQLite output (.sqlite) in the tools, checked from outside with Python's sqlite3
# (included from tests/CMakeLists.txt): every slice, argument, flow, counter and metadata event
# of the JSON, depth and parent_id, errors, and the queries of docs/sql.md. sqlite_real is
# skipped (77) without the real traces.
if(DEFINED ENV{TK_REALTRACES})
  set(TK_SQLITE_REALTRACES $ENV{TK_REALTRACES})
else()
  set(TK_SQLITE_REALTRACES ${PROJECT_SOURCE_DIR}/../shared/realtraces)
endif()
find_package(Python3 COMPONENTS Interpreter REQUIRED)
foreach(mode cli real)
  add_test(NAME sqlite_${mode}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/cli/test_sqlite.py ${mode}
            $<TARGET_FILE:trace-convert> $<TARGET_FILE:trace-merge> $<TARGET_FILE:trace-stats>
            ${PROJECT_SOURCE_DIR}/testdata ${TK_SQLITE_REALTRACES} ${PROJECT_SOURCE_DIR}/docs/sql.md)
  set_tests_properties(sqlite_${mode} PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
endforeach()
