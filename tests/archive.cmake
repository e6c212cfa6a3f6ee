# archive.cmake: traces read straight from archives: the library (tk_inputs, ARCHIVE//MEMBER) and the tools (included from tests/CMakeLists.txt).
find_package(LibArchive REQUIRED)

# archives are written at test time with libarchive's write API
add_executable(test_archive ${CMAKE_CURRENT_LIST_DIR}/test_archive.c)
target_link_libraries(test_archive PRIVATE tk_testutil LibArchive::LibArchive ZLIB::ZLIB)
add_test(NAME archive COMMAND test_archive)
set_tests_properties(archive PROPERTIES TIMEOUT 300)
