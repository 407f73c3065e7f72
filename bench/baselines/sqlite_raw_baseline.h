// The SQLite baseline of `bench leases` (bench/baselines/raw_baseline.h): a
// lease renewal as one hand-written conditional UPDATE through the SQLite C
// API, on the backend's own table layout (store/sqlite/sqlite_schema.h), from
// connections of its own with the backend's pragmas.
#pragma once

#include <memory>
#include <string>

#include "bench/baselines/raw_baseline.h"

namespace leasehold::bench {

// The baseline for table `table` of the SQLite file at `path`.
std::unique_ptr<RawBaseline> make_sqlite_raw_baseline(std::string path, std::string table);

}  // namespace leasehold::bench
