# stats_cli.cmake: run trace-stats with ARGS (a ;-list) and compare its output with EXPECTED.
separate_arguments(args UNIX_COMMAND "${ARGS}")
execute_process(COMMAND ${TOOL} ${args} WORKING_DIRECTORY ${WORKDIR}
  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "trace-stats ${ARGS} exited with ${rc}")
endif()
file(READ ${EXPECTED} want)
if(NOT out STREQUAL want)
  get_filename_component(base ${EXPECTED} NAME_WE) # one file per test: they run side by side
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/got_${base}.txt "${out}")
  message(FATAL_ERROR "output of trace-stats ${ARGS} differs from ${EXPECTED}; see "
    "${CMAKE_CURRENT_BINARY_DIR}/got_${base}.txt")
endif()
