# tkb.cmake: tests of the .tkb format and its fuzz harness (included from tests/CMakeLists.txt).
if(NOT TARGET PkgConfig::CMOCKA)
  pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
endif()
find_package(Threads REQUIRED)

add_executable(test_tkb ${CMAKE_CURRENT_LIST_DIR}/test_tkb.c)
target_link_libraries(test_tkb PRIVATE tracekit_static PkgConfig::CMOCKA Threads::Threads)
# TK_REALTRACES in the environment overrides this default
target_compile_definitions(test_tkb PRIVATE TK_REALTRACES_DIR="${PROJECT_SOURCE_DIR}/../shared/realtraces")
add_test(NAME tkb COMMAND test_tkb)
set_tests_properties(tkb PROPERTIES TIMEOUT 300)
add_test(NAME tkb_realtraces COMMAND test_tkb --real)
set_tests_properties(tkb_realtraces PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77)

# The fuzz harness also builds without libFuzzer: its main() reads the files
# named on the command line, and the test runs it over the seed corpus.
add_executable(fuzz_tkb_files ${CMAKE_CURRENT_LIST_DIR}/fuzz/fuzz_tkb.c)
target_compile_definitions(fuzz_tkb_files PRIVATE TK_FUZZ_MAIN=1)
target_link_libraries(fuzz_tkb_files PRIVATE tracekit_static)
file(GLOB TK_TKB_SEEDS ${CMAKE_CURRENT_LIST_DIR}/fuzz/corpus/*)
add_test(NAME tkb_fuzz_seeds COMMAND fuzz_tkb_files ${TK_TKB_SEEDS})

if(TK_FUZZ AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  # the library is compiled again with coverage instrumentation for libFuzzer
  get_target_property(TK_LIB_SOURCES tracekit_obj SOURCES)
  list(TRANSFORM TK_LIB_SOURCES PREPEND ${PROJECT_SOURCE_DIR}/libtrace/)
  add_executable(fuzz_tkb ${CMAKE_CURRENT_LIST_DIR}/fuzz/fuzz_tkb.c ${TK_LIB_SOURCES})
  target_include_directories(fuzz_tkb PRIVATE ${PROJECT_SOURCE_DIR}/libtrace/include)
  target_compile_options(fuzz_tkb PRIVATE -fsanitize=fuzzer,address,undefined -g)
  target_link_options(fuzz_tkb PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_tkb PRIVATE ZLIB::ZLIB Threads::Threads SQLite::SQLite3 LibArchive::LibArchive)
endif()
