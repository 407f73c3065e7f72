// IndexLagStore: wraps another ItemStore and makes its secondary indexes
// lag, as DynamoDB's global secondary indexes do (they are updated after
// the write, usually within a second, with no bound promised): an index
// query answers with each item as it stood `lag` ago, so that an item
// written since shows in its old form, or not at all if it is new, and an
// item removed since still shows. Reads of the table itself (get,
// batch_get, query) are unaffected, as on DynamoDB.
//
// It learns each table's indexes from ensure_table()/require_table() (call
// them through it), and remembers each write's earlier image for as long as
// the lag, reading it back (consistently) before the write. An index query
// reads every page of the inner store and answers in one page, whatever
// the limit. Thread-safe; the lag may be changed at any time.
#pragma once

#include <deque>
#include <map>
#include <mutex>
#include <optional>

#include "leasehold/clock.h"
#include "store/store_wrapper.h"

namespace leasehold::testing {

class IndexLagStore final : public store::StoreWrapper {
 public:
  // REQUIRES: inner and clock outlive this object.
  IndexLagStore(ItemStore& inner, Clock& clock, Duration lag = Duration::zero());

  // From now on, index queries of `table` (every table, if empty) lag by
  // `lag`; zero: none.
  void set_lag(Duration lag, std::string table = "");

  Status ensure_table(const TableSpec& spec) override;
  Status require_table(const TableSpec& spec) override;
  Status put(std::string_view table, const Item& item, const Condition& condition) override;
  Result<Item> update(std::string_view table, const Key& key, const Update& update,
                      const Condition& condition) override;
  Status remove(std::string_view table, const Key& key, const Condition& condition) override;
  using StoreWrapper::update_each;
  // One write at a time, so that each is remembered.
  std::vector<Result<Item>> update_each(std::string_view table,
                                        std::span<const UpdateRequest> requests,
                                        Duration timeout) override {
    return ItemStore::update_each(table, requests, timeout);
  }
  Result<Page> query_index(std::string_view table, std::string_view index,
                           std::string_view hash_value, const KeyRange& range,
                           const QueryOptions& options) override;

 private:
  // An item's image before one write, and when the write was made.
  struct Earlier {
    MonoTime written_at;
    std::optional<Item> before;  // none: the write created it
  };
  using KeyId = std::pair<std::string, std::string>;  // pk, sk
  using History = std::map<KeyId, std::deque<Earlier>>;

  // Remembers `key`'s image before a write that is about to be made.
  void remember(std::string_view table, const Key& key);
  // The images of the items written within the lag, as they stood then.
  std::map<KeyId, std::optional<Item>> as_it_was(std::string_view table, MonoTime now);
  const TableSpec* spec_of(std::string_view table);

  Duration lag_of(std::string_view table) const;

  Clock& clock_;
  std::mutex mu_;
  Duration lag_;  // of every table not in lags_
  std::map<std::string, Duration, std::less<>> lags_;
  std::map<std::string, TableSpec, std::less<>> specs_;
  std::map<std::string, History, std::less<>> history_;
};

}  // namespace leasehold::testing
