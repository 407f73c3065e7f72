# How the test binaries are compiled.
#
#   leasehold_test_binary(<target> [JSON])
#
# Precompiled headers: GoogleTest's, with the standard ones most tests
# include (JSON adds Boost.JSON's, for the tests that read JSON), take longer
# to parse than most test files take to compile; a binary's files share
# them, parsed once. What a file uses it still includes itself: the list
# changes how fast it builds, never whether it does.
#
# Unity batches of eight files: a binary's test files compile as a few
# translation units, which share the instantiations of GoogleTest's and the
# libraries' templates (under the sanitizers, the unit tests' objects took
# some 40% less CPU). A file that cannot share its batch (two files defining
# the same name in their anonymous namespaces) sets
# SKIP_UNITY_BUILD_INCLUSION; a name that two files repeat is better shared.
#
# -O0 for the tests' own files: the code under test is the libraries',
# built as the product is (-O2, or -O1 under the sanitizers); a test's
# assertions and fixtures gain nothing from the optimiser, and templates such
# as GoogleTest's and the fixtures' compile in half the time without it.
function(leasehold_test_binary target)
  set(headers <gtest/gtest.h> <gmock/gmock.h> <algorithm> <atomic> <chrono>
      <condition_variable> <filesystem> <fstream> <functional> <map> <memory> <mutex>
      <optional> <set> <string> <thread> <vector>)
  if("JSON" IN_LIST ARGN)
    list(APPEND headers <boost/json.hpp>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers})
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  target_compile_options(${target} PRIVATE $<$<CONFIG:RelWithDebInfo,Release>:-O0>)
endfunction()

# Which tests a build makes (LEASEHOLD_TESTS):
#
#   unit    the tests with the code under test linked in: unit_tests and
#           movie_unit_tests (beside the sources), conformance_tests,
#           sim_tests, dynamodb_tests and aws_tests (labels unit, dynamodb, aws)
#   system  the others: the real binary in processes (process), the HTTP
#           server and the app through sockets (server, app), other
#           implementations (interop), browsers, the installed package and
#           the lint checks
#   all     both, for a build configured by hand
#
# `make test` builds each test binary once: the asan preset makes the unit
# tests, under ASan and UBSan, and the default preset the system tests,
# against the optimised build that ships. A test binary another build makes
# is left out of this build's `all` and its tests are not registered, so
# that ctest runs every test it lists. The target test_binaries builds the
# binaries and tools this build's tests need.
set(LEASEHOLD_TESTS all CACHE STRING "Which tests this build makes: all, unit or system")
set_property(CACHE LEASEHOLD_TESTS PROPERTY STRINGS all unit system)
if(NOT LEASEHOLD_TESTS MATCHES "^(all|unit|system)$")
  message(FATAL_ERROR "LEASEHOLD_TESTS is '${LEASEHOLD_TESTS}'; it takes all, unit or system")
endif()
if(LEASEHOLD_TESTS STREQUAL "system")
  set(LEASEHOLD_UNIT_TESTS OFF)
else()
  set(LEASEHOLD_UNIT_TESTS ON)
endif()
if(LEASEHOLD_TESTS STREQUAL "unit")
  set(LEASEHOLD_SYSTEM_TESTS OFF)
else()
  set(LEASEHOLD_SYSTEM_TESTS ON)
endif()
add_custom_target(test_binaries)

#   leasehold_test_target(<target> <unit|system>)
#
# A binary or tool of the unit or the system tests: built by test_binaries
# if this build has those tests, left out of `all` if it has not.
function(leasehold_test_target target kind)
  if((kind STREQUAL "unit" AND LEASEHOLD_UNIT_TESTS) OR
     (kind STREQUAL "system" AND LEASEHOLD_SYSTEM_TESTS))
    add_dependencies(test_binaries ${target})
  else()
    set_target_properties(${target} PROPERTIES EXCLUDE_FROM_ALL ON)
  endif()
endfunction()

#   leasehold_discover_tests(<target> <unit|system> LABEL <label> [TIMEOUT <seconds>]
#                            [BY_SUITE])
#
# The GoogleTest cases of a test binary, listed when ctest starts (the
# binary is not run at build time), if this build has tests of that kind.
# ctest starts the binary once per case, so it is linked position-dependent
# (-no-pie): as a PIE, the sanitized unit_tests holds two million
# relocations, applied at every start, which took half of its start time.
#
# BY_SUITE: one ctest test per suite (`Suite`, run as
# --gtest_filter=Suite.*) rather than per case. A start of a sanitized
# binary still costs about 0.14 CPU-seconds (ASan's set-up and the static
# constructors), and the unit tests' 1,100 cases mostly take less than that;
# their 155 suites are the same tests for a seventh of the starts (the unit
# run took 151 CPU-seconds instead of 263). A suite fails as a whole, and
# its output names the case that failed.
function(leasehold_discover_tests target kind)
  cmake_parse_arguments(PARSE_ARGV 2 arg "BY_SUITE" "LABEL;TIMEOUT" "")
  leasehold_test_target(${target} ${kind})
  get_target_property(excluded ${target} EXCLUDE_FROM_ALL)
  if(excluded)
    return()
  endif()
  target_link_options(${target} PRIVATE -no-pie)
  set(properties LABELS ${arg_LABEL})
  if(arg_TIMEOUT)
    list(APPEND properties TIMEOUT ${arg_TIMEOUT})
  endif()
  if(NOT arg_BY_SUITE)
    gtest_discover_tests(${target} DISCOVERY_MODE PRE_TEST DISCOVERY_TIMEOUT 120
                         PROPERTIES ${properties})
    return()
  endif()
  # As gtest_discover_tests' PRE_TEST mode: ctest includes this file, which
  # lists the binary's suites whenever the binary is newer than the list.
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites_include.cmake")
  file(GENERATE OUTPUT "${include_file}" CONTENT "\
set(binary [==[$<TARGET_FILE:${target}>]==])
set(suites_file [==[${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake]==])
set(properties [==[${properties}]==])
include([==[${PROJECT_SOURCE_DIR}/cmake/gtest_suites.cmake]==])
")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
