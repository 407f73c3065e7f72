// What a LeaseManager logs through LeaseConfig::info_log: how it resolved a
// write whose outcome was unknown, which the caller sees only as a decision.
// Every other lease rule, for every backend, is in
// tests/conformance/lease_conformance_test.cc.
#include "leasehold/lease.h"

#include <gtest/gtest.h>

#include "testing/capturing_logger.h"
#include "testing/faulty_store.h"
#include "store/memory/memory_store.h"

namespace leasehold {
namespace {

class LeaseLoggingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(memory_->ensure_table(TableSpec{"leases", "pk", "", {}}).ok());
  }

  LeaseConfig config() {
    LeaseConfig c;
    c.info_log = &log_;
    return c;
  }

  Lease acquire(const std::string& key) {
    AcquireOptions o;
    o.owner = "me";
    auto lease = leases_.acquire({key, ""}, o);
    EXPECT_TRUE(lease.ok()) << lease.status().to_string();
    return *lease;
  }

  // Every line logged so far, after checking that none carries `token`.
  std::vector<std::string> lines_without(const std::string& token) {
    std::vector<std::string> out;
    for (const auto& line : log_.lines()) {
      EXPECT_EQ(line.level, LogLevel::kInfo) << line.message;
      EXPECT_EQ(line.message.find(token), std::string::npos) << "a token was logged";
      out.push_back(line.message);
    }
    return out;
  }

  SimulatedClock clock_;
  SeededRandom random_{3};
  std::unique_ptr<ItemStore> memory_ = store::make_memory_store();
  store::FaultyStore store_{*memory_, random_};
  CapturingLogger log_;
  LeaseManager leases_{store_, clock_, random_, config()};
};

TEST_F(LeaseLoggingTest, WritesThatGetAnAnswerLogNothing) {
  const Lease lease = acquire("k");
  ASSERT_TRUE(leases_.renew(lease).ok());
  ASSERT_TRUE(leases_.release(lease, ReleaseMode::kExpire).ok());
  EXPECT_TRUE(log_.lines().empty()) << log_.lines().front().message;
}

TEST_F(LeaseLoggingTest, LogsHowEachUnknownOutcomeWasResolved) {
  store_.inject_next(store::Fault::kDropReply);  // applied, then the reply is lost
  const Lease lease = acquire("k");
  clock_.advance(std::chrono::seconds(1));         // so that the renewal would move the expiry
  store_.inject_next(store::Fault::kLoseRequest);  // lost on its way
  EXPECT_EQ(leases_.renew(lease).status().code(), Code::kUnavailable);
  store_.inject_next(store::Fault::kDropReply);
  ASSERT_TRUE(leases_.release(lease, ReleaseMode::kExpire).ok());

  const std::vector<std::string> lines = lines_without(lease.token);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0],
            "no answer from the store to acquire 'k' (slot lease); read back: it applied");
  EXPECT_TRUE(
      lines[1].starts_with("no answer from the store to renew 'k' (slot lease); read back: "))
      << lines[1];
  EXPECT_NE(lines[1].find("did not apply"), std::string::npos) << lines[1];
  EXPECT_EQ(lines[2],
            "no answer from the store to release 'k' (slot lease); read back: it applied");
}

}  // namespace
}  // namespace leasehold
