// The lease benchmarks behind `leasehold bench leases` and
// `leasehold bench renewer`. This code uses leasehold's public interface
// only: the caller wires the store, the lease manager and the baselines.
//
// bench leases: acquire N leases, renew them round-robin from T threads for
// S seconds, release them; and, in the same run, on the same items, the
// baselines the caller gives: the store's bare protocol (SQLite: the same
// conditional UPDATE through the SQLite C API; DynamoDB: the same UpdateItem
// as pre-signed HTTP requests) and, optionally, a second one (DynamoDB: the
// AWS SDK for JavaScript). Renewals and baselines alternate in two rounds
// each, the second in the reverse order of the first, after an unmeasured
// turn of the library and the first baseline, so that drift in a shared
// machine's speed (or the server's) hits them all alike.
//
// bench renewer: one process keeps N leases alive with one Renewer; after
// the first renewal round, for S seconds, it measures the CPU the process
// used (share of one core), the renewals done, its memory and its threads.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "leasehold/clock.h"
#include "leasehold/lease.h"
#include "leasehold/logger.h"
#include "leasehold/random.h"
#include "leasehold/status.h"
#include "leasehold/store.h"

namespace leasehold::bench {

// The table both benchmarks keep their leases in (the caller's LeaseManager
// must use it): the CLI's keys and index, under a name of its own.
inline constexpr std::string_view kBenchTable = "bench_leases";
TableSpec bench_table_spec();

struct BaselineRun {
  int64_t renewals = 0;
  std::optional<Duration> cpu;  // of the renewing threads, where measured
};
// Renews `leases` round-robin from `threads` threads for `duration`, each to
// an expiry `ttl_ms` ahead, without the library; fails if any renewal's
// condition does not hold.
using Baseline = std::function<Result<BaselineRun>(std::span<const Lease> leases, int64_t threads,
                                                   Duration duration, int64_t ttl_ms)>;

struct LeaseBenchOptions {
  int64_t leases = 1000;
  int64_t seconds = 5;
  int64_t threads = 1;
};

// What the caller wires. REQUIRES: `leases` works on kBenchTable.
struct LeaseBenchEnv {
  LeaseManager& leases;
  Random& random;
  Baseline raw;  // the store's bare protocol; empty if it has none
  Baseline sdk;  // a second baseline (the AWS SDK on DynamoDB); empty: none
};

struct LeaseBenchReport {
  std::string backend;
  int64_t leases = 0, threads = 0, seconds = 0;
  double acquire_per_s = 0, renew_per_s = 0, release_per_s = 0;
  double renew_p50_us = 0, renew_p99_us = 0;
  // CPU time of the renewing threads (user + system) per renewal: what the
  // client itself costs, which a shared machine's noise moves far less than
  // the rates.
  double renew_cpu_us = 0;
  std::optional<double> raw_cpu_us;  // the same for the bare HTTP baseline
  // The store's bare protocol in the same run: the SQLite C API, or
  // pre-signed HTTP requests on keep-alive sockets (DynamoDB over http://).
  std::optional<double> raw_update_per_s;
  std::optional<double> renew_vs_raw;
  std::optional<double> sdk_update_per_s;  // with sdk_script
  std::optional<double> renew_vs_sdk, raw_vs_sdk;
  int64_t renew_failures = 0;  // must be 0: every renewal's condition holds
};

Result<LeaseBenchReport> run_lease_bench(const LeaseBenchOptions& options, LeaseBenchEnv& env);
std::string to_json_line(const LeaseBenchReport& report);

struct RenewerBenchOptions {
  int64_t leases = 10'000;
  Duration renew_every = std::chrono::seconds(5);
  int64_t seconds = 60;
};

// REQUIRES: `leases` works on kBenchTable.
struct RenewerBenchEnv {
  LeaseManager& leases;
  Random& random;
  Logger* logger = nullptr;  // the Renewer's info_log; null logs nothing
};

struct RenewerBenchReport {
  std::string backend;
  int64_t leases = 0, renew_every_ms = 0, seconds = 0;
  int64_t renewals = 0;         // renewals the store accepted in the measured window
  int64_t lost = 0;             // must be 0
  double cpu_core_percent = 0;  // user+system CPU over wall time, while renewing
  double rss_mib = 0, peak_rss_mib = 0;
  // The process's threads, counted every 100 ms while renewing: equal when no
  // thread comes and goes with the heartbeats.
  int64_t threads_min = 0, threads_max = 0;
};

Result<RenewerBenchReport> run_renewer_bench(const RenewerBenchOptions& options,
                                             RenewerBenchEnv& env);
std::string to_json_line(const RenewerBenchReport& report);

}  // namespace leasehold::bench
