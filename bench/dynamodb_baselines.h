// The DynamoDB baselines of `bench leases`, measured against the same
// endpoint and the same items as the library:
//
//  - bare: each lease's renewal (the very UpdateItem leasehold sends: same
//    expressions, ReturnValues UPDATED_NEW) is rendered and signed before the
//    clock starts; the loop only writes those bytes on one keep-alive
//    connection per thread (plain sockets) and reads each reply. What the
//    server can take from one client; plain-http endpoints only.
//  - sdk: the AWS SDK for JavaScript v3 doing the same UpdateItem loop
//    (bench/sdk_renew_loop.mjs, run by `node`).
//
// Both fail if any renewal's condition did not hold: the benchmark's leases
// must stay valid throughout, or the figures would count refusals.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/sqlite_raw.h"
#include "leasehold/clock.h"
#include "leasehold/status.h"

namespace leasehold::bench {

struct DynamoDbTarget {
  std::string region;
  std::string endpoint;  // empty: DynamoDB's own https endpoint for the region
  std::string table;     // the physical table name
};

// The target behind a dynamodb:// store URI and a logical table name, or
// nullopt when `uri` is not a DynamoDB URI.
Result<std::optional<DynamoDbTarget>> dynamodb_target(const std::string& uri,
                                                      const std::string& table);

// Renewals done in `duration` by `threads` bare connections, round-robin
// over `leases`. kFailedPrecondition if the endpoint is not plain http.
// Adds the CPU time its threads used to `cpu`.
Result<int64_t> bare_http_renewals(const DynamoDbTarget& target,
                                   const std::vector<RawLease>& leases, int64_t threads,
                                   Duration duration, int64_t ttl_ms, Duration& cpu);

// Renewals done in `duration` by the SDK with `threads` requests in flight,
// running `node script`.
Result<int64_t> sdk_renewals(const std::string& script, const DynamoDbTarget& target,
                             const std::vector<RawLease>& leases, int64_t threads,
                             Duration duration, int64_t ttl_ms);

}  // namespace leasehold::bench
