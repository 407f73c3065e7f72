# Installs this build into a fresh prefix, builds examples/ against the
# installed package as a C++ user would (find_package(leasehold),
# leasehold::leasehold), and runs the program on a new SQLite store: it must
# acquire, renew, write under the lease and release.
#
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DCXX=... -P install_test.cmake

foreach(var BUILD_DIR SOURCE_DIR WORK_DIR CXX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_test: -D${var}=... is required")
  endif()
endforeach()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install_test: ${step} failed (${rc}):\n${out}\n${err}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()

run("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
foreach(installed include/leasehold/lease.h bin/leasehold lib/cmake/leasehold/leaseholdConfig.cmake)
  if(NOT EXISTS ${WORK_DIR}/prefix/${installed})
    message(FATAL_ERROR "install_test: the install has no ${installed}")
  endif()
endforeach()
# Nothing of src/ is installed: the package's users see the public headers only.
file(GLOB_RECURSE headers RELATIVE ${WORK_DIR}/prefix/include ${WORK_DIR}/prefix/include/*)
foreach(header ${headers})
  if(NOT header MATCHES "^leasehold/[a-z_]+\\.h$")
    message(FATAL_ERROR "install_test: the install has an internal header: ${header}")
  endif()
endforeach()

run("configuring examples/" ${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples -B ${WORK_DIR}/build -G Ninja
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release)
run("building examples/" ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run("lease_example" ${WORK_DIR}/build/lease_example sqlite:${WORK_DIR}/example.db job-1)
message("${output}")
foreach(line "acquired epoch 1" "renewed until" "fenced write done under epoch 1" "released")
  string(FIND "${output}" "${line}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "install_test: lease_example did not print \"${line}\"")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
