// The item store conformance suite: one set of value-parameterised test cases
// (store_conformance_test.cc, store_conformance_query_test.cc and
// store_conformance_limits_test.cc) that every backend must pass, so that
// backends differ in speed, never in meaning.
//
// A backend joins the suite with one line in backends_test.cc:
//
//   INSTANTIATE_TEST_SUITE_P(Sqlite, StoreConformance,
//                            ::testing::Values(StoreFactory{"sqlite", make_sqlite}),
//                            factory_name);
//
// `make` is called once per test and must return a store with no tables,
// isolated from every other test's store; whatever it creates (files, remote
// tables) must go away when the store is destroyed. Each test uses its store
// from one or several threads of its own.
//
// The same factories run the lease layer (lease_conformance_test.cc) through
// the fixtures LeaseConformance and RenewerConformance, and StoreQueue
// (store_queue_conformance_test.cc) through StoreQueueConformance: one more
// INSTANTIATE line each per backend. The job queue's contract, which every
// Queue keeps whatever it is built on (StoreQueue on each store, SqsQueue),
// has a suite of its own: queue_conformance.h.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "leasehold/queue.h"
#include "leasehold/renewer.h"
#include "leasehold/store.h"
#include "testing/faulty_store.h"

namespace leasehold::conformance {

struct StoreFactory {
  std::string name;  // a test-name suffix: [A-Za-z0-9_] only
  std::function<Result<std::unique_ptr<ItemStore>>()> make;
};

// Test output names the backend instead of dumping the struct's bytes.
inline void PrintTo(const StoreFactory& factory, std::ostream* os) { *os << factory.name; }

// For INSTANTIATE_TEST_SUITE_P: names each instantiation after its factory.
inline std::string factory_name(const ::testing::TestParamInfo<StoreFactory>& info) {
  return info.param.name;
}

// Every test starts with two tables:
//   kItems  "conf_items":  partition key "id", no sort key, with the indexes
//           kByState (hash "state", int range "n") and kByName (hash "state",
//           string range "name")
//   kSorted "conf_sorted": partition key "p", sort key "s"
class StoreConformance : public ::testing::TestWithParam<StoreFactory> {
 public:
  static constexpr const char* kItems = "conf_items";
  static constexpr const char* kSorted = "conf_sorted";
  static constexpr const char* kByState = "state-n-index";
  static constexpr const char* kByName = "state-name-index";

 protected:
  void SetUp() override;

  ItemStore& store() { return *store_; }
  static TableSpec items_spec();
  static TableSpec sorted_spec();

  std::unique_ptr<ItemStore> store_;
};

// The lease layer on the factory's store, wrapped in a FaultyStore whose
// delays move the SimulatedClock. `inner_` is the unwrapped store, to read
// what was really written; the table "leases" exists.
class LeaseConformance : public ::testing::TestWithParam<StoreFactory> {
 protected:
  void SetUp() override;

  AcquireOptions as(std::string owner, Duration ttl = std::chrono::seconds(10));
  // The stored lease item at `pk`, read through the unwrapped store.
  Item stored(const std::string& pk);

  SimulatedClock clock_;
  SeededRandom random_{1};
  std::unique_ptr<ItemStore> inner_;
  std::unique_ptr<store::FaultyStore> faulty_;
  std::unique_ptr<LeaseManager> leases_;
  const Key key_{"k", ""};
};

// Counts the batches (update_each calls) and the writes in them
// (lease_conformance_test.cc).
class CountingStore;

// The Renewer, on the factory's store wrapped in a FaultyStore (without
// delays) and a CountingStore, to see heartbeats batched.
class RenewerConformance : public ::testing::TestWithParam<StoreFactory> {
 protected:
  ~RenewerConformance() override;  // where CountingStore is complete
  void SetUp() override;

  Lease acquire(const std::string& key, Duration ttl = std::chrono::seconds(10));
  // Advances simulated time in small steps, polling as a renewer thread would.
  void run_for(Renewer& renewer, Duration total, Duration step = std::chrono::milliseconds(10));

  SimulatedClock clock_;
  SeededRandom random_{3};
  std::unique_ptr<ItemStore> inner_;
  std::unique_ptr<store::FaultyStore> faulty_;
  std::unique_ptr<CountingStore> counting_;
  std::unique_ptr<LeaseManager> leases_;
};

// The job queue on the factory's store, wrapped in a FaultyStore; the table
// "queue_messages" exists. `queue_` is queue "jobs" with max_receives 3 on
// the faulty store; open() gives more queues (other receivers, other names)
// on any store.
class StoreQueueConformance : public ::testing::TestWithParam<StoreFactory> {
 public:
  static constexpr int kMaxReceives = 3;

 protected:
  void SetUp() override;

  std::unique_ptr<StoreQueue> open(ItemStore& store, Random& random,
                                   const std::string& name = "jobs");
  // The stored message `id` of queue "jobs", read through the unwrapped
  // store; an empty item if there is none.
  Item stored(const std::string& id);
  // How many items the table holds for queue "jobs", ready or dead.
  size_t items_in_table();

  SimulatedClock clock_;
  SeededRandom random_{5};
  std::unique_ptr<ItemStore> inner_;
  std::unique_ptr<store::FaultyStore> faulty_;
  std::unique_ptr<StoreQueue> queue_;
};

}  // namespace leasehold::conformance
