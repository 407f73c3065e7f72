// Deterministic simulation of a fleet of lease holders on one thread.
//
// Several workers, each with its own skewed wall clock and monotonic origin,
// race for a few keys through a store that fails requests, loses replies
// after committing them and delays them. Workers acquire, keep leases alive
// with a poll-driven Renewer, write fenced data, release, and pause for
// longer than a ttl (a GC pause or SIGSTOP). After every step, and every
// time simulated time moves inside a store call, the checker asserts:
//   1. no two workers consider themselves valid holders of one key at once;
//   2. every acquisition's epoch is above every epoch seen before on its key,
//      and the stored epoch never goes down;
//   3. fenced writes land in epoch order: a stale holder's write never lands.
// Every choice comes from one seeded generator: a failing run prints its
// seed, and LEASEHOLD_SIM_SEED=<seed> replays exactly that run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
#include <map>
#include <optional>
#include <sstream>

#include "leasehold/renewer.h"
#include "store/faulty_store.h"
#include "store/memory/memory_store.h"

namespace leasehold {
namespace {

using std::chrono::milliseconds;

struct SimOptions {
  int workers = 5;
  int keys = 2;
  int steps = 3000;
  Duration ttl = std::chrono::seconds(2);
  Duration config_skew = milliseconds(500);  // what the lease layer is told
  Duration actual_skew = milliseconds(500);  // how far clocks really spread
  store::FaultOptions faults{0.05, 0.05, 0.2, milliseconds(250), 0.03};
};

// A machine's clock: true time plus a wall offset that NTP may move.
class WorkerClock final : public Clock {
 public:
  WorkerClock(SimulatedClock& truth, Duration wall_offset, Duration mono_offset)
      : truth_(truth), wall_offset_(wall_offset), mono_offset_(mono_offset) {}
  WallTime wall_now() override {
    return truth_.wall_now() + std::chrono::duration_cast<WallTime::duration>(wall_offset_);
  }
  MonoTime mono_now() override { return truth_.mono_now() + mono_offset_; }
  void set_wall_offset(Duration d) { wall_offset_ = d; }

 private:
  SimulatedClock& truth_;
  Duration wall_offset_;
  Duration mono_offset_;
};

struct Worker {
  std::unique_ptr<WorkerClock> clock;
  std::unique_ptr<store::FaultyStore> store;
  std::unique_ptr<LeaseManager> leases;
  std::unique_ptr<Renewer> renewer;
  std::map<int, Renewer::Id> held;  // key index -> renewer entry
  MonoTime paused_until{};          // in true time
};

class Simulation {
 public:
  Simulation(uint64_t seed, SimOptions options) : seed_(seed), o_(options), random_(seed) {
    memory_ = store::make_memory_store();
    EXPECT_TRUE(memory_->ensure_table(lease_table_spec()).ok());
    LeaseConfig config;
    config.max_clock_skew = o_.config_skew;
    for (int i = 0; i < o_.workers; ++i) {
      Worker w;
      w.clock = std::make_unique<WorkerClock>(truth_, random_offset(),
                                              Duration(random_.uniform(0, int64_t{1} << 40)));
      w.store = std::make_unique<store::FaultyStore>(*memory_, random_, o_.faults,
                                                     [this](Duration d) { advance(d); });
      w.leases = std::make_unique<LeaseManager>(*w.store, *w.clock, random_, config);
      w.renewer = std::make_unique<Renewer>(*w.leases, *w.clock, random_);
      workers_.push_back(std::move(w));
    }
  }

  // Runs the whole simulation; returns the first violation, if any.
  std::optional<std::string> run() {
    for (step_ = 0; step_ < o_.steps && !violation_; ++step_) {
      advance(Duration(random_.uniform(0, to_ms(milliseconds(60)) * 1'000'000)));
      if (random_.chance(0.01)) {
        const int w = static_cast<int>(random_.uniform(0, o_.workers - 1));
        workers_[w].clock->set_wall_offset(random_offset());
        note("w" + std::to_string(w) + " wall clock stepped");
      }
      act(static_cast<int>(random_.uniform(0, o_.workers - 1)));
      check();
    }
    return violation_;
  }

  int acquisitions() const { return acquisitions_; }
  int fenced_writes() const { return fenced_writes_; }

 private:
  Duration random_offset() {
    const int64_t half = o_.actual_skew.count() / 2;
    return Duration(random_.uniform(-half, half));
  }

  void advance(Duration d) {
    check();
    truth_.advance(d);
    check();
  }

  void note(std::string event) {
    trace_.push_back("step " + std::to_string(step_) + ": " + std::move(event));
    if (trace_.size() > 40) trace_.pop_front();
  }

  // The lease a worker believes it holds and may act on, if any.
  std::optional<Lease> believed(Worker& w, int key) {
    const auto it = w.held.find(key);
    if (it == w.held.end()) return std::nullopt;
    auto lease = w.renewer->get(it->second);
    if (!lease) {
      w.held.erase(it);  // the renewer reported it lost
      return std::nullopt;
    }
    if (!lease->valid_at(w.clock->mono_now())) return std::nullopt;
    return lease;
  }

  void act(int wi) {
    Worker& w = workers_[wi];
    if (truth_.mono_now() < w.paused_until) return;  // a paused process does nothing
    w.renewer->poll();
    const int key = static_cast<int>(random_.uniform(0, o_.keys - 1));
    const double roll = random_.uniform01();
    const std::optional<Lease> mine = believed(w, key);
    if (roll < 0.02) {
      w.paused_until = truth_.mono_now() + Duration(random_.uniform(0, 3 * o_.ttl.count()));
      note("w" + std::to_string(wi) + " paused");
    } else if (!mine && !w.held.contains(key) && roll < 0.40) {
      try_acquire(wi, key);
    } else if (mine && roll < 0.75) {
      fenced_write(wi, key, *mine);
    } else if (mine && roll < 0.80) {
      release(wi, key);
    }
  }

  void try_acquire(int wi, int key) {
    Worker& w = workers_[wi];
    AcquireOptions o;
    o.owner = "w" + std::to_string(wi);
    o.ttl = o_.ttl;
    Result<Lease> lease = w.leases->acquire({"key" + std::to_string(key), ""}, o);
    if (!lease.ok()) return;
    ++acquisitions_;
    note(o.owner + " acquired key" + std::to_string(key) + " epoch " +
         std::to_string(lease->epoch));
    int64_t& seen = epoch_seen_[key];
    if (lease->epoch <= seen) {
      fail("epoch " + std::to_string(lease->epoch) + " on key" + std::to_string(key) +
           " is not above the " + std::to_string(seen) + " seen before");
    }
    seen = lease->epoch;
    w.held[key] = w.renewer->add(*lease, nullptr);
    check();
  }

  void fenced_write(int wi, int key, const Lease& lease) {
    Worker& w = workers_[wi];
    Result<Item> item = w.leases->fenced_write(lease, Update().set("fence_epoch", lease.epoch));
    if (!item.ok()) return;
    ++fenced_writes_;
    int64_t& last = fence_landed_[key];
    if (lease.epoch < last) {
      fail("fenced write of epoch " + std::to_string(lease.epoch) + " landed after epoch " +
           std::to_string(last));
    }
    last = lease.epoch;
  }

  void release(int wi, int key) {
    Worker& w = workers_[wi];
    const auto lease = w.renewer->remove(w.held.at(key));
    w.held.erase(key);
    if (!lease) return;
    const auto mode = random_.chance(0.5) ? ReleaseMode::kExpire : ReleaseMode::kClear;
    (void)w.leases->release(*lease, mode);  // a failed release just lets it expire
    note("w" + std::to_string(wi) + " released key" + std::to_string(key));
  }

  void check() {
    if (violation_) return;
    for (int key = 0; key < o_.keys; ++key) {
      std::vector<int> holders;
      for (int wi = 0; wi < o_.workers; ++wi) {
        Worker& w = workers_[wi];
        const auto it = w.held.find(key);
        if (it == w.held.end()) continue;
        const auto lease = w.renewer->get(it->second);
        if (lease && lease->valid_at(w.clock->mono_now())) holders.push_back(wi);
      }
      if (holders.size() > 1) {
        fail("workers w" + std::to_string(holders[0]) + " and w" + std::to_string(holders[1]) +
             " both consider themselves holders of key" + std::to_string(key));
      }
      auto item = memory_->get("leases", {"key" + std::to_string(key), ""}, true);
      if (item.ok()) {
        const int64_t* epoch = get_int(*item, "lease_epoch");
        if (epoch && *epoch < stored_epoch_[key]) fail("the stored epoch went down");
        if (epoch) stored_epoch_[key] = *epoch;
      }
    }
  }

  void fail(const std::string& what) {
    if (violation_) return;
    std::ostringstream out;
    out << "seed " << seed_ << ", step " << step_ << ": " << what
        << "\n  replay: LEASEHOLD_SIM_SEED=" << seed_ << "\n  last events:\n";
    for (const auto& e : trace_) out << "    " << e << "\n";
    violation_ = out.str();
  }

  const uint64_t seed_;
  const SimOptions o_;
  SeededRandom random_;
  SimulatedClock truth_;
  std::unique_ptr<ItemStore> memory_;
  std::vector<Worker> workers_;
  std::map<int, int64_t> epoch_seen_, stored_epoch_, fence_landed_;
  std::deque<std::string> trace_;
  std::optional<std::string> violation_;
  int step_ = 0;
  int acquisitions_ = 0;
  int fenced_writes_ = 0;
};

std::vector<uint64_t> seeds(int default_count) {
  if (const char* one = std::getenv("LEASEHOLD_SIM_SEED")) return {std::strtoull(one, nullptr, 10)};
  int count = default_count;
  if (const char* n = std::getenv("LEASEHOLD_SIM_SEEDS")) count = std::atoi(n);
  std::vector<uint64_t> out;
  for (int i = 1; i <= count; ++i) out.push_back(static_cast<uint64_t>(i) * 7919);
  return out;
}

TEST(LeaseSimulation, MutualExclusionAndMonotonicEpochsUnderFaults) {
  int acquisitions = 0, writes = 0;
  for (uint64_t seed : seeds(150)) {
    Simulation sim(seed, SimOptions{});
    const auto violation = sim.run();
    ASSERT_FALSE(violation.has_value()) << *violation;
    acquisitions += sim.acquisitions();
    writes += sim.fenced_writes();
  }
  // The runs must have exercised contention, not idled.
  EXPECT_GT(acquisitions, 1000);
  EXPECT_GT(writes, 10000);
}

TEST(LeaseSimulation, SameSeedSameRun) {
  Simulation a(12345, SimOptions{}), b(12345, SimOptions{});
  EXPECT_EQ(a.run(), b.run());
  EXPECT_EQ(a.acquisitions(), b.acquisitions());
  EXPECT_EQ(a.fenced_writes(), b.fenced_writes());
}

// The checker is not vacuous: clocks skewed far beyond what the lease layer
// was told must produce overlapping holders in some run.
TEST(LeaseSimulation, CheckerCatchesSkewBeyondTheConfiguredBound) {
  SimOptions o;
  o.actual_skew = std::chrono::seconds(4);
  int caught = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    if (Simulation(seed, o).run()) ++caught;
  }
  EXPECT_GT(caught, 0);
}

}  // namespace
}  // namespace leasehold
