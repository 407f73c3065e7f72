// Tests for WorkerPool: every step runs once, on the caller or on the pool's
// own threads and nowhere else, and a stop is honoured between steps.
#include "store/dynamodb/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace leasehold::store::dynamodb {
namespace {

using namespace std::chrono_literals;

const std::function<bool()> kAlways = [] { return true; };

TEST(WorkerPool, EveryStepRunsOnceOnTheCallerOrTheSameFewThreads) {
  WorkerPool pool(3);
  std::mutex mu;
  std::set<std::thread::id> runners;
  for (int round = 0; round < 50; ++round) {
    std::vector<std::atomic<int>> runs(40);
    const size_t taken = pool.run(
        runs.size(),
        [&](size_t i) {
          ++runs[i];
          std::lock_guard lock(mu);
          runners.insert(std::this_thread::get_id());
        },
        kAlways);
    ASSERT_EQ(taken, runs.size());
    for (const auto& r : runs) ASSERT_EQ(r.load(), 1);
  }
  EXPECT_EQ(pool.threads_started(), 3u);
  // The pool's three and this thread. Whether this thread takes a step
  // depends on the scheduler (the workers may take them all first); a batch
  // of one, below, is where the caller's share is certain.
  EXPECT_LE(runners.size(), 4u);
}

TEST(WorkerPool, ABatchOfOneStaysOnTheCallersThreadAndStartsNothing) {
  WorkerPool pool(4);
  std::thread::id ran_on;
  EXPECT_EQ(pool.run(
                1, [&](size_t) { ran_on = std::this_thread::get_id(); }, kAlways),
            1u);
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(pool.run(
                0, [&](size_t) { ADD_FAILURE(); }, kAlways),
            0u);
  EXPECT_EQ(pool.threads_started(), 0u);
}

TEST(WorkerPool, NoThreadsMeansTheCallerRunsEverything) {
  WorkerPool pool(0);
  std::vector<size_t> order;
  EXPECT_EQ(pool.run(
                5, [&](size_t i) { order.push_back(i); }, kAlways),
            5u);
  EXPECT_EQ(order, (std::vector<size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(pool.threads_started(), 0u);
}

// At most `threads` workers and the caller run one batch's steps at once.
TEST(WorkerPool, ABatchRunsOnAtMostThreadsPlusOne) {
  WorkerPool pool(2);
  std::atomic<int> now{0}, most{0};
  pool.run(
      30,
      [&](size_t) {
        const int n = ++now;
        int seen = most;
        while (n > seen && !most.compare_exchange_weak(seen, n)) {
        }
        std::this_thread::sleep_for(1ms);
        --now;
      },
      kAlways);
  EXPECT_LE(most.load(), 3);
  EXPECT_GE(most.load(), 2);
}

// Once go_on() says stop, no step is taken; those taken are a prefix and
// have all finished when run() returns.
TEST(WorkerPool, AStopLeavesTheRestUntaken) {
  WorkerPool pool(3);
  std::atomic<int> started{0}, finished{0};
  std::atomic<bool> go{true};
  std::vector<std::atomic<int>> runs(100);
  const size_t taken = pool.run(
      runs.size(),
      [&](size_t i) {
        ++runs[i];
        if (++started == 10) go = false;
        std::this_thread::sleep_for(1ms);
        ++finished;
      },
      [&] { return go.load(); });
  EXPECT_GE(taken, 10u);
  EXPECT_LT(taken, 20u);
  EXPECT_EQ(finished.load(), static_cast<int>(taken));
  for (size_t i = 0; i < runs.size(); ++i) EXPECT_EQ(runs[i].load(), i < taken ? 1 : 0) << i;
}

// Several callers at once share the workers; each gets all its steps run.
TEST(WorkerPool, ConcurrentCallersShareTheWorkers) {
  WorkerPool pool(3);
  std::atomic<int> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c) {
    callers.emplace_back([&] {
      for (int round = 0; round < 20; ++round) {
        std::atomic<int> mine{0};
        const size_t taken = pool.run(
            25,
            [&](size_t) {
              ++mine;
              ++total;
            },
            kAlways);
        EXPECT_EQ(taken, 25u);
        EXPECT_EQ(mine.load(), 25);
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(total.load(), 4 * 20 * 25);
  EXPECT_EQ(pool.threads_started(), 3u);
}

}  // namespace
}  // namespace leasehold::store::dynamodb
