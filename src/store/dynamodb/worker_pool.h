// WorkerPool: a fixed set of threads, owned by a store for its whole life,
// that help callers run the independent steps of a batch (update_each()'s
// writes), so that a batch costs no thread creation and a process has a
// known number of threads.
//
// The caller of run() works on its own batch too: a batch of one step never
// leaves the caller's thread (no hand-off, no wake-up), and a batch always
// progresses even while every worker is busy with other callers' batches.
// Workers join batches in the order they were started. The threads start on
// the first run() that has a step to share, and stop when the pool is
// destroyed. Safe for concurrent use by many threads.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "base/mutex.h"

namespace leasehold::store::dynamodb {

class WorkerPool {
 public:
  // `threads` may be 0: then every caller runs its batch alone.
  explicit WorkerPool(size_t threads) : threads_max_(threads) {}
  // REQUIRES: no run() in progress.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Runs step(i) for each i in [0, n), taking the i in increasing order, on
  // the caller's thread and on up to `threads` workers at once, until every
  // step is taken or `go_on()` returns false (it is asked before each step is
  // taken, on the thread that would run it). Returns how many steps were
  // taken: they are [0, taken), and all of them have finished. `step` and
  // `go_on` must be safe to call from several threads at once.
  size_t run(size_t n, const std::function<void(size_t)>& step, const std::function<bool()>& go_on);

  // The threads started so far: 0 until the first shared batch, then
  // `threads` until the pool is destroyed.
  size_t threads_started() const;

 private:
  struct Batch;

  void start_locked() REQUIRES(mu_);
  void worker_loop();

  const size_t threads_max_;
  mutable Mutex mu_;
  CondVar work_cv_;                           // workers: a batch was queued, or stop
  CondVar done_cv_;                           // callers: a worker left a batch
  std::deque<Batch*> queue_ GUARDED_BY(mu_);  // batches workers may join
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ GUARDED_BY(mu_);
};

}  // namespace leasehold::store::dynamodb
