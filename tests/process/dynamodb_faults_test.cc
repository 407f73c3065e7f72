// DynamoDB faults and bad input through the real `leasehold` binary: each
// gives a clear error or a correct retry, and never a lease that two holders
// believe they have.
//
// Every test runs the CLI against a FaultProxy (tests/dynamodb/fault_proxy.h)
// in front of one dynalite shared by the suite, and checks what is really
// stored by asking dynalite directly, past the proxy. Each test has its own
// table prefix, so tests never see each other's leases.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "process_util.h"
#include "tests/dynamodb/dynalite_fixture.h"
#include "tests/dynamodb/fault_proxy.h"

namespace leasehold::process_test {
namespace {

using testing::FaultAction;
using testing::FaultProxy;
using testing::FaultRule;

// dynalite checks that requests are signed, not by whom; the secret must
// never show up in anything leasehold prints.
constexpr const char* kAccessKeyId = "AKIDFAULTS";
constexpr const char* kSecretKey = "faults-secret-must-never-be-printed";

std::atomic<int> prefix_counter{0};

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

FaultRule reply_rule(std::string operation, int times, int status, std::string type) {
  FaultRule rule;
  rule.operation = std::move(operation);
  rule.action = FaultAction::kReply;
  rule.times = times;
  rule.status = status;
  rule.error_type = std::move(type);
  return rule;
}

FaultRule drop_rule(std::string operation, FaultAction action) {
  FaultRule rule;
  rule.operation = std::move(operation);
  rule.action = action;
  rule.times = 1;
  return rule;
}

class DynamoDbFaultsTest : public ProcessTest {
 protected:
  static void SetUpTestSuite() {
    auto started = testing::Dynalite::start();
    ASSERT_TRUE(started.ok()) << started.status().to_string();
    dynalite_ = std::move(started).value();
  }
  static void TearDownTestSuite() { dynalite_.reset(); }

  void SetUp() override {
    ASSERT_TRUE(dynalite_);
    setenv("AWS_ACCESS_KEY_ID", kAccessKeyId, 1);
    setenv("AWS_SECRET_ACCESS_KEY", kSecretKey, 1);
    unsetenv("AWS_SESSION_TOKEN");
    auto proxy = FaultProxy::start(dynalite_->port());
    ASSERT_TRUE(proxy.ok()) << proxy.status().to_string();
    proxy_ = std::move(proxy).value();
    prefix_ = "faults" + std::to_string(getpid()) + "_" + std::to_string(prefix_counter++) + "_";
  }

  // Through the proxy: what every lh() call uses.
  std::string store_uri() const override { return uri_for(proxy_->endpoint()); }
  std::string uri_for(const std::string& endpoint) const {
    return "dynamodb://us-east-1/" + prefix_ + "?endpoint=" + endpoint;
  }
  std::string direct_uri() const { return uri_for(dynalite_->endpoint()); }

  // `leasehold --store URI args...`, checked never to print the secret.
  RunResult lh_at(const std::string& uri, const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {leasehold_bin(), "--store", uri};
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult r = run(argv);
    EXPECT_FALSE(contains(r.err, kSecretKey)) << "the secret key leaked to stderr: " << r.err;
    EXPECT_FALSE(contains(r.out, kSecretKey)) << "the secret key leaked to stdout: " << r.out;
    return r;
  }
  RunResult via_proxy(const std::vector<std::string>& args) const {
    return lh_at(store_uri(), args);
  }
  RunResult direct(const std::vector<std::string>& args) const { return lh_at(direct_uri(), args); }

  // `lease acquire KEY --owner a` through the proxy, whose log starts afresh,
  // with `rule` added.
  RunResult acquire_with(const std::string& key, const FaultRule& rule) const {
    proxy_->clear_log();
    proxy_->add_rule(rule);
    return via_proxy({"lease", "acquire", key, "--owner", "a"});
  }

  // `store init` straight to dynalite, so the proxy's log starts empty.
  void init_tables() const {
    const RunResult r = direct({"store", "init"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  // The lease as dynalite stores it, read past the proxy; nullopt if none.
  std::optional<boost::json::object> stored(const std::string& key) const {
    const RunResult r = direct({"lease", "show", key});
    if (r.exit_code == 3) return std::nullopt;
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return parse_object(r.out);
  }

  // The names of dynalite's tables that start with this test's prefix.
  std::vector<std::string> own_tables() const {
    std::vector<std::string> out;
    boost::json::object request;
    for (int page = 0; page < 100; ++page) {
      auto reply =
          testing::dynamodb_call(dynalite_->port(), "ListTables", boost::json::serialize(request));
      EXPECT_TRUE(reply.ok()) << reply.status().to_string();
      if (!reply.ok()) return out;
      const boost::json::object listed = parse_object(*reply);
      for (const auto& name : listed.at("TableNames").as_array()) {
        const std::string text(name.as_string());
        if (text.starts_with(prefix_)) out.push_back(text);
      }
      const boost::json::value* last = listed.if_contains("LastEvaluatedTableName");
      if (last == nullptr) return out;
      request["ExclusiveStartTableName"] = *last;
    }
    ADD_FAILURE() << "ListTables never reached its last page";
    return out;
  }

  static std::unique_ptr<testing::Dynalite> dynalite_;
  std::unique_ptr<FaultProxy> proxy_;
  std::string prefix_;
};

std::unique_ptr<testing::Dynalite> DynamoDbFaultsTest::dynalite_;

// ------------------------------------------------------------ retries

TEST_F(DynamoDbFaultsTest, AcquireThrottledTwiceIsRetriedAndSucceedsOnTheThirdUpdate) {
  init_tables();
  proxy_->add_rule(reply_rule("UpdateItem", 2, 400, "ProvisionedThroughputExceededException"));

  const RunResult r = via_proxy({"lease", "acquire", "k", "--owner", "a"});
  ASSERT_EQ(r.exit_code, 0) << r.err << proxy_->log();
  const auto lease = parse_object(r.out);
  EXPECT_EQ(lease.at("epoch").as_int64(), 1);
  EXPECT_EQ(proxy_->count("UpdateItem"), 3) << proxy_->log();
  EXPECT_EQ(proxy_->count("UpdateItem", FaultAction::kReply), 2) << proxy_->log();
  EXPECT_EQ(proxy_->count("UpdateItem", FaultAction::kForward), 1) << proxy_->log();

  const auto item = stored("k");
  ASSERT_TRUE(item);
  EXPECT_EQ(item->at("token"), lease.at("token"));
  EXPECT_EQ(item->at("owner"), "a");
  EXPECT_EQ(item->at("epoch").as_int64(), 1);
  EXPECT_EQ(item->at("held"), true);
}

// Throttling promises that nothing was applied, so a throttled write is sent
// again. (This test used to answer two of the writes 500 and 503: a write
// answered 5xx may have applied, and is no longer sent again; see below.)
TEST_F(DynamoDbFaultsTest, WriteThrottlingOfEveryKindIsRetried) {
  init_tables();
  proxy_->add_rule(reply_rule("UpdateItem", 1, 400, "ThrottlingException"));
  proxy_->add_rule(reply_rule("UpdateItem", 1, 400, "RequestLimitExceeded"));
  proxy_->add_rule(reply_rule("UpdateItem", 1, 400, "ProvisionedThroughputExceededException"));

  const RunResult r = via_proxy({"lease", "acquire", "k", "--owner", "a"});
  ASSERT_EQ(r.exit_code, 0) << r.err << proxy_->log();
  const auto lease = parse_object(r.out);
  EXPECT_EQ(lease.at("epoch").as_int64(), 1);
  EXPECT_EQ(proxy_->count("UpdateItem", FaultAction::kReply), 3) << proxy_->log();
  EXPECT_EQ(proxy_->count("UpdateItem", FaultAction::kForward), 1) << proxy_->log();
  const auto item = stored("k");
  ASSERT_TRUE(item);
  EXPECT_EQ(item->at("token"), lease.at("token"));
}

// A read changes nothing, so a read answered 5xx is sent again.
TEST_F(DynamoDbFaultsTest, ReadsAnswered5xxAreRetried) {
  init_tables();
  const auto lease = parse_object(direct({"lease", "acquire", "k", "--owner", "a"}).out);
  proxy_->add_rule(reply_rule("GetItem", 1, 500, "InternalServerError"));
  proxy_->add_rule(reply_rule("GetItem", 1, 503, ""));  // not JSON: a load balancer's page

  const RunResult r = via_proxy({"lease", "show", "k"});
  ASSERT_EQ(r.exit_code, 0) << r.err << proxy_->log();
  EXPECT_EQ(parse_object(r.out).at("token"), lease.at("token"));
  EXPECT_EQ(proxy_->count("GetItem", FaultAction::kReply), 2) << proxy_->log();
  EXPECT_EQ(proxy_->count("GetItem", FaultAction::kForward), 1) << proxy_->log();
}

TEST_F(DynamoDbFaultsTest, ThrottledConsistentReadIsRetriedByShow) {
  init_tables();
  const auto lease = parse_object(direct({"lease", "acquire", "k", "--owner", "a"}).out);
  proxy_->add_rule(reply_rule("GetItem", 2, 400, "ProvisionedThroughputExceededException"));

  const RunResult r = via_proxy({"lease", "show", "k"});
  ASSERT_EQ(r.exit_code, 0) << r.err << proxy_->log();
  EXPECT_EQ(parse_object(r.out).at("token"), lease.at("token"));
  EXPECT_EQ(proxy_->count("GetItem"), 3) << proxy_->log();
}

TEST_F(DynamoDbFaultsTest, EndlessThrottlingGivesUpAfterFourAttemptsWithExit1AndNoLease) {
  init_tables();
  proxy_->add_rule(reply_rule("UpdateItem", -1, 400, "ProvisionedThroughputExceededException"));

  const auto started = std::chrono::steady_clock::now();
  const RunResult r = via_proxy({"lease", "acquire", "k", "--owner", "a"});
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(r.err.starts_with("leasehold: ")) << r.err;
  EXPECT_TRUE(contains(r.err, "ProvisionedThroughputExceededException")) << r.err;
  EXPECT_TRUE(contains(r.err, "4 attempts")) << r.err;
  EXPECT_EQ(proxy_->count("UpdateItem"), 4) << proxy_->log();
  // Three pauses after throttling, of at most 1, 2 and 4 s (docs/cli.md,
  // retries against AWS), plus five processes' worth of slack on a loaded
  // machine.
  EXPECT_LT(took, std::chrono::seconds(12));
  EXPECT_FALSE(stored("k")) << "a refused write left a lease behind";
}

// ------------------------------------------------------------ unknown outcome

// The 5xx answers a write gets in these tests; "" is not JSON (a load
// balancer's page).
const std::vector<std::pair<int, std::string>>& write_5xx_answers() {
  static const std::vector<std::pair<int, std::string>> kAnswers = {
      {500, "InternalServerError"}, {503, "ServiceUnavailable"}, {503, ""}};
  return kAnswers;
}

// DynamoDB documents that a write answered 500 may have been applied. Sent
// again, an acquire that had applied met its own live lease and reported it
// "held by another owner" (exit 3) with its own token in the slot. Never sent
// again, its unknown outcome is read back, and the lease is the caller's.
TEST_F(DynamoDbFaultsTest, AcquireAppliedThenAnswered5xxIsReadBackNotResent) {
  init_tables();
  for (const auto& [status, type] : write_5xx_answers()) {
    const std::string key = "k" + std::to_string(status) + type;
    SCOPED_TRACE(key);
    FaultRule rule = reply_rule("UpdateItem", 1, status, type);
    rule.action = FaultAction::kForwardThenError;

    const RunResult r = acquire_with(key, rule);
    ASSERT_EQ(r.exit_code, 0) << r.err << proxy_->log();
    const auto lease = parse_object(r.out);
    EXPECT_EQ(lease.at("epoch").as_int64(), 1);
    EXPECT_EQ(proxy_->count("UpdateItem"), 1)
        << "a write that may have applied was sent again; " << proxy_->log();
    EXPECT_EQ(proxy_->count("UpdateItem", FaultAction::kForwardThenError), 1) << proxy_->log();
    EXPECT_GE(proxy_->count("GetItem"), 1) << proxy_->log();
    const auto item = stored(key);
    ASSERT_TRUE(item);
    EXPECT_EQ(item->at("token"), lease.at("token")) << "the token printed is not the one stored";
    EXPECT_EQ(item->at("epoch").as_int64(), 1);
  }
}

// A write answered 5xx before it reached DynamoDB is not sent again either
// (the client cannot tell it from one that applied): the read-back finds no
// lease, so the acquire fails (exit 1) leaving nothing, and the next one wins.
TEST_F(DynamoDbFaultsTest, AcquireAnswered5xxUnappliedIsNotResentAndLeavesNothing) {
  init_tables();
  for (const auto& [status, type] : write_5xx_answers()) {
    const std::string key = "k" + std::to_string(status) + type;
    SCOPED_TRACE(key);

    const RunResult r = acquire_with(key, reply_rule("UpdateItem", 1, status, type));
    EXPECT_EQ(r.exit_code, 1) << r.err << proxy_->log();
    EXPECT_EQ(r.out, "");
    EXPECT_TRUE(r.err.starts_with("leasehold: ")) << r.err;
    EXPECT_EQ(proxy_->count("UpdateItem"), 1) << "a 5xx write was sent again; " << proxy_->log();
    EXPECT_GE(proxy_->count("GetItem"), 1) << "the outcome was not read back; " << proxy_->log();
    EXPECT_FALSE(stored(key)) << "a write that never reached DynamoDB left a lease";

    const RunResult again = via_proxy({"lease", "acquire", key, "--owner", "a"});
    ASSERT_EQ(again.exit_code, 0) << again.err << proxy_->log();
    EXPECT_EQ(parse_object(again.out).at("epoch").as_int64(), 1);
  }
}

TEST_F(DynamoDbFaultsTest, AcquireWhoseReplyIsLostIsResolvedByConsistentReadBack) {
  init_tables();
  proxy_->add_rule(drop_rule("UpdateItem", FaultAction::kForwardThenDrop));

  const RunResult r = via_proxy({"lease", "acquire", "k", "--owner", "a"});
  ASSERT_EQ(r.exit_code, 0) << r.err << proxy_->log();
  const auto lease = parse_object(r.out);
  EXPECT_EQ(lease.at("epoch").as_int64(), 1);
  // The write was applied once and never resent; the outcome was read back.
  EXPECT_EQ(proxy_->count("UpdateItem"), 1) << proxy_->log();
  EXPECT_GE(proxy_->count("GetItem"), 1) << proxy_->log();
  for (const auto& seen : proxy_->seen()) {
    if (seen.operation == "GetItem") {
      EXPECT_TRUE(contains(seen.body, R"("ConsistentRead":true)")) << seen.body;
    }
  }
  const auto item = stored("k");
  ASSERT_TRUE(item);
  EXPECT_EQ(item->at("token"), lease.at("token")) << "the token printed is not the one stored";
  EXPECT_EQ(item->at("epoch").as_int64(), 1);

  const RunResult contender = direct({"lease", "acquire", "k", "--owner", "b"});
  EXPECT_EQ(contender.exit_code, 3) << contender.err;
  const auto holder = parse_object(contender.out);
  EXPECT_EQ(holder.at("owner"), "a");
  EXPECT_FALSE(holder.contains("token"));
  EXPECT_TRUE(contains(contender.err, "held by another owner")) << contender.err;
}

TEST_F(DynamoDbFaultsTest, LostAcquireReplyWithFailingReadBackIsExit1AndTheLeaseStaysExclusive) {
  init_tables();
  proxy_->add_rule(drop_rule("UpdateItem", FaultAction::kForwardThenDrop));
  proxy_->add_rule(reply_rule("GetItem", -1, 400, "ProvisionedThroughputExceededException"));

  const RunResult r = via_proxy({"lease", "acquire", "k", "--owner", "a"});
  EXPECT_EQ(r.exit_code, 1) << r.err << proxy_->log();
  EXPECT_EQ(r.out, "") << "no token may be printed for a lease not known to be ours";
  EXPECT_TRUE(contains(r.err, "unknown outcome")) << r.err;
  EXPECT_EQ(proxy_->count("UpdateItem"), 1)
      << "an unknown write must not be resent; " << proxy_->log();
  // Three read-backs of four attempts each.
  EXPECT_EQ(proxy_->count("GetItem"), 12) << proxy_->log();

  // The write did apply: the lease is a's (its token unknown to anyone), so
  // nobody else may take it before it expires.
  const auto item = stored("k");
  ASSERT_TRUE(item);
  EXPECT_EQ(item->at("owner"), "a");
  EXPECT_EQ(item->at("held"), true);
  EXPECT_EQ(direct({"lease", "acquire", "k", "--owner", "b"}).exit_code, 3);
}

TEST_F(DynamoDbFaultsTest, AcquireDroppedBeforeReachingDynamoDbIsExit1OrARetryNeverExit3) {
  init_tables();
  proxy_->add_rule(drop_rule("UpdateItem", FaultAction::kDropUnforwarded));

  const RunResult r = via_proxy({"lease", "acquire", "k", "--owner", "a"});
  EXPECT_EQ(proxy_->count("UpdateItem", FaultAction::kDropUnforwarded), 1) << proxy_->log();
  EXPECT_LE(proxy_->count("UpdateItem", FaultAction::kForward), 1) << proxy_->log();
  ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1)
      << "nobody holds the lease, so neither 'held by another' (3) nor anything else is right; "
      << "exit " << r.exit_code << ", stdout '" << r.out << "', stderr '" << r.err << "' "
      << proxy_->log();
  if (r.exit_code == 0) {
    // Retried: the retry's token is the one stored.
    const auto item = stored("k");
    ASSERT_TRUE(item);
    EXPECT_EQ(item->at("token"), parse_object(r.out).at("token"));
    EXPECT_EQ(item->at("epoch").as_int64(), 1);
    return;
  }
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(r.err.starts_with("leasehold: ")) << r.err;
  EXPECT_FALSE(stored("k")) << "a write that never reached DynamoDB left a lease";
  const RunResult other = direct({"lease", "acquire", "k", "--owner", "b"});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_EQ(parse_object(other.out).at("epoch").as_int64(), 1);
}

TEST_F(DynamoDbFaultsTest, RenewWhoseReplyIsLostIsResolvedByReadBack) {
  init_tables();
  const auto lease = parse_object(direct({"lease", "acquire", "k", "--owner", "a"}).out);
  const std::string token(lease.at("token").as_string());
  proxy_->add_rule(drop_rule("UpdateItem", FaultAction::kForwardThenDrop));

  const RunResult r = via_proxy({"lease", "renew", "k", "--owner", "a", "--token", token, "--ttl", "60s"});
  ASSERT_EQ(r.exit_code, 0) << r.err << proxy_->log();
  const auto renewed = parse_object(r.out);
  EXPECT_EQ(proxy_->count("UpdateItem"), 1) << proxy_->log();
  EXPECT_GE(proxy_->count("GetItem"), 1) << proxy_->log();
  const auto item = stored("k");
  ASSERT_TRUE(item);
  EXPECT_EQ(item->at("token").as_string(), token);
  EXPECT_EQ(item->at("expires_at_ms"), renewed.at("expires_at_ms"));
  EXPECT_GT(renewed.at("expires_at_ms").as_int64(), lease.at("expires_at_ms").as_int64());
}

// ------------------------------------------------------------ server and table

TEST_F(DynamoDbFaultsTest, ServerDownIsExit1FastNamingTheEndpointAndTheFailure) {
  // A bound socket that never listens: connecting to it is refused, and no
  // other process can take the port while the test runs.
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string where = "127.0.0.1:" + std::to_string(ntohs(addr.sin_port));

  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"lease", "acquire", "k", "--owner", "a"},
        std::vector<std::string>{"store", "init"}}) {
    SCOPED_TRACE(args[0] + " " + args[1]);
    const auto started = std::chrono::steady_clock::now();
    const RunResult r = lh_at(uri_for("http://" + where), args);
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_TRUE(r.err.starts_with("leasehold: ")) << r.err;
    EXPECT_TRUE(contains(r.err, where)) << r.err;
    EXPECT_TRUE(contains(r.err, "refused")) << r.err;
  }
  ::close(fd);
}

// Written before the lease commands stopped creating tables (open_session()
// used to call ensure_table()); fails on a binary that still creates them.
TEST_F(DynamoDbFaultsTest, LeaseCommandsOnATableNeverInitialisedAreExit1AndCreateNothing) {
  const std::string token(32, 'a');
  for (const std::vector<std::string>& args : {
           std::vector<std::string>{"lease", "acquire", "k", "--owner", "a"},
           std::vector<std::string>{"lease", "show", "k"},
           std::vector<std::string>{"lease", "list"},
           std::vector<std::string>{"lease", "renew", "k", "--owner", "a", "--token", token},
           std::vector<std::string>{"lease", "release", "k", "--owner", "a", "--token", token},
       }) {
    SCOPED_TRACE(args[0] + " " + args[1]);
    const RunResult r = via_proxy(args);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_TRUE(r.err.starts_with("leasehold: ")) << r.err;
    EXPECT_TRUE(contains(r.err, prefix_ + "leases") || contains(r.err, "'leases'")) << r.err;
    EXPECT_TRUE(contains(r.err, "leasehold store init")) << r.err;
  }
  EXPECT_EQ(proxy_->count("CreateTable"), 0) << proxy_->log();
  EXPECT_EQ(proxy_->count("UpdateTable"), 0) << proxy_->log();
  EXPECT_EQ(proxy_->count("UpdateItem"), 0) << proxy_->log();
  EXPECT_EQ(own_tables(), std::vector<std::string>{}) << "a lease command created a table";
}

TEST_F(DynamoDbFaultsTest, MalformedEndpointsAreExit2AndNothingIsSent) {
  const std::string port = std::to_string(proxy_->port());
  const std::vector<std::string> endpoints = {
      "http//127.0.0.1:" + port,               // no "://"
      "ftp://127.0.0.1:" + port,               // not http(s)
      "http://10.1.2.3:8000",                  // plain http off loopback
      "http://127.0.0.1:70000",                // port out of range
      "http://127.0.0.1:0",                    // port 0
      "http://127.0.0.1:" + port + "x",        // junk after the port
      "http://127.0.0.1:" + port + "/tables",  // a path
      "http://user@127.0.0.1:" + port,         // user info
      "",                                      // empty
  };
  for (const std::string& endpoint : endpoints) {
    SCOPED_TRACE("endpoint=" + endpoint);
    const RunResult r = lh_at(uri_for(endpoint), {"lease", "acquire", "k", "--owner", "a"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_TRUE(r.err.starts_with("leasehold: ")) << r.err;
    EXPECT_TRUE(contains(r.err, "endpoint")) << r.err;
  }
  EXPECT_EQ(proxy_->count(""), 0) << proxy_->log();
  EXPECT_EQ(own_tables(), std::vector<std::string>{}) << "a refused URI reached dynalite";
}

// ------------------------------------------------------------ lease hold

TEST_F(DynamoDbFaultsTest, HoldWhoseRenewalsAreAllThrottledStopsItsCommandBeforeTheStoredExpiry) {
  init_tables();
  // The command writes the wall-clock ms at which it is told to stop.
  const std::string stopped_file = (dir() / "stopped_at_ms").string();
  auto hold = start_lh({"lease", "hold", "k", "--owner", "a", "--ttl", "4s", "--grace", "1s", "--",
                        "sh", "-c",
                        "trap 'date +%s%3N > " + stopped_file +
                            "; kill $!; exit 143' TERM; "
                            "sleep 60 & wait"});
  // Once the acquire has been forwarded, throttle everything after it.
  ASSERT_TRUE(eventually([&] { return proxy_->count("UpdateItem") >= 1; }, kRunTimeout))
      << hold->err_so_far();
  proxy_->add_rule(reply_rule("UpdateItem", -1, 400, "ProvisionedThroughputExceededException"));
  ASSERT_TRUE(eventually([&] { return stored("k").has_value(); }, kRunTimeout));
  const auto item = stored("k");
  ASSERT_TRUE(item);
  const int64_t expires_at_ms = item->at("expires_at_ms").as_int64();
  EXPECT_EQ(item->at("epoch").as_int64(), 1);

  ASSERT_TRUE(hold->wait_for(kRunTimeout)) << "lease hold never gave up";
  const int64_t exited_by_ms = wall_now_ms();
  const RunResult r = hold->result();
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "lost the lease")) << r.err;
  EXPECT_FALSE(contains(r.err, kSecretKey));
  const std::string stopped_text = read_file(stopped_file);
  ASSERT_FALSE(stopped_text.empty()) << "the command was never sent SIGTERM; " << r.err;
  const int64_t stopped_at_ms = std::stoll(stopped_text);
  EXPECT_LT(stopped_at_ms, expires_at_ms) << "the command ran past the lease's stored expiry";
  // The process itself may finish its in-flight renewal first, but not much later.
  EXPECT_LT(exited_by_ms, expires_at_ms + 2000) << "stopped at " << stopped_at_ms;
  RecordProperty("command_stopped_before_expiry_ms", std::to_string(expires_at_ms - stopped_at_ms));
  RecordProperty("hold_exited_after_expiry_ms_at_most",
                 std::to_string(exited_by_ms - expires_at_ms));
  EXPECT_GE(proxy_->count("UpdateItem", FaultAction::kReply), 1) << proxy_->log();
  EXPECT_EQ(proxy_->count("UpdateItem", FaultAction::kForward), 1) << proxy_->log();

  // Until that expiry nobody else may take it; after it, with the next epoch.
  RunResult contender = direct({"lease", "acquire", "k", "--owner", "b"});
  if (contender.exit_code != 0) {
    EXPECT_EQ(contender.exit_code, 3) << contender.err;
    ASSERT_TRUE(eventually([&] { return wall_now_ms() > expires_at_ms; }, kRunTimeout));
    contender = direct({"lease", "acquire", "k", "--owner", "b"});
  }
  ASSERT_EQ(contender.exit_code, 0) << contender.err;
  const auto taken = parse_object(contender.out);
  EXPECT_EQ(taken.at("epoch").as_int64(), 2);
  EXPECT_GE(taken.at("acquired_at_ms").as_int64(), expires_at_ms)
      << "the contender got the lease before the first holder's stored expiry";
}

// The store answers the acquisition only after the lease's local deadline
// has passed (and its stored expiry too): the command must not be started at
// all. Whether it was is read from the kernel (inotify sees its executable
// opened by exec), not only from its work: a command started that late may be
// stopped before it can do any. (On SQLite a locked store stalls opening the
// session as well as the acquisition, so it cannot make only the lease late.)
TEST_F(DynamoDbFaultsTest, HoldDoesNotStartItsCommandUnderALeaseThatArrivedTooLate) {
  init_tables();
  const std::filesystem::path command = dir() / "command";
  const std::string marker = (dir() / "marker").string();
  { std::ofstream(command) << "#!/bin/sh\ntouch '" << marker << "'\n"; }
  std::filesystem::permissions(command, std::filesystem::perms::owner_all);
  const int exec_watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  ASSERT_GE(exec_watch, 0);
  EXPECT_GE(inotify_add_watch(exec_watch, command.c_str(), IN_OPEN), 0);
  FaultRule slow;
  slow.operation = "UpdateItem";
  slow.action = FaultAction::kForward;
  slow.delay = std::chrono::milliseconds(1500);  // the lease's validity window is 400 ms
  proxy_->add_rule(slow);

  const RunResult r =
      via_proxy({"lease", "hold", "k", "--owner", "a", "--ttl", "1s", "--", command.string()});
  EXPECT_TRUE(r.exit_code == 1 || r.exit_code == 3) << "exit " << r.exit_code << ": " << r.err;
  char events[4096];
  EXPECT_LT(read(exec_watch, events, sizeof events), 0)
      << "the command was started under a lease already lost; " << r.err;
  close(exec_watch);
  EXPECT_FALSE(std::filesystem::exists(marker)) << "the command ran under a lease already lost";
  EXPECT_EQ(proxy_->count("UpdateItem", FaultAction::kForward), proxy_->count("UpdateItem"))
      << proxy_->log();
}

}  // namespace
}  // namespace leasehold::process_test
