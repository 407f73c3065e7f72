// The backends that run the conformance suites: one INSTANTIATE line each.
#include <stdlib.h>

#include <filesystem>

#include "store/memory/memory_store.h"
#include "store/sqlite/sqlite_store.h"
#include "tests/conformance/store_conformance.h"

namespace leasehold::conformance {
namespace {

// A store that owns a temporary directory and removes it (database, WAL and
// all) after the store inside has been closed.
class TempDirStore final : public ItemStore {
 public:
  TempDirStore(std::filesystem::path dir, std::unique_ptr<ItemStore> inner)
      : dir_(std::move(dir)), inner_(std::move(inner)) {}
  ~TempDirStore() override {
    inner_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  Status ensure_table(const TableSpec& spec) override { return inner_->ensure_table(spec); }
  Result<Item> get(std::string_view t, const Key& key, bool consistent) override {
    return inner_->get(t, key, consistent);
  }
  Result<std::vector<Item>> batch_get(std::string_view t, std::span<const Key> keys) override {
    return inner_->batch_get(t, keys);
  }
  Status put(std::string_view t, const Item& item, const Condition& c) override {
    return inner_->put(t, item, c);
  }
  Result<Item> update(std::string_view t, const Key& key, const Update& u,
                      const Condition& c) override {
    return inner_->update(t, key, u, c);
  }
  Status remove(std::string_view t, const Key& key, const Condition& c) override {
    return inner_->remove(t, key, c);
  }
  Result<Page> query(std::string_view t, std::string_view pk, const KeyRange& range,
                     const QueryOptions& options) override {
    return inner_->query(t, pk, range, options);
  }
  Result<Page> query_index(std::string_view t, std::string_view index, std::string_view hash,
                           const KeyRange& range, const QueryOptions& options) override {
    return inner_->query_index(t, index, hash, range, options);
  }
  std::vector<Result<Item>> update_each(std::string_view t, std::span<const UpdateRequest> requests,
                                        Duration timeout) override {
    return inner_->update_each(t, requests, timeout);
  }
  std::string_view backend_name() const override { return inner_->backend_name(); }

 private:
  std::filesystem::path dir_;
  std::unique_ptr<ItemStore> inner_;
};

Result<std::unique_ptr<ItemStore>> make_memory() { return store::make_memory_store(); }

Result<std::unique_ptr<ItemStore>> make_sqlite() {
  std::string dir =
      (std::filesystem::temp_directory_path() / "leasehold-conformance-XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr) return unavailable("mkdtemp failed for " + dir);
  store::SqliteOptions options;
  options.path = dir + "/store.db";
  auto opened = store::open_sqlite_store(options);
  if (!opened.ok()) {
    std::filesystem::remove_all(dir);
    return opened.status();
  }
  return std::unique_ptr<ItemStore>(std::make_unique<TempDirStore>(dir, std::move(opened).value()));
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(Memory, StoreConformance,
                         ::testing::Values(StoreFactory{"memory", make_memory}), factory_name);
INSTANTIATE_TEST_SUITE_P(Sqlite, StoreConformance,
                         ::testing::Values(StoreFactory{"sqlite", make_sqlite}), factory_name);

// The lease layer (lease_conformance_test.cc) on the same backends.
INSTANTIATE_TEST_SUITE_P(Memory, LeaseConformance,
                         ::testing::Values(StoreFactory{"memory", make_memory}), factory_name);
INSTANTIATE_TEST_SUITE_P(Sqlite, LeaseConformance,
                         ::testing::Values(StoreFactory{"sqlite", make_sqlite}), factory_name);
INSTANTIATE_TEST_SUITE_P(Memory, RenewerConformance,
                         ::testing::Values(StoreFactory{"memory", make_memory}), factory_name);
INSTANTIATE_TEST_SUITE_P(Sqlite, RenewerConformance,
                         ::testing::Values(StoreFactory{"sqlite", make_sqlite}), factory_name);

}  // namespace leasehold::conformance
