// FaultyStore: wraps another ItemStore and injects the faults a real network
// and a real database produce, for tests and the deterministic simulation.
//
//   kUnavailable        the request fails before reaching the store: nothing
//                       applied
//   kDropReply          the write applies, then the reply is lost:
//                       kUnknownOutcome
//   kLoseRequest        the write is lost on its way (the connection dropped
//                       after it was sent): nothing applied, yet
//                       kUnknownOutcome
//   kAppliedThenFailed  the write applies, then the store answers with a
//                       server error (DynamoDB's 500). A correct backend
//                       reports kUnknownOutcome; with
//                       FaultOptions::resend_after_server_error it re-sends
//                       the write and reports the second answer instead, as
//                       a backend that wrongly retries a 5xx would (a planted
//                       bug the simulation must catch)
//   kDeliverLate        the write is held on its way and the caller gets
//                       kUnknownOutcome at once; it reaches the store only
//                       when deliver_late() is called, after later writes
//   delays              time passes before the request applies and before
//                       the reply returns (through an `advance` callback that
//                       moves a SimulatedClock), so holders see their
//                       requests take time
//
// Faults come from a script (inject_next, delay_next) first, then at random
// with the configured probabilities, drawn from the Random given, so a
// simulation run replays exactly from its seed. Thread-compatible, not
// thread-safe: one simulation thread drives it (the wrapped store may be
// shared).
#pragma once

#include <deque>
#include <functional>

#include "leasehold/clock.h"
#include "leasehold/random.h"
#include "store/store_wrapper.h"

namespace leasehold::store {

enum class Fault { kNone, kUnavailable, kDropReply, kLoseRequest, kAppliedThenFailed, kDeliverLate };

struct FaultOptions {
  double unavailable_probability = 0;  // per call
  double drop_reply_probability = 0;   // per write
  double delay_probability = 0;        // per call, before and after applying
  Duration delay_max{};
  double lose_request_probability = 0;         // per write
  double applied_then_failed_probability = 0;  // per write
  double deliver_late_probability = 0;         // per write
  bool resend_after_server_error = false;      // see kAppliedThenFailed
};

class FaultyStore final : public StoreWrapper {
 public:
  // REQUIRES: inner and random outlive this object.
  FaultyStore(ItemStore& inner, Random& random, FaultOptions options = {},
              std::function<void(Duration)> advance = {});

  // The next calls get these faults, in order, before any random ones.
  void inject_next(Fault fault) { script_.push_back(fault); }
  // The next call's reply comes `d` late (after the call applied), before
  // any random delay.
  void delay_next(Duration d) { delays_.push_back(d); }
  void set_options(const FaultOptions& options) { options_ = options; }

  // Applies the writes held by kDeliverLate, oldest first, without faults;
  // their results go nowhere, as a late request's reply has nobody waiting.
  // Returns how many were delivered.
  size_t deliver_late(size_t max = SIZE_MAX);
  size_t late_writes() const { return late_.size(); }

  Result<Item> get(std::string_view table, const Key& key, bool consistent) override;
  Result<std::vector<Item>> batch_get(std::string_view table, std::span<const Key> keys) override;
  Status put(std::string_view table, const Item& item, const Condition& condition) override;
  Result<Item> update(std::string_view table, const Key& key, const Update& update,
                      const Condition& condition) override;
  Status remove(std::string_view table, const Key& key, const Condition& condition) override;
  Result<Page> query(std::string_view table, std::string_view pk, const KeyRange& range,
                     const QueryOptions& options) override;
  Result<Page> query_index(std::string_view table, std::string_view index,
                           std::string_view hash_value, const KeyRange& range,
                           const QueryOptions& options) override;
  // One write at a time, each with its own fault, as the default does.
  using StoreWrapper::update_each;
  std::vector<Result<Item>> update_each(std::string_view table,
                                        std::span<const UpdateRequest> requests,
                                        Duration timeout) override {
    return ItemStore::update_each(table, requests, timeout);
  }

  uint64_t faults_injected() const { return faults_injected_; }

 private:
  Fault next_fault(bool is_write);
  Fault random_write_fault();
  void maybe_delay();
  // Runs `op` under the next fault. `late` is what kDeliverLate keeps: `op`
  // again, to run when delivered.
  template <typename T, typename Op>
  T run(bool is_write, Op op);

  Random& random_;
  FaultOptions options_;
  std::function<void(Duration)> advance_;
  std::deque<Fault> script_;
  std::deque<Duration> delays_;
  std::deque<std::function<void()>> late_;
  uint64_t faults_injected_ = 0;
};

}  // namespace leasehold::store
