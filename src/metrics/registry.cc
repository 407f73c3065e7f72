#include "metrics/registry.h"

#include <algorithm>
#include <cassert>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>
#include <type_traits>

namespace leasehold::metrics {
namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;

// Whole increments below this are counted in an integer: every integer up to
// 2^53 is exactly a double, so converting back loses nothing.
constexpr double kWholeIncrementMax = 9007199254740992.0;  // 2^53

// Numbers whose decimal exponent is in [min, end) are written in plain digits
// (0.0005, 1000000), others in scientific notation (1e-05, 1e+21), as
// JavaScript and Go's %g do at their edges.
constexpr int kPlainExponentMin = -4;
constexpr int kPlainExponentEnd = 21;

bool name_char(char c, bool first, bool colon_ok) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') return true;
  if (c == ':') return colon_ok;
  return !first && c >= '0' && c <= '9';
}

bool valid_name(std::string_view name, bool colon_ok) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!name_char(name[i], i == 0, colon_ok)) return false;
  }
  return true;
}

void append_escaped(std::string& out, std::string_view text, bool quote) {
  for (char c : text) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quote) {
      out += "\\\"";
    } else {
      out += c;
    }
  }
}

void append_uint(std::string& out, uint64_t v) {
  char buf[24];
  const auto result = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, result.ptr);
}

// Appends `name+suffix{labels[,le="le"]} ` (the value is the caller's).
void append_series_name(std::string& out, const detail::FamilyBase& family, std::string_view suffix,
                        const std::vector<std::string>& values, std::string_view le = {}) {
  out += family.name();
  out += suffix;
  if (values.empty() && le.empty()) {
    out += ' ';
    return;
  }
  out += '{';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out += ',';
    out += family.label_names()[i];
    out += "=\"";
    append_escaped(out, values[i], /*quote=*/true);
    out += '"';
  }
  if (!le.empty()) {
    if (!values.empty()) out += ',';
    out += "le=\"";
    out += le;
    out += '"';
  }
  out += "} ";
}

void append_series(std::string& out, const detail::FamilyBase& family,
                   const std::vector<std::string>& values, const Counter& counter) {
  append_series_name(out, family, "", values);
  out += format_number(counter.value());
  out += '\n';
}

void append_series(std::string& out, const detail::FamilyBase& family,
                   const std::vector<std::string>& values, const Gauge& gauge) {
  append_series_name(out, family, "", values);
  out += format_number(gauge.value());
  out += '\n';
}

void append_series(std::string& out, const detail::FamilyBase& family,
                   const std::vector<std::string>& values, const Histogram& histogram) {
  // One read of the buckets, so that the +Inf bucket and _count agree.
  const std::vector<uint64_t> counts = histogram.cumulative_counts();
  const std::vector<double>& bounds = family.bounds();
  for (size_t i = 0; i < counts.size(); ++i) {
    const std::string le = i < bounds.size() ? format_number(bounds[i]) : "+Inf";
    append_series_name(out, family, "_bucket", values, le);
    append_uint(out, counts[i]);
    out += '\n';
  }
  append_series_name(out, family, "_sum", values);
  out += format_number(histogram.sum());
  out += '\n';
  append_series_name(out, family, "_count", values);
  append_uint(out, counts.back());
  out += '\n';
}

std::string_view type_name(detail::Type type) {
  switch (type) {
    case detail::Type::kCounter:
      return "counter";
    case detail::Type::kGauge:
      return "gauge";
    case detail::Type::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// The registration rules of Registry's REQUIRES, as assertions: breaking one
// is a bug in the code that registers, not bad input.
void check_family([[maybe_unused]] detail::Type type, [[maybe_unused]] std::string_view name,
                  const std::vector<std::string>& label_names, const std::vector<double>& bounds) {
  assert(valid_metric_name(name) && "a metric name is [a-zA-Z_:][a-zA-Z0-9_:]*");
  assert((type == detail::Type::kCounter) == name.ends_with("_total") &&
         "a counter's name ends in _total, and only a counter's");
  [[maybe_unused]] std::set<std::string_view> seen;
  for (const std::string& label : label_names) {
    assert(valid_label_name(label) && "a label name is [a-zA-Z_][a-zA-Z0-9_]*, not __*");
    assert(seen.insert(label).second && "label names are distinct");
    assert(!(type == detail::Type::kHistogram && label == "le") && "le is a histogram's own");
  }
  for (size_t i = 0; i < bounds.size(); ++i) {
    assert(std::isfinite(bounds[i]) && "bucket bounds are finite (+Inf is always there)");
    assert((i == 0 || bounds[i - 1] < bounds[i]) && "bucket bounds strictly increase");
  }
}

}  // namespace

// ---------------------------------------------------------------- series

void Counter::inc(double by) {
  assert(by >= 0 && "a counter only goes up");
  if (by < kWholeIncrementMax) {
    const auto whole = static_cast<uint64_t>(by);
    if (static_cast<double>(whole) == by) {
      whole_.fetch_add(whole, kRelaxed);
      return;
    }
  }
  fraction_.fetch_add(by, kRelaxed);  // a compare-exchange loop
}

double Counter::value() const {
  return static_cast<double>(whole_.load(kRelaxed)) + fraction_.load(kRelaxed);
}

void Gauge::set(double v) { value_.store(v, kRelaxed); }

void Gauge::add(double by) { value_.fetch_add(by, kRelaxed); }

double Gauge::value() const { return value_.load(kRelaxed); }

Histogram::Histogram(std::span<const double> bounds)
    : bounds_(bounds), counts_(std::make_unique<std::atomic<uint64_t>[]>(bounds.size() + 1)) {}

void Histogram::observe(double v) {
  // The first bucket whose bound is >= v; NaN is above every bound, as in
  // Prometheus's own clients.
  const auto bucket =
      std::partition_point(bounds_.begin(), bounds_.end(), [v](double b) { return !(b >= v); });
  counts_[bucket - bounds_.begin()].fetch_add(1, kRelaxed);
  sum_.fetch_add(v, kRelaxed);
}

uint64_t Histogram::count() const { return cumulative_counts().back(); }

double Histogram::sum() const { return sum_.load(kRelaxed); }

std::vector<uint64_t> Histogram::cumulative_counts() const {
  std::vector<uint64_t> counts(bounds_.size() + 1);
  uint64_t total = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    total += counts_[i].load(kRelaxed);
    counts[i] = total;
  }
  return counts;
}

const std::vector<double>& latency_buckets() {
  static const std::vector<double> buckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                              0.1,    0.25,  0.5,    1,     2.5,  5,     10};
  return buckets;
}

std::string format_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  // The shortest digits that read back as v, in scientific form first, to
  // learn the exponent.
  char buf[64];
  auto result = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  *result.ptr = '\0';  // the longest form of a double takes 24 of the 64 bytes
  const long exponent = std::strtol(std::find(buf, result.ptr, 'e') + 1, nullptr, 10);
  if (exponent >= kPlainExponentMin && exponent < kPlainExponentEnd) {
    result = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  }
  return std::string(buf, result.ptr);
}

bool valid_metric_name(std::string_view name) { return valid_name(name, /*colon_ok=*/true); }

bool valid_label_name(std::string_view name) {
  return valid_name(name, /*colon_ok=*/false) && !name.starts_with("__");
}

// ---------------------------------------------------------------- families

namespace detail {

FamilyBase::FamilyBase(Type type, std::string name, std::string help,
                       std::vector<std::string> label_names, std::vector<double> bounds)
    : type_(type),
      name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)),
      bounds_(std::move(bounds)) {}

FamilyBase::~FamilyBase() = default;

void FamilyBase::render_header(std::string& out) const {
  out += "# HELP ";
  out += name_;
  out += ' ';
  append_escaped(out, help_, /*quote=*/false);
  out += "\n# TYPE ";
  out += name_;
  out += ' ';
  out += type_name(type_);
  out += '\n';
}

}  // namespace detail

template <typename Series>
Series& Family<Series>::with(const std::vector<std::string>& label_values) {
  assert(label_values.size() == label_names_.size() && "one value for each label");
  MutexLock lock(mu_);
  return find_or_create(label_values);
}

template <typename Series>
Series& Family<Series>::find_or_create(const std::vector<std::string>& label_values) {
  typename SeriesMap::iterator it;
  bool created = false;
  if constexpr (std::is_same_v<Series, Histogram>) {
    std::tie(it, created) = series_.try_emplace(label_values, std::span<const double>(bounds_));
  } else {
    std::tie(it, created) = series_.try_emplace(label_values);
  }
  if (created) created_.push_back(&*it);
  return it->second;
}

template <typename Series>
void Family<Series>::render(std::string& out) const {
  MutexLock lock(mu_);
  if (created_.empty()) return;
  render_header(out);
  for (const auto* entry : created_) append_series(out, *this, entry->first, entry->second);
}

namespace {

void add_series(FamilyTotal& out, const Counter& counter) { out.value += counter.value(); }
void add_series(FamilyTotal& out, const Gauge& gauge) { out.value += gauge.value(); }
void add_series(FamilyTotal& out, const Histogram& histogram) {
  const std::vector<uint64_t> cumulative = histogram.cumulative_counts();
  out.counts.resize(cumulative.size());
  for (size_t i = 0; i < cumulative.size(); ++i) {
    out.counts[i] += cumulative[i] - (i > 0 ? cumulative[i - 1] : 0);
  }
  out.sum += histogram.sum();
}

// `out` named after `family`, with nothing added yet.
void start_total(FamilyTotal& out, const detail::FamilyBase& family, bool collected) {
  out = FamilyTotal{};
  out.type = family.type();
  out.name = family.name();
  out.label_names = family.label_names();
  out.collected = collected;
  out.bounds = family.bounds();
  if (family.type() == detail::Type::kHistogram) out.counts.assign(family.bounds().size() + 1, 0);
}

}  // namespace

template <typename Series>
void Family<Series>::add_totals(FamilyTotal& out) const {
  start_total(out, *this, /*collected=*/false);
  MutexLock lock(mu_);
  for (const auto* entry : created_) add_series(out, entry->second);
  out.series = created_.size();
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

Collected::Id Collected::add(Collect collect) {
  MutexLock lock(mu_);
  const Id id = next_id_++;
  collects_.emplace(id, std::move(collect));
  return id;
}

void Collected::remove(Id id) {
  MutexLock lock(mu_);
  collects_.erase(id);
}

void Collected::render(std::string& out) const {
  std::vector<Sample> samples;
  MutexLock lock(mu_);
  for (const auto& [id, collect] : collects_) collect(samples);
  if (samples.empty()) return;
  render_header(out);
  for (const Sample& sample : samples) {
    assert(sample.label_values.size() == label_names_.size() && "one value for each label");
    append_series_name(out, *this, "", sample.label_values);
    out += format_number(sample.value);
    out += '\n';
  }
}

void Collected::add_totals(FamilyTotal& out) const {
  start_total(out, *this, /*collected=*/true);
  std::vector<Sample> samples;
  MutexLock lock(mu_);
  for (const auto& [id, collect] : collects_) collect(samples);
  for (const Sample& sample : samples) out.value += sample.value;
  out.series = samples.size();
}

// ---------------------------------------------------------------- registry

Registry::Registry() = default;

Registry::~Registry() = default;

Family<Counter>& Registry::counter(std::string name, std::string help,
                                   std::vector<std::string> label_names) {
  return add<Counter>(detail::Type::kCounter, std::move(name), std::move(help),
                      std::move(label_names), {});
}

Family<Gauge>& Registry::gauge(std::string name, std::string help,
                               std::vector<std::string> label_names) {
  return add<Gauge>(detail::Type::kGauge, std::move(name), std::move(help), std::move(label_names),
                    {});
}

Family<Histogram>& Registry::histogram(std::string name, std::string help,
                                       std::vector<std::string> label_names,
                                       std::vector<double> buckets) {
  return add<Histogram>(detail::Type::kHistogram, std::move(name), std::move(help),
                        std::move(label_names), std::move(buckets));
}

template <typename Series>
Family<Series>& Registry::add(detail::Type type, std::string name, std::string help,
                              std::vector<std::string> label_names, std::vector<double> bounds) {
  check_family(type, name, label_names, bounds);
  MutexLock lock(mu_);
  for (const auto& family : families_) {
    if (family->name() != name) continue;
    assert(dynamic_cast<Family<Series>*>(family.get()) != nullptr && family->type() == type &&
           family->help() == help && family->label_names() == label_names &&
           family->bounds() == bounds && "a metric registered again is registered the same way");
    return static_cast<Family<Series>&>(*family);
  }
  // Not make_unique: the constructor is private to the registry.
  std::unique_ptr<Family<Series>> family(new Family<Series>(
      type, std::move(name), std::move(help), std::move(label_names), std::move(bounds)));
  Family<Series>& added = *family;
  families_.push_back(std::move(family));
  if (added.label_names().empty()) added.with({});
  return added;
}

Collected& Registry::collected(bool counter, std::string name, std::string help,
                               std::vector<std::string> label_names) {
  const detail::Type type = counter ? detail::Type::kCounter : detail::Type::kGauge;
  check_family(type, name, label_names, {});
  MutexLock lock(mu_);
  for (const auto& family : families_) {
    if (family->name() != name) continue;
    auto* collected = dynamic_cast<Collected*>(family.get());
    assert(collected != nullptr && family->type() == type && family->help() == help &&
           family->label_names() == label_names &&
           "a metric registered again is registered the same way");
    return *collected;
  }
  std::unique_ptr<Collected> family(
      new Collected(type, std::move(name), std::move(help), std::move(label_names), {}));
  Collected& added = *family;
  families_.push_back(std::move(family));
  return added;
}

std::string Registry::render() const {
  std::string out;
  MutexLock lock(mu_);
  for (const auto& family : families_) family->render(out);
  return out;
}

std::vector<FamilyTotal> Registry::totals() const {
  std::vector<FamilyTotal> out;
  MutexLock lock(mu_);
  out.resize(families_.size());
  for (size_t i = 0; i < families_.size(); ++i) families_[i]->add_totals(out[i]);
  return out;
}

}  // namespace leasehold::metrics
