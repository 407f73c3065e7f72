#include "cli/bench_leases.h"

#include "base/duration.h"
#include "bench/lease_bench.h"
#include "cli/common.h"

namespace leasehold::cli {

int run_bench_leases(const BenchLeasesOptions& o, Logger& logger) {
  auto report_or =
      bench::run_lease_bench({o.store_uri, o.leases, o.seconds, o.threads, o.sdk_script, &logger});
  if (!report_or.ok()) return report(report_or.status().with_context("bench leases"));
  print_line(bench::to_json_line(*report_or));
  return report_or->renew_failures == 0 ? kExitOk : kExitStoreFailed;
}

int run_bench_renewer(const BenchRenewerOptions& o, Logger& logger) {
  auto every = parse_duration(o.every);
  if (!every.ok()) return report(every.status());
  auto report_or = bench::run_renewer_bench({o.store_uri, o.leases, *every, o.seconds, &logger});
  if (!report_or.ok()) return report(report_or.status().with_context("bench renewer"));
  print_line(bench::to_json_line(*report_or));
  return report_or->lost == 0 ? kExitOk : kExitStoreFailed;
}

}  // namespace leasehold::cli
