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

// Prints what `store init` makes on AWS and what each process with a role of
// its own sends there: with `json`, one JSON object {"tables": [each table's
// CreateTable request, named by its name without the store's prefix],
// "queues": [the SQS job queues, named without NAME-], "processes":
// {process: [{"action", "on"}]}, "processes_if_missing": {...}}
// (cli/permissions.h); else the same as lines of text. Opens no store.
int run_store_schema(bool json);

}  // namespace leasehold::cli
