// Starting and stopping dynalite; see dynalite_fixture.h.
#include "tests/dynamodb/dynalite_fixture.h"

#include <cstdlib>

namespace leasehold::testing {
namespace {

// Listens on 127.0.0.1 port 0 and prints the port once the socket is open.
constexpr const char* kDynaliteScript = R"(
import { createRequire } from 'node:module';
const dynalite = createRequire(process.argv[1] + '/')(process.argv[1]);
const ms = Number(process.argv[2]);
const server = dynalite({createTableMs: ms, updateTableMs: ms, deleteTableMs: ms});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\n'));
)";

}  // namespace

Result<std::unique_ptr<Dynalite>> Dynalite::start(const DynaliteOptions& options) {
  LEASEHOLD_ASSIGN_OR_RETURN(
      std::unique_ptr<NodeServer> server,
      NodeServer::start({.name = "dynalite",
                         .module = "dynalite",
                         .script = kDynaliteScript,
                         .args = {std::to_string(options.table_transition_ms)},
                         .start_timeout = options.start_timeout}));
  return std::unique_ptr<Dynalite>(new Dynalite(std::move(server)));
}

std::unique_ptr<Dynalite> DynaliteTest::dynalite_;

std::string dynalite_store_uri(std::unique_ptr<Dynalite>& dynalite, const std::string& prefix) {
  if (!dynalite) {
    auto started = Dynalite::start();
    EXPECT_TRUE(started.ok()) << started.status().to_string();
    if (!started.ok()) return "memory:";
    dynalite = std::move(started).value();
    setenv("AWS_ACCESS_KEY_ID", "test", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "test", 1);
  }
  return "dynamodb://us-east-1/" + prefix + "?endpoint=" + dynalite->endpoint();
}

void DynaliteTest::SetUpTestSuite() {
  auto started = Dynalite::start();
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  dynalite_ = std::move(started).value();
}

void DynaliteTest::TearDownTestSuite() { dynalite_.reset(); }

}  // namespace leasehold::testing
