#include "runtime/blocking_pool.h"

#include <cassert>
#include <utility>

namespace leasehold::runtime {

BlockingPool::BlockingPool(BlockingPoolOptions options) : options_(options) {
  assert(options_.threads >= 1);
  assert(options_.queue_max >= 1);
}

BlockingPool::~BlockingPool() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  work_cv_.notify_all();
  for (auto& thread : threads) thread.join();
  MutexLock lock(mu_);
  assert(jobs_.empty());
}

bool BlockingPool::submit(std::function<void()> job) {
  {
    MutexLock lock(mu_);
    assert(!stopping_);
    if (jobs_.size() >= options_.queue_max) return false;
    jobs_.push_back(std::move(job));
    // All threads at once, on first use: the count stays what options()
    // says, whatever the load.
    if (threads_.empty()) {
      threads_.reserve(options_.threads);
      for (size_t i = 0; i < options_.threads; ++i)
        threads_.emplace_back([this] { worker_loop(); });
    }
  }
  work_cv_.notify_one();
  return true;
}

size_t BlockingPool::threads_started() const {
  MutexLock lock(mu_);
  return threads_.size();
}

size_t BlockingPool::queued() const {
  MutexLock lock(mu_);
  return jobs_.size();
}

void BlockingPool::worker_loop() {
  MutexLock lock(mu_);
  for (;;) {
    while (!stopping_ && jobs_.empty()) work_cv_.wait(mu_);
    // Accepted jobs run even when stopping: their callers wait on them.
    if (jobs_.empty()) return;
    auto job = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    job();
    lock.lock();
  }
}

}  // namespace leasehold::runtime
