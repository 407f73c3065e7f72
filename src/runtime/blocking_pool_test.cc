// BlockingPool: jobs run on the pool's threads, never more at once than it
// has, a full queue refuses at once, and what was accepted runs before the
// pool is gone.
#include "runtime/blocking_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

namespace leasehold::runtime {
namespace {

using namespace std::chrono_literals;

// A gate jobs wait at until the test opens it, counting who is waiting.
class Gate {
 public:
  void pass() {
    std::unique_lock lock(mu_);
    ++waiting_;
    waiting_cv_.notify_all();
    open_cv_.wait(lock, [this] { return open_; });
    --waiting_;
  }
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    open_cv_.notify_all();
  }
  // True once `n` jobs wait at the gate; false if that takes over 10 s.
  bool wait_for_waiting(int n) {
    std::unique_lock lock(mu_);
    return waiting_cv_.wait_for(lock, 10s, [&] { return waiting_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable open_cv_, waiting_cv_;
  int waiting_ = 0;
  bool open_ = false;
};

// Opens a gate when it goes out of scope: declared after a pool, it lets
// the pool's destructor finish even when an assertion leaves the test early.
struct OpenOnExit {
  Gate& gate;
  ~OpenOnExit() { gate.open(); }
};

TEST(BlockingPoolTest, JobsRunOnThePoolsThreadsWhichStartWithTheFirstJob) {
  std::mutex mu;
  std::set<std::thread::id> ran_on;
  std::atomic<int> done = 0;
  {
    BlockingPool pool({.threads = 3, .queue_max = 100});
    EXPECT_EQ(pool.threads_started(), 0u);
    for (int i = 0; i < 50; ++i) {
      ASSERT_TRUE(pool.submit([&] {
        std::lock_guard lock(mu);
        ran_on.insert(std::this_thread::get_id());
        ++done;
      }));
    }
    EXPECT_EQ(pool.threads_started(), 3u);
  }
  EXPECT_EQ(done, 50) << "the destructor runs every accepted job";
  EXPECT_FALSE(ran_on.contains(std::this_thread::get_id()));
  EXPECT_LE(ran_on.size(), 3u);
}

TEST(BlockingPoolTest, NoMoreJobsRunAtOnceThanThePoolHasThreads) {
  Gate gate;
  std::atomic<int> running = 0, running_max = 0;
  {
    BlockingPool pool({.threads = 2, .queue_max = 10});
    OpenOnExit open_on_exit{gate};
    for (int i = 0; i < 6; ++i) {
      ASSERT_TRUE(pool.submit([&] {
        const int now = ++running;
        int seen = running_max;
        while (now > seen && !running_max.compare_exchange_weak(seen, now)) {
        }
        gate.pass();
        --running;
      }));
    }
    ASSERT_TRUE(gate.wait_for_waiting(2));
    EXPECT_EQ(pool.queued(), 4u) << "the other jobs wait for a thread";
    EXPECT_EQ(pool.threads_started(), 2u);
  }  // the gate opens, and the destructor runs the other four
  EXPECT_EQ(running_max, 2);
}

TEST(BlockingPoolTest, AFullQueueRefusesAtOnceAndQueuesNothing) {
  Gate gate;
  std::atomic<int> ran = 0;
  {
    BlockingPool pool({.threads = 1, .queue_max = 2});
    OpenOnExit open_on_exit{gate};
    ASSERT_TRUE(pool.submit([&] {
      gate.pass();
      ++ran;
    }));
    ASSERT_TRUE(gate.wait_for_waiting(1));  // the thread is busy; the queue is empty
    EXPECT_TRUE(pool.submit([&] { ++ran; }));
    EXPECT_TRUE(pool.submit([&] { ++ran; }));
    EXPECT_FALSE(pool.submit([&] { ran += 100; })) << "two jobs wait already";
    EXPECT_EQ(pool.queued(), 2u);
  }
  EXPECT_EQ(ran, 3);
}

}  // namespace
}  // namespace leasehold::runtime
