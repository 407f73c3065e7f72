#include "store/sqlite/sqlite_store.h"

namespace leasehold::store {

Result<std::unique_ptr<ItemStore>> open_sqlite_store(const SqliteOptions&) {
  return unavailable("the SQLite backend is not built yet");
}

}  // namespace leasehold::store
