#include "leasehold/renewer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "store/faulty_store.h"
#include "store/memory/memory_store.h"

namespace leasehold {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Counts update_each calls, to see heartbeats batched.
class CountingStore final : public ItemStore {
 public:
  explicit CountingStore(ItemStore& inner) : inner_(inner) {}
  Status ensure_table(const TableSpec& s) override { return inner_.ensure_table(s); }
  Result<Item> get(std::string_view t, const Key& k, bool c) override {
    return inner_.get(t, k, c);
  }
  Result<std::vector<Item>> batch_get(std::string_view t, std::span<const Key> k) override {
    return inner_.batch_get(t, k);
  }
  Status put(std::string_view t, const Item& i, const Condition& c) override {
    return inner_.put(t, i, c);
  }
  Result<Item> update(std::string_view t, const Key& k, const Update& u,
                      const Condition& c) override {
    return inner_.update(t, k, u, c);
  }
  Status remove(std::string_view t, const Key& k, const Condition& c) override {
    return inner_.remove(t, k, c);
  }
  Result<Page> query(std::string_view t, std::string_view pk, const KeyRange& r,
                     const QueryOptions& o) override {
    return inner_.query(t, pk, r, o);
  }
  Result<Page> query_index(std::string_view t, std::string_view i, std::string_view h,
                           const KeyRange& r, const QueryOptions& o) override {
    return inner_.query_index(t, i, h, r, o);
  }
  std::vector<Result<Item>> update_each(std::string_view t,
                                        std::span<const UpdateRequest> r) override {
    ++batches;
    writes += r.size();
    return inner_.update_each(t, r);
  }
  std::string_view backend_name() const override { return "counting"; }
  std::atomic<int> batches{0};
  std::atomic<size_t> writes{0};

 private:
  ItemStore& inner_;
};

class RenewerTest : public ::testing::Test {
 protected:
  RenewerTest()
      : memory_(store::make_memory_store()),
        faulty_(*memory_, random_),
        counting_(faulty_),
        leases_(counting_, clock_, random_) {
    EXPECT_TRUE(counting_.ensure_table(lease_table_spec()).ok());
  }

  Lease acquire(const std::string& key, Duration ttl = seconds(10)) {
    AcquireOptions o;
    o.owner = "me";
    o.ttl = ttl;
    auto lease = leases_.acquire({key, ""}, o);
    EXPECT_TRUE(lease.ok()) << lease.status().to_string();
    return *lease;
  }

  // Advances simulated time in small steps, polling as a renewer thread would.
  void run_for(Renewer& renewer, Duration total, Duration step = milliseconds(10)) {
    for (Duration t{}; t < total; t += step) {
      clock_.advance(step);
      renewer.poll();
    }
  }

  SimulatedClock clock_;
  SeededRandom random_{3};
  std::unique_ptr<ItemStore> memory_;
  store::FaultyStore faulty_;
  CountingStore counting_;
  LeaseManager leases_;
};

TEST_F(RenewerTest, KeepsManyLeasesAliveInFewBatches) {
  Renewer renewer(leases_, clock_, random_);
  int lost = 0;
  std::vector<Renewer::Id> ids;
  for (int i = 0; i < 1000; ++i) {
    ids.push_back(renewer.add(acquire("k" + std::to_string(i)), [&](auto&, auto&) { ++lost; }));
  }
  run_for(renewer, seconds(60));
  EXPECT_EQ(lost, 0);
  for (Renewer::Id id : ids) {
    auto lease = renewer.get(id);
    ASSERT_TRUE(lease.has_value());
    ASSERT_TRUE(lease->valid_at(clock_.mono_now()));
    const Item item = *memory_->get("leases", lease->key, true);
    ASSERT_GT(*get_int(item, "lease_expires_at_ms"), to_unix_ms(clock_.wall_now()));
  }
  // About 60 s / 3.1 s = 19 renewals per lease, yet at most one batch per
  // batch window, however many leases there are.
  EXPECT_GE(counting_.writes.load(), 1000u * 17);
  const auto window_ms = to_ms(RenewerOptions{}.batch_window);
  EXPECT_LE(counting_.batches.load(), 60'000 / window_ms + 10);
}

TEST_F(RenewerTest, ReportsATakenLeaseAtOnce) {
  Renewer renewer(leases_, clock_, random_);
  Lease mine = acquire("k");
  std::optional<Status> why;
  const Renewer::Id id = renewer.add(mine, [&](const Lease&, const Status& s) { why = s; });
  ASSERT_TRUE(leases_.release(mine, ReleaseMode::kClear).ok());
  acquire("k");  // someone else
  run_for(renewer, seconds(4));
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->code(), Code::kFailedPrecondition);
  EXPECT_FALSE(renewer.get(id).has_value());
  EXPECT_EQ(renewer.size(), 0u);
}

TEST_F(RenewerTest, ReportsLossBeforeTheDeadlineWhenTheStoreIsDown) {
  Renewer renewer(leases_, clock_, random_);
  const Lease mine = acquire("k");
  std::optional<MonoTime> reported_at;
  renewer.add(mine, [&](const Lease& lease, const Status& s) {
    reported_at = clock_.mono_now();
    EXPECT_EQ(s.code(), Code::kDeadlineExceeded);
    EXPECT_LT(clock_.mono_now(), lease.valid_until) << "the callback must come before the deadline";
  });
  faulty_.set_options({1.0, 0, 0, {}});
  run_for(renewer, seconds(12));
  ASSERT_TRUE(reported_at.has_value());
  EXPECT_LT(*reported_at, mine.valid_until);
}

TEST_F(RenewerTest, RetriesThroughABriefOutage) {
  Renewer renewer(leases_, clock_, random_);
  int lost = 0;
  const Renewer::Id id = renewer.add(acquire("k"), [&](auto&, auto&) { ++lost; });
  faulty_.set_options({1.0, 0, 0, {}});
  run_for(renewer, seconds(4));
  faulty_.set_options({});
  run_for(renewer, seconds(20));
  EXPECT_EQ(lost, 0);
  EXPECT_TRUE(renewer.get(id).has_value());
}

TEST_F(RenewerTest, RemoveReturnsTheLatestLease) {
  Renewer renewer(leases_, clock_, random_);
  const Lease first = acquire("k");
  const Renewer::Id id = renewer.add(first, nullptr);
  run_for(renewer, seconds(5));
  auto latest = renewer.remove(id);
  ASSERT_TRUE(latest.has_value());
  EXPECT_GT(latest->expires_at_ms, first.expires_at_ms);
  EXPECT_FALSE(renewer.remove(id).has_value());
}

TEST(RenewerThreads, RenewsOnRealTime) {
  RealClock clock;
  SystemRandom random;
  auto store = store::make_memory_store();
  ASSERT_TRUE(store->ensure_table(lease_table_spec()).ok());
  LeaseManager leases(*store, clock, random);
  AcquireOptions o;
  o.owner = "me";
  o.ttl = milliseconds(1500);
  auto lease = leases.acquire({"k", ""}, o);
  ASSERT_TRUE(lease.ok());
  Renewer renewer(leases, clock, random);
  renewer.start();
  const Renewer::Id id = renewer.add(*lease, nullptr);
  // Wait (with a deadline) until the lease has been renewed past its first expiry.
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  bool renewed_twice = false;
  while (std::chrono::steady_clock::now() < deadline && !renewed_twice) {
    auto now = renewer.get(id);
    ASSERT_TRUE(now.has_value()) << "lease lost";
    renewed_twice = now->expires_at_ms > lease->expires_at_ms + 500;
    std::this_thread::sleep_for(milliseconds(20));
  }
  EXPECT_TRUE(renewed_twice);
  renewer.stop();
}

}  // namespace
}  // namespace leasehold
