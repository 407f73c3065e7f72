# Included by ctest (leasehold_discover_tests ... BY_SUITE): registers one
# test per GoogleTest suite of `binary`, run as --gtest_filter=Suite.*, with
# `properties` (a list of names and values). The suites are listed again
# only when the binary is newer than `suites_file`, which keeps them.
if(NOT EXISTS "${binary}")
  message(FATAL_ERROR "the test binary ${binary} is not built")
endif()
if(NOT EXISTS "${suites_file}" OR "${binary}" IS_NEWER_THAN "${suites_file}")
  execute_process(COMMAND "${binary}" --gtest_list_tests
                  OUTPUT_VARIABLE listing ERROR_VARIABLE errors RESULT_VARIABLE result
                  TIMEOUT 120)
  if(NOT result EQUAL 0)
    message(FATAL_ERROR "${binary} --gtest_list_tests failed (${result}):\n${errors}")
  endif()
  # A suite's line is its name and a dot, maybe followed by a comment
  # (`  # TypeParam = ...`); its cases' lines are indented.
  string(REPLACE "\n" ";" lines "${listing}")
  set(script "")
  foreach(line IN LISTS lines)
    if(line MATCHES "^([^ #]+)\\.( .*)?$")
      set(suite "${CMAKE_MATCH_1}")
      string(APPEND script
             "add_test([==[${suite}]==] [==[${binary}]==] [==[--gtest_filter=${suite}.*]==])\n"
             "set_tests_properties([==[${suite}]==] PROPERTIES ${properties})\n")
    endif()
  endforeach()
  if(script STREQUAL "")
    message(FATAL_ERROR "${binary} --gtest_list_tests listed no suite")
  endif()
  file(WRITE "${suites_file}" "${script}")
endif()
include("${suites_file}")
