// Clock: the only way leasehold code learns the time.
//
// Two kinds of time are kept apart by type. WallTime is what other machines
// and humans read (lease expiry written to the store); MonoTime is a local
// monotonic clock for intervals and deadlines (how long this holder may still
// trust its lease). The compiler refuses to mix them.
//
// RealClock is the one class that reads the system clocks. Its monotonic
// time is CLOCK_BOOTTIME, which keeps counting while the machine is
// suspended (CLOCK_MONOTONIC, steady_clock's, stops): a holder that wakes
// from a suspend finds that its deadlines have passed, as they have for the
// rest of the fleet. So a MonoTime from a Clock is never compared with
// std::chrono::steady_clock::now(). SimulatedClock is
// advanced by hand in tests and simulations; OffsetClock wraps another clock
// to model a machine whose wall clock is skewed. All implementations are safe
// for concurrent use.
//
// Waiting for a monotonic deadline also goes through the clock
// (Clock::wait_until), so that code which sleeps until something is due
// sleeps on the clock it was given: a SimulatedClock's advance() past the
// deadline wakes the waiter, and nothing waits in real time for simulated
// time to pass.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

namespace leasehold {

using Duration = std::chrono::nanoseconds;
using WallTime = std::chrono::system_clock::time_point;
using MonoTime = std::chrono::steady_clock::time_point;

// Milliseconds since the Unix epoch: the representation written to stores.
inline int64_t to_unix_ms(WallTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
inline WallTime from_unix_ms(int64_t ms) {
  return WallTime(std::chrono::duration_cast<WallTime::duration>(std::chrono::milliseconds(ms)));
}
inline int64_t to_ms(Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

class Clock {
 public:
  virtual ~Clock() = default;
  virtual WallTime wall_now() = 0;
  virtual MonoTime mono_now() = 0;

  // Waits on `cv`, with `lock` released, until it is notified or this
  // clock's monotonic time reaches `deadline`, and returns with `lock` held
  // again: std::cv_status::timeout if the deadline has been reached. May
  // return early (spuriously), so callers test their condition and the
  // deadline in a loop around it.
  // REQUIRES: `lock` holds the mutex that every change to what the caller
  // waits for is made under.
  // The default waits in real time for the time this clock says is left,
  // which suits a clock that moves with real time; a clock that moves by
  // hand overrides it.
  virtual std::cv_status wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                                    MonoTime deadline);
};

// Waits until `clock`'s monotonic time reaches `deadline`, through
// Clock::wait_until, so that a pause taken on a SimulatedClock ends when the
// simulation advances past it and never in real time. Returns at once if
// the deadline has passed.
void sleep_until(Clock& clock, MonoTime deadline);
// The same for `d` from now; nothing for d <= 0.
void sleep_for(Clock& clock, Duration d);

// Reads std::chrono::system_clock and CLOCK_BOOTTIME. Waits in real time for
// the time left, as Clock::wait_until does, in slices short enough that a
// wait across a suspend ends soon after the machine wakes.
class RealClock final : public Clock {
 public:
  WallTime wall_now() override { return std::chrono::system_clock::now(); }
  MonoTime mono_now() override;
  std::cv_status wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                            MonoTime deadline) override;
};

// Time that moves only when advance() is called. Starts at a fixed wall time
// so that runs are reproducible. A wait_until() returns once advance() has
// moved the monotonic clock to its deadline (or when notified), and never
// because real time passed.
class SimulatedClock final : public Clock {
 public:
  explicit SimulatedClock(int64_t start_unix_ms = 1'700'000'000'000)
      : wall_(from_unix_ms(start_unix_ms)), mono_(std::chrono::hours(1)) {}

  WallTime wall_now() override {
    std::lock_guard lock(mu_);
    return wall_;
  }
  MonoTime mono_now() override {
    std::lock_guard lock(mu_);
    return mono_;
  }

  std::cv_status wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                            MonoTime deadline) override;

  // REQUIRES: d >= 0. Moves both clocks forward by d, then wakes each
  // wait_until() whose deadline that reaches, taking the waiter's mutex to
  // notify it. REQUIRES: the caller holds none of the waiters' mutexes.
  void advance(Duration d);

  // Steps the wall clock alone (an NTP correction); monotonic time is unmoved.
  void step_wall(Duration d) {
    std::lock_guard lock(mu_);
    wall_ += std::chrono::duration_cast<WallTime::duration>(d);
  }

 private:
  // One wait_until() in progress (clock.cc).
  struct Waiter;

  std::mutex mu_;
  WallTime wall_;
  MonoTime mono_;
  // The waits in progress, by deadline.
  std::multimap<MonoTime, std::shared_ptr<Waiter>> waiters_;
};

// A view of `base` whose wall clock is off by `wall_offset` and whose
// monotonic clock starts at a different origin, as on another machine.
// REQUIRES: base outlives this object.
class OffsetClock final : public Clock {
 public:
  OffsetClock(Clock& base, Duration wall_offset, Duration mono_offset = Duration::zero())
      : base_(base), wall_offset_(wall_offset), mono_offset_(mono_offset) {}

  WallTime wall_now() override {
    return base_.wall_now() + std::chrono::duration_cast<WallTime::duration>(wall_offset_);
  }
  MonoTime mono_now() override { return base_.mono_now() + mono_offset_; }
  std::cv_status wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                            MonoTime deadline) override {
    return base_.wait_until(lock, cv, deadline - mono_offset_);
  }

 private:
  Clock& base_;
  Duration wall_offset_;
  Duration mono_offset_;
};

}  // namespace leasehold
