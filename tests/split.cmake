# split.cmake: tests of the writer's byte budget and of trace-split (included from tests/CMakeLists.txt).
if(NOT TARGET PkgConfig::CMOCKA)
  pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka)
endif()
find_package(Python3 COMPONENTS Interpreter)

add_executable(test_split test_split.c)
target_link_libraries(test_split PRIVATE tracekit_static PkgConfig::CMOCKA)
add_test(NAME split_lib COMMAND test_split)

if(Python3_FOUND)
  add_test(NAME split_cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/split_cli.sh
    $<TARGET_FILE:trace-split> ${CMAKE_CURRENT_SOURCE_DIR})
  set_tests_properties(split_cli PROPERTIES TIMEOUT 600)

  add_test(NAME split_real COMMAND ${TK_SKIPS} needs split_real ${TK_SKIP_LOG} ${TK_REALTRACES}
    bash ${CMAKE_CURRENT_SOURCE_DIR}/split_real.sh $<TARGET_FILE:trace-split> ${CMAKE_CURRENT_SOURCE_DIR}
    @REALTRACES@)
  set_tests_properties(split_real PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77)
endif()

# Step attribution by launch (docs/steps.md) in trace-stats --steps and trace-split's step
# rules: a hand-built trace worked out by hand, and real traces against figures computed
# from their JSON in the test (steps_real is skipped, 77, without them).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
foreach(mode hand real)
  set(needs uses)
  if(mode STREQUAL real)
    set(needs needs)
  endif()
  add_test(NAME steps_${mode}
    COMMAND ${TK_SKIPS} ${needs} steps_${mode} ${TK_SKIP_LOG} ${TK_REALTRACES}
            ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/cli/test_steps.py ${mode}
            $<TARGET_FILE_DIR:trace-stats> ${PROJECT_SOURCE_DIR}/testdata @REALTRACES@)
  set_tests_properties(steps_${mode} PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
endforeach()

# trace-diff: a trace and a copy changed by hand, two step ranges of one trace, the formats and
# usage errors; two real runs against counts and times computed from their JSON (diff_real is
# skipped, 77, without the real traces).
foreach(mode hand real)
  set(needs uses)
  if(mode STREQUAL real)
    set(needs needs)
  endif()
  add_test(NAME diff_${mode}
    COMMAND ${TK_SKIPS} ${needs} diff_${mode} ${TK_SKIP_LOG} ${TK_REALTRACES}
            ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/cli/test_diff.py ${mode}
            $<TARGET_FILE_DIR:trace-diff> ${PROJECT_SOURCE_DIR}/testdata @REALTRACES@)
  set_tests_properties(diff_${mode} PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
endforeach()
