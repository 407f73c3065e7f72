// `leasehold bench leases` and `leasehold bench renewer` (bench/lease_bench.h
// does the measuring; this prints its one JSON line).
//
// The flags are validated by the caller (bench_command.cc); each run_* opens
// the store itself (on a runtime of its own, logging to `logger`) and returns
// the process exit code (cli/common.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "leasehold/logger.h"

namespace leasehold::bench {

inline constexpr int64_t kBenchLeasesMax = 1'000'000;
inline constexpr int64_t kBenchSecondsMax = 3600;
inline constexpr int64_t kBenchThreadsMax = 256;

struct BenchLeasesOptions {
  std::string store_uri;
  int64_t leases = 1000;   // 1..kBenchLeasesMax
  int64_t seconds = 5;     // 1..kBenchSecondsMax
  int64_t threads = 1;     // 1..kBenchThreadsMax, at most `leases`
  std::string sdk_script;  // an existing file, with a dynamodb:// store; or empty
};

int run_bench_leases(const BenchLeasesOptions& options, Logger& logger);

struct BenchRenewerOptions {
  std::string store_uri;
  int64_t leases = 10'000;   // 1..kBenchLeasesMax
  std::string every = "5s";  // the renew period, a duration
  int64_t seconds = 60;      // 1..kBenchSecondsMax
};

int run_bench_renewer(const BenchRenewerOptions& options, Logger& logger);

}  // namespace leasehold::bench
