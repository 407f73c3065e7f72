# `cmake --install` puts the library in place as C++ users expect: the
# public headers (include/leasehold/), the static libraries of the layers a
# lease user needs, the `leasehold` binary of the product (src/cli/main.cc:
# no benchmark, demo or simulator; tests/install/no_harness_test.cmake
# checks) with the codecs module it loads, and a CMake package so that
#
#   find_package(leasehold REQUIRED)
#   target_link_libraries(app PRIVATE leasehold::leasehold)
#
# works (examples/ is such a program; tests/install/ builds it against a
# fresh install in every test run).

include(CMakePackageConfigHelpers)

# leasehold::leasehold: leases, the Renewer and the job queue
# (include/leasehold/lease.h, renewer.h, queue.h) on every store open_store()
# knows.
add_library(leasehold_library INTERFACE)
set_target_properties(leasehold_library PROPERTIES EXPORT_NAME leasehold)
target_link_libraries(leasehold_library INTERFACE leasehold_lease leasehold_open_store)
add_library(leasehold::leasehold ALIAS leasehold_library)

# The layers behind it, each installed as leasehold::<layer>.
set(leasehold_installed_layers
  leasehold_base leasehold_net leasehold_aws_sigv4 leasehold_aws leasehold_store leasehold_memory
  leasehold_sqlite leasehold_dynamodb_wire leasehold_dynamodb leasehold_open_store leasehold_lease)
foreach(layer ${leasehold_installed_layers})
  string(REPLACE "leasehold_" "" name ${layer})
  set_target_properties(${layer} PROPERTIES EXPORT_NAME ${name})
endforeach()

install(TARGETS leasehold_library ${leasehold_installed_layers}
  EXPORT leaseholdTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS leasehold_product RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# The tracer's codecs, which the binary loads on first use (src/tracer/codecs.h).
install(TARGETS leasehold_codecs LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/leasehold)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/leasehold
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")

set(leasehold_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/leasehold)
install(EXPORT leaseholdTargets NAMESPACE leasehold:: DESTINATION ${leasehold_cmake_dir})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/leaseholdConfig.cmake.in
  ${PROJECT_BINARY_DIR}/leaseholdConfig.cmake
  INSTALL_DESTINATION ${leasehold_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/leaseholdConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/leaseholdConfig.cmake
              ${PROJECT_BINARY_DIR}/leaseholdConfigVersion.cmake
  DESTINATION ${leasehold_cmake_dir})
