// Starting fauxqs; see fauxqs_fixture.h.
#include "tests/aws/fauxqs_fixture.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

namespace leasehold::testing {
namespace {

// fauxqs's own start listens on every interface; this builds its server and
// listens on loopback only.
constexpr const char* kFauxqsScript = R"(
const { buildApp } = await import(process.argv[1] + '/dist/app.js');
const app = buildApp({ logger: false });
const address = await app.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(new URL(address).port + '\n');
)";

}  // namespace

Result<std::unique_ptr<Fauxqs>> Fauxqs::start() {
  // fauxqs checks no signature, but the clients sign with what they find.
  setenv("AWS_ACCESS_KEY_ID", "test", /*overwrite=*/0);
  setenv("AWS_SECRET_ACCESS_KEY", "test", /*overwrite=*/0);
  LEASEHOLD_ASSIGN_OR_RETURN(
      std::unique_ptr<NodeServer> server,
      NodeServer::start({.name = "fauxqs", .module = "fauxqs", .script = kFauxqsScript}));
  return std::unique_ptr<Fauxqs>(new Fauxqs(std::move(server)));
}

Fauxqs* shared_fauxqs() {
  static const std::unique_ptr<Fauxqs> fauxqs = [] {
    Result<std::unique_ptr<Fauxqs>> started = Fauxqs::start();
    EXPECT_TRUE(started.ok()) << started.status().to_string();
    return started.ok() ? std::move(started).value() : nullptr;
  }();
  return fauxqs.get();
}

std::string unique_aws_name(const std::string& prefix) {
  static std::atomic<int> next{0};
  return prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(next++);
}

}  // namespace leasehold::testing
