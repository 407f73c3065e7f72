// The SQLite backend's URI, "sqlite:PATH[?busy_timeout=DURATION&
// synchronous=normal|full]", read into SqliteOptions: for open_store() and
// validate_store_uri(), and for any code that needs the file behind a
// sqlite: store. A pure function; safe from any thread.
#pragma once

#include <string_view>

#include "leasehold/status.h"
#include "store/sqlite/sqlite_store.h"

namespace leasehold::store {

// The options of "sqlite:" + `rest`. kInvalidArgument, saying what is wrong,
// for a missing or in-memory path, a malformed parameter or an unknown one.
Result<SqliteOptions> parse_sqlite_uri(std::string_view rest);

}  // namespace leasehold::store
