# Renders the sample registry (render_sample) and checks the text with
# `promtool check metrics` (Debian package prometheus, from scripts/setup.sh),
# which parses the exposition format and lints names, types and help texts.
#
#   cmake -DSAMPLE=path/to/render_sample -DOUTPUT=path/to/sample.prom -P promtool_check.cmake

find_program(PROMTOOL promtool)
if(NOT PROMTOOL)
  message(FATAL_ERROR "promtool not found: install the Debian package prometheus "
                      "(scripts/setup.sh does) to check the metrics text")
endif()

execute_process(COMMAND ${SAMPLE} OUTPUT_FILE ${OUTPUT} RESULT_VARIABLE rendered)
if(NOT rendered EQUAL 0)
  message(FATAL_ERROR "${SAMPLE} failed: ${rendered}")
endif()
file(READ ${OUTPUT} text)
string(FIND "${text}" "leasehold_store_operation_seconds_bucket" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the sample has no store metrics:\n${text}")
endif()

execute_process(COMMAND ${PROMTOOL} check metrics INPUT_FILE ${OUTPUT}
                RESULT_VARIABLE checked OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT checked EQUAL 0 OR NOT out STREQUAL "" OR NOT err STREQUAL "")
  message(FATAL_ERROR "promtool check metrics refused ${OUTPUT} (exit ${checked}):\n${out}${err}")
endif()
message(STATUS "promtool check metrics accepts ${OUTPUT}")
