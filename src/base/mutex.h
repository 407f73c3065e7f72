// Mutex, TimedMutex, MutexLock and CondVar: std::mutex, std::timed_mutex and
// std::condition_variable carrying Clang's thread-safety annotations
// (base/thread_annotations.h), so that the compiler checks what each mutex
// guards. They behave exactly as the std types they wrap, and are used the
// same way across threads.
//
//   Mutex mu_;
//   CondVar changed_;
//   int queued_ GUARDED_BY(mu_) = 0;
//
//   void take() {
//     MutexLock lock(mu_);
//     while (queued_ == 0) changed_.wait(mu_);
//     --queued_;
//   }
//
// A CondVar waits on a Mutex its caller holds: the mutex is released while
// waiting and held again on return. The condition is tested in a loop around
// the wait rather than by a predicate, which the analysis would check as a
// function of its own, holding nothing.
#pragma once

#include <condition_variable>
#include <mutex>

#include "base/thread_annotations.h"
#include "leasehold/clock.h"

namespace leasehold {

class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

// A Mutex whose caller can stop waiting for it at a deadline.
class CAPABILITY("mutex") TimedMutex {
 public:
  TimedMutex() = default;
  TimedMutex(const TimedMutex&) = delete;
  TimedMutex& operator=(const TimedMutex&) = delete;

  void lock() ACQUIRE() { mu_.lock(); }
  void unlock() RELEASE() { mu_.unlock(); }
  // True, with the mutex held, if it was acquired by `deadline`.
  bool try_lock_until(MonoTime deadline) TRY_ACQUIRE(true) { return mu_.try_lock_until(deadline); }

 private:
  std::timed_mutex mu_;
};

// Holds a Mutex or a TimedMutex until the end of its scope. unlock() and
// lock() let it go and take it again within the scope.
template <typename M>
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(M& mu) ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  // Takes charge of `mu`, which the caller already holds.
  MutexLock(M& mu, std::adopt_lock_t) REQUIRES(mu) : mu_(mu) {}
  ~MutexLock() RELEASE() {
    if (held_) mu_.unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void lock() ACQUIRE() {
    mu_.lock();
    held_ = true;
  }
  void unlock() RELEASE() {
    mu_.unlock();
    held_ = false;
  }

 private:
  M& mu_;
  bool held_ = true;
};

class CondVar {
 public:
  // REQUIRES: `mu` held; it is released while waiting and held again on
  // return. May return spuriously.
  void wait(Mutex& mu) REQUIRES(mu) {
    std::unique_lock lock(mu.mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();  // the caller's again
  }
  // The same, giving up at `deadline` on the real monotonic clock: then
  // returns std::cv_status::timeout. For waits that real time bounds
  // whatever clock the code was given (another process, the kernel).
  std::cv_status wait_until(Mutex& mu, MonoTime deadline) REQUIRES(mu) {
    std::unique_lock lock(mu.mu_, std::adopt_lock);
    const std::cv_status status = cv_.wait_until(lock, deadline);
    lock.release();
    return status;
  }
  // The same, giving up once `clock` reaches `deadline` (Clock::wait_until):
  // a SimulatedClock moved past it wakes the waiter.
  std::cv_status wait_until(Mutex& mu, Clock& clock, MonoTime deadline) REQUIRES(mu) {
    std::unique_lock lock(mu.mu_, std::adopt_lock);
    const std::cv_status status = clock.wait_until(lock, cv_, deadline);
    lock.release();
    return status;
  }

  void notify_one() { cv_.notify_one(); }
  void notify_all() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace leasehold
