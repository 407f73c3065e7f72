// StoreWrapper: an ItemStore that forwards every call to another one, for
// wrappers that change a few calls and pass the rest through (metering,
// fault injection, counting, observing what really reaches a store).
// LevelDB's EnvWrapper is the model: derive from it and override only what
// differs. It forwards every virtual of ItemStore, so that a wrapper never
// hides what the wrapped store says of itself (reads_are_local, say).
//
// Thread-safety is the wrapped store's; a subclass that keeps state of its
// own says how it is guarded.
#pragma once

#include "leasehold/store.h"

namespace leasehold::store {

class StoreWrapper : public ItemStore {
 public:
  // REQUIRES: inner outlives this object.
  explicit StoreWrapper(ItemStore& inner) : inner_(inner) {}
  // A copy would wrap the same store as a wrapper of its own, and would be
  // picked over the constructor above for a wrapper given as a wrapper: to
  // wrap one, pass it as an ItemStore&.
  StoreWrapper(const StoreWrapper&) = delete;
  StoreWrapper& operator=(const StoreWrapper&) = delete;

  ItemStore& inner() const { return inner_; }

  Status ensure_table(const TableSpec& spec) override { return inner_.ensure_table(spec); }
  Status require_table(const TableSpec& spec) override { return inner_.require_table(spec); }
  Result<Item> get(std::string_view table, const Key& key, bool consistent) override {
    return inner_.get(table, key, consistent);
  }
  Result<std::vector<Item>> batch_get(std::string_view table, std::span<const Key> keys) override {
    return inner_.batch_get(table, keys);
  }
  Status put(std::string_view table, const Item& item, const Condition& condition) override {
    return inner_.put(table, item, condition);
  }
  Result<Item> update(std::string_view table, const Key& key, const Update& update,
                      const Condition& condition) override {
    return inner_.update(table, key, update, condition);
  }
  Status remove(std::string_view table, const Key& key, const Condition& condition) override {
    return inner_.remove(table, key, condition);
  }
  Result<Page> query(std::string_view table, std::string_view pk, const KeyRange& range,
                     const QueryOptions& options) override {
    return inner_.query(table, pk, range, options);
  }
  Result<Page> query_index(std::string_view table, std::string_view index,
                           std::string_view hash_value, const KeyRange& range,
                           const QueryOptions& options) override {
    return inner_.query_index(table, index, hash_value, range, options);
  }
  using ItemStore::update_each;
  std::vector<Result<Item>> update_each(std::string_view table,
                                        std::span<const UpdateRequest> requests,
                                        Duration timeout) override {
    return inner_.update_each(table, requests, timeout);
  }
  std::optional<ChangeStamp> change_stamp() const override { return inner_.change_stamp(); }
  std::string_view backend_name() const override { return inner_.backend_name(); }
  bool reads_are_local() const override { return inner_.reads_are_local(); }
  std::vector<CapacityUse> consumed_capacity() const override { return inner_.consumed_capacity(); }
  ChangeFeed* change_feed(std::string_view table) override { return inner_.change_feed(table); }

 private:
  ItemStore& inner_;
};

}  // namespace leasehold::store
