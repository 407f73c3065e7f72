// Prints a registry holding every kind of family the metrics layer renders
// (counters, gauges, histograms with and without labels, label values and
// help texts that need escaping, numbers of every form), and the families of
// a MeteredStore after calls that succeed, fail and miss their condition.
// promtool_check.cmake hands the text to `promtool check metrics`.
#include <cmath>
#include <iostream>
#include <limits>

#include "leasehold/clock.h"
#include "leasehold/store.h"
#include "metrics/registry.h"
#include "runtime/metered_store.h"

namespace leasehold {
namespace {

void fill_sample(metrics::Registry& registry) {
  auto& requests =
      registry.counter("sample_requests_total",
                       "Requests answered, by route \\ status.\nSecond line.", {"route", "status"});
  requests.with({"/api/me", "200"}).inc();
  requests.with({"/a\\b \"quoted\"\nnewline", "500"}).inc(2.5);
  requests.with({"", "204"}).inc(1e6);
  registry.counter("sample_bytes_total", "Bytes sent.").with({}).inc(9007199254740993.0);

  auto& level = registry.gauge("sample_level", "A level that goes up and down.", {"kind"});
  level.with({"negative"}).set(-0.25);
  level.with({"tiny"}).set(1e-9);
  level.with({"huge"}).set(1e300);
  level.with({"nan"}).set(std::nan(""));
  level.with({"plus_inf"}).set(std::numeric_limits<double>::infinity());
  level.with({"minus_inf"}).set(-std::numeric_limits<double>::infinity());
  registry.gauge("sample_idle", "A gauge never set.");

  auto& latency = registry.histogram("sample_latency_seconds", "Latency, \"quoted\".", {"op"});
  for (double v : {0.0001, 0.0005, 0.003, 0.2, 1.0, 42.0}) latency.with({"get"}).observe(v);
  latency.with({"put \"x\""});
  registry.histogram("sample_size_bytes", "Sizes.", {}, {64, 1024, 65536}).with({}).observe(100);
}

void fill_store_metrics(metrics::Registry& registry) {
  auto memory = open_store("memory:");
  if (!memory.ok()) return;
  SimulatedClock clock;
  runtime::MeteredStore store(**memory, registry, clock);
  (void)store.ensure_table({"t", "pk", "", {}});
  (void)store.put("t", Item{{"pk", std::string("a")}}, {});
  (void)store.put("t", Item{{"pk", std::string("a")}}, cond::not_exists("pk"));
  (void)store.get("t", {"missing", ""}, true);
  (void)store.get("no_such_table", {"a", ""}, true);
}

}  // namespace
}  // namespace leasehold

int main() {
  leasehold::metrics::Registry registry;
  leasehold::fill_sample(registry);
  leasehold::fill_store_metrics(registry);
  std::cout << registry.render();
  return 0;
}
