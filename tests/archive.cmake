# archive.cmake: traces read straight from archives: the library (tk_inputs, ARCHIVE//MEMBER) and the tools (included from tests/CMakeLists.txt).
find_package(LibArchive REQUIRED)

# archives are written at test time with libarchive's write API
add_executable(test_archive ${CMAKE_CURRENT_LIST_DIR}/test_archive.c)
target_link_libraries(test_archive PRIVATE tk_testutil LibArchive::LibArchive ZLIB::ZLIB)
add_test(NAME archive COMMAND test_archive)
set_tests_properties(archive PROPERTIES TIMEOUT 300)

# the tools on archives built with Python's tarfile and zipfile, against the
# same traces unpacked; the real-trace part is skipped (77) when they are absent
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME cli_archive
  COMMAND ${TK_SKIPS} uses cli_archive ${TK_SKIP_LOG} ${TK_REALTRACES}
          ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/cli/test_archive.py
          $<TARGET_FILE:trace-convert> $<TARGET_FILE:trace-merge> $<TARGET_FILE:trace-stats>
          $<TARGET_FILE:trace-split> ${PROJECT_SOURCE_DIR}/testdata @REALTRACES@)
set_tests_properties(cli_archive PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
