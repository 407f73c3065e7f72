// Registry: the exact text of each type, escaping, numbers as Prometheus
// spells them, registration rules, bucket boundaries, and exact sums under
// concurrent updates.
#include "metrics/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <latch>
#include <limits>
#include <thread>

namespace leasehold::metrics {
namespace {

TEST(RegistryTest, RendersACounterWithLabels) {
  Registry registry;
  auto& requests =
      registry.counter("http_requests_total", "HTTP requests answered.", {"route", "status"});
  requests.with({"/api/me", "200"}).inc();
  requests.with({"/api/me", "200"}).inc(2);
  requests.with({"/api/movies", "404"}).inc(0.5);
  EXPECT_EQ(registry.render(),
            "# HELP http_requests_total HTTP requests answered.\n"
            "# TYPE http_requests_total counter\n"
            "http_requests_total{route=\"/api/me\",status=\"200\"} 3\n"
            "http_requests_total{route=\"/api/movies\",status=\"404\"} 0.5\n");
}

TEST(RegistryTest, RendersAGaugeWithoutLabelsFromTheStart) {
  Registry registry;
  auto& open = registry.gauge("connections_open", "Connections open now.");
  EXPECT_EQ(registry.render(),
            "# HELP connections_open Connections open now.\n"
            "# TYPE connections_open gauge\n"
            "connections_open 0\n");
  open.with({}).set(5);
  open.with({}).add(-7.25);
  EXPECT_EQ(open.with({}).value(), -2.25);
  EXPECT_EQ(registry.render(),
            "# HELP connections_open Connections open now.\n"
            "# TYPE connections_open gauge\n"
            "connections_open -2.25\n");
}

TEST(RegistryTest, RendersAHistogramWithCumulativeBuckets) {
  Registry registry;
  auto& latency = registry.histogram("op_seconds", "Operation latency.", {"op"}, {0.1, 1, 10});
  Histogram& get = latency.with({"get"});
  for (double v : {0.05, 0.1, 0.5, 3.0, 100.0}) get.observe(v);
  EXPECT_EQ(get.count(), 5u);
  EXPECT_EQ(get.sum(), 103.65);
  EXPECT_EQ(registry.render(),
            "# HELP op_seconds Operation latency.\n"
            "# TYPE op_seconds histogram\n"
            "op_seconds_bucket{op=\"get\",le=\"0.1\"} 2\n"
            "op_seconds_bucket{op=\"get\",le=\"1\"} 3\n"
            "op_seconds_bucket{op=\"get\",le=\"10\"} 4\n"
            "op_seconds_bucket{op=\"get\",le=\"+Inf\"} 5\n"
            "op_seconds_sum{op=\"get\"} 103.65\n"
            "op_seconds_count{op=\"get\"} 5\n");
}

TEST(RegistryTest, AHistogramWithoutLabelsHasOnlyLe) {
  Registry registry;
  registry.histogram("wait_seconds", "Waits.", {}, {0.5}).with({}).observe(0.25);
  EXPECT_EQ(registry.render(),
            "# HELP wait_seconds Waits.\n"
            "# TYPE wait_seconds histogram\n"
            "wait_seconds_bucket{le=\"0.5\"} 1\n"
            "wait_seconds_bucket{le=\"+Inf\"} 1\n"
            "wait_seconds_sum 0.25\n"
            "wait_seconds_count 1\n");
}

TEST(RegistryTest, LatencyBucketsGoFromHalfAMillisecondToTenSeconds) {
  Registry registry;
  registry.histogram("x_seconds", "X.", {}).with({}).observe(0.0003);
  const std::string text = registry.render();
  EXPECT_NE(text.find("x_seconds_bucket{le=\"0.0005\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("x_seconds_bucket{le=\"10\"} 1\n"), std::string::npos) << text;
  EXPECT_EQ(latency_buckets().front(), 0.0005);
  EXPECT_EQ(latency_buckets().back(), 10);
  EXPECT_TRUE(std::is_sorted(latency_buckets().begin(), latency_buckets().end()));
}

TEST(RegistryTest, EscapesHelpAndLabelValues) {
  Registry registry;
  auto& c = registry.counter("odd_total", "A \\ backslash,\na newline and \"quotes\".", {"v"});
  c.with({"back\\slash \"quoted\"\nnext line"}).inc();
  EXPECT_EQ(registry.render(),
            "# HELP odd_total A \\\\ backslash,\\na newline and \"quotes\".\n"
            "# TYPE odd_total counter\n"
            "odd_total{v=\"back\\\\slash \\\"quoted\\\"\\nnext line\"} 1\n");
}

TEST(RegistryTest, RegisteringAgainReturnsTheSameFamily) {
  Registry registry;
  auto& first = registry.counter("jobs_total", "Jobs.", {"kind"});
  first.with({"a"}).inc(4);
  auto& again = registry.counter("jobs_total", "Jobs.", {"kind"});
  EXPECT_EQ(&first, &again);
  EXPECT_EQ(&first.with({"a"}), &again.with({"a"}));
  EXPECT_EQ(again.with({"a"}).value(), 4);
  auto& h = registry.histogram("h_seconds", "H.", {});
  EXPECT_EQ(&h, &registry.histogram("h_seconds", "H.", {}));
  EXPECT_EQ(registry.render().find("# TYPE jobs_total"),
            registry.render().rfind("# TYPE jobs_total"))
      << "rendered once";
}

TEST(RegistryTest, FamiliesInTheOrderRegisteredSeriesInTheOrderCreated) {
  Registry registry;
  auto& b = registry.gauge("b", "B.", {"k"});
  auto& a = registry.counter("a_total", "A.", {"k"});
  EXPECT_EQ(registry.render(), "")
      << "a family with labels renders nothing before its first series";
  a.with({"z"}).inc();
  b.with({"y"}).set(1);
  b.with({"x"}).set(2);
  EXPECT_EQ(registry.render(),
            "# HELP b B.\n# TYPE b gauge\nb{k=\"y\"} 1\nb{k=\"x\"} 2\n"
            "# HELP a_total A.\n# TYPE a_total counter\na_total{k=\"z\"} 1\n");
}

TEST(RegistryTest, NumbersAreSpelledAsPrometheusReadsThem) {
  EXPECT_EQ(format_number(0), "0");
  EXPECT_EQ(format_number(42), "42");
  EXPECT_EQ(format_number(-3), "-3");
  EXPECT_EQ(format_number(1e6), "1000000");
  EXPECT_EQ(format_number(9007199254740993.0), "9007199254740992");
  EXPECT_EQ(format_number(1e20), "100000000000000000000");
  EXPECT_EQ(format_number(1e21), "1e+21");
  EXPECT_EQ(format_number(0.1), "0.1");
  EXPECT_EQ(format_number(0.0005), "0.0005");
  EXPECT_EQ(format_number(0.00001), "1e-05");
  EXPECT_EQ(format_number(2.5), "2.5");
  EXPECT_EQ(format_number(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(format_number(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(format_number(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(format_number(std::nan("")), "NaN");
}

TEST(RegistryTest, NamesAreChecked) {
  EXPECT_TRUE(valid_metric_name("leasehold_store_operation_seconds"));
  EXPECT_TRUE(valid_metric_name("job:rate5m"));
  EXPECT_TRUE(valid_metric_name("_x9"));
  EXPECT_FALSE(valid_metric_name(""));
  EXPECT_FALSE(valid_metric_name("9x"));
  EXPECT_FALSE(valid_metric_name("a-b"));
  EXPECT_FALSE(valid_metric_name("a b"));
  EXPECT_TRUE(valid_label_name("backend"));
  EXPECT_TRUE(valid_label_name("_x"));
  EXPECT_FALSE(valid_label_name("__name__"));
  EXPECT_FALSE(valid_label_name("a:b"));
  EXPECT_FALSE(valid_label_name("0a"));
  EXPECT_FALSE(valid_label_name(""));
}

// Breaking a registration rule is a bug, caught at once.
TEST(RegistryDeathTest, BadRegistrationsAssert) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Registry registry;
  EXPECT_DEATH(registry.gauge("bad-name", "X."), "metric name");
  EXPECT_DEATH(registry.counter("requests", "X."), "_total");
  EXPECT_DEATH(registry.gauge("open_total", "X."), "_total");
  EXPECT_DEATH(registry.gauge("g", "X.", {"__reserved"}), "label name");
  EXPECT_DEATH(registry.gauge("g", "X.", {"a", "a"}), "distinct");
  EXPECT_DEATH(registry.histogram("h", "X.", {"le"}), "le is");
  EXPECT_DEATH(registry.histogram("h", "X.", {}, {1, 1}), "strictly increase");
  EXPECT_DEATH(registry.histogram("h", "X.", {}, {1, INFINITY}), "finite");
  registry.gauge("g", "X.", {"a"});
  EXPECT_DEATH(registry.gauge("g", "X.", {"b"}), "registered again");
  EXPECT_DEATH(registry.counter("g_total", "X.").with({}).inc(-1), "only goes up");
  EXPECT_DEATH(registry.gauge("g", "X.", {"a"}).with({}), "one value for each label");
}

TEST(RegistryTest, AValueOnABoundCountsInThatBucket) {
  const std::vector<double> bounds = {0.001, 0.01, 1};
  Histogram h(bounds);
  h.observe(0.001);                       // on the first bound
  h.observe(std::nextafter(0.001, 1.0));  // just above it
  h.observe(1);                           // on the last bound
  h.observe(std::nextafter(1.0, 2.0));    // above every bound
  h.observe(-5);                          // below every bound
  h.observe(std::nan(""));                // +Inf only, as Prometheus's clients do
  EXPECT_EQ(h.cumulative_counts(), (std::vector<uint64_t>{2, 3, 4, 6}));
  EXPECT_EQ(h.count(), 6u);
}

constexpr int kThreads = 4;
constexpr int kPerThread = 1'000'000;
constexpr double kTotal = kThreads * kPerThread;

// Runs `update(thread, i)` kPerThread times on each of kThreads threads,
// started together so that their updates overlap.
template <typename Update>
void on_threads(const Update& update) {
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&update, &start, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kPerThread; ++i) update(t, i);
    });
  }
  for (auto& thread : threads) thread.join();
}

// One update at a time, so that every thread hits the same atomic at once.
TEST(RegistryTest, ConcurrentUpdatesSumExactly) {
  Registry registry;
  Counter& whole = registry.counter("whole_total", "W.").with({});
  on_threads([&](int, int) { whole.inc(); });
  EXPECT_EQ(whole.value(), kTotal);

  Counter& halves = registry.counter("halves_total", "H.").with({});
  on_threads([&](int, int) { halves.inc(0.5); });  // sums of halves are exact in a double
  EXPECT_EQ(halves.value(), kTotal / 2);

  Gauge& gauge = registry.gauge("level", "L.").with({});
  on_threads([&](int t, int) { gauge.add(t % 2 == 0 ? 1.5 : -0.5); });
  EXPECT_EQ(gauge.value(), kTotal / 2);  // half the threads add 1.5, half -0.5

  Histogram& hist = registry.histogram("obs_seconds", "O.", {"t"}, {0.3}).with({"x"});
  on_threads([&](int, int i) { hist.observe(i % 2 == 0 ? 0.25 : 0.5); });
  const auto n = static_cast<uint64_t>(kTotal);
  EXPECT_EQ(hist.count(), n);
  EXPECT_EQ(hist.cumulative_counts(), (std::vector<uint64_t>{n / 2, n}));
  EXPECT_EQ(hist.sum(), kTotal / 2 * 0.25 + kTotal / 2 * 0.5);
}

// Series created from many threads at once are each created once, and the
// references handed out stay valid as the family grows.
TEST(RegistryTest, ConcurrentWithCreatesEachSeriesOnce) {
  constexpr int kSeries = 200;
  Registry registry;
  auto& family = registry.counter("hits_total", "Hits.", {"n"});
  Counter& first = family.with({"0"});
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kSeries; ++i) family.with({std::to_string(i)}).inc();
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(&first, &family.with({"0"}));
  for (int i = 0; i < kSeries; ++i) EXPECT_EQ(family.with({std::to_string(i)}).value(), kThreads);
  const std::string text = registry.render();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), kSeries + 2);
}

// Series read at render time: what each callback lists now, and nothing of
// one removed.
TEST(RegistryTest, CollectedSeriesAreWhatTheCallbacksListWhenRendered) {
  Registry registry;
  Collected& family =
      registry.collected(/*counter=*/true, "conn_messages_total", "Messages.", {"conn"});
  EXPECT_EQ(&family, &registry.collected(true, "conn_messages_total", "Messages.", {"conn"}));
  EXPECT_EQ(registry.render(), "");
  double a = 3;
  const Collected::Id first = family.add([&](std::vector<Collected::Sample>& out) {
    out.push_back({{"a"}, a});
  });
  family.add([](std::vector<Collected::Sample>& out) { out.push_back({{"b\"q"}, 0.5}); });
  EXPECT_EQ(registry.render(),
            "# HELP conn_messages_total Messages.\n# TYPE conn_messages_total counter\n"
            "conn_messages_total{conn=\"a\"} 3\nconn_messages_total{conn=\"b\\\"q\"} 0.5\n");
  a = 4;
  family.remove(first);
  EXPECT_EQ(registry.render(),
            "# HELP conn_messages_total Messages.\n# TYPE conn_messages_total counter\n"
            "conn_messages_total{conn=\"b\\\"q\"} 0.5\n");
  Collected& gauge = registry.collected(false, "conn_age_seconds", "Age.", {"conn"});
  gauge.add([](std::vector<Collected::Sample>&) {});  // lists nothing: not rendered
  EXPECT_EQ(registry.render().find("conn_age_seconds"), std::string::npos);
}

}  // namespace
}  // namespace leasehold::metrics
