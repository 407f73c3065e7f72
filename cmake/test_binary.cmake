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
# -O1 for the tests' own files: the code under test is the libraries',
# built as the product is (-O2); a test's assertions and fixtures gain
# nothing from -O2 and compile in three quarters of the time without it.
function(leasehold_test_binary target)
  set(headers <gtest/gtest.h> <gmock/gmock.h> <algorithm> <atomic> <chrono>
      <condition_variable> <filesystem> <fstream> <functional> <map> <memory> <mutex>
      <optional> <set> <string> <thread> <vector>)
  if("JSON" IN_LIST ARGN)
    list(APPEND headers <boost/json.hpp>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers})
  target_compile_options(${target} PRIVATE $<$<CONFIG:RelWithDebInfo,Release>:-O1>)
endfunction()
