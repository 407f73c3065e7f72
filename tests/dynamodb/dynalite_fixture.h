// Dynalite: a local DynamoDB (the npm package `dynalite`, run by node) started
// on a free loopback port for the tests of the DynamoDB backend.
//
// Dynalite::start() starts it as a NodeServer (tests/server/node_server.h):
// on a free port, stopped with the object or with the test process.
//
// DynaliteTest is a gtest fixture that shares one dynalite per test suite.
// A Dynalite object is not synchronised; its endpoint may be read by any thread.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>

#include "leasehold/clock.h"
#include "leasehold/status.h"
#include "tests/server/node_server.h"

namespace leasehold::testing {

struct DynaliteOptions {
  // How long tables stay CREATING/UPDATING/DELETING (dynalite's default is
  // 500 ms; 0 makes them ACTIVE at once).
  int table_transition_ms = 0;
  Duration start_timeout = std::chrono::seconds(30);
};

class Dynalite {
 public:
  static Result<std::unique_ptr<Dynalite>> start(const DynaliteOptions& options = {});

  uint16_t port() const { return server_->port(); }
  // "http://127.0.0.1:PORT"
  std::string endpoint() const { return server_->endpoint(); }

 private:
  explicit Dynalite(std::unique_ptr<NodeServer> server) : server_(std::move(server)) {}

  std::unique_ptr<NodeServer> server_;
};

// The store URI of the tables prefixed `prefix` (unique per test) on
// *dynalite, which is started (with test credentials in the environment) on
// the first call and kept for the suite: for suites parametrised over
// backends. "memory:", with a test failure, if dynalite does not start.
std::string dynalite_store_uri(std::unique_ptr<Dynalite>& dynalite, const std::string& prefix);

// One dynalite for all the tests of a suite; a test that needs a clean
// server uses fresh table names.
class DynaliteTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  static const Dynalite& dynalite() { return *dynalite_; }

 private:
  static std::unique_ptr<Dynalite> dynalite_;
};

}  // namespace leasehold::testing
