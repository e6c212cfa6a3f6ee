# stats.cmake: tests of the stats library and trace-stats (included from tests/CMakeLists.txt).
find_package(PkgConfig REQUIRED)
pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)

add_executable(test_stats ${CMAKE_CURRENT_SOURCE_DIR}/test_stats.c)
target_link_libraries(test_stats PRIVATE tracekit_static PkgConfig::CMOCKA)
target_compile_definitions(test_stats PRIVATE TK_TESTDATA="${PROJECT_SOURCE_DIR}/testdata/stats")
add_test(NAME stats_unit COMMAND test_stats)

# The tables' part of each batch made on the parse threads, taken whole.
add_executable(test_stats_batch ${CMAKE_CURRENT_SOURCE_DIR}/test_stats_batch.c)
target_link_libraries(test_stats_batch PRIVATE tk_testutil)
add_test(NAME stats_batch COMMAND test_stats_batch)

# Golden tables: torch 1.13's own key_averages().table() output for the run
# that wrote trace.json, and hand-checked tables of small traces.
set(tk_stats_data ${PROJECT_SOURCE_DIR}/testdata/stats)
function(tk_stats_golden name expected args)
  add_test(NAME stats_cli_${name}
    COMMAND ${CMAKE_COMMAND} -DTOOL=$<TARGET_FILE:trace-stats> "-DARGS=${args}"
      -DEXPECTED=${tk_stats_data}/${expected} -DWORKDIR=${tk_stats_data}
      -P ${CMAKE_CURRENT_SOURCE_DIR}/stats_cli.cmake)
endfunction()
tk_stats_golden(torch_default torch113/table_default.txt "torch113/trace.json -n 1000")
tk_stats_golden(torch_cpu_total torch113/table_cpu_time_total.txt
  "torch113/trace.json --sort cpu_time_total --row-limit 1000")
tk_stats_golden(torch_self_cpu torch113/table_self_cpu_time_total.txt
  "torch113/trace.json --sort self_cpu_time_total --row-limit 10")
tk_stats_golden(torch_count torch113/table_count.txt "torch113/trace.json -s count -n 1000")
tk_stats_golden(tiny_text expected/tiny_gpu.txt "tiny_gpu.json")
tk_stats_golden(tiny_csv expected/tiny_gpu.csv "tiny_gpu.json -f csv")
tk_stats_golden(tiny_json expected/tiny_gpu.jsonout "tiny_gpu.json -f json")
tk_stats_golden(tiny_md expected/tiny_gpu.md "tiny_gpu.json -f md")
tk_stats_golden(tiny_extended expected/tiny_gpu_extended.txt
  "tiny_gpu.json -t ops --flops extended --sort flops --time-unit ms")
tk_stats_golden(tiny_shapes expected/tiny_gpu_shapes.txt
  "tiny_gpu.json -t ops --group-by-input-shape --name aten::*")
tk_stats_golden(tiny_ranks expected/tiny_ranks.txt
  "tiny_gpu.json tiny_gpu_rank1.json -s cuda_time_total -t ops,kernels")
tk_stats_golden(tiny_window expected/tiny_gpu_window.txt "tiny_gpu.json -t ops --window 60:100")

# Every real trace: trace-stats runs, prints a table and valid JSON.
add_test(NAME stats_realtraces
  COMMAND ${TK_SKIPS} needs stats_realtraces ${TK_SKIP_LOG} ${TK_REALTRACES}
          sh ${CMAKE_CURRENT_SOURCE_DIR}/stats_realtraces.sh $<TARGET_FILE:trace-stats> @REALTRACES@)
set_tests_properties(stats_realtraces PROPERTIES SKIP_RETURN_CODE 77)
