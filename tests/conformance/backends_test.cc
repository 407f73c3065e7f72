// The backends that run the conformance suites: one INSTANTIATE line each.
#include <stdlib.h>

#include <filesystem>

#include "store/memory/memory_store.h"
#include "store/sqlite/sqlite_store.h"
#include "store/store_wrapper.h"
#include "tests/conformance/store_conformance.h"

namespace leasehold::conformance {
namespace {

// A store that owns a temporary directory and removes it (database, WAL and
// all) after the store inside has been closed.
class TempDirStore final : public store::StoreWrapper {
 public:
  // The wrapper forwards to *inner, which it owns from here on.
  TempDirStore(std::filesystem::path dir, std::unique_ptr<ItemStore> inner)
      : StoreWrapper(*inner), dir_(std::move(dir)), inner_(std::move(inner)) {}
  ~TempDirStore() override {
    inner_.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

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

// The job queue (queue_conformance_test.cc) on the same backends.
INSTANTIATE_TEST_SUITE_P(Memory, QueueConformance,
                         ::testing::Values(StoreFactory{"memory", make_memory}), factory_name);
INSTANTIATE_TEST_SUITE_P(Sqlite, QueueConformance,
                         ::testing::Values(StoreFactory{"sqlite", make_sqlite}), factory_name);

}  // namespace leasehold::conformance
