// EmfRenderer: each metric type as the EMF contract says (counters as
// increases between lines, gauges as values, histograms as the interval's
// distribution), labelled families added up, per-connection families left
// out, more than 100 metrics over several documents; every line checked
// against the format's specification (testing/emf_validator.h), which is
// itself shown to refuse bad documents.
#include "metrics/emf.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <map>
#include <set>

#include "testing/emf_validator.h"

namespace leasehold::metrics {
namespace {

namespace json = boost::json;

constexpr int64_t kT0 = 1796162665815;

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    EXPECT_NE(end, std::string::npos) << "every line ends in a newline";
    if (end == std::string::npos) break;
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// The one document `text` holds, checked against the specification.
json::object one_document(const std::string& text) {
  const std::vector<std::string> lines = split_lines(text);
  EXPECT_EQ(lines.size(), 1u) << text;
  if (lines.empty()) return {};
  for (const std::string& problem : testing::emf_problems(lines[0])) ADD_FAILURE() << problem;
  return json::parse(lines[0]).as_object();
}

// The Unit each metric of the document's directives is given, by name.
std::map<std::string, std::string> units(const json::object& doc) {
  std::map<std::string, std::string> out;
  for (const json::value& d : doc.at("_aws").at("CloudWatchMetrics").as_array()) {
    for (const json::value& m : d.at("Metrics").as_array()) {
      out[std::string(m.at("Name").as_string())] = std::string(m.at("Unit").as_string());
    }
  }
  return out;
}

std::vector<double> numbers(const json::value& v) {
  std::vector<double> out;
  for (const json::value& x : v.as_array()) out.push_back(x.to_number<double>());
  return out;
}

EmfOptions worker_options() {
  EmfOptions o;
  o.service = "worker";
  return o;
}

TEST(EmfTest, TheDocumentHasTheContractsShape) {
  Registry registry;
  registry.gauge("leasehold_fleet_owned_connections", "Owned").with({}).set(3);
  EmfOptions o = worker_options();
  o.metrics_namespace = "Leasehold/test";
  EmfRenderer emf(registry, o);
  const json::object doc = one_document(emf.render(kT0));
  const json::object& aws = doc.at("_aws").as_object();
  EXPECT_EQ(aws.at("Timestamp").as_int64(), kT0);
  const json::array& directives = aws.at("CloudWatchMetrics").as_array();
  ASSERT_EQ(directives.size(), 1u);
  EXPECT_EQ(directives[0].at("Namespace").as_string(), "Leasehold/test");
  EXPECT_EQ(json::serialize(directives[0].at("Dimensions")), R"([["Service"]])");
  EXPECT_EQ(doc.at("Service").as_string(), "worker");
  EXPECT_EQ(doc.at("leasehold_fleet_owned_connections").to_number<double>(), 3);
  EXPECT_EQ(units(doc).at("leasehold_fleet_owned_connections"), "None");
}

TEST(EmfTest, CountersAreTheirIncreaseSinceTheLineBefore) {
  Registry registry;
  Counter& messages = registry.counter("leasehold_fleet_messages_total", "Messages").with({});
  EmfRenderer emf(registry, worker_options());
  messages.inc(5);
  json::object first = one_document(emf.render(kT0));
  EXPECT_EQ(first.at("leasehold_fleet_messages_total").to_number<double>(), 5);
  EXPECT_EQ(units(first).at("leasehold_fleet_messages_total"), "Count");
  messages.inc(2);
  json::object second = one_document(emf.render(kT0 + 60000));
  EXPECT_EQ(second.at("leasehold_fleet_messages_total").to_number<double>(), 2);
  json::object third = one_document(emf.render(kT0 + 120000));
  EXPECT_EQ(third.at("leasehold_fleet_messages_total").to_number<double>(), 0)
      << "an interval that counted nothing says 0";
}

TEST(EmfTest, GaugesAreTheirValueAndSecondsNamesAreSeconds) {
  Registry registry;
  Gauge& lag = registry.gauge("leasehold_lag_seconds", "Lag").with({});
  EmfRenderer emf(registry, worker_options());
  lag.set(1.5);
  json::object first = one_document(emf.render(kT0));
  EXPECT_EQ(first.at("leasehold_lag_seconds").to_number<double>(), 1.5);
  EXPECT_EQ(units(first).at("leasehold_lag_seconds"), "Seconds");
  json::object second = one_document(emf.render(kT0 + 1000));
  EXPECT_EQ(second.at("leasehold_lag_seconds").to_number<double>(), 1.5)
      << "a gauge is its value, not its change";
}

TEST(EmfTest, HistogramsAreTheIntervalsDistribution) {
  Registry registry;
  Histogram& gap = registry.histogram("leasehold_gap_seconds", "Gap", {}, {0.1, 1, 10}).with({});
  registry.gauge("leasehold_up", "Up").with({}).set(1);
  EmfRenderer emf(registry, worker_options());
  json::object empty = one_document(emf.render(kT0));
  EXPECT_FALSE(empty.contains("leasehold_gap_seconds")) << "nothing observed: no metric";
  EXPECT_EQ(units(empty).count("leasehold_gap_seconds"), 0u);

  gap.observe(0.05);
  gap.observe(0.5);
  gap.observe(0.7);
  gap.observe(50);  // +Inf: shown as the largest bound
  json::object first = one_document(emf.render(kT0 + 1000));
  EXPECT_EQ(units(first).at("leasehold_gap_seconds"), "Seconds");
  const json::object& d = first.at("leasehold_gap_seconds").as_object();
  EXPECT_EQ(numbers(d.at("Values")), (std::vector<double>{0.1, 1, 10}));
  EXPECT_EQ(numbers(d.at("Counts")), (std::vector<double>{1, 2, 1}));
  EXPECT_EQ(d.at("Count").to_number<double>(), 4);
  EXPECT_DOUBLE_EQ(d.at("Sum").to_number<double>(), 51.25);
  EXPECT_EQ(d.at("Min").to_number<double>(), 0.1);
  EXPECT_EQ(d.at("Max").to_number<double>(), 10);

  gap.observe(2);
  json::object second = one_document(emf.render(kT0 + 2000));
  const json::object& d2 = second.at("leasehold_gap_seconds").as_object();
  EXPECT_EQ(numbers(d2.at("Values")), std::vector<double>{10}) << "only the interval's";
  EXPECT_EQ(numbers(d2.at("Counts")), std::vector<double>{1});
  EXPECT_DOUBLE_EQ(d2.at("Sum").to_number<double>(), 2);

  json::object third = one_document(emf.render(kT0 + 3000));
  EXPECT_FALSE(third.contains("leasehold_gap_seconds")) << "none in the interval: left out";
}

TEST(EmfTest, LabelledFamiliesAreAddedUpUnderTheirName) {
  Registry registry;
  auto& requests = registry.counter("leasehold_http_requests_total", "Requests", {"route"});
  auto& open = registry.gauge("leasehold_open", "Open", {"kind"});
  EmfRenderer emf(registry, worker_options());
  requests.with({"/a"}).inc(2);
  requests.with({"/b"}).inc(3);
  open.with({"x"}).set(4);
  open.with({"y"}).set(6);
  json::object first = one_document(emf.render(kT0));
  EXPECT_EQ(first.at("leasehold_http_requests_total").to_number<double>(), 5);
  EXPECT_EQ(first.at("leasehold_open").to_number<double>(), 10);
  requests.with({"/c"}).inc(1);  // a series new in the interval
  json::object second = one_document(emf.render(kT0 + 1000));
  EXPECT_EQ(second.at("leasehold_http_requests_total").to_number<double>(), 1);
}

TEST(EmfTest, PerConnectionFamiliesAreLeftOut) {
  Registry registry;
  registry.gauge("leasehold_fleet_owned_connections", "Owned").with({}).set(2);
  Collected& per_conn = registry.collected(true, "leasehold_fleet_connection_messages_total",
                                           "Per connection", {"conn"});
  const Collected::Id id = per_conn.add([](std::vector<Collected::Sample>& out) {
    out.push_back({{"c1"}, 10});
    out.push_back({{"c2"}, 20});
  });
  Collected& writes =
      registry.collected(true, "leasehold_fleet_lease_writes_total", "Writes", {"kind"});
  const Collected::Id writes_id = writes.add([](std::vector<Collected::Sample>& out) {
    out.push_back({{"renew"}, 3});
    out.push_back({{"acquire"}, 4});
  });
  EmfRenderer emf(registry, worker_options());
  const std::string text = emf.render(kT0);
  json::object doc = one_document(text);
  EXPECT_EQ(text.find("connection_messages"), std::string::npos) << text;
  EXPECT_EQ(text.find("c1"), std::string::npos) << "no connection's ID anywhere: " << text;
  EXPECT_EQ(doc.at("leasehold_fleet_lease_writes_total").to_number<double>(), 7)
      << "a collected family without a connection label is added up like the others";
  per_conn.remove(id);
  writes.remove(writes_id);
}

TEST(EmfTest, MoreThanAHundredMetricsGoOnMoreDocuments) {
  Registry registry;
  for (int i = 0; i < 250; ++i) {
    registry.gauge("leasehold_g" + std::to_string(i), "G").with({}).set(i);
  }
  EmfRenderer emf(registry, worker_options());
  const std::vector<std::string> lines = split_lines(emf.render(kT0));
  ASSERT_EQ(lines.size(), 3u);
  std::set<std::string> seen;
  for (const std::string& line : lines) {
    for (const std::string& problem : testing::emf_problems(line)) ADD_FAILURE() << problem;
    const json::object doc = json::parse(line).as_object();
    EXPECT_EQ(doc.at("Service").as_string(), "worker") << "each document is whole";
    size_t metrics = 0;
    for (const json::value& d : doc.at("_aws").at("CloudWatchMetrics").as_array()) {
      metrics += d.at("Metrics").as_array().size();
    }
    EXPECT_LE(metrics, kEmfMetricsPerLineMax);
    for (const auto& [name, unit] : units(doc)) {
      EXPECT_TRUE(seen.insert(name).second) << name << " twice";
      EXPECT_TRUE(doc.contains(name));
    }
  }
  EXPECT_EQ(seen.size(), 250u);
}

TEST(EmfTest, NamespacesAreChecked) {
  EXPECT_TRUE(check_emf_namespace("Leasehold").ok());
  EXPECT_TRUE(check_emf_namespace("Leasehold/prod-1").ok());
  EXPECT_FALSE(check_emf_namespace("").ok());
  EXPECT_FALSE(check_emf_namespace(std::string(256, 'a')).ok());
  EXPECT_FALSE(check_emf_namespace("AWS/EC2").ok()) << "AWS's own";
  EXPECT_FALSE(check_emf_namespace("Lease\"hold").ok());
  EXPECT_FALSE(check_emf_namespace("Lease\nhold").ok());
}

// The checker the tests rely on refuses what the specification forbids.
TEST(EmfValidatorTest, RefusesDocumentsTheSpecificationForbids) {
  const std::string good =
      R"({"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"N","Dimensions":[["Service"]],)"
      R"("Metrics":[{"Name":"m","Unit":"Count"}]}]},"Service":"worker","m":1})";
  EXPECT_TRUE(testing::emf_problems(good).empty());
  const auto bad = [&](std::string_view from, std::string_view to) {
    std::string doc = good;
    doc.replace(doc.find(from), from.size(), to);
    return testing::emf_problems(doc);
  };
  EXPECT_FALSE(bad(R"("m":1})", R"("m":"1"})").empty()) << "a metric's value as a string";
  EXPECT_FALSE(bad(R"(,"m":1)", "").empty()) << "a metric that is not on the root";
  EXPECT_FALSE(bad(R"("Service":"worker")", R"("Service":3)").empty()) << "a dimension number";
  EXPECT_FALSE(bad(R"("Timestamp":1)", R"("Timestamp":"1")").empty());
  EXPECT_FALSE(bad(R"("Timestamp":1,)", "").empty()) << "no Timestamp";
  EXPECT_FALSE(bad(R"("Namespace":"N",)", "").empty()) << "no Namespace";
  EXPECT_FALSE(bad(R"("Unit":"Count")", R"("Unit":"Messages")").empty());
  EXPECT_FALSE(bad(R"("Unit":"Count")", R"("Unit":"Count","Extra":1)").empty());
  EXPECT_FALSE(bad(R"([["Service"]])", "[]").empty()) << "no DimensionSet";
  EXPECT_FALSE(bad(R"("m":1})", R"("m":{"Values":[1,2],"Counts":[1]}})").empty());
  EXPECT_TRUE(bad(R"("m":1})", R"("m":{"Values":[1,2],"Counts":[1,3]}})").empty());
  EXPECT_FALSE(testing::emf_problems(good + "x").empty()) << "something after the object";
  EXPECT_FALSE(testing::emf_problems("{\"x\":1}").empty()) << "no _aws";
  std::string many = R"({"_aws":{"Timestamp":1,"CloudWatchMetrics":[{"Namespace":"N",)"
                     R"("Dimensions":[[]],"Metrics":[)";
  std::string members;
  for (int i = 0; i < 101; ++i) {
    many += (i > 0 ? "," : "") + std::string(R"({"Name":"m)") + std::to_string(i) + "\"}";
    members += ",\"m" + std::to_string(i) + "\":1";
  }
  many += "]}]}" + members + "}";
  EXPECT_FALSE(testing::emf_problems(many).empty()) << "101 metrics in a directive";
  std::string values = "[";
  for (int i = 0; i < 101; ++i) values += (i > 0 ? ",1" : "1");
  values += "]";
  EXPECT_FALSE(bad(R"("m":1})", R"("m":)" + values + "}").empty()) << "101 values";
}

}  // namespace
}  // namespace leasehold::metrics
