// A store's bare protocol, for `leasehold bench leases` to measure the lease
// layer against in the same run: the very renewal the library sends, issued
// without the library. SQLite: one prepared UPDATE through the C API on the
// backend's own layout. DynamoDB over http://: the same UpdateItem requests,
// signed before the clock starts, on plain keep-alive sockets; and, given the
// script, the AWS SDK for JavaScript sending them (bench/sdk_renew_loop.mjs).
//
// Each backend's baselines have a file of their own here
// (sqlite_raw_baseline.h, dynamodb_baselines.h), written against the
// backend's layout and wire format; open_raw_baselines picks them by URI, as
// open_store() picks the backend. A RawBaseline is used by one caller at a
// time; renew() runs its own threads and returns when they are done.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/clock.h"
#include "leasehold/status.h"

namespace leasehold::bench {

// A lease as a baseline renews it: the key of its item, its owner and token.
struct RawLease {
  std::string pk;
  std::string owner;
  std::string token;
};

struct RawRun {
  int64_t renewals = 0;
  std::optional<Duration> cpu;  // of the renewing threads, where measured
};

class RawBaseline {
 public:
  virtual ~RawBaseline() = default;
  // Renews `leases` (slot "lease") round-robin from `threads` threads for
  // `duration`, each to an expiry `ttl_ms` ahead. Fails if any renewal's
  // condition does not hold, or the store fails.
  virtual Result<RawRun> renew(const std::vector<RawLease>& leases, int64_t threads,
                               Duration duration, int64_t ttl_ms) = 0;
};

struct RawBaselines {
  std::unique_ptr<RawBaseline> bare;  // null where the backend has none
  std::unique_ptr<RawBaseline> sdk;   // DynamoDB with a script only
};

// The baselines of the store at `uri` for its table `table`. kInvalidArgument
// for a malformed URI, or an `sdk_script` with a store other than DynamoDB.
Result<RawBaselines> open_raw_baselines(std::string_view uri, std::string_view table,
                                        const std::string& sdk_script);

}  // namespace leasehold::bench
