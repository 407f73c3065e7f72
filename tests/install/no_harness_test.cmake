# Installs this build into a fresh prefix and fails if any of it is harness
# rather than product: an installed file whose path, an archive member
# (`ar t`) or a defined symbol (`nm -C`, of every archive and program) names
# a baseline, a benchmark, the demo or the upstream simulator, or lies in
# their namespaces (leasehold::bench, leasehold::tools). The installed
# `leasehold` must also list the commands of the build tree's binary, in the
# same order, but for bench, demo and upstream-sim. Prints every installed
# file.
#
#   cmake -DBUILD_DIR=... -DWORK_DIR=... -DAR=... -DNM=... -DLEASEHOLD=... -P no_harness_test.cmake
#
# LEASEHOLD is the build tree's binary (tools/main.cc).

cmake_minimum_required(VERSION 3.25)

foreach(var BUILD_DIR WORK_DIR AR NM LEASEHOLD)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "no_harness_test: -D${var}=... is required")
  endif()
endforeach()

# Matched ignoring case. "demo" not before a "t", so that a product word
# such as "demote" does not count; the upstream simulator in every spelling
# (upstream_sim, upstream-sim, UpstreamSim).
set(harness_words "baseline|bench|demo([^t]|$)|upstream[-_]?sim")
set(harness_symbols "${harness_words}|leasehold::tools::")

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)

function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "no_harness_test: ${step} failed (${rc}):\n${out}\n${err}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()

# Appends to `found` (in the caller) each line that the command `ARGN`
# prints and `pattern` matches, ignoring case, as "<where>: <line>".
function(find_harness where pattern)
  execute_process(COMMAND ${ARGN} COMMAND grep -iE "${pattern}"
                  RESULTS_VARIABLE codes OUTPUT_VARIABLE out ERROR_VARIABLE err)
  list(GET codes 0 listed)
  list(GET codes 1 grepped)
  if(NOT listed EQUAL 0 OR grepped GREATER 1)
    message(FATAL_ERROR "no_harness_test: ${ARGN} failed (${codes}):\n${err}")
  endif()
  # nm names each member of an archive ("x.cc.o:"); ar t has reported those.
  string(REGEX REPLACE "[^\n]*\\.o:\n" "" out "${out}")
  string(REGEX MATCHALL "[^\n]+" lines "${out}")
  list(LENGTH lines n)
  set(found_count ${found_count})
  math(EXPR found_count "${found_count} + ${n}")
  set(found_count ${found_count} PARENT_SCOPE)
  foreach(line IN LISTS lines)
    string(LENGTH "${found}" shown)
    if(shown LESS 8000)
      set(found "${found}\n  ${where}: ${line}")
    endif()
  endforeach()
  set(found "${found}" PARENT_SCOPE)
endfunction()

run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
file(GLOB_RECURSE installed RELATIVE ${prefix} ${prefix}/*)
list(SORT installed)
list(LENGTH installed count)
string(REPLACE ";" "\n  " listing "${installed}")
message("no_harness_test: ${count} files installed:\n  ${listing}")
if(NOT "bin/leasehold" IN_LIST installed OR NOT "include/leasehold/lease.h" IN_LIST installed)
  message(FATAL_ERROR "no_harness_test: the install has no bin/leasehold or no headers")
endif()

set(found "")  # the first few kB of what was found
set(found_count 0)
set(archives 0)
foreach(file IN LISTS installed)
  string(TOLOWER "${file}" name)
  if(name MATCHES "${harness_words}")
    set(found "${found}\n  file name: ${file}")
    math(EXPR found_count "${found_count} + 1")
  endif()
  if(file MATCHES "\\.a$")
    math(EXPR archives "${archives} + 1")
    find_harness("${file} member" "${harness_words}" ${AR} t ${prefix}/${file})
  endif()
  if(file MATCHES "\\.a$" OR file MATCHES "^bin/")
    find_harness("${file} symbol" "${harness_symbols}" ${NM} -C --defined-only ${prefix}/${file})
  endif()
endforeach()
if(archives EQUAL 0)
  message(FATAL_ERROR "no_harness_test: the install has no static library to look into")
endif()

# The commands: the build tree's, less the harness's, in the same order.
run("leasehold --help" ${LEASEHOLD} --help)
string(REGEX REPLACE "\n  (bench|demo|upstream-sim) [^\n]*" "" expected_help "${output}")
run("the installed leasehold --help" ${prefix}/bin/leasehold --help)
if(NOT output STREQUAL expected_help)
  message(FATAL_ERROR "no_harness_test: the installed leasehold --help says\n${output}\n"
                      "where the build tree's, less bench, demo and upstream-sim, says\n"
                      "${expected_help}")
endif()

if(found_count GREATER 0)
  message(FATAL_ERROR "no_harness_test: the install holds harness code, ${found_count} "
                      "names of it:${found}")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
