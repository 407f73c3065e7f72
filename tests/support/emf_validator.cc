#include "testing/emf_validator.h"

#include <array>
#include <boost/json.hpp>
#include <set>

namespace leasehold::testing {
namespace {

namespace json = boost::json;

constexpr size_t kDocumentBytesMax = 256 * 1024;
constexpr size_t kNameBytesMax = 255;
constexpr size_t kDimensionsPerSetMax = 30;
constexpr size_t kMetricsPerDirectiveMax = 100;
constexpr size_t kValuesMax = 100;

constexpr std::array<std::string_view, 27> kUnits = {"Seconds",
                                                     "Microseconds",
                                                     "Milliseconds",
                                                     "Bytes",
                                                     "Kilobytes",
                                                     "Megabytes",
                                                     "Gigabytes",
                                                     "Terabytes",
                                                     "Bits",
                                                     "Kilobits",
                                                     "Megabits",
                                                     "Gigabits",
                                                     "Terabits",
                                                     "Percent",
                                                     "Count",
                                                     "Bytes/Second",
                                                     "Kilobytes/Second",
                                                     "Megabytes/Second",
                                                     "Gigabytes/Second",
                                                     "Terabytes/Second",
                                                     "Bits/Second",
                                                     "Kilobits/Second",
                                                     "Megabits/Second",
                                                     "Gigabits/Second",
                                                     "Terabits/Second",
                                                     "Count/Second",
                                                     "None"};

struct Checker {
  const json::object& root;
  std::vector<std::string> problems;

  void fail(std::string what) { problems.push_back(std::move(what)); }

  // Fails for each member of `o` not in `allowed`.
  void only(const json::object& o, std::string_view what,
            std::initializer_list<std::string_view> allowed) {
    for (const auto& member : o) {
      if (std::find(allowed.begin(), allowed.end(), member.key()) == allowed.end()) {
        fail(std::string(what) +
             " has a member the format does not define: " + std::string(member.key()));
      }
    }
  }

  bool name_ok(const json::value* v, std::string_view what) {
    if (v == nullptr || !v->is_string()) {
      fail(std::string(what) + " is not a string");
      return false;
    }
    const size_t n = v->get_string().size();
    if (n == 0 || n > kNameBytesMax) {
      fail(std::string(what) + " is not 1 to 255 characters");
      return false;
    }
    return true;
  }

  void numbers(const json::value* v, std::string_view what, size_t* count) {
    if (v == nullptr || !v->is_array()) {
      fail(std::string(what) + " is not an array");
      return;
    }
    const json::array& a = v->get_array();
    if (a.size() > kValuesMax) fail(std::string(what) + " has more than 100 values");
    for (const json::value& x : a) {
      if (!x.is_number()) fail(std::string(what) + " holds something other than numbers");
    }
    if (count != nullptr) *count = a.size();
  }

  void metric_value(std::string_view name) {
    const json::value* v = root.if_contains(name);
    const std::string what = "metric " + std::string(name);
    if (v == nullptr) return fail(what + " is not a member of the root");
    if (v->is_number()) return;
    if (v->is_array()) return numbers(v, what, nullptr);
    if (!v->is_object()) return fail(what + " is not a number, an array or a distribution");
    const json::object& d = v->get_object();
    only(d, what, {"Values", "Counts", "Min", "Max", "Count", "Sum"});
    size_t values = 0, counts = 0;
    numbers(d.if_contains("Values"), what + ".Values", &values);
    numbers(d.if_contains("Counts"), what + ".Counts", &counts);
    if (values != counts) fail(what + ": Values and Counts differ in length");
    if (const json::value* c = d.if_contains("Counts"); c != nullptr && c->is_array()) {
      for (const json::value& x : c->get_array()) {
        if (x.is_number() && x.to_number<double>() < 0) fail(what + ".Counts has a negative count");
      }
    }
    for (std::string_view stat : {"Min", "Max", "Count", "Sum"}) {
      const json::value* s = d.if_contains(stat);
      if (s != nullptr && !s->is_number())
        fail(what + "." + std::string(stat) + " is not a number");
    }
  }

  void definition(const json::value& v, std::set<std::string>& names) {
    if (!v.is_object()) return fail("a MetricDefinition is not an object");
    const json::object& m = v.get_object();
    only(m, "a MetricDefinition", {"Name", "Unit", "StorageResolution"});
    if (!name_ok(m.if_contains("Name"), "a MetricDefinition's Name")) return;
    const std::string name(m.at("Name").get_string());
    if (!names.insert(name).second) fail("metric " + name + " is defined twice in a directive");
    if (const json::value* unit = m.if_contains("Unit")) {
      if (!unit->is_string() || std::find(kUnits.begin(), kUnits.end(),
                                          std::string_view(unit->get_string())) == kUnits.end()) {
        fail("metric " + name + " has a Unit that is not CloudWatch's");
      }
    }
    if (const json::value* r = m.if_contains("StorageResolution")) {
      if (!r->is_int64() || (r->get_int64() != 1 && r->get_int64() != 60)) {
        fail("metric " + name + " has a StorageResolution other than 1 or 60");
      }
    }
    metric_value(name);
  }

  void dimensions(const json::value* v) {
    if (v == nullptr || !v->is_array() || v->get_array().empty()) {
      return fail("Dimensions is not an array of at least one DimensionSet");
    }
    for (const json::value& set : v->get_array()) {
      if (!set.is_array()) {
        fail("a DimensionSet is not an array");
        continue;
      }
      if (set.get_array().size() > kDimensionsPerSetMax) fail("a DimensionSet has more than 30");
      for (const json::value& key : set.get_array()) {
        if (!name_ok(&key, "a dimension key")) continue;
        const json::value* target = root.if_contains(key.get_string());
        if (target == nullptr || !target->is_string()) {
          fail("dimension " + std::string(key.get_string()) +
               " is not a string member of the root");
        }
      }
    }
  }

  void directive(const json::value& v) {
    if (!v.is_object()) return fail("a MetricDirective is not an object");
    const json::object& d = v.get_object();
    only(d, "a MetricDirective", {"Namespace", "Dimensions", "Metrics"});
    name_ok(d.if_contains("Namespace"), "Namespace");
    dimensions(d.if_contains("Dimensions"));
    const json::value* metrics = d.if_contains("Metrics");
    if (metrics == nullptr || !metrics->is_array()) return fail("Metrics is not an array");
    if (metrics->get_array().size() > kMetricsPerDirectiveMax) {
      fail("a MetricDirective has more than 100 metrics");
    }
    std::set<std::string> names;
    for (const json::value& m : metrics->get_array()) definition(m, names);
  }

  void check() {
    const json::value* aws = root.if_contains("_aws");
    if (aws == nullptr || !aws->is_object()) return fail("no _aws object on the root");
    const json::object& meta = aws->get_object();
    only(meta, "_aws", {"Timestamp", "CloudWatchMetrics"});
    const json::value* ts = meta.if_contains("Timestamp");
    if (ts == nullptr || !(ts->is_int64() || ts->is_uint64()) ||
        (ts->is_int64() && ts->get_int64() < 0)) {
      fail("_aws.Timestamp is not an integer of Unix milliseconds");
    }
    const json::value* directives = meta.if_contains("CloudWatchMetrics");
    if (directives == nullptr || !directives->is_array() || directives->get_array().empty()) {
      return fail("_aws.CloudWatchMetrics is not an array of at least one MetricDirective");
    }
    for (const json::value& d : directives->get_array()) directive(d);
  }
};

}  // namespace

std::vector<std::string> emf_problems(std::string_view line) {
  if (line.ends_with('\n')) line.remove_suffix(1);
  if (line.size() > kDocumentBytesMax) return {"the document is over 256 KB"};
  boost::system::error_code ec;
  const json::value parsed = json::parse(line, ec);
  if (ec) return {"not one JSON value: " + ec.message()};
  if (!parsed.is_object()) return {"the root is not an object"};
  Checker checker{parsed.get_object(), {}};
  checker.check();
  return checker.problems;
}

}  // namespace leasehold::testing
