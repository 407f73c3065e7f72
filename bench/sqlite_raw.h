// The SQLite baseline of `bench leases`: a lease renewal as one hand-written
// conditional UPDATE through the SQLite C API, on the backend's own table
// (see src/store/sqlite/sqlite_schema.h for the layout).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "leasehold/clock.h"
#include "leasehold/status.h"

namespace leasehold::bench {

struct RawLease {
  std::string pk;
  std::string owner;
  std::string token;
};

// Renews `leases` round-robin from `threads` threads (each its own
// connection, WAL, synchronous=NORMAL, like the backend) for `duration`.
// Returns the number of successful updates; fails if any update's condition
// did not hold.
Result<int64_t> raw_sqlite_renewals(const std::string& path, const std::string& table,
                                    const std::vector<RawLease>& leases, int64_t threads,
                                    Duration duration, int64_t ttl_ms);

}  // namespace leasehold::bench
