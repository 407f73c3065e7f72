// fauxqs: a local SQS and S3 (the npm package `fauxqs`, run by node) for the
// tests of the SQS queue and the S3 media, started as a NodeServer
// (tests/server/node_server.h): on a free loopback port, stopped with the
// object or with the test process. It keeps everything in memory and answers
// any signature (it checks none), so the tests that need a signature checked
// check it elsewhere (src/aws/sigv4_test.cc, the botocore test). It keeps
// nothing across a restart: fault tests stop and continue it instead
// (pause(), resume()).
//
// shared_fauxqs() starts one for the whole test process, with test
// credentials in the environment, for suites that need a server but not a
// clean one (each test uses queue and bucket names of its own).
#pragma once

#include <memory>
#include <string>

#include "leasehold/status.h"
#include "tests/server/node_server.h"

namespace leasehold::testing {

class Fauxqs {
 public:
  // Also sets AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY to "test" where
  // they are unset, for the clients to sign with.
  static Result<std::unique_ptr<Fauxqs>> start();

  uint16_t port() const { return server_->port(); }
  // "http://127.0.0.1:PORT"
  std::string endpoint() const { return server_->endpoint(); }
  void pause() { server_->pause(); }
  void resume() { server_->resume(); }

 private:
  explicit Fauxqs(std::unique_ptr<NodeServer> server) : server_(std::move(server)) {}

  std::unique_ptr<NodeServer> server_;
};

// The process's fauxqs, started on the first call; null, with a test
// failure, if it does not start.
Fauxqs* shared_fauxqs();

// A name no other test of this process or of a concurrent one uses:
// "<prefix>-<pid>-<n>", in the characters SQS and S3 allow.
std::string unique_aws_name(const std::string& prefix);

}  // namespace leasehold::testing
