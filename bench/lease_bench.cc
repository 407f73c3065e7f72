#include "bench/lease_bench.h"

#include <fmt/format.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "leasehold/lease.h"
#include "leasehold/renewer.h"

namespace leasehold::bench {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Long enough that no lease expires while it waits for its turn to renew.
constexpr Duration kBenchTtl = std::chrono::minutes(10);
// The unmeasured turn of the library and of the raw loop before the rounds.
constexpr Duration kWarmUp = milliseconds(500);

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

// CPU time of the calling thread, or of the whole process: what the client
// itself costs.
Duration cpu_time(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

// The leases a benchmark keeps, on the caller's lease manager.
struct Fleet {
  LeaseManager& leases;
  std::vector<Lease> held;
  std::string prefix;

  LeaseManager& manager() { return leases; }
  ItemStore& store() { return leases.store(); }
  Clock& clock() { return leases.clock(); }
};

Status acquire_all(Fleet& f, int64_t count, int64_t threads, Duration ttl, Duration& took) {
  f.held.resize(count);
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
      f.held[i] = *lease;
    }
  });
  for (const auto& e : errors) LEASEHOLD_RETURN_IF_ERROR(e);
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
    const Duration cpu_start = cpu_time(CLOCK_THREAD_CPUTIME_ID);
    lat[t].reserve(1 << 16);
    for (size_t i = t; f.clock().mono_now() < until; i += threads) {
      if (i >= f.held.size()) i = t;
      const MonoTime start = f.clock().mono_now();
      auto renewed = f.manager().renew(f.held[i]);
      lat[t].push_back((f.clock().mono_now() - start).count());
      if (renewed.ok())
        f.held[i] = *renewed;
      else
        ++fails[t];
    }
    cpus[t] = cpu_time(CLOCK_THREAD_CPUTIME_ID) - cpu_start;
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
    for (size_t i = t; i < f.held.size(); i += threads) {
      Status s = f.manager().release(f.held[i], ReleaseMode::kClear);
      if (!s.ok()) errors[t] = s;
    }
  });
  // Leave the file as it was found: the benchmark's items are its own.
  for (const auto& lease : f.held) (void)f.store().remove(kBenchTable, lease.key, {});
  for (const auto& e : errors) LEASEHOLD_RETURN_IF_ERROR(e);
  return {};
}

Result<std::unique_ptr<Fleet>> open_fleet(LeaseManager& leases, Random& random) {
  if (leases.config().table != kBenchTable) {
    return invalid_argument("the benchmark's lease manager must use table " +
                            std::string(kBenchTable));
  }
  LEASEHOLD_RETURN_IF_ERROR(leases.store().ensure_table(bench_table_spec()));
  auto fleet = std::make_unique<Fleet>(Fleet{leases, {}, ""});
  fleet->prefix = "bench-" + random_token(random).substr(0, 8) + "-";
  return fleet;
}

// One round of a baseline, on the fleet's leases; counts its renewals and
// CPU time into the totals.
Status run_baseline(const Baseline& baseline, Fleet& f, int64_t threads, Duration duration,
                    int64_t& done, std::optional<Duration>& cpu) {
  LEASEHOLD_ASSIGN_OR_RETURN(const BaselineRun run,
                             baseline(f.held, threads, duration, to_ms(kBenchTtl)));
  done += run.renewals;
  if (run.cpu) cpu = cpu.value_or(Duration::zero()) + *run.cpu;
  return {};
}

}  // namespace

TableSpec bench_table_spec() {
  // The CLI's keys and index (cli/lease_table.h, which the bench may not
  // include), as before. Its items carry no `kind`, so the index holds none
  // of them.
  const SlotNames names(kDefaultSlot);
  return TableSpec{
      std::string(kBenchTable),
      "pk",
      "",
      {IndexSpec{"kind-lease_expires_at_ms-index", "kind", names.expires_at_ms, AttrType::kInt}}};
}

Result<LeaseBenchReport> run_lease_bench(const LeaseBenchOptions& o, LeaseBenchEnv& env) {
  if (o.threads > o.leases) return invalid_argument("--threads may not exceed --leases");
  LEASEHOLD_ASSIGN_OR_RETURN(auto fleet, open_fleet(env.leases, env.random));
  LeaseBenchReport r;
  r.backend = std::string(fleet->store().backend_name());
  r.leases = o.leases;
  r.threads = o.threads;
  r.seconds = o.seconds;

  Duration took{};
  LEASEHOLD_RETURN_IF_ERROR(acquire_all(*fleet, o.leases, o.threads, kBenchTtl, took));
  r.acquire_per_s = (per_second(o.leases, took));

  // Library and baselines take turns over the same leases, in rounds of
  // about two seconds: each round is two turns each, the second in the
  // reverse order of the first (library, raw, SDK; SDK, raw, library), so
  // that a speed that drifts through the run (a shared machine's, a
  // server's still settling) weighs on them alike, and short turns spread a
  // slow spell of a few seconds over all of them rather than one. The
  // library and the raw loop each have an unmeasured turn first: the first
  // requests on a new connection, and to a server that has just taken the
  // acquisitions, are slower than the rest. (The SDK script times itself
  // after a request of its own.)
  const int64_t rounds = std::max<int64_t>(1, o.seconds / 2);
  const Duration turn = std::chrono::duration_cast<Duration>(seconds(o.seconds)) / (2 * rounds);
  std::vector<int64_t> latencies;
  int64_t renewed = 0, raw_done = 0, sdk_done = 0;
  Duration renew_cpu{};
  std::optional<Duration> raw_cpu, sdk_cpu;
  {
    // What the unmeasured turns did is left out, but a renewal that failed
    // in them is a failure all the same.
    std::vector<int64_t> unmeasured_latencies;
    int64_t unmeasured_count = 0;
    Duration unmeasured_cpu{};
    std::optional<Duration> unmeasured_raw_cpu;
    (void)renew_round(*fleet, o.threads, kWarmUp, unmeasured_latencies, r.renew_failures,
                      unmeasured_cpu);
    if (env.raw) {
      LEASEHOLD_RETURN_IF_ERROR(
          run_baseline(env.raw, *fleet, o.threads, kWarmUp, unmeasured_count, unmeasured_raw_cpu));
    }
  }
  const auto library = [&] {
    renewed += renew_round(*fleet, o.threads, turn, latencies, r.renew_failures, renew_cpu);
    return Status::ok_status();
  };
  const auto raw = [&] {
    if (!env.raw) return Status::ok_status();
    return run_baseline(env.raw, *fleet, o.threads, turn, raw_done, raw_cpu);
  };
  const auto sdk = [&] {
    if (!env.sdk) return Status::ok_status();
    return run_baseline(env.sdk, *fleet, o.threads, turn, sdk_done, sdk_cpu);
  };
  for (int64_t i = 0; i < rounds; ++i) {
    LEASEHOLD_RETURN_IF_ERROR(library());
    LEASEHOLD_RETURN_IF_ERROR(raw());
    LEASEHOLD_RETURN_IF_ERROR(sdk());
    LEASEHOLD_RETURN_IF_ERROR(sdk());
    LEASEHOLD_RETURN_IF_ERROR(raw());
    LEASEHOLD_RETURN_IF_ERROR(library());
  }
  const Duration renew_time = turn * (2 * rounds);
  r.renew_per_s = (per_second(renewed, renew_time));
  r.renew_p50_us = (percentile_us(latencies, 0.50));
  r.renew_p99_us = (percentile_us(latencies, 0.99));
  const auto cpu_us_per = [](Duration cpu, int64_t n) {
    return n > 0 ? std::chrono::duration<double, std::micro>(cpu).count() / static_cast<double>(n)
                 : 0.0;
  };
  r.renew_cpu_us = cpu_us_per(renew_cpu, renewed);
  if (raw_cpu) r.raw_cpu_us = cpu_us_per(*raw_cpu, raw_done);
  if (env.raw) {
    r.raw_update_per_s = (per_second(raw_done, renew_time));
    r.renew_vs_raw = r.renew_per_s / *r.raw_update_per_s;
  }
  if (env.sdk) {
    r.sdk_update_per_s = per_second(sdk_done, renew_time);
    r.renew_vs_sdk = r.renew_per_s / *r.sdk_update_per_s;
    if (r.raw_update_per_s) r.raw_vs_sdk = *r.raw_update_per_s / *r.sdk_update_per_s;
  }
  LEASEHOLD_RETURN_IF_ERROR(release_and_remove(*fleet, o.threads, took));
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

Result<RenewerBenchReport> run_renewer_bench(const RenewerBenchOptions& o, RenewerBenchEnv& env) {
  LEASEHOLD_ASSIGN_OR_RETURN(auto fleet, open_fleet(env.leases, env.random));
  const LeaseConfig& config = fleet->manager().config();
  // The ttl whose default renew period is exactly renew_every.
  const Duration every = o.renew_every;
  const Duration ttl = every * 3 + config.max_clock_skew + config.safety_margin;
  Duration took{};
  LEASEHOLD_RETURN_IF_ERROR(acquire_all(*fleet, o.leases, 1, ttl, took));

  RenewerOptions options;
  options.renew_every = every;
  options.info_log = env.logger;
  const auto renewer =
      std::make_unique<Renewer>(fleet->manager(), fleet->clock(), env.random, options);
  for (const auto& lease : fleet->held) renewer->add(lease, nullptr);
  renewer->start();
  // Measure the steady state: from the end of the first renewal round on.
  std::this_thread::sleep_for(every * 6 / 5);
  const RenewerStats before = renewer->stats();
  const Duration cpu_before = cpu_time(CLOCK_PROCESS_CPUTIME_ID);
  const MonoTime start = fleet->clock().mono_now();
  // The measurement window itself.
  const auto [threads_min, threads_max] = thread_range_during(fleet->clock(), seconds(o.seconds));
  const double wall = std::chrono::duration<double>(fleet->clock().mono_now() - start).count();
  const double cpu =
      std::chrono::duration<double>(cpu_time(CLOCK_PROCESS_CPUTIME_ID) - cpu_before).count();
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
  for (const auto& lease : fleet->held) (void)fleet->store().remove(kBenchTable, lease.key, {});
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
