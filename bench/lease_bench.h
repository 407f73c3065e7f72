// The lease benchmarks behind `leasehold bench leases` and
// `leasehold bench renewer`.
//
// bench leases: acquire N leases, renew them round-robin from T threads for
// S seconds, release them; and, in the same run, on the same file and
// settings, the baseline: the same conditional UPDATE issued straight through
// the SQLite C API (sqlite backends only). Renew and baseline alternate in
// two rounds each, so that drift in a shared machine's speed hits both alike.
//
// bench renewer: one process keeps N leases alive with one Renewer; after
// the first renewal round, for S seconds, it measures the CPU the process
// used (share of one core), the renewals done and its memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "leasehold/clock.h"
#include "leasehold/status.h"

namespace leasehold::bench {

struct LeaseBenchOptions {
  std::string store_uri;
  int64_t leases = 1000;
  int64_t seconds = 5;
  int64_t threads = 1;
};

struct LeaseBenchReport {
  std::string backend;
  int64_t leases = 0, threads = 0, seconds = 0;
  double acquire_per_s = 0, renew_per_s = 0, release_per_s = 0;
  double renew_p50_us = 0, renew_p99_us = 0;
  std::optional<double> raw_update_per_s;  // sqlite only
  std::optional<double> renew_vs_raw;
  int64_t renew_failures = 0;  // must be 0: every renewal's condition holds
};

Result<LeaseBenchReport> run_lease_bench(const LeaseBenchOptions& options);
std::string to_json_line(const LeaseBenchReport& report);

struct RenewerBenchOptions {
  std::string store_uri;
  int64_t leases = 10'000;
  Duration renew_every = std::chrono::seconds(5);
  int64_t seconds = 60;
};

struct RenewerBenchReport {
  std::string backend;
  int64_t leases = 0, renew_every_ms = 0, seconds = 0;
  int64_t renewals = 0;         // renewals the store accepted in the measured window
  int64_t lost = 0;             // must be 0
  double cpu_core_percent = 0;  // user+system CPU over wall time, while renewing
  double rss_mib = 0, peak_rss_mib = 0;
};

Result<RenewerBenchReport> run_renewer_bench(const RenewerBenchOptions& options);
std::string to_json_line(const RenewerBenchReport& report);

}  // namespace leasehold::bench
