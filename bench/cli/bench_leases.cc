#include "bench/cli/bench_leases.h"

#include "base/duration.h"
#include "bench/baselines/raw_baseline.h"
#include "bench/lease_bench.h"
#include "cli/common.h"
#include "runtime/runtime.h"

namespace leasehold::bench {
namespace {

// A runtime whose lease manager works on the benchmarks' table.
Result<std::unique_ptr<runtime::Runtime>> open_bench_runtime(const std::string& uri,
                                                             Logger& logger) {
  runtime::RuntimeOptions options;
  options.store_uri = uri;
  options.logger = &logger;
  options.lease.table = std::string(kBenchTable);
  return runtime::Runtime::open(std::move(options));
}

// The benchmark works in public types; a store's baseline in its own.
Baseline adapt(std::shared_ptr<RawBaseline> baseline) {
  if (!baseline) return {};
  return [baseline](std::span<const Lease> leases, int64_t threads, Duration duration,
                    int64_t ttl_ms) -> Result<BaselineRun> {
    std::vector<RawLease> raw;
    raw.reserve(leases.size());
    for (const Lease& l : leases) raw.push_back({l.key.pk, l.owner, l.token});
    LEASEHOLD_ASSIGN_OR_RETURN(const RawRun run, baseline->renew(raw, threads, duration, ttl_ms));
    return BaselineRun{run.renewals, run.cpu};
  };
}

}  // namespace

int run_bench_leases(const BenchLeasesOptions& o, Logger& logger) {
  auto baselines = open_raw_baselines(o.store_uri, kBenchTable, o.sdk_script);
  if (!baselines.ok()) return cli::report(baselines.status().with_context("bench leases"));
  auto rt = open_bench_runtime(o.store_uri, logger);
  if (!rt.ok()) return cli::report(rt.status().with_context("bench leases"));
  LeaseBenchEnv env{(*rt)->leases(), (*rt)->random(), adapt(std::move(baselines->bare)),
                    adapt(std::move(baselines->sdk))};
  auto report_or = run_lease_bench({o.leases, o.seconds, o.threads}, env);
  if (!report_or.ok()) return cli::report(report_or.status().with_context("bench leases"));
  cli::print_line(to_json_line(*report_or));
  return report_or->renew_failures == 0 ? cli::kExitOk : cli::kExitStoreFailed;
}

int run_bench_renewer(const BenchRenewerOptions& o, Logger& logger) {
  auto every = parse_duration(o.every);
  if (!every.ok()) return cli::report(every.status());
  auto rt = open_bench_runtime(o.store_uri, logger);
  if (!rt.ok()) return cli::report(rt.status().with_context("bench renewer"));
  RenewerBenchEnv env{(*rt)->leases(), (*rt)->random(), &logger};
  auto report_or = run_renewer_bench({o.leases, *every, o.seconds}, env);
  if (!report_or.ok()) return cli::report(report_or.status().with_context("bench renewer"));
  cli::print_line(to_json_line(*report_or));
  return report_or->lost == 0 ? cli::kExitOk : cli::kExitStoreFailed;
}

}  // namespace leasehold::bench
