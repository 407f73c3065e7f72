// renew, release, show and list as separate processes see them.
#include <set>

#include "process_util.h"

namespace leasehold::process_test {
namespace {

const std::string kWrongToken = "0123456789abcdef0123456789abcdef";

class LeaseCommandsTest : public BackendTest {};

TEST_P(LeaseCommandsTest, AcquirePrintsTheLease) {
  const RunResult r =
      lh({"lease", "acquire", "k", "--owner", "a", "--ttl", "20s", "--holder", "Ann"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lease = parse_object(r.out);
  EXPECT_EQ(str(lease, "key"), "k");
  EXPECT_EQ(str(lease, "slot"), "lease");
  EXPECT_EQ(str(lease, "owner"), "a");
  EXPECT_EQ(str(lease, "holder"), "Ann");
  EXPECT_EQ(str(lease, "token").size(), 32u);
  EXPECT_EQ(lease.at("epoch").as_int64(), 1);
  EXPECT_EQ(lease.at("expires_at_ms").as_int64() - lease.at("acquired_at_ms").as_int64(), 20'000);
}

TEST_P(LeaseCommandsTest, RenewWithTheTokenExtendsTheLease) {
  const auto lease = acquire("k", "a", "20s");
  const RunResult r =
      lh({"lease", "renew", "k", "--owner", "a", "--token", str(lease, "token"), "--ttl", "60s"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto renewed = parse_object(r.out);
  EXPECT_GT(renewed.at("expires_at_ms").as_int64(), lease.at("expires_at_ms").as_int64());
  EXPECT_EQ(renewed.at("epoch"), lease.at("epoch"));
  EXPECT_EQ(renewed.at("token"), lease.at("token"));
  EXPECT_EQ(show("k")->at("expires_at_ms"), renewed.at("expires_at_ms"));
}

TEST_P(LeaseCommandsTest, WrongTokenExitsThreeWithTheHolder) {
  const auto lease = acquire("k", "a");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"lease", "renew", "k", "--owner", "a", "--token", kWrongToken},
           {"lease", "release", "k", "--owner", "a", "--token", kWrongToken},
           {"lease", "release", "k", "--owner", "a", "--token", kWrongToken, "--mode", "clear"},
           {"lease", "renew", "k", "--owner", "b", "--token", str(lease, "token")},
           {"lease", "release", "k", "--owner", "b", "--token", str(lease, "token")}}) {
    const RunResult r = lh(args);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    const auto holder = parse_object(r.out);
    EXPECT_EQ(str(holder, "owner"), "a");
    EXPECT_EQ(holder.at("epoch"), lease.at("epoch"));
    EXPECT_EQ(holder.at("held"), true);
  }
  EXPECT_EQ(show("k")->at("held"), true);
}

TEST_P(LeaseCommandsTest, ReleaseExpireEndsTheLeaseAndTheNextAcquireGetsEpochPlusOne) {
  const auto first = acquire("k", "a");
  ASSERT_EQ(lh({"lease", "release", "k", "--owner", "a", "--token", str(first, "token"), "--mode",
                "expire"})
                .exit_code,
            0);
  const auto shown = show("k");
  ASSERT_TRUE(shown);
  EXPECT_EQ(shown->at("held"), false);
  EXPECT_EQ(str(*shown, "owner"), "a");  // expire mode keeps the owner for history
  // A second release with the same token no longer finds it ours.
  EXPECT_EQ(lh({"lease", "renew", "k", "--owner", "a", "--token", str(first, "token")}).exit_code,
            3);
  const auto second = acquire("k", "b");
  EXPECT_EQ(second.at("epoch").as_int64(), first.at("epoch").as_int64() + 1);
}

TEST_P(LeaseCommandsTest, ReleaseClearLeavesNoLeaseToShow) {
  const auto first = acquire("k", "a");
  ASSERT_EQ(lh({"lease", "release", "k", "--owner", "a", "--token", str(first, "token"), "--mode",
                "clear"})
                .exit_code,
            0);
  const RunResult r = lh({"lease", "show", "k"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("no lease"), std::string::npos) << r.err;
  EXPECT_EQ(acquire("k", "b").at("epoch").as_int64(), first.at("epoch").as_int64() + 1);
}

TEST_P(LeaseCommandsTest, ShowOfAKeyNeverLeasedExitsThree) {
  const RunResult r = lh({"lease", "show", "never"});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("no lease"), std::string::npos) << r.err;
}

TEST_P(LeaseCommandsTest, SlotsAreIndependent) {
  acquire("k", "a");
  const RunResult r = lh({"lease", "acquire", "k", "--owner", "b", "--slot", "tracing"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(str(parse_object(r.out), "slot"), "tracing");
  const RunResult shown = lh({"lease", "show", "k", "--slot", "tracing"});
  EXPECT_EQ(str(parse_object(shown.out), "owner"), "b");
  EXPECT_EQ(str(*show("k"), "owner"), "a");
}

TEST_P(LeaseCommandsTest, KeysUpToTheLimitAndUnicodeAreAccepted) {
  const std::string key(1024, 'k');
  EXPECT_EQ(str(acquire(key, "a"), "key"), key);
  EXPECT_EQ(str(acquire("fil/é/ü", "ø"), "owner"), "ø");
}

std::set<std::string> keys_listed(const RunResult& r) {
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> keys;
  for (const std::string& line : lines_of(r.out)) keys.insert(str(parse_object(line), "key"));
  return keys;
}

TEST_P(LeaseCommandsTest, ListSplitsHeldFromExpired) {
  acquire("held-1", "a");
  acquire("held-2", "b");
  const auto released = acquire("released", "c");
  ASSERT_EQ(lh({"lease", "release", "released", "--owner", "c", "--token", str(released, "token")})
                .exit_code,
            0);
  acquire("short", "d", "1500ms");
  ASSERT_TRUE(eventually([&] { return show("short")->at("held") == false; }, milliseconds(10'000)));

  const std::set<std::string> all = {"held-1", "held-2", "released", "short"};
  EXPECT_EQ(keys_listed(lh({"lease", "list"})), all);
  EXPECT_EQ(keys_listed(lh({"lease", "list", "--held"})),
            (std::set<std::string>{"held-1", "held-2"}));
  EXPECT_EQ(keys_listed(lh({"lease", "list", "--expired"})),
            (std::set<std::string>{"released", "short"}));
  for (const std::string& line : lines_of(lh({"lease", "list", "--held"}).out)) {
    EXPECT_EQ(parse_object(line).at("held"), true);
  }
}

TEST_P(LeaseCommandsTest, ListPrintsEveryLeaseOnItsOwnLine) {
  // Paging itself (more than kQueryLimitMax items) is left to the store's
  // conformance suite: creating a thousand leases one process at a time
  // would make this test slow for little gain.
  std::set<std::string> expected;
  for (int i = 0; i < 30; ++i) {
    expected.insert("k" + std::to_string(i));
    acquire("k" + std::to_string(i), "a");
  }
  EXPECT_EQ(keys_listed(lh({"lease", "list"})), expected);
}

TEST_P(LeaseCommandsTest, StoreComesFromTheEnvironment) {
  const std::string uri = store_uri();
  const RunResult r = run({"env", "LEASEHOLD_STORE=" + uri, leasehold_bin(), "lease", "acquire",
                           "env-key", "--owner", "a"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(str(*show("env-key"), "owner"), "a");
}

// A writer of the stream fleet's reference pattern shares the SQLite file:
// it takes an expired lease with one conditional UPDATE that sets only the
// owner and the expiry, leaving the previous holder's token in the item (the
// same writer on DynamoDB, with the AWS SDK, is in sdk_interop_test.mjs).
// The old holder's token must then renew and release nothing.
TEST_F(ProcessTest, ATokenlessTakeoverIsNeverUndoneByTheOldToken) {
  const auto old = acquire("k", "a", "1s");
  // SQLite 3.40's clock, in Unix milliseconds.
  const std::string now_ms = "CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)";
  const std::string take_over =
      "UPDATE items_leases SET data = json_set(data, '$.lease_owner', 'F', "
      "'$.lease_expires_at_ms', " +
      now_ms +
      " + 60000) WHERE pk = 'k' AND "
      "(json_extract(data, '$.lease_owner') IS NULL OR "
      "json_extract(data, '$.lease_expires_at_ms') < " +
      now_ms + "); SELECT changes();";
  ASSERT_TRUE(eventually(
      [&] {
        return run({"sqlite3", db_path().string(), take_over}).out == "1\n";
      },
      milliseconds(10'000)))
      << "the reference writer never took the expired lease";
  const auto taken = show("k");
  ASSERT_TRUE(taken);
  ASSERT_EQ(str(*taken, "owner"), "F");
  ASSERT_EQ(str(*taken, "token"), str(old, "token")) << "the old token stays in place";

  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"lease", "release", "k", "--owner", "a", "--token", str(old, "token")},
           {"lease", "release", "k", "--owner", "a", "--token", str(old, "token"), "--mode",
            "clear"},
           {"lease", "renew", "k", "--owner", "a", "--token", str(old, "token")}}) {
    const RunResult r = lh(args);
    EXPECT_EQ(r.exit_code, 3) << args[1] << ": " << r.err;
    EXPECT_EQ(str(parse_object(r.out), "owner"), "F") << args[1];
  }
  EXPECT_EQ(*show("k"), *taken) << "F's lease must be untouched";
  EXPECT_EQ(lh({"lease", "acquire", "k", "--owner", "b"}).exit_code, 3);
}

INSTANTIATE_TEST_SUITE_P(Backends, LeaseCommandsTest,
                         ::testing::Values(Backend::kSqlite, Backend::kDynamoDb), backend_name);

}  // namespace
}  // namespace leasehold::process_test
