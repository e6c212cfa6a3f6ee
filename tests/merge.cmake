# merge.cmake: tests of the sorter and of trace-merge (included from tests/CMakeLists.txt).
if(NOT TARGET PkgConfig::CMOCKA)
  pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
endif()

add_executable(test_sort test_sort.c)
target_link_libraries(test_sort PRIVATE tracekit_static PkgConfig::CMOCKA)
add_test(NAME sort COMMAND test_sort)
set_tests_properties(sort PROPERTIES TIMEOUT 120)
