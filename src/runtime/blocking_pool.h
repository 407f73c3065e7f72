// BlockingPool: a fixed number of threads, with a bounded queue, on which
// code that runs on an event loop (an HTTP server's or a WebSocket client's
// I/O threads) makes its blocking calls: every ItemStore call, which may
// take network round trips (include/leasehold/store.h). The loop submits a
// job that calls the store and posts the result back to the loop itself; the
// loop's own threads never block on the store.
//
// The threads start with the first submit() and stop when the pool is
// destroyed, so a process has a known number of them: `threads`. The queue
// holds at most `queue_max` jobs waiting for a thread; submit() refuses more
// at once instead of letting latency grow without bound (a server answers
// 503 and the client retries). Safe for concurrent use by many threads.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace leasehold::runtime {

struct BlockingPoolOptions {
  size_t threads = 8;       // how many jobs run at once; at least 1
  size_t queue_max = 1024;  // jobs that may wait for a thread; at least 1
};

class BlockingPool {
 public:
  explicit BlockingPool(BlockingPoolOptions options = {});
  // Runs every job already accepted, then joins the threads.
  // REQUIRES: no submit() in progress or after.
  ~BlockingPool();
  BlockingPool(const BlockingPool&) = delete;
  BlockingPool& operator=(const BlockingPool&) = delete;

  // Queues `job` to run on one of the pool's threads. False, with nothing
  // queued, when `queue_max` jobs are already waiting. A job must not throw
  // and must not wait for another job of the same pool.
  [[nodiscard]] bool submit(std::function<void()> job) EXCLUDES(mu_);

  const BlockingPoolOptions& options() const { return options_; }
  // The threads started so far: 0 before the first submit(), then
  // options().threads until the pool is destroyed.
  size_t threads_started() const EXCLUDES(mu_);
  // Jobs accepted and not yet started.
  size_t queued() const EXCLUDES(mu_);

 private:
  void worker_loop() EXCLUDES(mu_);

  const BlockingPoolOptions options_;
  mutable Mutex mu_;
  CondVar work_cv_;  // a job was queued, or stop
  std::deque<std::function<void()>> jobs_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ GUARDED_BY(mu_);
};

}  // namespace leasehold::runtime
