#include "leasehold/clock.h"

#include <time.h>

#include <algorithm>
#include <cassert>
#include <vector>

namespace leasehold {
namespace {

// A default wait sleeps in slices no longer than this, so that a far
// deadline (MonoTime::max()) cannot overflow the real clock's arithmetic.
constexpr Duration kRealWaitSliceMax = std::chrono::hours(24);

// A real wait is measured on CLOCK_MONOTONIC (the condition variable's),
// which stops while the machine is suspended: waiting in slices no longer
// than this, a waiter whose deadline passed during a suspend wakes at most
// this long after the machine does.
constexpr Duration kBootWaitSliceMax = std::chrono::seconds(1);

}  // namespace

MonoTime RealClock::mono_now() {
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  return MonoTime(std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec));
}

std::cv_status RealClock::wait_until(std::unique_lock<std::mutex>& lock,
                                     std::condition_variable& cv, MonoTime deadline) {
  const Duration left = deadline - mono_now();
  if (left <= Duration::zero()) return std::cv_status::timeout;
  cv.wait_for(lock, std::min(left, kBootWaitSliceMax));
  return mono_now() >= deadline ? std::cv_status::timeout : std::cv_status::no_timeout;
}

std::cv_status Clock::wait_until(std::unique_lock<std::mutex>& lock, std::condition_variable& cv,
                                 MonoTime deadline) {
  const Duration left = deadline - mono_now();
  if (left <= Duration::zero()) return std::cv_status::timeout;
  cv.wait_for(lock, std::min(left, kRealWaitSliceMax));
  return mono_now() >= deadline ? std::cv_status::timeout : std::cv_status::no_timeout;
}

void sleep_until(Clock& clock, MonoTime deadline) {
  // Nothing notifies this condition variable: only the clock ends the wait.
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock lock(mu);
  while (clock.wait_until(lock, cv, deadline) != std::cv_status::timeout) {
  }
}

void sleep_for(Clock& clock, Duration d) {
  if (d <= Duration::zero()) return;
  sleep_until(clock, clock.mono_now() + d);
}

// The waiter's mutex and condition variable are the caller's, and live only
// until its wait_until() returns. advance() wakes a waiter outside the
// clock's lock (a waiter may read the clock with its own mutex held), so it
// reaches them through the gate: a waiter that advance() has taken closes it
// before returning, and then nothing touches them any more.
struct SimulatedClock::Waiter {
  Waiter(std::mutex* mu_, std::condition_variable* cv_) : mu(mu_), cv(cv_) {}

  std::mutex gate;
  std::mutex* mu;  // null once the gate is closed
  std::condition_variable* cv;
  bool taken = false;  // out of waiters_, by advance(); under the clock's mu_
};

std::cv_status SimulatedClock::wait_until(std::unique_lock<std::mutex>& lock,
                                          std::condition_variable& cv, MonoTime deadline) {
  assert(lock.owns_lock());
  const auto waiter = std::make_shared<Waiter>(lock.mutex(), &cv);
  std::multimap<MonoTime, std::shared_ptr<Waiter>>::iterator entry;
  {
    std::lock_guard clock_lock(mu_);
    if (mono_ >= deadline) return std::cv_status::timeout;
    entry = waiters_.emplace(deadline, waiter);
  }
  // advance() takes the waiter's mutex before it notifies, and this thread
  // holds it from the check above until the wait releases it: a deadline
  // reached in between is not missed.
  cv.wait(lock);
  bool taken;
  {
    std::lock_guard clock_lock(mu_);
    taken = waiter->taken;
    if (!taken) waiters_.erase(entry);
  }
  if (taken) {
    // advance() may be about to notify, holding the gate while it waits for
    // the caller's mutex: let go of it to close the gate.
    lock.unlock();
    {
      std::lock_guard gate(waiter->gate);
      waiter->mu = nullptr;
    }
    lock.lock();
  }
  return mono_now() >= deadline ? std::cv_status::timeout : std::cv_status::no_timeout;
}

void SimulatedClock::advance(Duration d) {
  assert(d >= Duration::zero());
  std::vector<std::shared_ptr<Waiter>> due;
  {
    std::lock_guard clock_lock(mu_);
    wall_ += std::chrono::duration_cast<WallTime::duration>(d);
    mono_ += d;
    const auto end = waiters_.upper_bound(mono_);
    for (auto it = waiters_.begin(); it != end; ++it) {
      it->second->taken = true;
      due.push_back(std::move(it->second));
    }
    waiters_.erase(waiters_.begin(), end);
  }
  for (const std::shared_ptr<Waiter>& waiter : due) {
    std::lock_guard gate(waiter->gate);
    if (waiter->mu == nullptr) continue;  // it has returned already
    std::lock_guard waiter_lock(*waiter->mu);
    waiter->cv->notify_all();
  }
}

}  // namespace leasehold
