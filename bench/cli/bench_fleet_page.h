// `leasehold bench fleet-page`: what one open Fleet page costs while it
// polls, at a fleet's size: bytes a minute, requests a minute, and, on
// DynamoDB, the read units a minute its polls cost the store (the store's
// own ConsumedCapacity); and the latency of a page of 100 of the list.
//
// Everything runs in this process on 127.0.0.1: the server of `leasehold
// serve` (app::Serving) on the store given (a fresh SQLite file in a
// temporary directory unless one is given), `--connections` connections
// added through fleet::Connections (every tenth STOPPED, the rest STARTED,
// no worker running: the fleet the page must say streams nothing), and one
// page's polling on the calling thread, as the Fleet page polls
// (web/js/fleet.js): the summary, the first page of 100 of the list, and the
// workers, each summary and page with the ETag of its last answer; every
// `--every` while something changed, the period doubling up to `--every-max`
// while both answer 304. One JSON line on stdout.
//
// The flags are validated by the caller (bench_command.cc);
// run_bench_fleet_page() returns the process exit code (cli/common.h): 1 if
// a request failed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "leasehold/logger.h"

namespace leasehold::bench {

inline constexpr size_t kBenchFleetConnectionsMax = 1'000'000;

struct BenchFleetPageOptions {
  std::string store_uri;         // empty: a fresh SQLite file in a temporary directory
  size_t connections = 10000;    // added before the window: 0..kBenchFleetConnectionsMax
  int64_t seconds = 60;          // the timed window: 2..kBenchSecondsMax
  std::string every = "1s";      // the page's polling period while things change
  std::string every_max = "8s";  // ... and the most it backs off to while nothing does
  size_t fill_threads = 8;       // adding the connections: 1..64
};

int run_bench_fleet_page(const BenchFleetPageOptions& options, Logger& logger);

}  // namespace leasehold::bench
