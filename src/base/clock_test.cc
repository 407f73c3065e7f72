// Clock::wait_until on each clock. Waiters run on threads of their own; the
// test waits for each step in real time, with a deadline, on conditions the
// waiter sets, never by sleeping. Simulated time moves only when the test
// advances it.
#include "leasehold/clock.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace leasehold {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;

// The longest the test waits in real time for a waiter thread to get on.
constexpr auto kRealWaitMax = seconds(10);

// A flag that a thread waits for on a clock, as the workers wait for work
// or a stop: in a loop, until the flag is set or the clock reaches the
// deadline. The test watches the waiter's progress through `waiting` and
// `done`.
class Waitable {
 public:
  // Returns whether the flag was set; `status` is the last wait's result.
  bool wait(Clock& clock, MonoTime deadline, std::cv_status* status = nullptr) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    waiting_ = true;
    cv_.notify_all();
    std::cv_status last = std::cv_status::no_timeout;
    while (!flag_ && clock.mono_now() < deadline) last = cv_.wait_until(mu_, clock, deadline);
    if (status != nullptr) *status = last;
    done_ = true;
    cv_.notify_all();
    return flag_;
  }

  void set() EXCLUDES(mu_) {
    MutexLock lock(mu_);
    flag_ = true;
    cv_.notify_all();
  }

  // True once a waiter is in wait(). Holding the mutex after seeing it
  // there means the waiter has let go of it inside Clock::wait_until.
  bool until_waiting() EXCLUDES(mu_) { return until(&Waitable::waiting_); }
  bool until_done() EXCLUDES(mu_) { return until(&Waitable::done_); }
  bool done() EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return done_;
  }

 private:
  bool until(bool Waitable::*what) EXCLUDES(mu_) {
    RealClock real;
    const MonoTime limit = real.mono_now() + kRealWaitMax;
    MutexLock lock(mu_);
    while (!(this->*what) && real.mono_now() < limit) cv_.wait_until(mu_, real, limit);
    return this->*what;
  }

  Mutex mu_;
  CondVar cv_;
  bool flag_ GUARDED_BY(mu_) = false;
  bool waiting_ GUARDED_BY(mu_) = false;
  bool done_ GUARDED_BY(mu_) = false;
};

// ---------------------------------------------------------------- SimulatedClock

TEST(SimulatedClockWait, ADeadlineAlreadyReachedReturnsAtOnce) {
  SimulatedClock clock;
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock lock(mu);
  EXPECT_EQ(clock.wait_until(lock, cv, clock.mono_now()), std::cv_status::timeout);
  EXPECT_EQ(clock.wait_until(lock, cv, clock.mono_now() - seconds(1)), std::cv_status::timeout);
  EXPECT_TRUE(lock.owns_lock());
}

TEST(SimulatedClockWait, AnAdvanceToTheDeadlineWakesTheWaiter) {
  SimulatedClock clock;
  Waitable w;
  const MonoTime deadline = clock.mono_now() + hours(1);
  std::cv_status status = std::cv_status::no_timeout;
  std::thread waiter([&] { EXPECT_FALSE(w.wait(clock, deadline, &status)); });
  ASSERT_TRUE(w.until_waiting());
  clock.advance(hours(1) - milliseconds(1));
  EXPECT_FALSE(w.done()) << "returned before the clock reached its deadline";
  clock.advance(milliseconds(1));
  EXPECT_TRUE(w.until_done()) << "not woken by the advance to its deadline";
  waiter.join();
  EXPECT_EQ(status, std::cv_status::timeout);
  EXPECT_EQ(clock.mono_now(), deadline);
}

TEST(SimulatedClockWait, AnAdvancePastTheDeadlineWakesTheWaiter) {
  SimulatedClock clock;
  Waitable w;
  const MonoTime deadline = clock.mono_now() + milliseconds(250);
  std::thread waiter([&] { EXPECT_FALSE(w.wait(clock, deadline)); });
  ASSERT_TRUE(w.until_waiting());
  clock.advance(seconds(5));
  EXPECT_TRUE(w.until_done());
  waiter.join();
}

TEST(SimulatedClockWait, ANotifyWakesTheWaiterWithoutMovingTime) {
  SimulatedClock clock;
  Waitable w;
  const MonoTime start = clock.mono_now();
  std::cv_status status = std::cv_status::timeout;
  std::thread waiter([&] { EXPECT_TRUE(w.wait(clock, start + hours(1), &status)); });
  ASSERT_TRUE(w.until_waiting());
  w.set();
  EXPECT_TRUE(w.until_done());
  waiter.join();
  EXPECT_EQ(status, std::cv_status::no_timeout);
  EXPECT_EQ(clock.mono_now(), start);
  // The wait is gone from the clock: advancing past its deadline touches
  // nothing of it (its mutex and condition variable still exist here, but
  // AddressSanitizer would see a use of a gone waiter).
  clock.advance(hours(2));
}

TEST(SimulatedClockWait, EachWaiterWakesAtItsOwnDeadline) {
  SimulatedClock clock;
  Waitable early, late;
  const MonoTime start = clock.mono_now();
  std::thread a([&] { early.wait(clock, start + seconds(1)); });
  std::thread b([&] { late.wait(clock, start + seconds(3)); });
  ASSERT_TRUE(early.until_waiting());
  ASSERT_TRUE(late.until_waiting());
  clock.advance(seconds(2));
  EXPECT_TRUE(early.until_done());
  EXPECT_FALSE(late.done());
  clock.advance(seconds(1));
  EXPECT_TRUE(late.until_done());
  a.join();
  b.join();
}

// Threads waiting on one condition variable, as a Renewer's do.
struct SharedWait {
  Mutex mu;
  CondVar cv;
  int waiting GUARDED_BY(mu) = 0;
  int woken GUARDED_BY(mu) = 0;
};

TEST(SimulatedClockWait, WaitersSharingAConditionVariableAllWake) {
  SimulatedClock clock;
  RealClock real;
  SharedWait shared;
  const MonoTime deadline = clock.mono_now() + seconds(1);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] {
      MutexLock lock(shared.mu);
      ++shared.waiting;
      shared.cv.notify_all();
      while (clock.mono_now() < deadline) shared.cv.wait_until(shared.mu, clock, deadline);
      ++shared.woken;
      shared.cv.notify_all();
    });
  }
  {
    // Each thread counts itself holding the mutex and keeps it until its
    // wait lets go of it: holding it once all four have counted means that
    // all four wait.
    const MonoTime limit = real.mono_now() + kRealWaitMax;
    MutexLock lock(shared.mu);
    while (shared.waiting < 4 && real.mono_now() < limit)
      shared.cv.wait_until(shared.mu, real, limit);
    EXPECT_EQ(shared.waiting, 4);
    EXPECT_EQ(shared.woken, 0);
  }
  clock.advance(seconds(1));
  for (std::thread& t : threads) t.join();
  MutexLock lock(shared.mu);
  EXPECT_EQ(shared.woken, 4);
}

// A waiter's mutex and condition variable live only until it returns, and
// an advance() may find it due just as a notify ends its wait: then the
// advance must not reach them once the wait has returned. Many rounds of
// the race, each with a mutex and condition variable of its own that die
// with the round (AddressSanitizer sees a use after that).
TEST(SimulatedClockWait, AnAdvanceRacingANotifyNeverTouchesAReturnedWaiter) {
  SimulatedClock clock;
  for (int round = 0; round < 300; ++round) {
    auto w = std::make_unique<Waitable>();
    const MonoTime deadline = clock.mono_now() + milliseconds(1);
    std::thread waiter([&] { w->wait(clock, deadline); });
    ASSERT_TRUE(w->until_waiting());
    std::thread advancer([&] { clock.advance(milliseconds(1)); });
    w->set();
    waiter.join();
    w.reset();  // the waiter's mutex and condition variable are gone
    advancer.join();
  }
}

TEST(OffsetClockWait, HonoursTheDeadlineOnItsOwnTimeline) {
  SimulatedClock truth;
  OffsetClock other(truth, seconds(3), hours(5));
  Waitable w;
  const MonoTime deadline = other.mono_now() + seconds(2);
  std::thread waiter([&] { w.wait(other, deadline); });
  ASSERT_TRUE(w.until_waiting());
  truth.advance(seconds(1));
  EXPECT_FALSE(w.done());
  truth.advance(seconds(1));
  EXPECT_TRUE(w.until_done());
  waiter.join();
  EXPECT_GE(other.mono_now(), deadline);
}

// ---------------------------------------------------------------- RealClock

TEST(RealClockWait, ReturnsAtTheDeadline) {
  RealClock clock;
  Waitable w;
  const MonoTime deadline = clock.mono_now() + milliseconds(20);
  std::cv_status status = std::cv_status::no_timeout;
  EXPECT_FALSE(w.wait(clock, deadline, &status));
  EXPECT_GE(clock.mono_now(), deadline);
  EXPECT_EQ(status, std::cv_status::timeout);
}

TEST(RealClockWait, ANotifyWakesTheWaiterBeforeAFarDeadline) {
  RealClock clock;
  Waitable w;
  const MonoTime start = clock.mono_now();
  std::thread waiter([&] { EXPECT_TRUE(w.wait(clock, start + hours(1))); });
  ASSERT_TRUE(w.until_waiting());
  w.set();
  EXPECT_TRUE(w.until_done());
  waiter.join();
  EXPECT_LT(clock.mono_now() - start, kRealWaitMax);
}

// A clock of its own that moves with real time from another origin, as a
// test's or a user's might: Clock's own wait_until waits for the time that
// clock says is left.
class ShiftedRealClock final : public Clock {
 public:
  WallTime wall_now() override { return real_.wall_now(); }
  MonoTime mono_now() override { return real_.mono_now() + hours(100); }

 private:
  RealClock real_;
};

TEST(ClockWait, TheDefaultWaitsForTheTimeThatClockSaysIsLeft) {
  ShiftedRealClock clock;
  Waitable w;
  const MonoTime deadline = clock.mono_now() + milliseconds(20);
  std::cv_status status = std::cv_status::no_timeout;
  EXPECT_FALSE(w.wait(clock, deadline, &status));
  EXPECT_GE(clock.mono_now(), deadline);
  EXPECT_LT(clock.mono_now() - deadline, kRealWaitMax);
  EXPECT_EQ(status, std::cv_status::timeout);

  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock lock(mu);
  EXPECT_EQ(clock.wait_until(lock, cv, clock.mono_now() - seconds(1)), std::cv_status::timeout);
}

TEST(ClockWait, TheDefaultWakesOnANotifyBeforeAFarDeadline) {
  ShiftedRealClock clock;
  Waitable w;
  std::thread waiter([&] { EXPECT_TRUE(w.wait(clock, MonoTime::max())); });
  ASSERT_TRUE(w.until_waiting());
  w.set();
  EXPECT_TRUE(w.until_done());
  waiter.join();
}

// A suspended machine: its boot clock has run on while its monotonic clock
// stood still. A time namespace whose boot clock is set 100 s ahead of its
// monotonic clock is the same machine just after a 100 s suspend, and
// RealClock's monotonic time there must be the boot clock's: a holder that
// read steady_clock would trust its lease for the 100 s it slept.

// In a child of the test (the namespace is its children's, not the test's):
// 0 if RealClock counts the sleep, 1 if not, 77 if no time namespace can be
// made here.
int check_in_a_namespace_that_slept_100s() {
  if (unshare(CLONE_NEWTIME) != 0) return 77;
  {
    std::ofstream offsets("/proc/self/timens_offsets");
    offsets << "boottime 100 0\n";
    offsets.flush();
    if (!offsets.good()) return 77;
  }
  const pid_t child = fork();  // the first process in the namespace
  if (child < 0) return 77;
  if (child == 0) {
    RealClock clock;
    const auto steady = std::chrono::steady_clock::now().time_since_epoch();
    const auto ahead = clock.mono_now().time_since_epoch() - steady;
    _exit(ahead >= seconds(99) && ahead < seconds(101) ? 0 : 1);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child || !WIFEXITED(status)) return 1;
  return WEXITSTATUS(status);
}

TEST(RealClock, MonotonicTimeCountsASuspend) {
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(check_in_a_namespace_that_slept_100s());
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  if (WEXITSTATUS(status) == 77) GTEST_SKIP() << "no time namespace can be made here";
  EXPECT_EQ(WEXITSTATUS(status), 0) << "mono_now() did not count the 100 s the machine slept";
}

}  // namespace
}  // namespace leasehold
