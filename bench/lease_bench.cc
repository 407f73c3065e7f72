#include "bench/lease_bench.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "bench/cpu_time.h"
#include "bench/dynamodb_baselines.h"
#include "bench/sqlite_raw.h"
#include "leasehold/lease.h"
#include "leasehold/renewer.h"
#include "runtime/runtime.h"

namespace leasehold::bench {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kTable[] = "bench_leases";

// The benchmark's own table, with the same keys and index as the CLI's
// (cli/lease_table.h, which the bench may not include). Its items carry no
// `kind`, so the index holds none of them.
TableSpec bench_table_spec() {
  const SlotNames names(kDefaultSlot);
  return TableSpec{
      kTable,
      "pk",
      "",
      {IndexSpec{"kind-lease_expires_at_ms-index", "kind", names.expires_at_ms, AttrType::kInt}}};
}
// Long enough that no lease expires while it waits for its turn to renew.
constexpr Duration kBenchTtl = std::chrono::minutes(10);

double per_second(int64_t n, Duration d) {
  return d.count() > 0 ? static_cast<double>(n) / std::chrono::duration<double>(d).count() : 0;
}

// Runs fn(thread_index) on `threads` threads and returns the wall time taken.
template <typename Fn>
Duration timed_on_threads(int64_t threads, Fn fn) {
  RealClock clock;
  const MonoTime start = clock.mono_now();
  std::vector<std::thread> workers;
  for (int64_t t = 0; t < threads; ++t) workers.emplace_back(fn, t);
  for (auto& w : workers) w.join();
  return clock.mono_now() - start;
}

// The leases a benchmark keeps, on a runtime of its own.
struct Fleet {
  std::unique_ptr<runtime::Runtime> runtime;
  std::vector<Lease> leases;
  std::string prefix;

  LeaseManager& manager() { return runtime->leases(); }
  ItemStore& store() { return runtime->store(); }
  Clock& clock() { return runtime->clock(); }
};

Status acquire_all(Fleet& f, int64_t count, int64_t threads, Duration ttl, Duration& took) {
  f.leases.resize(count);
  std::vector<Status> errors(threads);
  took = timed_on_threads(threads, [&](int64_t t) {
    for (int64_t i = t; i < count; i += threads) {
      AcquireOptions o;
      o.owner = "bench-" + std::to_string(t);
      o.ttl = ttl;
      auto lease = f.manager().acquire({f.prefix + std::to_string(i), ""}, o);
      if (!lease.ok()) {
        errors[t] = lease.status();
        return;
      }
      f.leases[i] = *lease;
    }
  });
  for (const auto& e : errors) RETURN_IF_ERROR(e);
  return {};
}

// Library renewals for `duration`; appends latencies (ns), counts failures
// and adds the CPU time the renewing threads used.
int64_t renew_round(Fleet& f, int64_t threads, Duration duration,
                    std::vector<int64_t>& latencies_ns, int64_t& failures, Duration& cpu) {
  std::vector<std::vector<int64_t>> lat(threads);
  std::vector<int64_t> fails(threads, 0);
  std::vector<Duration> cpus(threads);
  const MonoTime until = f.clock().mono_now() + duration;
  timed_on_threads(threads, [&](int64_t t) {
    const ThreadCpuTimer timer;
    lat[t].reserve(1 << 16);
    for (size_t i = t; f.clock().mono_now() < until; i += threads) {
      if (i >= f.leases.size()) i = t;
      const MonoTime start = f.clock().mono_now();
      auto renewed = f.manager().renew(f.leases[i]);
      lat[t].push_back((f.clock().mono_now() - start).count());
      if (renewed.ok())
        f.leases[i] = *renewed;
      else
        ++fails[t];
    }
    cpus[t] = timer.elapsed();
  });
  int64_t done = 0;
  for (int64_t t = 0; t < threads; ++t) {
    cpu += cpus[t];
    done += static_cast<int64_t>(lat[t].size());
    failures += fails[t];
    latencies_ns.insert(latencies_ns.end(), lat[t].begin(), lat[t].end());
  }
  return done;
}

double percentile_us(std::vector<int64_t>& v, double p) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return static_cast<double>(v[k]) / 1000.0;
}

Status release_and_remove(Fleet& f, int64_t threads, Duration& took) {
  std::vector<Status> errors(threads);
  took = timed_on_threads(threads, [&](int64_t t) {
    for (size_t i = t; i < f.leases.size(); i += threads) {
      Status s = f.manager().release(f.leases[i], ReleaseMode::kClear);
      if (!s.ok()) errors[t] = s;
    }
  });
  // Leave the file as it was found: the benchmark's items are its own.
  for (const auto& lease : f.leases) (void)f.store().remove(kTable, lease.key, {});
  for (const auto& e : errors) RETURN_IF_ERROR(e);
  return {};
}

Result<std::unique_ptr<Fleet>> open_fleet(const std::string& uri, Logger* logger) {
  auto fleet = std::make_unique<Fleet>();
  runtime::RuntimeOptions options;
  options.store_uri = uri;
  options.logger = logger;
  options.lease.table = kTable;
  ASSIGN_OR_RETURN(fleet->runtime, runtime::Runtime::open(std::move(options)));
  RETURN_IF_ERROR(fleet->store().ensure_table(bench_table_spec()));
  fleet->prefix = "bench-" + random_token(fleet->runtime->random()).substr(0, 8) + "-";
  return fleet;
}

std::optional<std::string> sqlite_path(const std::string& uri) {
  if (!uri.starts_with("sqlite:")) return std::nullopt;
  return uri.substr(7, uri.find('?') == std::string::npos ? std::string::npos : uri.find('?') - 7);
}

}  // namespace

Result<LeaseBenchReport> run_lease_bench(const LeaseBenchOptions& o) {
  if (o.threads > o.leases) return invalid_argument("--threads may not exceed --leases");
  ASSIGN_OR_RETURN(auto fleet, open_fleet(o.store_uri, o.logger));
  LeaseBenchReport r;
  r.backend = std::string(fleet->store().backend_name());
  r.leases = o.leases;
  r.threads = o.threads;
  r.seconds = o.seconds;

  Duration took{};
  RETURN_IF_ERROR(acquire_all(*fleet, o.leases, o.threads, kBenchTtl, took));
  r.acquire_per_s = (per_second(o.leases, took));

  // Library and baselines alternate, two rounds each, over the same leases,
  // so that drift in a shared machine's speed hits them all alike.
  const auto path = sqlite_path(o.store_uri);
  ASSIGN_OR_RETURN(const auto dynamodb, dynamodb_target(o.store_uri, kTable));
  if (!o.sdk_script.empty() && !dynamodb) {
    return invalid_argument("--sdk-baseline needs a dynamodb:// store");
  }
  const bool bare =
      dynamodb && !dynamodb->endpoint.starts_with("https:") && !dynamodb->endpoint.empty();
  std::vector<RawLease> raw;
  for (const auto& l : fleet->leases) raw.push_back({l.key.pk, l.owner, l.token});
  const Duration half = std::chrono::duration_cast<Duration>(seconds(o.seconds)) / 2;
  std::vector<int64_t> latencies;
  int64_t renewed = 0, raw_done = 0, sdk_done = 0;
  Duration renew_cpu{}, bare_cpu{};
  for (int round = 0; round < 2; ++round) {
    renewed += renew_round(*fleet, o.threads, half, latencies, r.renew_failures, renew_cpu);
    if (path) {
      ASSIGN_OR_RETURN(int64_t n,
                       raw_sqlite_renewals(*path, kTable, raw, o.threads, half, to_ms(kBenchTtl)));
      raw_done += n;
    }
    if (bare) {
      ASSIGN_OR_RETURN(int64_t n, bare_http_renewals(*dynamodb, raw, o.threads, half,
                                                     to_ms(kBenchTtl), bare_cpu));
      raw_done += n;
    }
    if (!o.sdk_script.empty()) {
      ASSIGN_OR_RETURN(
          int64_t n, sdk_renewals(o.sdk_script, *dynamodb, raw, o.threads, half, to_ms(kBenchTtl)));
      sdk_done += n;
    }
  }
  const Duration renew_time = half * 2;
  r.renew_per_s = (per_second(renewed, renew_time));
  r.renew_p50_us = (percentile_us(latencies, 0.50));
  r.renew_p99_us = (percentile_us(latencies, 0.99));
  const auto cpu_us_per = [](Duration cpu, int64_t n) {
    return n > 0 ? std::chrono::duration<double, std::micro>(cpu).count() / static_cast<double>(n)
                 : 0.0;
  };
  r.renew_cpu_us = cpu_us_per(renew_cpu, renewed);
  if (bare) r.raw_cpu_us = cpu_us_per(bare_cpu, raw_done);
  if (path || bare) {
    r.raw_update_per_s = (per_second(raw_done, renew_time));
    r.renew_vs_raw = r.renew_per_s / *r.raw_update_per_s;
  }
  if (!o.sdk_script.empty()) {
    r.sdk_update_per_s = per_second(sdk_done, renew_time);
    r.renew_vs_sdk = r.renew_per_s / *r.sdk_update_per_s;
    if (r.raw_update_per_s) r.raw_vs_sdk = *r.raw_update_per_s / *r.sdk_update_per_s;
  }
  RETURN_IF_ERROR(release_and_remove(*fleet, o.threads, took));
  r.release_per_s = (per_second(o.leases, took));
  return r;
}

// Rates as whole numbers, latencies and ratios with fixed decimals: easier
// to read (and to grep out of docs) than a serialiser's exponent form.
std::string optional_number(const std::optional<double>& v, int decimals) {
  return v ? fmt::format("{:.{}f}", *v, decimals) : "null";
}

std::string to_json_line(const LeaseBenchReport& r) {
  return fmt::format(R"({{"bench":"leases","backend":{},"leases":{},"threads":{},"seconds":{},)"
                     R"("acquire_per_s":{:.0f},"renew_per_s":{:.0f},"release_per_s":{:.0f},)"
                     R"("renew_p50_us":{:.1f},"renew_p99_us":{:.1f},"renew_cpu_us":{:.1f},)"
                     R"("raw_update_per_s":{},"raw_cpu_us":{},)"
                     R"("renew_vs_raw":{},"sdk_update_per_s":{},"renew_vs_sdk":{},)"
                     R"("raw_vs_sdk":{},"renew_failures":{}}})",
                     boost::json::serialize(boost::json::string(r.backend)), r.leases, r.threads,
                     r.seconds, r.acquire_per_s, r.renew_per_s, r.release_per_s, r.renew_p50_us,
                     r.renew_p99_us, r.renew_cpu_us, optional_number(r.raw_update_per_s, 0),
                     optional_number(r.raw_cpu_us, 1), optional_number(r.renew_vs_raw, 3),
                     optional_number(r.sdk_update_per_s, 0), optional_number(r.renew_vs_sdk, 3),
                     optional_number(r.raw_vs_sdk, 3), r.renew_failures);
}

namespace {

double rss_mib() {
  std::ifstream statm("/proc/self/statm");
  long pages_total = 0, pages_resident = 0;
  statm >> pages_total >> pages_resident;
  return static_cast<double>(pages_resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) /
         (1024.0 * 1024.0);
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

// How often bench renewer counts the process's threads: often enough to see
// threads that live for one heartbeat batch, rarely enough to cost nothing
// (a listing of /proc/self/task takes a few microseconds).
constexpr Duration kThreadSampleEvery = milliseconds(100);

int64_t thread_count() {
  const std::filesystem::directory_iterator tasks("/proc/self/task");
  return static_cast<int64_t>(std::distance(begin(tasks), end(tasks)));
}

// Waits for `window`, counting the process's threads every
// kThreadSampleEvery: the fewest and the most seen.
std::pair<int64_t, int64_t> thread_range_during(Clock& clock, Duration window) {
  const MonoTime end = clock.mono_now() + window;
  int64_t fewest = thread_count(), most = fewest;
  for (MonoTime now = clock.mono_now(); now < end; now = clock.mono_now()) {
    std::this_thread::sleep_for(std::min<Duration>(kThreadSampleEvery, end - now));
    const int64_t n = thread_count();
    fewest = std::min(fewest, n);
    most = std::max(most, n);
  }
  return {fewest, most};
}

}  // namespace

Result<RenewerBenchReport> run_renewer_bench(const RenewerBenchOptions& o) {
  ASSIGN_OR_RETURN(auto fleet, open_fleet(o.store_uri, o.logger));
  const LeaseConfig& config = fleet->manager().config();
  // The ttl whose default renew period is exactly renew_every.
  const Duration every = o.renew_every;
  const Duration ttl = every * 3 + config.max_clock_skew + config.safety_margin;
  Duration took{};
  RETURN_IF_ERROR(acquire_all(*fleet, o.leases, 1, ttl, took));

  RenewerOptions options;
  options.renew_every = every;
  const std::unique_ptr<Renewer> renewer = fleet->runtime->make_renewer(options);
  for (const auto& lease : fleet->leases) renewer->add(lease, nullptr);
  renewer->start();
  // Measure the steady state: from the end of the first renewal round on.
  std::this_thread::sleep_for(every * 6 / 5);
  const RenewerStats before = renewer->stats();
  const Duration cpu_before = process_cpu_time();
  const MonoTime start = fleet->clock().mono_now();
  // The measurement window itself.
  const auto [threads_min, threads_max] = thread_range_during(fleet->clock(), seconds(o.seconds));
  const double wall = std::chrono::duration<double>(fleet->clock().mono_now() - start).count();
  const double cpu = std::chrono::duration<double>(process_cpu_time() - cpu_before).count();
  const RenewerStats after = renewer->stats();
  renewer->stop();

  RenewerBenchReport r;
  r.backend = std::string(fleet->store().backend_name());
  r.leases = o.leases;
  r.renew_every_ms = to_ms(o.renew_every);
  r.seconds = o.seconds;
  r.renewals = static_cast<int64_t>(after.renewals - before.renewals);
  r.lost = static_cast<int64_t>(after.lost);
  r.cpu_core_percent = (100.0 * cpu / wall);
  r.rss_mib = (rss_mib());
  r.peak_rss_mib = (peak_rss_mib());
  r.threads_min = threads_min;
  r.threads_max = threads_max;
  for (const auto& lease : fleet->leases) (void)fleet->store().remove(kTable, lease.key, {});
  return r;
}

std::string to_json_line(const RenewerBenchReport& r) {
  return fmt::format(
      R"({{"bench":"renewer","backend":{},"leases":{},"renew_every_ms":{},"seconds":{},)"
      R"("renewals":{},"lost":{},"cpu_core_percent":{:.2f},"rss_mib":{:.1f},)"
      R"("peak_rss_mib":{:.1f},"threads_min":{},"threads_max":{}}})",
      boost::json::serialize(boost::json::string(r.backend)), r.leases, r.renew_every_ms, r.seconds,
      r.renewals, r.lost, r.cpu_core_percent, r.rss_mib, r.peak_rss_mib, r.threads_min,
      r.threads_max);
}

}  // namespace leasehold::bench
