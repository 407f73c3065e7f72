// SteppingClock: simulated time in which nobody waits. It reads a
// SimulatedClock, and a wait_until() on it moves that clock to the wait's
// deadline at once (then reports the timeout) and records how far it moved.
// Code that pauses between attempts (sleep_for(), a Retrier) thus runs on
// the test's own thread in no real time, with the time it paused on the
// simulated clock and the pauses for the test to read. Safe for concurrent
// use; meant for code that waits only to pause, not for a notification.
#pragma once

#include <mutex>
#include <vector>

#include "leasehold/clock.h"

namespace leasehold::testing {

class SteppingClock final : public Clock {
 public:
  explicit SteppingClock(int64_t start_unix_ms = 1'700'000'000'000) : simulated_(start_unix_ms) {}

  WallTime wall_now() override { return simulated_.wall_now(); }
  MonoTime mono_now() override { return simulated_.mono_now(); }

  // Nothing waits here but on this call's stack, so the caller's mutex is
  // none of a SimulatedClock waiter's, as advance() requires.
  std::cv_status wait_until(std::unique_lock<std::mutex>&, std::condition_variable&,
                            MonoTime deadline) override {
    const Duration left = deadline - simulated_.mono_now();
    if (left > Duration::zero()) {
      {
        std::lock_guard lock(mu_);
        pauses_.push_back(left);
      }
      simulated_.advance(left);
    }
    return std::cv_status::timeout;
  }

  // The pauses waited so far, in order.
  std::vector<Duration> pauses() {
    std::lock_guard lock(mu_);
    return pauses_;
  }
  Duration paused() {
    Duration total{};
    for (Duration d : pauses()) total += d;
    return total;
  }

  SimulatedClock& simulated() { return simulated_; }

 private:
  SimulatedClock simulated_;
  std::mutex mu_;
  std::vector<Duration> pauses_;
};

}  // namespace leasehold::testing
