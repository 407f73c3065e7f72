#include "store/dynamodb/worker_pool.h"

#include <algorithm>
#include <atomic>

namespace leasehold::store::dynamodb {

// One run() call's steps, shared between its caller and the workers that
// join it.
struct WorkerPool::Batch {
  size_t n;
  const std::function<void(size_t)>& step;
  const std::function<bool()>& go_on;
  std::atomic<size_t> next{0};  // the next step to take; may pass n
  // Workers inside work(). Guarded by mu_, the pool's: the analysis cannot
  // tie a batch to its pool, so this one is not annotated.
  size_t helpers = 0;

  // Takes steps until none is left or go_on() says stop.
  void work() {
    for (size_t i; go_on() && (i = next.fetch_add(1)) < n;) step(i);
  }
  size_t taken() const { return std::min(next.load(), n); }
};

WorkerPool::~WorkerPool() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

size_t WorkerPool::threads_started() const {
  MutexLock lock(mu_);
  return threads_.size();
}

void WorkerPool::start_locked() {
  threads_.reserve(threads_max_);
  while (threads_.size() < threads_max_) threads_.emplace_back([this] { worker_loop(); });
}

size_t WorkerPool::run(size_t n, const std::function<void(size_t)>& step,
                       const std::function<bool()>& go_on) {
  Batch batch{n, step, go_on};
  const size_t helpers_wanted = std::min(n > 0 ? n - 1 : 0, threads_max_);
  if (helpers_wanted == 0) {
    batch.work();
    return batch.taken();
  }
  {
    MutexLock lock(mu_);
    start_locked();
    queue_.push_back(&batch);
  }
  if (helpers_wanted == threads_max_) {
    work_cv_.notify_all();
  } else {
    for (size_t i = 0; i < helpers_wanted; ++i) work_cv_.notify_one();
  }
  batch.work();
  MutexLock lock(mu_);
  // No worker may join from here on; those inside finish their steps.
  const auto queued = std::find(queue_.begin(), queue_.end(), &batch);
  if (queued != queue_.end()) queue_.erase(queued);
  while (batch.helpers != 0) done_cv_.wait(mu_);
  return batch.taken();
}

void WorkerPool::worker_loop() {
  MutexLock lock(mu_);
  for (;;) {
    while (!stopping_ && queue_.empty()) work_cv_.wait(mu_);
    if (stopping_) return;
    Batch* batch = queue_.front();
    ++batch->helpers;
    lock.unlock();
    batch->work();
    lock.lock();
    // Nothing is left in it to take (or its time is up): let no one else join.
    const auto queued = std::find(queue_.begin(), queue_.end(), batch);
    if (queued != queue_.end()) queue_.erase(queued);
    if (--batch->helpers == 0) done_cv_.notify_all();
  }
}

}  // namespace leasehold::store::dynamodb
