# The collector's tests: record conversion, the buffer path into .tkb, loading without a GPU.
# Included from tests/CMakeLists.txt; GPU-only checks live in tests/gpu/ and are not run by ctest.
if(NOT TK_HAVE_COLLECTOR)
  return()
endif()
find_package(Threads REQUIRED)
if(NOT TARGET PkgConfig::CMOCKA)
  pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
endif()

foreach(t test_collector_convert test_collector_stream)
  add_executable(${t} ${CMAKE_CURRENT_SOURCE_DIR}/${t}.c $<TARGET_OBJECTS:tkcollect_obj>)
  target_include_directories(${t} PRIVATE ${PROJECT_SOURCE_DIR}/collector)
  target_include_directories(${t} SYSTEM PRIVATE ${TK_CUPTI_INCLUDE_DIR})
  target_link_libraries(${t} PRIVATE PkgConfig::CMOCKA tracekit_static Threads::Threads ${CMAKE_DL_LIBS})
  add_test(NAME ${t} COMMAND ${t})
  set_tests_properties(${t} PROPERTIES TIMEOUT 300)
endforeach()

add_executable(test_collector_load ${CMAKE_CURRENT_SOURCE_DIR}/test_collector_load.c)
target_link_libraries(test_collector_load PRIVATE ${CMAKE_DL_LIBS})
add_test(NAME collector_load COMMAND test_collector_load $<TARGET_FILE:tkcollect>)
set_tests_properties(collector_load PROPERTIES TIMEOUT 120)

# Bytes per kernel record in a compressed .tkb, from 100k realistic synthetic kernels.
add_executable(collector_size ${CMAKE_CURRENT_SOURCE_DIR}/collector_size.c $<TARGET_OBJECTS:tkcollect_obj>)
target_include_directories(collector_size PRIVATE ${PROJECT_SOURCE_DIR}/collector)
target_include_directories(collector_size SYSTEM PRIVATE ${TK_CUPTI_INCLUDE_DIR})
target_link_libraries(collector_size PRIVATE tracekit_static Threads::Threads ${CMAKE_DL_LIBS})
add_test(NAME collector_size COMMAND collector_size --max 24)

# The launcher: help, usage errors, and the environment it gives the command.
add_test(NAME trace_collect_help COMMAND trace-collect --help)
add_test(NAME trace_collect_usage COMMAND trace-collect --schedule bogus=1 -- true)
set_tests_properties(trace_collect_usage PROPERTIES WILL_FAIL TRUE)
add_test(NAME trace_collect_env COMMAND trace-collect -o ${CMAKE_CURRENT_BINARY_DIR}/collect_out
  -a kernel,nvtx --schedule active=2 -- sh -c "test -f \"$CUDA_INJECTION64_PATH\" && echo \"$TK_OUTPUT_DIR $TK_ACTIVITIES $TK_SCHEDULE\" && env | grep -q NVTX_INJECTION64_PATH=")
set_tests_properties(trace_collect_env PROPERTIES
  PASS_REGULAR_EXPRESSION "collect_out kernel,nvtx active=2")

# Loaded through LD_PRELOAD into a program that never uses CUDA, it must not
# get in the way. (Not under the sanitizers: their runtime must load first.)
if(NOT TK_SANITIZE)
  add_test(NAME collector_preload COMMAND env LD_PRELOAD=$<TARGET_FILE:tkcollect>
    TK_OUTPUT_DIR=${CMAKE_CURRENT_BINARY_DIR}/preload_out sh -c "echo still-running")
  set_tests_properties(collector_preload PROPERTIES PASS_REGULAR_EXPRESSION "still-running" TIMEOUT 120)
endif()

# tests/gpu: built when nvcc is there, run by hand on a GPU machine (cases.sh).
find_program(TK_NVCC nvcc HINTS ${TK_CUDA_HINTS} /usr/local/cuda/bin)
if(TK_NVCC)
  add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/gpu/launch_bench
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/gpu
    COMMAND ${TK_NVCC} -O2 -o ${CMAKE_CURRENT_BINARY_DIR}/gpu/launch_bench
      ${CMAKE_CURRENT_SOURCE_DIR}/gpu/launch_bench.cu -ldl
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/gpu/launch_bench.cu ${CMAKE_CURRENT_SOURCE_DIR}/gpu/gpu_common.cuh
    COMMENT "nvcc tests/gpu/launch_bench.cu")
  add_custom_command(OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/gpu/gpu_cases
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/gpu
    COMMAND ${TK_NVCC} -O2 -o ${CMAKE_CURRENT_BINARY_DIR}/gpu/gpu_cases
      ${CMAKE_CURRENT_SOURCE_DIR}/gpu/gpu_cases.cu -ldl -lpthread
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/gpu/gpu_cases.cu ${CMAKE_CURRENT_SOURCE_DIR}/gpu/gpu_common.cuh
    COMMENT "nvcc tests/gpu/gpu_cases.cu")
  add_custom_target(gpu_launch_bench ALL DEPENDS ${CMAKE_CURRENT_BINARY_DIR}/gpu/launch_bench
    ${CMAKE_CURRENT_BINARY_DIR}/gpu/gpu_cases)
endif()
