#include "metrics/emf.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace leasehold::metrics {
namespace {

// The root's own members, which no metric may take.
constexpr std::string_view kServiceMember = "Service";
constexpr std::string_view kMetadataMember = "_aws";

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;  // printable ASCII only (valid_emf_name), and metric names
  }
  out += '"';
}

std::string_view unit_of(const FamilyTotal& total) {
  if (total.type == detail::Type::kCounter) return "Count";
  return total.name.ends_with("_seconds") ? "Seconds" : "None";
}

// A distribution: each bucket with observations as its upper bound (the
// +Inf bucket as the largest bound), at most kEmfValuesMax of them (the
// rest counted in the last), with their count, min, max and sum. Empty if
// nothing was observed.
std::string distribution(const std::vector<double>& bounds, const std::vector<uint64_t>& counts,
                         double sum) {
  std::vector<std::pair<double, uint64_t>> values;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] == 0) continue;
    const double value = i < bounds.size() ? bounds[i] : bounds.empty() ? 0 : bounds.back();
    if (!values.empty() && (values.back().first == value || values.size() == kEmfValuesMax)) {
      values.back().second += counts[i];
    } else {
      values.emplace_back(value, counts[i]);
    }
  }
  if (values.empty()) return {};
  uint64_t count = 0;
  std::string vs, cs;
  for (const auto& [value, n] : values) {
    if (count > 0) {
      vs += ',';
      cs += ',';
    }
    count += n;
    vs += format_number(value);
    cs += format_number(static_cast<double>(n));
  }
  return "{\"Values\":[" + vs + "],\"Counts\":[" + cs +
         "],\"Min\":" + format_number(values.front().first) +
         ",\"Max\":" + format_number(values.back().first) +
         ",\"Count\":" + format_number(static_cast<double>(count)) +
         ",\"Sum\":" + format_number(std::isfinite(sum) ? sum : 0) + "}";
}

}  // namespace

bool valid_emf_name(std::string_view name) {
  if (name.empty() || name.size() > kEmfNameBytesMax || name.front() == ':') return false;
  return std::all_of(name.begin(), name.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
}

Status check_emf_namespace(std::string_view ns) {
  const auto allowed = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view(" ._/#:-").find(c) != std::string_view::npos;
  };
  if (ns.empty() || ns.size() > kEmfNameBytesMax || !std::all_of(ns.begin(), ns.end(), allowed)) {
    return invalid_argument("a CloudWatch namespace is 1 to 255 of A-Z a-z 0-9 space . _ / # : -");
  }
  if (ns.starts_with("AWS/")) return invalid_argument("namespaces starting AWS/ are AWS's own");
  return {};
}

EmfRenderer::EmfRenderer(const Registry& registry, EmfOptions options)
    : registry_(registry), options_(std::move(options)) {
  assert(valid_emf_name(options_.service) && "the Service dimension needs a value");
  assert(check_emf_namespace(options_.metrics_namespace).ok());
}

bool EmfRenderer::left_out(const FamilyTotal& total) const {
  if (total.series == 0 || total.name.size() > kEmfNameBytesMax) return true;
  if (total.name == kServiceMember || total.name == kMetadataMember) return true;
  for (const std::string& label : total.label_names) {
    if (std::find(options_.left_out_labels.begin(), options_.left_out_labels.end(), label) !=
        options_.left_out_labels.end()) {
      return true;
    }
  }
  return false;
}

bool EmfRenderer::metric_of(const FamilyTotal& total, Metric& out) {
  out.name = total.name;
  out.unit = unit_of(total);
  switch (total.type) {
    case detail::Type::kCounter: {
      double& before = counters_[total.name];
      // A collected counter goes back when a series goes away: what is
      // there now was counted since.
      const double increase = total.value >= before ? total.value - before : total.value;
      before = total.value;
      if (!std::isfinite(increase)) return false;
      out.value = format_number(increase);
      return true;
    }
    case detail::Type::kGauge:
      if (!std::isfinite(total.value)) return false;
      out.value = format_number(total.value);
      return true;
    case detail::Type::kHistogram: {
      std::vector<uint64_t>& before = buckets_[total.name];
      before.resize(total.counts.size());
      std::vector<uint64_t> counts(total.counts.size());
      for (size_t i = 0; i < counts.size(); ++i) {
        counts[i] = total.counts[i] >= before[i] ? total.counts[i] - before[i] : total.counts[i];
      }
      before = total.counts;
      double& sum_before = sums_[total.name];
      const double sum = total.sum - sum_before;
      sum_before = total.sum;
      out.value = distribution(total.bounds, counts, sum);
      return !out.value.empty();
    }
  }
  return false;
}

void EmfRenderer::append_line(std::string& out, int64_t timestamp_ms,
                              std::span<const Metric> metrics) const {
  out += "{\"_aws\":{\"Timestamp\":";
  out += std::to_string(timestamp_ms);
  out += ",\"CloudWatchMetrics\":[{\"Namespace\":";
  append_json_string(out, options_.metrics_namespace);
  out += ",\"Dimensions\":[[\"Service\"]],\"Metrics\":[";
  for (size_t i = 0; i < metrics.size(); ++i) {
    if (i > 0) out += ',';
    out += "{\"Name\":";
    append_json_string(out, metrics[i].name);
    out += ",\"Unit\":";
    append_json_string(out, metrics[i].unit);
    out += '}';
  }
  out += "]}]},\"Service\":";
  append_json_string(out, options_.service);
  for (const Metric& m : metrics) {
    out += ',';
    append_json_string(out, m.name);
    out += ':';
    out += m.value;
  }
  out += "}\n";
}

std::string EmfRenderer::render(int64_t timestamp_ms) {
  const std::vector<FamilyTotal> totals = registry_.totals();
  std::vector<Metric> metrics;
  metrics.reserve(totals.size());
  for (const FamilyTotal& total : totals) {
    if (left_out(total)) continue;
    Metric m;
    if (metric_of(total, m)) metrics.push_back(std::move(m));
  }
  std::string out;
  for (size_t i = 0; i < metrics.size(); i += kEmfMetricsPerLineMax) {
    const size_t n = std::min(kEmfMetricsPerLineMax, metrics.size() - i);
    append_line(out, timestamp_ms, std::span<const Metric>(metrics).subspan(i, n));
  }
  return out;
}

}  // namespace leasehold::metrics
