// DynamoDB Local: AWS's own emulator of DynamoDB, a Java server
// (scripts/setup.sh fetches it into .deps/dynamodb-local and installs the
// JRE), started for the tests beside dynalite, on a free loopback port, in
// memory, with one database for every credential and region (-sharedDb)
// and no telemetry. It enforces AWS's own validation, which dynalite does
// not always, and reports consumed capacity.
//
// DynamoDbLocal::start() returns once the server accepts connections, or
// fails after a deadline. The destructor kills the process and waits for
// it; if the test process dies first, the kernel kills the server too
// (PR_SET_PDEATHSIG). Not synchronised; its endpoint may be read by any
// thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "leasehold/clock.h"
#include "leasehold/status.h"

namespace leasehold::testing {

class DynamoDbLocal {
 public:
  static Result<std::unique_ptr<DynamoDbLocal>> start(
      Duration start_timeout = std::chrono::seconds(60));
  ~DynamoDbLocal();

  DynamoDbLocal(const DynamoDbLocal&) = delete;
  DynamoDbLocal& operator=(const DynamoDbLocal&) = delete;

  uint16_t port() const { return port_; }
  // "http://127.0.0.1:PORT"
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  DynamoDbLocal(pid_t pid, uint16_t port, std::string work_dir)
      : pid_(pid), port_(port), work_dir_(std::move(work_dir)) {}

  pid_t pid_;
  uint16_t port_;
  std::string work_dir_;  // where it runs (it writes a file there), removed with it
};

// The folder setup.sh puts DynamoDB Local in.
std::string dynamodb_local_dir();

}  // namespace leasehold::testing
