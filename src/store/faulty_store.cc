#include "store/faulty_store.h"

namespace leasehold::store {

FaultyStore::FaultyStore(ItemStore& inner, Random& random, FaultOptions options,
                         std::function<void(Duration)> advance)
    : inner_(inner), random_(random), options_(options), advance_(std::move(advance)) {}

Fault FaultyStore::next_fault(bool is_write) {
  Fault fault = Fault::kNone;
  if (!script_.empty()) {
    fault = script_.front();
    script_.pop_front();
  } else if (random_.chance(options_.unavailable_probability)) {
    fault = Fault::kUnavailable;
  } else if (is_write && random_.chance(options_.drop_reply_probability)) {
    fault = Fault::kDropReply;
  } else if (is_write && random_.chance(options_.lose_request_probability)) {
    fault = Fault::kLoseRequest;
  }
  if (fault != Fault::kNone && fault != Fault::kUnavailable && !is_write) {
    fault = Fault::kUnavailable;
  }
  if (fault != Fault::kNone) ++faults_injected_;
  return fault;
}

void FaultyStore::maybe_delay() {
  if (!advance_ || options_.delay_max <= Duration::zero()) return;
  if (!random_.chance(options_.delay_probability)) return;
  advance_(Duration(random_.uniform(0, options_.delay_max.count())));
}

template <typename T, typename Op>
T FaultyStore::run(bool is_write, Op op) {
  const Fault fault = next_fault(is_write);
  maybe_delay();
  if (fault == Fault::kUnavailable) return T(unavailable("injected fault: store unavailable"));
  if (fault == Fault::kLoseRequest) return T(unknown_outcome("injected fault: request lost"));
  T result = op();
  maybe_delay();
  if (fault == Fault::kDropReply) return T(unknown_outcome("injected fault: reply lost"));
  return result;
}

Result<Item> FaultyStore::get(std::string_view table, const Key& key, bool consistent) {
  return run<Result<Item>>(false, [&] { return inner_.get(table, key, consistent); });
}

Result<std::vector<Item>> FaultyStore::batch_get(std::string_view table,
                                                 std::span<const Key> keys) {
  return run<Result<std::vector<Item>>>(false, [&] { return inner_.batch_get(table, keys); });
}

Status FaultyStore::put(std::string_view table, const Item& item, const Condition& condition) {
  return run<Status>(true, [&] { return inner_.put(table, item, condition); });
}

Result<Item> FaultyStore::update(std::string_view table, const Key& key, const Update& update,
                                 const Condition& condition) {
  return run<Result<Item>>(true, [&] { return inner_.update(table, key, update, condition); });
}

Status FaultyStore::remove(std::string_view table, const Key& key, const Condition& condition) {
  return run<Status>(true, [&] { return inner_.remove(table, key, condition); });
}

Result<Page> FaultyStore::query(std::string_view table, std::string_view pk, const KeyRange& range,
                                const QueryOptions& options) {
  return run<Result<Page>>(false, [&] { return inner_.query(table, pk, range, options); });
}

Result<Page> FaultyStore::query_index(std::string_view table, std::string_view index,
                                      std::string_view hash_value, const KeyRange& range,
                                      const QueryOptions& options) {
  return run<Result<Page>>(
      false, [&] { return inner_.query_index(table, index, hash_value, range, options); });
}

}  // namespace leasehold::store
