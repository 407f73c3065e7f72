// FaultyStore: wraps another ItemStore and injects the faults a real network
// and a real database produce, for tests and the deterministic simulation.
//
//   kUnavailable  the request fails before reaching the store: nothing applied
//   kDropReply    the write applies, then the reply is lost: kUnknownOutcome
//   kLoseRequest  the write is lost on its way (the connection dropped after
//                 it was sent): nothing applied, yet kUnknownOutcome
//   delays        time passes before the request applies and before the reply
//                 returns (through an `advance` callback that moves a
//                 SimulatedClock), so holders see their requests take time
//
// Faults come from a script (inject_next) first, then at random with the
// configured probabilities, drawn from the Random given — so a simulation run
// replays exactly from its seed. Thread-compatible, not thread-safe: one
// simulation thread drives it (the wrapped store may be shared).
#pragma once

#include <deque>
#include <functional>

#include "leasehold/clock.h"
#include "leasehold/random.h"
#include "leasehold/store.h"

namespace leasehold::store {

enum class Fault { kNone, kUnavailable, kDropReply, kLoseRequest };

struct FaultOptions {
  double unavailable_probability = 0;  // per call
  double drop_reply_probability = 0;   // per write
  double delay_probability = 0;        // per call, before and after applying
  Duration delay_max{};
  double lose_request_probability = 0;  // per write
};

class FaultyStore final : public ItemStore {
 public:
  // REQUIRES: inner and random outlive this object.
  FaultyStore(ItemStore& inner, Random& random, FaultOptions options = {},
              std::function<void(Duration)> advance = {});

  // The next calls get these faults, in order, before any random ones.
  void inject_next(Fault fault) { script_.push_back(fault); }
  void set_options(const FaultOptions& options) { options_ = options; }

  Status ensure_table(const TableSpec& spec) override { return inner_.ensure_table(spec); }
  Status require_table(const TableSpec& spec) override { return inner_.require_table(spec); }
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
  std::string_view backend_name() const override { return inner_.backend_name(); }

  uint64_t faults_injected() const { return faults_injected_; }

 private:
  Fault next_fault(bool is_write);
  void maybe_delay();
  // Runs `op` under the next fault; `applied` says what a write returned.
  template <typename T, typename Op>
  T run(bool is_write, Op op);

  ItemStore& inner_;
  Random& random_;
  FaultOptions options_;
  std::function<void(Duration)> advance_;
  std::deque<Fault> script_;
  uint64_t faults_injected_ = 0;
};

}  // namespace leasehold::store
