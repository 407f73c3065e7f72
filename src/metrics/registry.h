// Registry: the process's metrics, rendered in the Prometheus text format
// (version 0.0.4) for GET /metrics.
//
// A family has a name, a help text, a type and the names of its labels; a
// series is one family with one value for each label. Code registers its
// families once, keeps the references (they stay valid for the registry's
// life), and looks up a series with with(...) — or keeps the series too, as
// the hot paths do, so that counting is an atomic add and no lookup.
//
//   auto& requests = registry.counter("leasehold_http_requests_total",
//                                     "HTTP requests answered.", {"route", "status"});
//   requests.with({"/api/me", "200"}).inc();
//
// Names and label names are checked when registered (a bad one is a bug:
// assert); label values and help texts are escaped when rendered. Registering
// a name again with the same type, help, labels (and buckets) returns the same
// family; anything else under a name already taken is a bug too. A counter's
// name ends in `_total` and no other type's does, as Prometheus expects.
//
// A family without labels has its one series from the start (with({})), so
// it renders 0 before anything is counted; a family with labels renders the
// series created so far, and nothing before the first. Every distinct set of
// label values is a series that lives as long as the registry: label values
// come from small, fixed sets (a route's pattern, not the path requested).
//
// Thread-safe: series are updated with atomics, without locks (Counter::inc,
// Gauge::set/add and Histogram::observe never block); with() and render()
// take the family's lock, registration and render() the registry's.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"

namespace leasehold::metrics {

// A value that only goes up. Increments by whole numbers (the usual case) are
// counted exactly in an integer; fractional ones in a double beside it.
class Counter {
 public:
  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  void inc(double by = 1);  // REQUIRES: by >= 0
  double value() const;

 private:
  std::atomic<uint64_t> whole_{0};
  std::atomic<double> fraction_{0};
};

// A value that goes up and down.
class Gauge {
 public:
  Gauge() = default;
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void set(double v);
  void add(double by);  // negative to subtract
  double value() const;

 private:
  std::atomic<double> value_{0};
};

// Observations counted into buckets by upper bound (a value equal to a bound
// counts in that bucket), with their count and sum. A render that runs while
// observe() does may see an observation in its bucket and not yet in the sum;
// the buckets and the count always agree.
class Histogram {
 public:
  // REQUIRES: `bounds` outlives the histogram, strictly increasing, finite.
  explicit Histogram(std::span<const double> bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void observe(double v);
  uint64_t count() const;
  double sum() const;
  // The count of each bucket, cumulative as rendered: one for each bound,
  // then the +Inf bucket (which equals count()).
  std::vector<uint64_t> cumulative_counts() const;

 private:
  const std::span<const double> bounds_;
  // Not cumulative: counts_[i] holds the observations in (bounds_[i-1],
  // bounds_[i]], the last one those above every bound (and NaN).
  const std::unique_ptr<std::atomic<uint64_t>[]> counts_;
  std::atomic<double> sum_{0};
};

// Buckets for latencies in seconds: 0.5 ms to 10 s.
const std::vector<double>& latency_buckets();

// `v` as the exposition format spells numbers: plain digits for integers
// (1000000, not 1e+06), the shortest form that reads back exactly otherwise,
// and +Inf, -Inf and NaN.
std::string format_number(double v);

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool valid_metric_name(std::string_view name);
// [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved by Prometheus).
bool valid_label_name(std::string_view name);

class Registry;

namespace detail {

enum class Type { kCounter, kGauge, kHistogram };

}  // namespace detail

// One family's series added up, for outputs that drop the labels
// (metrics/emf.h): Registry::totals().
struct FamilyTotal {
  detail::Type type = detail::Type::kGauge;
  std::string name;
  std::vector<std::string> label_names;
  bool collected = false;  // a Collected family
  size_t series = 0;       // how many series were added up
  double value = 0;        // counters and gauges: the sum of the series
  // Histograms: the bounds, the observations in each bucket (not
  // cumulative: one for each bound, then the +Inf bucket) and their sum,
  // over every series.
  std::vector<double> bounds;
  std::vector<uint64_t> counts;
  double sum = 0;
};

namespace detail {

// What the registry keeps of every family, whatever the type of its series.
class FamilyBase {
 public:
  FamilyBase(Type type, std::string name, std::string help, std::vector<std::string> label_names,
             std::vector<double> bounds);
  virtual ~FamilyBase();
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  // Appends the family's HELP, TYPE and series lines to `out` (nothing if it
  // has no series yet).
  virtual void render(std::string& out) const = 0;
  // Adds every series of the family into `out` (FamilyTotal).
  virtual void add_totals(FamilyTotal& out) const = 0;

  Type type() const { return type_; }
  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  const std::vector<std::string>& label_names() const { return label_names_; }
  const std::vector<double>& bounds() const { return bounds_; }

 protected:
  // Appends "# HELP" and "# TYPE".
  void render_header(std::string& out) const;

  const Type type_;
  const std::string name_;
  const std::string help_;
  const std::vector<std::string> label_names_;
  const std::vector<double> bounds_;  // histograms only
  mutable Mutex mu_;
};

}  // namespace detail

template <typename Series>
class Family final : public detail::FamilyBase {
 public:
  // The series for these label values (one per label name, in order),
  // created on first use. The reference stays valid for the registry's life.
  // REQUIRES: label_values.size() == label_names().size().
  Series& with(const std::vector<std::string>& label_values) EXCLUDES(mu_);

  void render(std::string& out) const override EXCLUDES(mu_);
  void add_totals(FamilyTotal& out) const override EXCLUDES(mu_);

 private:
  friend class Registry;
  using SeriesMap = std::map<std::vector<std::string>, Series>;

  Family(detail::Type type, std::string name, std::string help,
         std::vector<std::string> label_names, std::vector<double> bounds)
      : FamilyBase(type, std::move(name), std::move(help), std::move(label_names),
                   std::move(bounds)) {}
  Series& find_or_create(const std::vector<std::string>& label_values) REQUIRES(mu_);

  // A map's elements never move, so the references with() hands out stay
  // valid; `created_` keeps the order for render().
  SeriesMap series_ GUARDED_BY(mu_);
  std::vector<typename SeriesMap::const_pointer> created_ GUARDED_BY(mu_);
};

extern template class Family<Counter>;
extern template class Family<Gauge>;
extern template class Family<Histogram>;

// A family whose series are read when the registry renders, from callbacks
// that list them: figures of things that come and go (a worker's
// connections), which series that live as long as the registry would keep
// long after they went. Counters and gauges only. A callback runs under the
// family's lock, so it must not touch this family; it may read anything
// else. remove() returns only once its callback is not running, and it
// never runs again.
class Collected final : public detail::FamilyBase {
 public:
  struct Sample {
    std::vector<std::string> label_values;  // one per label name, in order
    double value = 0;
  };
  using Collect = std::function<void(std::vector<Sample>& out)>;
  using Id = uint64_t;

  Id add(Collect collect) EXCLUDES(mu_);
  void remove(Id id) EXCLUDES(mu_);

  void render(std::string& out) const override EXCLUDES(mu_);
  void add_totals(FamilyTotal& out) const override EXCLUDES(mu_);

 private:
  friend class Registry;
  using FamilyBase::FamilyBase;

  std::map<Id, Collect> collects_ GUARDED_BY(mu_);
  Id next_id_ GUARDED_BY(mu_) = 1;
};

class Registry {
 public:
  Registry();
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // REQUIRES (each): a valid name (a counter's ends in "_total", no other's
  // does), valid and distinct label names, none "le" for a histogram, and a
  // name either new or registered before with the same type, help and labels.
  Family<Counter>& counter(std::string name, std::string help,
                           std::vector<std::string> label_names = {}) EXCLUDES(mu_);
  Family<Gauge>& gauge(std::string name, std::string help,
                       std::vector<std::string> label_names = {}) EXCLUDES(mu_);
  // REQUIRES also: `buckets` finite and strictly increasing (the +Inf bucket
  // is always there), and the same as before if registered before.
  Family<Histogram>& histogram(std::string name, std::string help,
                               std::vector<std::string> label_names,
                               std::vector<double> buckets = latency_buckets()) EXCLUDES(mu_);

  // A family of counters (`counter`) or gauges read from callbacks
  // (Collected), under the same rules of names.
  Collected& collected(bool counter, std::string name, std::string help,
                       std::vector<std::string> label_names) EXCLUDES(mu_);

  // Every family, in the order registered, each series in the order created.
  std::string render() const EXCLUDES(mu_);

  // Every family, in the order registered, its series added up: what an
  // output without labels shows. A family with no series yet has a total
  // of no series (series == 0).
  std::vector<FamilyTotal> totals() const EXCLUDES(mu_);

 private:
  template <typename Series>
  Family<Series>& add(detail::Type type, std::string name, std::string help,
                      std::vector<std::string> label_names, std::vector<double> bounds)
      EXCLUDES(mu_);

  mutable Mutex mu_;
  std::vector<std::unique_ptr<detail::FamilyBase>> families_ GUARDED_BY(mu_);
};

}  // namespace leasehold::metrics
