# The system tests: the real binary in processes, the HTTP server and the
# app through sockets, other implementations, browsers, the installed
# package and the lint checks (tests/CMakeLists.txt includes this file in the
# builds that make system tests).

# Multi-process tests: the real `leasehold` binary, many processes, one
# SQLite file per test (tests/process/).
add_executable(process_tests
  process/aws_smoke_test.cc
  process/bad_input_test.cc
  process/bench_test.cc
  process/fleet_liveness_test.cc
  process/fleet_test.cc
  process/conn_commands_test.cc
  process/demo_test.cc
  process/dynamodb_faults_test.cc
  process/emf_test.cc
  process/hold_test.cc
  process/lease_commands_test.cc
  process/process_util.cc
  process/race_test.cc
  process/serve_test.cc
  process/skew_test.cc
  process/store_init_test.cc
  process/sweep_test.cc
  process/trace_worker_test.cc
  process/upstream_sim_test.cc
  process/user_commands_test.cc
  process/version_test.cc
)
target_include_directories(process_tests PRIVATE ${PROJECT_SOURCE_DIR})
target_compile_definitions(process_tests PRIVATE LEASEHOLD_BIN="$<TARGET_FILE:leasehold>"
                                                 LEASEHOLD_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                                                 LEASEHOLD_TEST_VERSION="${PROJECT_VERSION}"
                                                 FOREIGN_WORKER_BIN="$<TARGET_FILE:foreign_worker>"
                                                 MAKE_TEST_MOVIE_BIN="$<TARGET_FILE:make_test_movie>"
                                                 AWS_SMOKE_BIN="$<TARGET_FILE:aws_smoke>"
                                                 PYTHON3="${Python3_EXECUTABLE}")
add_dependencies(process_tests leasehold foreign_worker make_test_movie aws_smoke)
# The accounts library checks what `leasehold user` wrote (user_commands_test.cc);
# the lease library plays a worker on the connections (conn_commands_test.cc);
# OpenSSL makes serve_test.cc's TLS certificate; the WebSocket client reads
# `leasehold upstream-sim` (upstream_sim_test.cc); SqsQueue sends a job
# message twice (trace_worker_test.cc); the AWS clients look at what the AWS
# smoke test left on its emulators (aws_smoke_test.cc).
target_link_libraries(process_tests PRIVATE leasehold_base leasehold_accounts leasehold_lease
                      leasehold_open_store leasehold_net leasehold_sqs leasehold_testing test_servers
                      Boost::json OpenSSL::Crypto GTest::gtest_main GTest::gmock)
leasehold_test_binary(process_tests JSON)
leasehold_discover_tests(process_tests system LABEL process TIMEOUT 120)

# The AWS smoke test (aws/aws_smoke.cc): against real AWS, what a deployment
# does there (the store's tables and a lease on DynamoDB, the job queues on
# SQS, an object on S3), end to end, deleting what it made. Off unless
# LEASEHOLD_AWS_SMOKE=1: it exits 77, which ctest reports as skipped
# (docs/server.md#checking-a-deployment-on-aws). The test preset turns EC2's
# metadata service off, so that no test waits on it; this test must find the
# credentials the deployment would, an instance role's among them. The
# process tests run the same binary on DynamoDB Local and fauxqs
# (process/aws_smoke_test.cc).
add_executable(aws_smoke aws/aws_smoke.cc)
target_include_directories(aws_smoke PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(aws_smoke PRIVATE leasehold_cli_lib leasehold_runtime leasehold_movies
                      leasehold_sqs leasehold_aws leasehold_net Boost::json)
leasehold_test_target(aws_smoke system)
add_test(NAME aws_smoke COMMAND aws_smoke)
set_tests_properties(aws_smoke PROPERTIES LABELS aws_smoke SKIP_RETURN_CODE 77 TIMEOUT 1200
                     ENVIRONMENT_MODIFICATION AWS_EC2_METADATA_DISABLED=unset:)

# SigV4 against botocore (python3-botocore, from scripts/setup.sh): a few
# hundred generated DynamoDB requests, and the S3 client's requests and
# presigned URLs on awkward keys as botocore's own S3 client builds them, must
# get byte-identical signatures from both signers.
add_executable(sigv4_sign_tool aws/sigv4_sign_tool.cc)
target_link_libraries(sigv4_sign_tool PRIVATE leasehold_aws_sigv4 Boost::json)
leasehold_test_target(sigv4_sign_tool system)
add_test(NAME sigv4_matches_botocore
  COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/aws/sigv4_botocore_test.py
          $<TARGET_FILE:sigv4_sign_tool>)
set_tests_properties(sigv4_matches_botocore PROPERTIES LABELS interop TIMEOUT 120)

# The credentials chain against botocore's (python3-botocore): the same
# environments, files and loopback endpoints (STS, EC2's metadata service,
# the container endpoint) must give both the same keys from the same
# requests. credentials_tool prints what leasehold finds, with digests in
# place of the secrets.
add_executable(credentials_tool aws/credentials_tool.cc)
target_link_libraries(credentials_tool PRIVATE leasehold_aws Boost::json)
leasehold_test_target(credentials_tool system)
add_test(NAME credentials_match_botocore
  COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/aws/credentials_botocore_test.py
          $<TARGET_FILE:credentials_tool>)
set_tests_properties(credentials_match_botocore PROPERTIES LABELS interop TIMEOUT 180)

# The WebSocket client against an upstream that shares no code with it:
# fleet/upstream.py on python3-websockets (from scripts/setup.sh), a child
# process of the test.
add_executable(fleet_tests fleet/upstream_test.cc)
target_compile_definitions(fleet_tests PRIVATE LEASEHOLD_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                                               PYTHON3="${Python3_EXECUTABLE}")
target_link_libraries(fleet_tests PRIVATE leasehold_net leasehold_testing Boost::json
                      GTest::gtest_main)
leasehold_discover_tests(fleet_tests system LABEL interop TIMEOUT 120)
# make_test_movie: a synthetic movie with a known spot for the process and
# browser tests that upload and trace movies.
add_executable(make_test_movie support/make_test_movie.cc)
target_link_libraries(make_test_movie PRIVATE leasehold_tracer)
leasehold_test_target(make_test_movie system)
# A worker of the reference pattern's own code, for the mixed-fleet process
# tests (process/fleet_test.cc).
add_executable(foreign_worker fleet/foreign_worker.cc)
target_link_libraries(foreign_worker PRIVATE leasehold_fleet leasehold_net leasehold_open_store)
leasehold_test_target(foreign_worker system)

# Interoperability with the AWS SDK for JavaScript (installed by
# scripts/setup.sh from package-lock.json), against dynalite on loopback.
# Configuring needs no node: a machine without it builds everything, and only
# the tests that run node fail, saying so (the dynalite fixture too).
find_program(NODE_EXECUTABLE node)
# A test that node runs, with these arguments; where node was not found, a
# test that fails, saying so.
function(leasehold_node_test name)
  if(NODE_EXECUTABLE)
    add_test(NAME ${name} COMMAND ${NODE_EXECUTABLE} --no-warnings ${ARGN})
  else()
    add_test(NAME ${name}
      COMMAND ${CMAKE_COMMAND} -E echo "node was not found when this build was configured; run scripts/setup.sh")
    set_tests_properties(${name} PROPERTIES WILL_FAIL TRUE)
  endif()
endfunction()
leasehold_node_test(dynamodb_sdk_interop
  ${CMAKE_CURRENT_SOURCE_DIR}/dynamodb/sdk_interop_test.mjs $<TARGET_FILE:leasehold>)
set_tests_properties(dynamodb_sdk_interop PROPERTIES LABELS interop TIMEOUT 120)

# SigV4 against AWS's own test suite (the npm package pinned in
# package-lock.json): every case's canonical request, string to sign and
# Authorization from sigv4_sign_tool, or the reason the case does not apply.
leasehold_node_test(sigv4_aws_test_suite
  ${CMAKE_CURRENT_SOURCE_DIR}/aws/sigv4_suite_test.mjs $<TARGET_FILE:sigv4_sign_tool>)
set_tests_properties(sigv4_aws_test_suite PROPERTIES LABELS interop TIMEOUT 60)

# Browser tests (tests/browser/, harness.mjs): each <feature>_test.mjs drives
# Debian's chromium through playwright-core against a real `leasehold serve`
# on a fresh SQLite store, and leaves screenshots of its pages in
# tests/browser/screenshots/<feature>/ in the build tree. Without node or
# chromium they fail, saying what is missing. browser_store_tool writes the
# stream fleet's items straight into the test's store (fleet_test.mjs), and
# movies enough for several pages of the movie list (movies_paging_test.mjs);
# make_test_movie makes the movies the movie pages' tests upload.
add_dependencies(test_binaries leasehold)
add_executable(browser_store_tool browser/store_tool.cc)
target_link_libraries(browser_store_tool PRIVATE leasehold_fleet leasehold_movies leasehold_open_store)
leasehold_test_target(browser_store_tool system)
file(GLOB browser_tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/browser/*_test.mjs)
foreach(test_file IN LISTS browser_tests)
  get_filename_component(feature ${test_file} NAME_WE)
  string(REGEX REPLACE "_test$" "" feature ${feature})
  leasehold_node_test(browser_${feature}
    ${test_file} --leasehold $<TARGET_FILE:leasehold>
    --store-tool $<TARGET_FILE:browser_store_tool>
    --make-movie $<TARGET_FILE:make_test_movie>
    --screenshots ${CMAKE_CURRENT_BINARY_DIR}/browser/screenshots/${feature})
  # The longest tests: started first, when ctest has no times of its own
  # yet (a fresh build), so that none of them is left running alone at the end.
  # Two processors each (a browser and the server): make test runs the system
  # tests one more at a time than there are cores, and two browsers at once
  # would share them with nothing left for a third test.
  set_tests_properties(browser_${feature} PROPERTIES LABELS browser TIMEOUT 180 COST 100
                                                     PROCESSORS 2)
endforeach()

# The HTTP server through real sockets on 127.0.0.1 (tests/server/): routing,
# every limit, TLS with a certificate made in the test, stop(), uploads into
# files and file responses with ranges.
add_executable(server_tests
  server/limits_test.cc
  server/server_test.cc
  server/stop_test.cc
  server/tls_test.cc
  server/transfer_test.cc
)
target_link_libraries(server_tests PRIVATE leasehold_server leasehold_runtime leasehold_testing
                      test_servers GTest::gtest_main)
leasehold_test_binary(server_tests)
leasehold_discover_tests(server_tests system LABEL server TIMEOUT 120)

# The app of `leasehold serve` (routes, authentication, pages, metrics, the
# fleet API) through real sockets, on a memory store; the movies API on the
# whole of `serve` (app::Serving), on SQLite and on dynalite, and with AWS
# refusing the deployment (scripted S3 and SQS).
add_executable(app_tests
  app/app_test.cc
  app/fleet_api_test.cc
  app/movies_api_test.cc
  app/movies_api_trace_test.cc
  app/movies_aws_refusal_test.cc
  app/trace_jobs_test.cc
)
target_compile_definitions(app_tests PRIVATE LEASEHOLD_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
target_link_libraries(app_tests PRIVATE leasehold_app leasehold_fleet leasehold_testing
                      test_servers leasehold_tracer leasehold_aws leasehold_net Boost::json
                      GTest::gtest_main)
leasehold_test_binary(app_tests JSON)
leasehold_discover_tests(app_tests system LABEL app TIMEOUT 120)

# The installed package: `cmake --install` into a fresh prefix, examples/
# built against it with find_package(leasehold), and run.
add_test(NAME installed_package_builds_the_example
  COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
          -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/install_test -DCXX=${CMAKE_CXX_COMPILER}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/install/install_test.cmake)
set_tests_properties(installed_package_builds_the_example PROPERTIES LABELS install TIMEOUT 300
                     RESOURCE_LOCK leasehold_install)

# The installed package holds the product only: no file, archive member or
# symbol of the benchmarks, the demo or the upstream simulator (bench/,
# tools/), and the installed binary offers every command of the build tree's
# but theirs. Both install tests write the build's install_manifest.txt, so
# they take turns.
add_test(NAME installed_package_holds_no_harness
  COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR}
          -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/no_harness_test -DAR=${CMAKE_AR} -DNM=${CMAKE_NM}
          -DLEASEHOLD=$<TARGET_FILE:leasehold>
          -P ${CMAKE_CURRENT_SOURCE_DIR}/install/no_harness_test.cmake)
set_tests_properties(installed_package_holds_no_harness PROPERTIES LABELS install TIMEOUT 300
                     RESOURCE_LOCK leasehold_install)

# The Dockerfile against the binary that `cmake --install` ships and its
# codecs module, without a Docker engine (tests/deploy/dockerfile_check.py):
# every library ldd lists comes from a package the runtime stage installs
# (dpkg -S), a numeric user that is not root, the health check on /healthz,
# an exec-form entry point; and copies with a mistake planted in each must
# fail, naming it.
add_test(NAME dockerfile_matches_binary
  COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/deploy/dockerfile_test.py
          ${PROJECT_SOURCE_DIR}/Dockerfile $<TARGET_FILE:leasehold_product>
          $<TARGET_FILE:leasehold_codecs>)
set_tests_properties(dockerfile_matches_binary PROPERTIES LABELS deploy TIMEOUT 60)

# The Terraform deployment (deploy/aws/, tests/deploy/terraform_check.mjs):
# every .tf file parsed with @cdktf/hcl2json and held against the binary:
# the tables against `store schema --json`, each task role against the
# actions its process sends, every flag of a task's command against
# --help, ports, health checks and stop timeouts against each other;
# `terraform fmt -check` where terraform is at hand, and with a provider
# mirror too, a plan of the example with the provider mocked, checked the
# same way. The second test plants a mistake in each check and expects it
# to fail, naming it.
leasehold_node_test(deploy_terraform
  ${CMAKE_CURRENT_SOURCE_DIR}/deploy/terraform_check.mjs $<TARGET_FILE:leasehold>)
leasehold_node_test(deploy_terraform_planted
  ${CMAKE_CURRENT_SOURCE_DIR}/deploy/terraform_check.mjs $<TARGET_FILE:leasehold> --planted)
set_tests_properties(deploy_terraform deploy_terraform_planted PROPERTIES LABELS deploy TIMEOUT 60)

# Clang's thread-safety analysis: GCC ignores the GUARDED_BY and REQUIRES
# annotations (src/base/thread_annotations.h), so clang++ (from
# scripts/setup.sh) reads the files that include base/mutex.h once more,
# without compiling them.
add_test(NAME thread_safety
  COMMAND Python3::Interpreter ${PROJECT_SOURCE_DIR}/scripts/thread_safety_check.py
          ${PROJECT_BINARY_DIR}/compile_commands.json)
# COST: long, so started early (a fresh clone's ctest knows no test's time,
# and runs them in order): not alone on one core at the end of the run.
set_tests_properties(thread_safety PROPERTIES LABELS lint TIMEOUT 900 COST 90)

# docs/architecture.md's link graph against the build's (`cmake --graphviz`,
# scripts/layer_graph.py), and the check against a doc with an arrow planted
# and one taken away.
add_test(NAME architecture_matches_link_graph
  COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/docs/architecture_graph_test.py)
set_tests_properties(architecture_matches_link_graph PROPERTIES LABELS lint TIMEOUT 120)

# The metrics text against Prometheus's own parser and linter: a registry
# with every type, escapes and number forms, and a MeteredStore's families,
# through `promtool check metrics` (from scripts/setup.sh).
add_executable(render_sample metrics/render_sample.cc)
target_link_libraries(render_sample PRIVATE leasehold_runtime)
leasehold_test_target(render_sample system)
add_test(NAME metrics_pass_promtool
  COMMAND ${CMAKE_COMMAND} -DSAMPLE=$<TARGET_FILE:render_sample>
          -DOUTPUT=${CMAKE_CURRENT_BINARY_DIR}/metrics_sample.prom
          -P ${CMAKE_CURRENT_SOURCE_DIR}/metrics/promtool_check.cmake)
set_tests_properties(metrics_pass_promtool PROPERTIES LABELS lint TIMEOUT 60)

# The nemesis's checker (tests/nemesis/checker.py) against histories with
# each kind of violation planted, and a clean one that must pass. The
# nemesis itself is `make nemesis`, not part of the tests.
add_test(NAME nemesis_checker
  COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/nemesis/checker_test.py)
set_tests_properties(nemesis_checker PROPERTIES LABELS nemesis TIMEOUT 60)

# A short nemesis on SQLite (make nemesis runs the long ones): 20 s of faults
# on a fixed schedule, then every check. Alone (RUN_SERIAL): it keeps both
# cores busy, and other tests' timing would suffer beside it.
add_test(NAME nemesis_smoke
  COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/nemesis/nemesis.py
          --bin $<TARGET_FILE:leasehold> --tool-dir $<TARGET_FILE_DIR:make_test_movie>
          --store sqlite --seconds 20 --seed 7 --connections 12)
set_tests_properties(nemesis_smoke PROPERTIES LABELS nemesis TIMEOUT 600 RUN_SERIAL TRUE)
