// The backends that run the conformance suites: one INSTANTIATE line each.
#include <memory>

#include "store/memory/memory_store.h"
#include "store/sqlite/sqlite_store.h"
#include "store/store_wrapper.h"
#include "testing/temp_dir.h"
#include "tests/conformance/queue_conformance.h"
#include "tests/conformance/store_conformance.h"
#include "tests/fleet/liveness_fixture.h"

namespace leasehold::conformance {

using fleet::testing::FleetLiveness;

namespace {

// A store that owns a temporary directory and removes it (database, WAL and
// all) after the store inside has been closed.
class TempDirStore final : public store::StoreWrapper {
 public:
  // The wrapper forwards to *inner, which it owns from here on.
  TempDirStore(std::unique_ptr<testing::TempDir> dir, std::unique_ptr<ItemStore> inner)
      : StoreWrapper(*inner), dir_(std::move(dir)), inner_(std::move(inner)) {}
  ~TempDirStore() override { inner_.reset(); }  // then dir_ goes

 private:
  std::unique_ptr<testing::TempDir> dir_;
  std::unique_ptr<ItemStore> inner_;
};

Result<std::unique_ptr<ItemStore>> make_memory() { return store::make_memory_store(); }

Result<std::unique_ptr<ItemStore>> make_sqlite() {
  auto dir = std::make_unique<testing::TempDir>("leasehold-conformance-");
  store::SqliteOptions options;
  options.path = dir->file("store.db");
  LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<ItemStore> opened, store::open_sqlite_store(options));
  return std::unique_ptr<ItemStore>(
      std::make_unique<TempDirStore>(std::move(dir), std::move(opened)));
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

// The job queue's contract (queue_conformance_test.cc), and StoreQueue's own
// cases (store_queue_conformance_test.cc), on the same backends.
INSTANTIATE_TEST_SUITE_P(Memory, QueueConformance,
                         ::testing::Values(store_queue_backend({"memory", make_memory})),
                         queue_backend_name);
INSTANTIATE_TEST_SUITE_P(Sqlite, QueueConformance,
                         ::testing::Values(store_queue_backend({"sqlite", make_sqlite})),
                         queue_backend_name);
INSTANTIATE_TEST_SUITE_P(Memory, StoreQueueConformance,
                         ::testing::Values(StoreFactory{"memory", make_memory}), factory_name);
INSTANTIATE_TEST_SUITE_P(Sqlite, StoreQueueConformance,
                         ::testing::Values(StoreFactory{"sqlite", make_sqlite}), factory_name);

// The stream fleet's liveness (fleet/liveness_test.cc), on SQLite.
INSTANTIATE_TEST_SUITE_P(Sqlite, FleetLiveness,
                         ::testing::Values(StoreFactory{"sqlite", make_sqlite}), factory_name);

}  // namespace leasehold::conformance
