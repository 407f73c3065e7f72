// Renewer rules that need a hand on the store call itself: a call that
// blocks until the test lets it go, one that takes simulated time, one that
// records the timeout it was given. The cases every backend must pass are in
// tests/conformance/lease_conformance_test.cc.
//
// Time is a SimulatedClock. Tests of the started renewer (its threads) wait
// in real time, with a deadline, for a thread to act on time moved by hand.
#include "leasehold/renewer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "store/memory/memory_store.h"
#include "store/store_wrapper.h"
#include "testing/capturing_logger.h"
#include "testing/eventually.h"

namespace leasehold {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// How long a test waits in real time for a renewer thread. The threads wait
// on the SimulatedClock, and the test's advance() wakes those it makes due.
constexpr auto kRealWaitMax = seconds(5);

// Polls `done` in real time until it holds or kRealWaitMax has passed.
bool eventually(const std::function<bool()>& done) {
  return testing::eventually(done, kRealWaitMax, milliseconds(5));
}

// One update_each call, as the store saw it.
struct StoreCall {
  MonoTime at;
  Duration timeout;
  size_t writes;
};

// A memory store whose update_each (the call every heartbeat goes through)
// the test can hold, slow down or fail, and which records each call.
// Thread-safe: the renewer's threads call it while the test steers it.
class HookedStore final : public store::StoreWrapper {
 public:
  explicit HookedStore(Clock& clock) : HookedStore(clock, store::make_memory_store()) {}

  // Runs inside each update_each before the writes apply, given the call's
  // timeout (it may advance the clock); a status other than OK fails every
  // write of the call with it. Set it before the renewer runs.
  std::function<Status(Duration timeout)> hook;

  // The next update_each waits until open() is called.
  void block_next() {
    std::lock_guard lock(mu_);
    block_next_ = true;
  }
  // Waits (in real time) until a call is blocked.
  bool wait_blocked() {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, kRealWaitMax, [&] { return blocked_; });
  }
  // Lets the blocked call, and every later one, through.
  void open() {
    {
      std::lock_guard lock(mu_);
      block_next_ = false;
      open_ = true;
    }
    changed_.notify_all();
  }
  std::vector<StoreCall> calls() const {
    std::lock_guard lock(mu_);
    return calls_;
  }

  using ItemStore::update_each;
  std::vector<Result<Item>> update_each(std::string_view t, std::span<const UpdateRequest> r,
                                        Duration timeout) override {
    {
      std::unique_lock lock(mu_);
      calls_.push_back({clock_.mono_now(), timeout, r.size()});
      if (block_next_) {
        block_next_ = false;
        blocked_ = true;
        changed_.notify_all();
        changed_.wait(lock, [&] { return open_; });
      }
    }
    if (hook) {
      const Status status = hook(timeout);
      if (!status.ok()) return std::vector<Result<Item>>(r.size(), Result<Item>(status));
    }
    return StoreWrapper::update_each(t, r, timeout);
  }

  std::string_view backend_name() const override { return "hooked"; }

 private:
  // The wrapper forwards to *memory, which it owns from here on.
  HookedStore(Clock& clock, std::unique_ptr<ItemStore> memory)
      : StoreWrapper(*memory), clock_(clock), memory_(std::move(memory)) {}

  Clock& clock_;
  std::unique_ptr<ItemStore> memory_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  bool block_next_ = false;
  bool blocked_ = false;
  bool open_ = false;
  std::vector<StoreCall> calls_;
};

// Opens the store when the test ends, however it ends, so that a renewer
// thread stuck in it can be joined. Declare it after the Renewer.
struct OpenAtEnd {
  HookedStore& store;
  ~OpenAtEnd() { store.open(); }
};

class RenewerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(store_.ensure_table(TableSpec{"leases", "pk", "", {}}).ok());
  }

  // With ttl 10 s the validity window is 9.4 s: renewals every 3 s, no
  // jitter, leave time for two more before the loss point.
  static RenewerOptions options() {
    RenewerOptions o;
    o.renew_every = seconds(3);
    o.jitter_fraction = 0;
    return o;
  }

  Lease acquire(const std::string& key) {
    AcquireOptions o;
    o.owner = "me";
    o.ttl = seconds(10);
    auto lease = leases_.acquire({key, ""}, o);
    EXPECT_TRUE(lease.ok()) << lease.status().to_string();
    return *lease;
  }

  static MonoTime lost_at(const Lease& lease) {
    return lease.valid_until - RenewerOptions{}.loss_lead;
  }

  // Advances simulated time in small steps, polling as a renewer thread would.
  void run_for(Renewer& renewer, Duration total, Duration step = milliseconds(10)) {
    for (Duration t{}; t < total; t += step) {
      clock_.advance(step);
      renewer.poll();
    }
  }

  SimulatedClock clock_;
  SeededRandom random_{7};
  HookedStore store_{clock_};
  LeaseManager leases_{store_, clock_, random_};
};

// Issue item 6: while one batch is stuck in the store, a lease outside it
// that falls due is still renewed.
TEST_F(RenewerTest, AStuckBatchDoesNotHoldBackOtherLeases) {
  Renewer renewer(leases_, clock_, random_, options());
  OpenAtEnd open_at_end{store_};
  const Lease a = acquire("a");
  renewer.add(a, nullptr);  // due in 3 s
  clock_.advance(seconds(1));
  const Lease b = acquire("b");
  const Renewer::Id b_id = renewer.add(b, nullptr);  // due in 4 s
  store_.block_next();
  renewer.start();

  clock_.advance(seconds(2));
  ASSERT_TRUE(store_.wait_blocked()) << "a's renewal never reached the store";
  ASSERT_EQ(store_.calls().back().writes, 1u) << "b must not be in a's batch";
  // Past b's renewal time by more than its spare threads wait for the first.
  clock_.advance(milliseconds(1500));
  EXPECT_TRUE(eventually([&] {
    const auto latest = renewer.get(b_id);
    return latest && latest->valid_until > b.valid_until;
  })) << "b was not renewed while a's batch was stuck";
}

// Issue item 6: the store call of a batch ends with time left for another
// attempt before the batch's earliest loss point.
TEST_F(RenewerTest, StoreCallTimeoutLeavesTimeForAnotherAttempt) {
  Renewer renewer(leases_, clock_, random_, options());
  const Lease a = acquire("a");
  clock_.advance(milliseconds(100));
  const Lease b = acquire("b");  // a later deadline, renewed in a's batch
  renewer.add(a, nullptr);
  renewer.add(b, nullptr);
  run_for(renewer, seconds(4));

  const std::vector<StoreCall> calls = store_.calls();
  ASSERT_GE(calls.size(), 1u);
  ASSERT_EQ(calls[0].writes, 2u);
  EXPECT_GT(calls[0].timeout, Duration::zero());
  EXPECT_LE(calls[0].timeout, (lost_at(a) - calls[0].at) / 2);
}

// Issue item 6: the next renewal is due a period after the last one was
// sent, not a period after its (slow) reply came back.
TEST_F(RenewerTest, NextRenewalIsScheduledFromTheSend) {
  Renewer renewer(leases_, clock_, random_, options());
  renewer.add(acquire("a"), nullptr);
  const MonoTime sent = clock_.mono_now() + seconds(3);
  bool first = true;
  store_.hook = [&](Duration) {
    if (std::exchange(first, false)) clock_.advance(seconds(2));
    return Status();
  };
  clock_.advance(seconds(3));
  EXPECT_EQ(renewer.poll(), sent + seconds(3));
  clock_.advance(seconds(1));
  renewer.poll();
  EXPECT_EQ(store_.calls().size(), 2u);
}

// Issue item 6: a reply slower than the renew period is followed by the next
// renewal at once.
TEST_F(RenewerTest, AReplySlowerThanThePeriodIsFollowedAtOnce) {
  Renewer renewer(leases_, clock_, random_, options());
  renewer.add(acquire("a"), nullptr);
  bool first = true;
  store_.hook = [&](Duration) {
    if (std::exchange(first, false)) clock_.advance(seconds(4));
    return Status();
  };
  clock_.advance(seconds(3));
  const MonoTime next = renewer.poll();  // the reply came 4 s after the send
  EXPECT_LE(next, clock_.mono_now());
  renewer.poll();
  EXPECT_EQ(store_.calls().size(), 2u);
}

// Issue item 6: an attempt that uses up its whole timeout and fails still
// leaves time for a retry, which keeps the lease.
TEST_F(RenewerTest, ASlowFailedAttemptLeavesTimeForARetry) {
  Renewer renewer(leases_, clock_, random_, options());
  int lost = 0;
  const Renewer::Id id = renewer.add(acquire("a"), [&](auto&, auto&) { ++lost; });
  bool first = true;
  store_.hook = [&](Duration timeout) {
    if (!std::exchange(first, false)) return Status();
    clock_.advance(timeout - milliseconds(10));
    return unavailable("the store took its whole timeout");
  };
  run_for(renewer, seconds(12));
  EXPECT_EQ(lost, 0);
  EXPECT_GE(store_.calls().size(), 2u);
  EXPECT_TRUE(renewer.get(id).has_value());
}

// Issue item 6: retries back off, but the backoff never carries the next
// attempt past the loss point while one still fits before it.
TEST_F(RenewerTest, RetriesReachTheStoreUntilJustBeforeTheLossPoint) {
  Renewer renewer(leases_, clock_, random_, options());
  int lost = 0;
  const Lease a = acquire("a");
  const Renewer::Id id = renewer.add(a, [&](auto&, auto&) { ++lost; });
  const MonoTime back_at = lost_at(a) - milliseconds(150);
  store_.hook = [&](Duration) {
    return clock_.mono_now() < back_at ? unavailable("the store is down") : Status();
  };
  run_for(renewer, seconds(12));
  EXPECT_EQ(lost, 0);
  EXPECT_TRUE(renewer.get(id).has_value());
  EXPECT_GE(renewer.stats().renewals, 1u);
}

// Issue item 7: the watchdog finds two leases due, and while it reports the
// first, the second's renewal lands. The second must not be reported lost.
TEST_F(RenewerTest, ALeaseRenewedWhileTheWatchdogReportsAnotherIsNotLost) {
  Renewer renewer(leases_, clock_, random_, options());
  OpenAtEnd open_at_end{store_};
  const Lease a = acquire("a");
  clock_.advance(milliseconds(100));
  const Lease b = acquire("b");  // b's deadline is 100 ms after a's
  std::atomic<bool> a_lost = false, b_lost = false, b_renewed = false;
  Renewer::Id b_id = 0;
  renewer.add(a, [&](auto&, auto&) {
    // On the watchdog thread, between its look at the loss queue and b's turn.
    store_.open();
    b_renewed = eventually([&] {
      const auto latest = renewer.get(b_id);
      return latest && latest->valid_until > b.valid_until;
    });
    a_lost = true;
  });
  b_id = renewer.add(b, [&](auto&, auto&) { b_lost = true; });
  store_.block_next();
  renewer.start();

  clock_.advance(seconds(3));
  ASSERT_TRUE(store_.wait_blocked()) << "the renewal never reached the store";
  ASSERT_EQ(store_.calls().back().writes, 2u) << "a and b must renew in one batch";
  // Into b's last moments: past its loss point, still before its deadline.
  clock_.advance(b.valid_until - milliseconds(10) - clock_.mono_now());
  ASSERT_GE(clock_.mono_now(), lost_at(b));
  ASSERT_TRUE(eventually([&] { return a_lost.load(); })) << "a was never reported lost";
  renewer.stop();  // the watchdog has finished with b

  EXPECT_TRUE(b_renewed);
  EXPECT_FALSE(b_lost) << "b was renewed, yet reported lost";
  EXPECT_TRUE(renewer.get(b_id).has_value());
}

// Issue item 4 (runtime): the Renewer logs through the Logger in its
// options, never a global: one line per batch whose renewals failed and are
// retried, one per lease lost, and never the lease's token.
TEST_F(RenewerTest, LogsRetriesAndLossesToTheInjectedLogger) {
  CapturingLogger log;
  RenewerOptions o = options();
  o.info_log = &log;
  Renewer renewer(leases_, clock_, random_, o);
  const Lease a = acquire("a");
  Status lost_why;
  renewer.add(a, [&](const Lease&, const Status& why) { lost_why = why; });

  store_.hook = [](Duration) { return unavailable("the store is down"); };
  run_for(renewer, seconds(4));  // the renewal due at 3 s fails, and its retries
  const std::string retried = log.find("renewals failed and will be retried");
  EXPECT_NE(retried.find("1 of 1 renewals"), std::string::npos) << retried;
  EXPECT_NE(retried.find("the store is down"), std::string::npos) << retried;

  store_.hook = nullptr;
  ASSERT_TRUE(leases_.release(a, ReleaseMode::kClear).ok());  // the next renewal is refused
  run_for(renewer, seconds(3));
  ASSERT_EQ(lost_why.code(), Code::kFailedPrecondition) << lost_why.to_string();
  const std::string lost = log.find("lost");
  EXPECT_NE(lost.find("lease on 'a' (slot lease, epoch 1, owner me) lost: "), std::string::npos)
      << lost;
  EXPECT_NE(lost.find(lost_why.message()), std::string::npos) << lost;
  for (const auto& line : log.lines()) {
    EXPECT_EQ(line.level, LogLevel::kInfo) << line.message;
    EXPECT_EQ(line.message.find(a.token), std::string::npos) << "a token was logged";
  }
}

// Library lines are info: a logger set to warnings (the CLI's default) gets
// none of them, so a command's stderr is what it was before they existed.
TEST_F(RenewerTest, LogsNothingBelowTheLoggersLevel) {
  CapturingLogger log(LogLevel::kWarn);
  RenewerOptions o = options();
  o.info_log = &log;
  Renewer renewer(leases_, clock_, random_, o);
  renewer.add(acquire("a"), nullptr);
  store_.hook = [](Duration) { return unavailable("the store is down"); };
  run_for(renewer, seconds(10));  // retries, then the loss
  EXPECT_EQ(renewer.stats().lost, 1u);
  EXPECT_TRUE(log.lines().empty()) << log.lines().front().message;
}

// What a holder carries goes out with its next renewal, in the same write
// (kept for the retry when that one fails), and the renewal hands back the
// item as written: here, what another writer put there.
TEST_F(RenewerTest, WhatIsCarriedGoesOutWithTheNextRenewalAndTheItemComesBack) {
  Renewer renewer(leases_, clock_, random_, options());
  std::vector<Item> seen;
  const Lease a = acquire("a");
  const Renewer::Id id = renewer.add(a, nullptr, [&](const Item& item) { seen.push_back(item); });
  Update nudge;
  nudge.set("nudges", int64_t{1});
  ASSERT_TRUE(store_.update("leases", a.key, nudge, Condition()).ok());
  renewer.carry(id, Update().set("figures", int64_t{3}));
  int failures = 1;
  store_.hook = [&](Duration) {
    return failures-- > 0 ? unavailable("the store is down") : Status();
  };
  run_for(renewer, milliseconds(3500));

  ASSERT_EQ(store_.calls().size(), 2u) << "a failed renewal and its retry: no write of its own";
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(get_int_or(seen[0], "nudges"), 1);
  EXPECT_EQ(get_int_or(seen[0], "figures"), 3);
  const Result<Item> stored = store_.get("leases", a.key, true);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(get_int_or(*stored, "figures"), 3);
  EXPECT_EQ(get_int_or(*stored, SlotNames(kDefaultSlot).expires_at_ms),
            renewer.get(id)->expires_at_ms);

  // Carried once, written once: the next renewal carries nothing more.
  ASSERT_TRUE(
      store_.update("leases", a.key, Update().set("figures", int64_t{0}), Condition()).ok());
  run_for(renewer, seconds(3));
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(get_int_or(seen[1], "figures"), 0);
}

}  // namespace
}  // namespace leasehold
