# merge.cmake: tests of the sorter and of trace-merge (included from tests/CMakeLists.txt).
if(NOT TARGET PkgConfig::CMOCKA)
  pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
endif()

add_executable(test_sort test_sort.c)
target_link_libraries(test_sort PRIVATE tracekit_static PkgConfig::CMOCKA)
add_test(NAME sort COMMAND test_sort)
set_tests_properties(sort PROPERTIES TIMEOUT 120)

# trace-merge on the real traces (skipped, exit 77, when they are absent)
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME cli_merge
  COMMAND ${TK_SKIPS} needs cli_merge ${TK_SKIP_LOG} ${TK_REALTRACES}
          ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cli/test_merge.py
          $<TARGET_FILE:trace-merge> @REALTRACES@)
set_tests_properties(cli_merge PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)

add_executable(test_merge_tkb test_merge_tkb.c)
target_link_libraries(test_merge_tkb PRIVATE tracekit_static PkgConfig::CMOCKA)
add_test(NAME merge_tkb COMMAND test_merge_tkb)
set_tests_properties(merge_tkb PROPERTIES TIMEOUT 60)
