#include "testing/faulty_store.h"

#include <cassert>

namespace leasehold::store {

FaultyStore::FaultyStore(ItemStore& inner, Random& random, FaultOptions options,
                         std::function<void(Duration)> advance)
    : StoreWrapper(inner), random_(random), options_(options), advance_(std::move(advance)) {}

Fault FaultyStore::random_write_fault() {
  if (random_.chance(options_.drop_reply_probability)) return Fault::kDropReply;
  if (random_.chance(options_.lose_request_probability)) return Fault::kLoseRequest;
  if (random_.chance(options_.applied_then_failed_probability)) return Fault::kAppliedThenFailed;
  if (random_.chance(options_.deliver_late_probability)) return Fault::kDeliverLate;
  return Fault::kNone;
}

Fault FaultyStore::next_fault(bool is_write) {
  Fault fault = Fault::kNone;
  if (!script_.empty()) {
    fault = script_.front();
    script_.pop_front();
  } else if (random_.chance(options_.unavailable_probability)) {
    fault = Fault::kUnavailable;
  } else if (is_write) {
    fault = random_write_fault();
  }
  // A read has no outcome to lose: every fault of a read is a failed read.
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

size_t FaultyStore::deliver_late(size_t max) {
  size_t delivered = 0;
  while (!late_.empty() && delivered < max) {
    std::function<void()> write = std::move(late_.front());
    late_.pop_front();
    write();
    ++delivered;
  }
  return delivered;
}

template <typename T, typename Op>
T FaultyStore::run(bool is_write, Op op) {
  const Fault fault = next_fault(is_write);
  maybe_delay();
  switch (fault) {
    case Fault::kUnavailable:
      return T(unavailable("injected fault: store unavailable"));
    case Fault::kLoseRequest:
      return T(unknown_outcome("injected fault: request lost"));
    case Fault::kDeliverLate:
      late_.push_back([op] { (void)op(); });
      return T(unknown_outcome("injected fault: request held on its way"));
    default:
      break;
  }
  T result = op();
  if (!delays_.empty()) {
    if (advance_) advance_(delays_.front());
    delays_.pop_front();
  }
  maybe_delay();
  if (fault == Fault::kDropReply) return T(unknown_outcome("injected fault: reply lost"));
  if (fault == Fault::kAppliedThenFailed) {
    if (options_.resend_after_server_error) return op();
    return T(unknown_outcome("injected fault: applied, then the store answered 500"));
  }
  return result;
}

// The lambdas below capture their arguments by value: a late write runs
// after the caller's objects are gone.

Result<Item> FaultyStore::get(std::string_view table, const Key& key, bool consistent) {
  return run<Result<Item>>(false, [&] { return inner().get(table, key, consistent); });
}

Result<std::vector<Item>> FaultyStore::batch_get(std::string_view table,
                                                 std::span<const Key> keys) {
  return run<Result<std::vector<Item>>>(false, [&] { return inner().batch_get(table, keys); });
}

Status FaultyStore::put(std::string_view table, const Item& item, const Condition& condition) {
  return run<Status>(true, [this, t = std::string(table), item, condition] {
    return inner().put(t, item, condition);
  });
}

Result<Item> FaultyStore::update(std::string_view table, const Key& key, const Update& update,
                                 const Condition& condition) {
  return run<Result<Item>>(true, [this, t = std::string(table), key, update, condition] {
    return inner().update(t, key, update, condition);
  });
}

Status FaultyStore::remove(std::string_view table, const Key& key, const Condition& condition) {
  return run<Status>(true, [this, t = std::string(table), key, condition] {
    return inner().remove(t, key, condition);
  });
}

Result<Page> FaultyStore::query(std::string_view table, std::string_view pk, const KeyRange& range,
                                const QueryOptions& options) {
  return run<Result<Page>>(false, [&] { return inner().query(table, pk, range, options); });
}

Result<Page> FaultyStore::query_index(std::string_view table, std::string_view index,
                                      std::string_view hash_value, const KeyRange& range,
                                      const QueryOptions& options) {
  return run<Result<Page>>(
      false, [&] { return inner().query_index(table, index, hash_value, range, options); });
}

}  // namespace leasehold::store
