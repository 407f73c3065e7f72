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

#include <string>
#include <string_view>

#include "bench/baselines/raw_baseline.h"

namespace leasehold::bench {

// The baselines for table `table` of the store at "dynamodb:" + `rest`:
// bare when its endpoint is plain http://, sdk when `sdk_script` is given.
// kInvalidArgument for a malformed URI.
Result<RawBaselines> make_dynamodb_baselines(std::string_view rest, std::string_view table,
                                             const std::string& sdk_script);

}  // namespace leasehold::bench
