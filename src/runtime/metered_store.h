// MeteredStore: an ItemStore that forwards every call to another one
// (store::StoreWrapper) and records, per backend and operation, how long the
// call took and how it failed, in a metrics::Registry:
//
//   leasehold_store_operation_seconds{backend,operation}        histogram
//   leasehold_store_errors_total{backend,operation,code}        counter
//   leasehold_store_condition_failures_total{backend,operation} counter
//   leasehold_store_items_read_total{backend,operation}         counter
//   leasehold_store_capacity_units_total{backend,table,index,kind} counter
//
// `operation` is the ItemStore method's name (get, batch_get, put, update,
// update_each, remove, query, query_index, ensure_table, require_table) and
// `code` the Status code's name (Unavailable, UnknownOutcome, NotFound, ...).
// A failed condition is not an error: it is the normal answer to a
// conditional write (a lease held by another, a stale token), so it is counted
// in condition_failures_total, whose rate shows contention, and the errors
// counter keeps to what an operator acts on. items_read_total counts the
// items the reads returned (get, batch_get, query, query_index): what a
// store that bills by the item read, as DynamoDB does, charges for.
// capacity_units_total is what the store itself says it consumed
// (ItemStore::consumed_capacity(): DynamoDB's ConsumedCapacity), read
// and write units by table and index (index "" for the table), read at
// each scrape. update_each() observes one
// duration for the call and counts each of its writes that failed.
//
// The histogram and the condition-failure counter of each operation are made
// when the store is built, so that a call costs two clock reads and a few
// atomic adds; an error counter is made on the first error of its code.
//
// Thread-safety is the wrapped store's: what this adds is atomics, and one
// lock on the first error of each code and operation.
#pragma once

#include <array>
#include <atomic>
#include <string>

#include "leasehold/clock.h"
#include "leasehold/store.h"
#include "metrics/registry.h"
#include "store/store_wrapper.h"

namespace leasehold::runtime {

// What reads no store (backend_name, reads_are_local, change_stamp) passes
// through untimed.
class MeteredStore final : public store::StoreWrapper {
 public:
  // REQUIRES: inner, registry and clock outlive this store.
  MeteredStore(ItemStore& inner, metrics::Registry& registry, Clock& clock);
  MeteredStore(const MeteredStore&) = delete;
  MeteredStore& operator=(const MeteredStore&) = delete;
  ~MeteredStore() override;

  Status ensure_table(const TableSpec& spec) override;
  Status require_table(const TableSpec& spec) override;
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
  using StoreWrapper::update_each;
  std::vector<Result<Item>> update_each(std::string_view table,
                                        std::span<const UpdateRequest> requests,
                                        Duration timeout) override;

 private:
  enum Op {
    kEnsureTable,
    kRequireTable,
    kGet,
    kBatchGet,
    kPut,
    kUpdate,
    kUpdateEach,
    kRemove,
    kQuery,
    kQueryIndex,
    kOpCount
  };
  // Every Code but kOk has a slot; a code added later than this is counted
  // through a lookup instead.
  static constexpr size_t kCodeSlots = static_cast<size_t>(Code::kResourceExhausted) + 1;

  // One operation's series.
  struct Series {
    metrics::Histogram* seconds = nullptr;
    metrics::Counter* condition_failures = nullptr;  // writes with a condition only
    metrics::Counter* items_read = nullptr;          // reads only
    std::array<std::atomic<metrics::Counter*>, kCodeSlots> errors{};  // made on first use
  };

  // Runs `call`, observes its duration and counts its failure for `op`.
  template <typename R, typename Call>
  R timed(Op op, const Call& call);
  void observe_since(Op op, MonoTime start);
  void count_read(Op op, size_t items);
  // Counts a failed call or write (nothing for a success).
  void count(Op op, const Status& status);
  metrics::Counter& errors(Op op, Code code);

  Clock& clock_;
  const std::string backend_;
  metrics::Family<metrics::Counter>& errors_;
  std::array<Series, kOpCount> series_;
  metrics::Collected& capacity_;
  metrics::Collected::Id capacity_id_ = 0;
};

}  // namespace leasehold::runtime
