#include "leasehold/lease.h"

#include <gtest/gtest.h>

#include "store/faulty_store.h"
#include "store/memory/memory_store.h"

namespace leasehold {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class LeaseTest : public ::testing::Test {
 protected:
  LeaseTest()
      : inner_(store::make_memory_store()),
        faulty_(*inner_, random_, {}, [this](Duration d) { clock_.advance(d); }),
        leases_(faulty_, clock_, random_) {
    EXPECT_TRUE(faulty_.ensure_table(lease_table_spec()).ok());
  }

  AcquireOptions as(std::string owner, Duration ttl = seconds(10)) {
    AcquireOptions o;
    o.owner = std::move(owner);
    o.ttl = ttl;
    return o;
  }

  Item stored(const std::string& pk) { return *inner_->get("leases", {pk, ""}, true); }

  SimulatedClock clock_;
  SeededRandom random_{1};
  std::unique_ptr<ItemStore> inner_;
  store::FaultyStore faulty_;
  LeaseManager leases_;
  const Key key_{"k", ""};
};

TEST_F(LeaseTest, OneHolderUntilExpiryThenEpochGoesUp) {
  auto a = leases_.acquire(key_, as("a"));
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(a->epoch, 1);
  EXPECT_TRUE(is_well_formed_token(a->token));

  auto b = leases_.acquire(key_, as("b"));
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), Code::kAlreadyExists);

  clock_.advance(seconds(10) + milliseconds(1));
  EXPECT_FALSE(a->valid_at(clock_.mono_now()));
  b = leases_.acquire(key_, as("b"));
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  EXPECT_EQ(b->epoch, 2);
  EXPECT_NE(b->token, a->token);
}

TEST_F(LeaseTest, ValidityIsTtlLessSkewAndMarginFromTheSendTime) {
  // The store takes 300 ms to apply the write: validity still counts from the send.
  faulty_.set_options({0, 0, 1.0, milliseconds(300)});
  const MonoTime sent = clock_.mono_now();
  auto a = leases_.acquire(key_, as("a"));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->valid_until, sent + seconds(10) - milliseconds(500) - milliseconds(100));
  EXPECT_GT(clock_.mono_now(), sent);
}

TEST_F(LeaseTest, RenewExtendsAndKeepsEpoch) {
  auto a = leases_.acquire(key_, as("a"));
  ASSERT_TRUE(a.ok());
  clock_.advance(seconds(3));
  auto r = leases_.renew(*a);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->epoch, a->epoch);
  EXPECT_EQ(r->expires_at_ms, a->expires_at_ms + 3000);
  EXPECT_GT(r->valid_until, a->valid_until);
  EXPECT_EQ(*get_int(stored("k"), "lease_expires_at_ms"), r->expires_at_ms);
}

TEST_F(LeaseTest, NoRenewalPastTheLocalDeadline) {
  auto a = leases_.acquire(key_, as("a"));
  ASSERT_TRUE(a.ok());
  const Item before = stored("k");
  clock_.advance(seconds(10) - milliseconds(600));  // exactly the validity window
  auto r = leases_.renew(*a);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(stored("k"), before) << "a lease past its deadline must not even send a renewal";
}

TEST_F(LeaseTest, RenewByTokenRefusesAnExpiredLease) {
  auto a = leases_.acquire(key_, as("a", seconds(2)));
  ASSERT_TRUE(a.ok());
  clock_.advance(seconds(2) + milliseconds(1));
  auto r = leases_.renew(LeaseRef{key_, "lease", a->token}, seconds(2));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kFailedPrecondition);
}

TEST_F(LeaseTest, ReleaseModes) {
  auto a = leases_.acquire(key_, as("a"));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(leases_.release(*a, ReleaseMode::kExpire).ok());
  auto v = leases_.inspect(key_);
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->held);
  EXPECT_EQ(v->owner, "a") << "expire mode keeps the owner for history";
  EXPECT_EQ(v->expires_at_ms, 0);

  auto b = leases_.acquire(key_, as("b"));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->epoch, 2);
  ASSERT_TRUE(leases_.release(*b, ReleaseMode::kClear).ok());
  const Item item = stored("k");
  EXPECT_FALSE(item.contains("lease_owner"));
  EXPECT_FALSE(item.contains("lease_token"));
  EXPECT_EQ(*get_int(item, "lease_epoch"), 2) << "clear mode never resets the epoch";

  auto c = leases_.acquire(key_, as("c"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->epoch, 3);
}

TEST_F(LeaseTest, StaleTokensAreRefused) {
  auto a = leases_.acquire(key_, as("a"));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(leases_.release(*a, ReleaseMode::kExpire).ok());
  auto b = leases_.acquire(key_, as("b"));
  ASSERT_TRUE(b.ok());
  const Item before = stored("k");
  EXPECT_EQ(leases_.release(*a, ReleaseMode::kClear).code(), Code::kFailedPrecondition);
  EXPECT_EQ(leases_.renew(*a).status().code(), Code::kFailedPrecondition);
  auto w = leases_.fenced_write(*a, Update().set("data", std::string("stale")));
  EXPECT_EQ(w.status().code(), Code::kFailedPrecondition);
  EXPECT_EQ(stored("k"), before);

  w = leases_.fenced_write(*b, Update().set("data", std::string("fresh")));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(*get_string(*w, "data"), "fresh");
}

TEST_F(LeaseTest, FencedWriteIsNotSentPastTheDeadline) {
  auto a = leases_.acquire(key_, as("a"));
  ASSERT_TRUE(a.ok());
  clock_.advance(seconds(9) + milliseconds(400));
  auto w = leases_.fenced_write(*a, Update().set("data", std::string("late")));
  EXPECT_EQ(w.status().code(), Code::kFailedPrecondition);
  EXPECT_FALSE(stored("k").contains("data"));
}

TEST_F(LeaseTest, ReplaceEndsOneSlotAndStartsAnother) {
  AcquireOptions analysis = as("alice");
  analysis.slot = "analysis";
  auto a = leases_.acquire(key_, analysis);
  ASSERT_TRUE(a.ok());
  AcquireOptions tracing = as("worker");
  tracing.slot = "tracing";
  tracing.extra_update.set("status", std::string("tracing"));
  auto t = leases_.replace(*a, tracing);
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ(t->epoch, 1);
  const Item item = stored("k");
  EXPECT_FALSE(item.contains("analysis_token"));
  EXPECT_EQ(*get_int(item, "analysis_epoch"), 1);
  EXPECT_EQ(*get_string(item, "status"), "tracing");
  EXPECT_EQ(*get_string(item, "tracing_token"), t->token);

  // The analysis lease is gone: replacing it again fails as "not yours".
  auto again = leases_.replace(*a, tracing);
  EXPECT_EQ(again.status().code(), Code::kFailedPrecondition);
}

TEST_F(LeaseTest, ExtraConditionJoinsTheAcquireWrite) {
  AcquireOptions o = as("a");
  o.extra_condition = cond::eq("status", std::string("ready"));
  EXPECT_EQ(leases_.acquire(key_, o).status().code(), Code::kAlreadyExists);
  EXPECT_EQ(inner_->get("leases", key_, true).status().code(), Code::kNotFound);
}

TEST_F(LeaseTest, UnknownOutcomesAreResolvedByReadingBack) {
  faulty_.inject_next(store::Fault::kDropReply);
  auto a = leases_.acquire(key_, as("a"));
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(*get_string(stored("k"), "lease_token"), a->token);

  faulty_.inject_next(store::Fault::kDropReply);
  auto r = leases_.renew(*a);
  ASSERT_TRUE(r.ok()) << r.status().to_string();

  // The acquire write was lost before applying: the read-back says so.
  faulty_.inject_next(store::Fault::kUnavailable);
  EXPECT_EQ(leases_.acquire({"other", ""}, as("b")).status().code(), Code::kUnavailable);
  EXPECT_EQ(inner_->get("leases", {"other", ""}, true).status().code(), Code::kNotFound);

  // Applied but unreported, and the read-back fails every time: unavailable,
  // never a lease the caller believes it has without proof.
  for (int i = 0; i < 4; ++i)
    faulty_.inject_next(i == 0 ? store::Fault::kDropReply : store::Fault::kUnavailable);
  EXPECT_EQ(leases_.acquire({"third", ""}, as("c")).status().code(), Code::kUnavailable);
}

TEST_F(LeaseTest, TimingChecks) {
  EXPECT_EQ(leases_.acquire(key_, as("a", milliseconds(800))).status().code(),
            Code::kInvalidArgument);
  EXPECT_TRUE(leases_.check_timing(milliseconds(1500), milliseconds(400)).ok());
  EXPECT_FALSE(leases_.check_timing(milliseconds(1500), milliseconds(500)).ok());
  EXPECT_TRUE(leases_.check_timing(seconds(20), leases_.default_renew_every(seconds(20))).ok());
}

TEST_F(LeaseTest, BadInputChangesNothing) {
  AcquireOptions o = as("");
  EXPECT_EQ(leases_.acquire(key_, o).status().code(), Code::kInvalidArgument);
  o = as("a");
  o.slot = "Bad-Slot";
  EXPECT_EQ(leases_.acquire(key_, o).status().code(), Code::kInvalidArgument);
  o = as(std::string("a\nb"));
  EXPECT_EQ(leases_.acquire(key_, o).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(leases_.release(LeaseRef{key_, "lease", "zz"}, ReleaseMode::kClear).code(),
            Code::kInvalidArgument);
  EXPECT_EQ(leases_.acquire({"", ""}, as("a")).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(inner_->get("leases", key_, true).status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace leasehold
