# tkb.cmake: the .tkb size and speed benchmark (included from bench/CMakeLists.txt).
add_executable(tkb_bench ${CMAKE_CURRENT_LIST_DIR}/tkb_bench.c)
target_link_libraries(tkb_bench PRIVATE tracekit_static)
