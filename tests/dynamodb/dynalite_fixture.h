// Dynalite: a local DynamoDB (the npm package `dynalite`, run by node) started
// on a free loopback port for the tests of the DynamoDB backend.
//
// Dynalite::start() runs node on a tiny script that makes dynalite listen on
// 127.0.0.1 port 0 and print the port it got, so two test processes never
// race for a port. It returns once the server accepts connections, or fails
// after a deadline. The destructor stops the process and waits for it; if the
// test process dies first, the kernel kills dynalite too (PR_SET_PDEATHSIG).
// node_modules/ must have been installed in the source tree (scripts/setup.sh).
//
// DynaliteTest is a gtest fixture that shares one dynalite per test suite.
// A Dynalite object is not synchronised; its endpoint may be read by any thread.
#pragma once

#include <gtest/gtest.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "leasehold/clock.h"
#include "leasehold/status.h"

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
  ~Dynalite();

  Dynalite(const Dynalite&) = delete;
  Dynalite& operator=(const Dynalite&) = delete;

  uint16_t port() const { return port_; }
  // "http://127.0.0.1:PORT"
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  Dynalite(pid_t pid, int stdout_fd) : pid_(pid), stdout_fd_(stdout_fd) {}

  pid_t pid_;
  int stdout_fd_;  // kept open so dynalite never writes to a closed pipe
  uint16_t port_ = 0;
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
