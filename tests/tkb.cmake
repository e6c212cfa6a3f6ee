# tkb.cmake: tests of the .tkb format and its fuzz harness (included from tests/CMakeLists.txt).
if(NOT TARGET PkgConfig::CMOCKA)
  pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
endif()
find_package(Threads REQUIRED)

add_executable(test_tkb ${CMAKE_CURRENT_LIST_DIR}/test_tkb.c)
target_link_libraries(test_tkb PRIVATE tk_testutil tracekit_static PkgConfig::CMOCKA Threads::Threads)
# TK_REALTRACES in the environment overrides this default
target_compile_definitions(test_tkb PRIVATE TK_REALTRACES_DIR="${PROJECT_SOURCE_DIR}/../shared/realtraces")
add_test(NAME tkb COMMAND test_tkb)
set_tests_properties(tkb PROPERTIES TIMEOUT 300)
add_test(NAME tkb_realtraces COMMAND ${TK_SKIPS} needs tkb_realtraces ${TK_SKIP_LOG} ${TK_REALTRACES}
  $<TARGET_FILE:test_tkb> --real)
set_tests_properties(tkb_realtraces PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77)
