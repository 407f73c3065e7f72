#include "runtime/metered_store.h"

#include <chrono>

namespace leasehold::runtime {
namespace {

// The `operation` label of each MeteredStore::Op, in its order.
constexpr std::string_view kOpNames[] = {
    "ensure_table", "require_table", "get",    "batch_get", "put",
    "update",       "update_each",   "remove", "query",     "query_index",
};

const Status& status_of(const Status& status) { return status; }

template <typename T>
const Status& status_of(const Result<T>& result) {
  return result.status();
}

}  // namespace

MeteredStore::MeteredStore(ItemStore& inner, metrics::Registry& registry, Clock& clock)
    : StoreWrapper(inner),
      clock_(clock),
      backend_(inner.backend_name()),
      errors_(registry.counter("leasehold_store_errors_total",
                               "Store calls (and writes of update_each) that failed, by the code "
                               "of their error. A failed condition is not counted here.",
                               {"backend", "operation", "code"})),
      capacity_(registry.collected(/*counter=*/true, "leasehold_store_capacity_units_total",
                                   "Capacity units the store says its calls consumed "
                                   "(DynamoDB's ConsumedCapacity), by table and index "
                                   "(\"\" for the table) and kind (read or write).",
                                   {"backend", "table", "index", "kind"})) {
  capacity_id_ = capacity_.add([this](std::vector<metrics::Collected::Sample>& out) {
    for (const CapacityUse& use : this->inner().consumed_capacity()) {
      out.push_back({{backend_, use.table, use.index, "read"}, use.read_units});
      out.push_back({{backend_, use.table, use.index, "write"}, use.write_units});
    }
  });
  static_assert(std::size(kOpNames) == kOpCount);
  auto& seconds =
      registry.histogram("leasehold_store_operation_seconds",
                         "Time store calls took, failed ones included.", {"backend", "operation"});
  auto& condition_failures =
      registry.counter("leasehold_store_condition_failures_total",
                       "Conditional writes whose condition was false: the normal answer when "
                       "a lease is held by another or a token is stale.",
                       {"backend", "operation"});
  auto& items_read = registry.counter(
      "leasehold_store_items_read_total",
      "Items the store's reads returned: what a store that bills by the item read charges for.",
      {"backend", "operation"});
  for (size_t op = 0; op < kOpCount; ++op) {
    const std::vector<std::string> labels = {backend_, std::string(kOpNames[op])};
    series_[op].seconds = &seconds.with(labels);
    if (op == kPut || op == kUpdate || op == kUpdateEach || op == kRemove) {
      series_[op].condition_failures = &condition_failures.with(labels);
    }
    if (op == kGet || op == kBatchGet || op == kQuery || op == kQueryIndex) {
      series_[op].items_read = &items_read.with(labels);
    }
  }
}

MeteredStore::~MeteredStore() { capacity_.remove(capacity_id_); }

void MeteredStore::count_read(Op op, size_t items) {
  series_[op].items_read->inc(static_cast<double>(items));
}

template <typename R, typename Call>
R MeteredStore::timed(Op op, const Call& call) {
  const MonoTime start = clock_.mono_now();
  R result = call();
  observe_since(op, start);
  count(op, status_of(result));
  return result;
}

void MeteredStore::observe_since(Op op, MonoTime start) {
  const std::chrono::duration<double> seconds = clock_.mono_now() - start;
  series_[op].seconds->observe(seconds.count());
}

void MeteredStore::count(Op op, const Status& status) {
  if (status.ok()) return;
  metrics::Counter* condition_failures = series_[op].condition_failures;
  if (status.code() == Code::kConditionFailed && condition_failures != nullptr) {
    condition_failures->inc();
    return;
  }
  errors(op, status.code()).inc();
}

metrics::Counter& MeteredStore::errors(Op op, Code code) {
  const auto slot = static_cast<size_t>(code);
  auto lookup = [&] {
    return &errors_.with({backend_, std::string(kOpNames[op]), std::string(code_name(code))});
  };
  if (slot >= kCodeSlots) return *lookup();
  // Threads that race here find the same series; the release makes the
  // series visible with the pointer.
  std::atomic<metrics::Counter*>& cached = series_[op].errors[slot];
  metrics::Counter* counter = cached.load(std::memory_order_acquire);
  if (counter == nullptr) {
    counter = lookup();
    cached.store(counter, std::memory_order_release);
  }
  return *counter;
}

Status MeteredStore::ensure_table(const TableSpec& spec) {
  return timed<Status>(kEnsureTable, [&] { return inner().ensure_table(spec); });
}

Status MeteredStore::require_table(const TableSpec& spec) {
  return timed<Status>(kRequireTable, [&] { return inner().require_table(spec); });
}

Result<Item> MeteredStore::get(std::string_view table, const Key& key, bool consistent) {
  Result<Item> item =
      timed<Result<Item>>(kGet, [&] { return inner().get(table, key, consistent); });
  if (item.ok()) count_read(kGet, 1);
  return item;
}

Result<std::vector<Item>> MeteredStore::batch_get(std::string_view table,
                                                  std::span<const Key> keys) {
  Result<std::vector<Item>> items =
      timed<Result<std::vector<Item>>>(kBatchGet, [&] { return inner().batch_get(table, keys); });
  if (items.ok()) count_read(kBatchGet, items->size());
  return items;
}

Status MeteredStore::put(std::string_view table, const Item& item, const Condition& condition) {
  return timed<Status>(kPut, [&] { return inner().put(table, item, condition); });
}

Result<Item> MeteredStore::update(std::string_view table, const Key& key, const Update& update,
                                  const Condition& condition) {
  return timed<Result<Item>>(kUpdate,
                             [&] { return inner().update(table, key, update, condition); });
}

Status MeteredStore::remove(std::string_view table, const Key& key, const Condition& condition) {
  return timed<Status>(kRemove, [&] { return inner().remove(table, key, condition); });
}

Result<Page> MeteredStore::query(std::string_view table, std::string_view pk, const KeyRange& range,
                                 const QueryOptions& options) {
  Result<Page> page =
      timed<Result<Page>>(kQuery, [&] { return inner().query(table, pk, range, options); });
  if (page.ok()) count_read(kQuery, page->items.size());
  return page;
}

Result<Page> MeteredStore::query_index(std::string_view table, std::string_view index,
                                       std::string_view hash_value, const KeyRange& range,
                                       const QueryOptions& options) {
  Result<Page> page = timed<Result<Page>>(
      kQueryIndex, [&] { return inner().query_index(table, index, hash_value, range, options); });
  if (page.ok()) count_read(kQueryIndex, page->items.size());
  return page;
}

std::vector<Result<Item>> MeteredStore::update_each(std::string_view table,
                                                    std::span<const UpdateRequest> requests,
                                                    Duration timeout) {
  const MonoTime start = clock_.mono_now();
  std::vector<Result<Item>> results = inner().update_each(table, requests, timeout);
  observe_since(kUpdateEach, start);
  for (const Result<Item>& result : results) count(kUpdateEach, result.status());
  return results;
}

}  // namespace leasehold::runtime
