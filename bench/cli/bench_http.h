// `leasehold bench http`: requests/s and p50/p99 latency of an authenticated
// GET /api/me on the HTTP server of `leasehold serve`, at several numbers of
// concurrent keep-alive connections, against a minimal Beast server
// (bench/baselines/baseline_server.h) answering the same bytes in the same run.
//
// Everything runs in this process on 127.0.0.1: the app and its server, wired
// as `serve` wires them (a runtime with a metrics registry, the accounts table,
// the blocking pool, the default number of I/O threads, a logger at warning
// level), a user added for the run, the baseline server on as many I/O threads,
// and the load generator (bench/cli/http_load.h) on the calling thread. For
// each number of connections the real server and the baseline alternate in two
// rounds, each a warm-up and then half of `seconds`, so that a change in the
// machine's speed hits both alike. One JSON line per number of connections on
// stdout.
//
// The flags are validated by the caller (bench_command.cc); run_bench_http()
// returns the process exit code (cli/common.h): 1 if any reply was wrong.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/logger.h"
#include "leasehold/status.h"

namespace leasehold::bench {

inline constexpr size_t kBenchHttpConnectionsMax = 256;
inline constexpr size_t kBenchHttpLevelsMax = 8;
// Load before each timed round, so that connections are open and caches warm.
inline constexpr std::chrono::milliseconds kBenchHttpWarmup{250};

struct BenchHttpOptions {
  // The store the app runs on. Empty: a fresh SQLite file in a temporary
  // directory, removed afterwards. A given store gets the accounts table if
  // it lacks it, and a user for the run, removed afterwards.
  std::string store_uri;
  int64_t seconds = 5;  // timed, per server and number of connections: 1..kBenchSecondsMax
  std::string connections = "1,16,64";
};

// --connections: numbers separated by commas, each 1..kBenchHttpConnectionsMax,
// at most kBenchHttpLevelsMax of them. kInvalidArgument saying what is wrong.
Result<std::vector<size_t>> parse_connection_levels(std::string_view text);

// REQUIRES: `options` valid (parse_connection_levels, seconds in range).
int run_bench_http(const BenchHttpOptions& options, Logger& logger);

}  // namespace leasehold::bench
