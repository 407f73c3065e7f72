// EmfRenderer: a registry's metrics as CloudWatch's embedded metric format
// (EMF): JSON log lines that CloudWatch Logs turns into metrics, so that a
// process whose stdout goes to CloudWatch Logs needs no agent to scrape
// /metrics. One call of render() covers the interval since the one before.
//
// The lines follow the format's specification (docs/server.md, "Metrics in
// CloudWatch (EMF)"): a root object with `_aws` {`Timestamp` (Unix ms),
// `CloudWatchMetrics`: [{`Namespace`, `Dimensions`: [["Service"]],
// `Metrics`: [{`Name`, `Unit`}...]}]}, the dimension `Service` and every
// metric as a member of the root. What the dashboards and alarms read:
//
//   - one dimension, Service (`worker`, `serve`, `trace-worker`): each
//     metric and dimension value is a custom metric CloudWatch bills, so
//     nothing per connection or per request becomes one;
//   - a metric's Name is its family's Prometheus name; a family with labels
//     is added up over its series, under that name; a family with one of
//     the labels left out (`conn`: a worker's series per connection) is not
//     in the line at all;
//   - a counter is its increase since the previous line (Unit Count), so
//     that CloudWatch's Sum over a period is what was counted in it;
//   - a gauge is its value (Unit Seconds for names ending in _seconds, None
//     otherwise);
//   - a histogram is the distribution of the interval's observations:
//     {"Values":[...],"Counts":[...],"Min","Max","Count","Sum"}, each bucket
//     as its upper bound (the +Inf bucket as the largest bound), Sum the
//     interval's exact sum; left out of a line when nothing was observed.
//
// A document holds at most kEmfMetricsPerLineMax metrics: more go on more
// lines, each a whole document. Not thread-safe: one caller renders (the
// registry it reads is).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/status.h"
#include "metrics/registry.h"

namespace leasehold::metrics {

inline constexpr size_t kEmfMetricsPerLineMax = 100;  // MetricDefinitions per directive
inline constexpr size_t kEmfValuesMax = 100;          // values of one distribution
inline constexpr size_t kEmfNameBytesMax = 255;       // a metric's or namespace's name

struct EmfOptions {
  std::string metrics_namespace = "Leasehold";
  std::string service;  // the Service dimension's value; REQUIRES: valid_emf_name()
  // Families with any of these labels are left out.
  std::vector<std::string> left_out_labels = {"conn"};
};

// 1 to 255 printable ASCII characters, not starting with ':' (CloudWatch's
// rule for dimension values and names).
bool valid_emf_name(std::string_view name);

// kInvalidArgument unless `ns` is a CloudWatch namespace: 1 to 255 of
// [A-Za-z0-9 ._/#:-], not starting with "AWS/" (AWS's own).
Status check_emf_namespace(std::string_view ns);

class EmfRenderer {
 public:
  // REQUIRES: `registry` outlives the renderer; options as above. The first
  // render() counts from the counters' and histograms' values at zero.
  EmfRenderer(const Registry& registry, EmfOptions options);

  // The lines (each a JSON document ending in '\n') for the interval since
  // the previous render(), stamped `timestamp_ms` (Unix ms).
  std::string render(int64_t timestamp_ms);

 private:
  struct Metric {
    std::string_view name;
    std::string_view unit;
    std::string value;  // JSON
  };
  // The family's metric for this interval, or false for none.
  bool metric_of(const FamilyTotal& total, Metric& out);
  bool left_out(const FamilyTotal& total) const;
  void append_line(std::string& out, int64_t timestamp_ms, std::span<const Metric> metrics) const;

  const Registry& registry_;
  const EmfOptions options_;
  // At the previous render(), by family name.
  std::map<std::string, double, std::less<>> counters_;
  std::map<std::string, std::vector<uint64_t>, std::less<>> buckets_;
  std::map<std::string, double, std::less<>> sums_;
};

}  // namespace leasehold::metrics
