# The unit tests of tests/: the conformance suites, the simulation and the
# DynamoDB backend (tests/CMakeLists.txt includes this file in the builds
# that make unit tests).

# The conformance suites: the same cases (store_conformance*_test.cc, and the
# lease layer in lease_conformance_test.cc and queue_conformance_test.cc) for
# every backend (INSTANTIATE lines in backends_test.cc, and in
# dynamodb/dynamodb_conformance_test.cc for DynamoDB). The cases are compiled
# once, as objects both binaries link (a static library would lose them: no
# symbol of theirs is asked for).
add_library(conformance_cases OBJECT
  conformance/lease_conformance_test.cc
  conformance/store_queue_conformance_test.cc
  conformance/store_conformance_limits_test.cc
  conformance/store_conformance_query_test.cc
  conformance/store_conformance_test.cc
)
target_include_directories(conformance_cases PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(conformance_cases PUBLIC leasehold_lease leasehold_testing
                      GTest::gtest)
leasehold_test_binary(conformance_cases)

# The job queue's contract (conformance/queue_conformance.h), for every Queue:
# StoreQueue on each store, and SqsQueue (aws_tests).
add_library(queue_conformance_cases OBJECT
  conformance/queue_conformance_test.cc
)
target_include_directories(queue_conformance_cases PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(queue_conformance_cases PUBLIC leasehold_lease leasehold_testing
                      GTest::gtest)
leasehold_test_binary(queue_conformance_cases)

# The stream fleet's liveness (fleet/liveness_test.cc): workers on each real
# backend, SQLite here and DynamoDB (dynalite) in dynamodb_tests.
add_library(fleet_liveness_cases OBJECT
  fleet/liveness_test.cc
)
target_include_directories(fleet_liveness_cases PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(fleet_liveness_cases PUBLIC leasehold_fleet leasehold_memory leasehold_net
                      leasehold_testing Boost::json GTest::gtest)
leasehold_test_binary(fleet_liveness_cases)

add_executable(conformance_tests conformance/backends_test.cc)
target_link_libraries(conformance_tests PRIVATE conformance_cases queue_conformance_cases
                      fleet_liveness_cases leasehold_memory leasehold_sqlite GTest::gtest_main)
leasehold_discover_tests(conformance_tests unit LABEL unit BY_SUITE)

# The deterministic simulations: many lease holders, and the stream fleet's
# workers, under faults.
add_executable(sim_tests
  sim/fleet_sim_test.cc
  sim/lease_sim_test.cc
)
target_link_libraries(sim_tests PRIVATE leasehold_fleet leasehold_lease leasehold_memory
                      leasehold_net leasehold_testing Boost::json GTest::gtest_main)
# A test per case, not per suite: a simulation's cases take seconds each
# (a start is nothing beside them), and the eight of LeaseSimulation as one
# test would take 90 s on one core, started late.
leasehold_discover_tests(sim_tests unit LABEL unit)

# The DynamoDB backend against dynalite (node_modules/ is installed by
# scripts/setup.sh) and against scripted loopback servers.
add_executable(dynamodb_tests
  dynamodb/dynalite_smoke_test.cc
  dynamodb/dynamodb_conformance_test.cc
)
target_compile_definitions(dynamodb_tests PRIVATE LEASEHOLD_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
target_link_libraries(dynamodb_tests PRIVATE conformance_cases queue_conformance_cases
                      fleet_liveness_cases test_servers
                      leasehold_dynamodb leasehold_open_store leasehold_memory leasehold_sqlite
                      GTest::gtest_main)
leasehold_test_binary(dynamodb_tests)
leasehold_discover_tests(dynamodb_tests unit LABEL dynamodb TIMEOUT 300 BY_SUITE)

# The same suites on AWS's own DynamoDB Local (a JVM, slow to start: one
# process runs them all, as one test, on one server), and the change feed
# (DynamoDB Streams), which dynalite lacks.
add_executable(dynamodb_local_tests
  dynamodb/dynamodb_local_conformance_test.cc
  dynamodb/dynamodb_local_feed_test.cc
  dynamodb/dynamodb_local_fleet_test.cc
  dynamodb/dynamodb_local_store.cc
)
target_compile_definitions(dynamodb_local_tests PRIVATE LEASEHOLD_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
target_link_libraries(dynamodb_local_tests PRIVATE conformance_cases queue_conformance_cases
                      fleet_liveness_cases test_servers leasehold_dynamodb leasehold_memory
                      GTest::gtest_main)
leasehold_test_binary(dynamodb_local_tests)
leasehold_test_target(dynamodb_local_tests unit)
if(LEASEHOLD_UNIT_TESTS)
  add_test(NAME dynamodb_local_conformance COMMAND dynamodb_local_tests)
  # COST: the longest of this build's tests, so started first rather than
  # last (a fresh clone's ctest knows no test's time).
  set_tests_properties(dynamodb_local_conformance PROPERTIES LABELS dynamodb TIMEOUT 900 COST 100)
endif()

# The AWS clients (SQS, S3) against fauxqs (node_modules/, scripts/setup.sh);
# their retries, S3's region redirects, and the credentials chain against
# scripted endpoints (S3, SQS, STS, EC2's metadata service, the container
# endpoint).
add_executable(aws_tests
  aws/aws_retry_test.cc
  aws/credentials_chain_test.cc
  aws/fauxqs_smoke_test.cc
  aws/s3_client_test.cc
  aws/s3_region_test.cc
  aws/sqs_queue_test.cc
)
target_compile_definitions(aws_tests PRIVATE LEASEHOLD_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
target_link_libraries(aws_tests PRIVATE queue_conformance_cases test_servers leasehold_aws leasehold_sqs
                      leasehold_testing GTest::gtest_main)
leasehold_test_binary(aws_tests)
leasehold_discover_tests(aws_tests unit LABEL aws TIMEOUT 300 BY_SUITE)
