// The lease benchmarks behind `leasehold bench leases` and
// `leasehold bench renewer`.
//
// bench leases: acquire N leases, renew them round-robin from T threads for
// S seconds, release them; and, in the same run, on the same items, the
// baselines: on SQLite the same conditional UPDATE issued straight through
// the SQLite C API; on DynamoDB the same UpdateItem as bare pre-signed HTTP
// requests and, optionally, through the AWS SDK for JavaScript
// (bench/dynamodb_baselines.h). Renew and baselines alternate in two rounds
// each, so that drift in a shared machine's speed hits them all alike.
//
// bench renewer: one process keeps N leases alive with one Renewer; after
// the first renewal round, for S seconds, it measures the CPU the process
// used (share of one core), the renewals done and its memory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "leasehold/clock.h"
#include "leasehold/logger.h"
#include "leasehold/status.h"

namespace leasehold::bench {

struct LeaseBenchOptions {
  std::string store_uri;
  int64_t leases = 1000;
  int64_t seconds = 5;
  int64_t threads = 1;
  // DynamoDB only: bench/sdk_renew_loop.mjs, to measure the AWS SDK for
  // JavaScript as a second baseline (run with `node`); empty skips it.
  std::string sdk_script;
  Logger* logger = nullptr;  // for the library's messages; null logs nothing
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

Result<LeaseBenchReport> run_lease_bench(const LeaseBenchOptions& options);
std::string to_json_line(const LeaseBenchReport& report);

struct RenewerBenchOptions {
  std::string store_uri;
  int64_t leases = 10'000;
  Duration renew_every = std::chrono::seconds(5);
  int64_t seconds = 60;
  Logger* logger = nullptr;  // for the library's messages; null logs nothing
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

Result<RenewerBenchReport> run_renewer_bench(const RenewerBenchOptions& options);
std::string to_json_line(const RenewerBenchReport& report);

}  // namespace leasehold::bench
