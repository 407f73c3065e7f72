// `leasehold store init`: creates every table leasehold uses, with its
// indexes, if missing, and waits until they can be used. Idempotent.
#pragma once

#include <string>
#include <vector>

#include "leasehold/logger.h"
#include "leasehold/store.h"

namespace leasehold::cli {

// Every table leasehold uses, in the order `store init` creates them.
std::vector<TableSpec> store_tables();

// Prints one JSON line per table ({"table":..., "status":"ready"}), and per
// SQS job queue when `queue` (the --queue flag: `store` or an SQS URI) names
// SQS, and returns the process exit code (cli/common.h).
int run_store_init(const std::string& store_uri, const std::string& queue, Logger& logger);

}  // namespace leasehold::cli
