#include "movies/sweeper.h"

#include <optional>
#include <thread>
#include <utility>

#include "base/logging.h"
#include "base/mutex.h"
#include "metrics/registry.h"

namespace leasehold::movies {

// The sweeper's counters in a registry.
class SweepMetrics {
 public:
  explicit SweepMetrics(metrics::Registry& r)
      : sweeps_(r.counter("leasehold_movies_sweeps_total",
                          "Sweeps of the movies left unfinished, by outcome: ok, or failed (the "
                          "store or a queue failed; the next sweep tries again)",
                          {"outcome"})),
        repairs_(r.counter("leasehold_movies_sweep_repairs_total",
                           "Movies the sweeps repaired, by repair: probe_requeued, probe_given_up, "
                           "trace_requeued, trace_ended, dead_trace_ended, removal_requeued",
                           {"repair"})) {}

  void add(const SweepReport& r) {
    sweeps_.with({r.errors == 0 ? "ok" : "failed"}).inc();
    const auto repair = [&](const char* name, size_t n) {
      if (n > 0) repairs_.with({name}).inc(static_cast<double>(n));
    };
    repair("probe_requeued", r.probes_requeued);
    repair("probe_given_up", r.probes_given_up);
    repair("trace_requeued", r.traces_requeued);
    repair("trace_ended", r.traces_ended);
    repair("dead_trace_ended", r.dead_traces_ended);
    repair("removal_requeued", r.removals_requeued);
  }

 private:
  metrics::Family<metrics::Counter>& sweeps_;
  metrics::Family<metrics::Counter>& repairs_;
};

class Sweeper::Impl {
 public:
  Impl(Movies& movies, Queue& probe_queue, Clock& clock, Random& random, SweeperOptions options)
      : movies_(movies),
        probe_queue_(probe_queue),
        clock_(clock),
        random_(random),
        options_(std::move(options)) {
    if (options_.metrics != nullptr) metrics_.emplace(*options_.metrics);
  }

  void start() {
    thread_ = std::thread([this] { loop(); });
  }
  void sweep_now() {
    MutexLock lock(mu_);
    woken_ = true;
    cv_.notify_all();
  }
  void stop() {
    {
      MutexLock lock(mu_);
      stopping_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }
  SweeperStats stats() const {
    MutexLock lock(mu_);
    return stats_;
  }

 private:
  void loop();
  // Waits `d` on the clock, or until woken or stopped; false once stopped.
  bool wait(Duration d) EXCLUDES(mu_);
  void sweep_once() EXCLUDES(mu_);

  Movies& movies_;
  Queue& probe_queue_;
  Clock& clock_;
  Random& random_;
  const SweeperOptions options_;
  std::optional<SweepMetrics> metrics_;  // set once, before the thread starts

  mutable Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool woken_ GUARDED_BY(mu_) = false;
  SweeperStats stats_ GUARDED_BY(mu_);
  std::thread thread_;
};

void Sweeper::Impl::loop() {
  // The first sweep within one period of the start: a process started
  // after a crash repairs what it left soon, and processes started
  // together spread out.
  Duration wait_for = std::chrono::duration_cast<Duration>(options_.every * random_.uniform01());
  while (wait(wait_for)) {
    sweep_once();
    wait_for = std::chrono::duration_cast<Duration>(options_.every * (0.5 + random_.uniform01()));
  }
}

bool Sweeper::Impl::wait(Duration d) {
  const MonoTime due = clock_.mono_now() + d;
  MutexLock lock(mu_);
  while (!stopping_ && !woken_ && clock_.mono_now() < due) cv_.wait_until(mu_, clock_, due);
  woken_ = false;
  return !stopping_;
}

void Sweeper::Impl::sweep_once() {
  // The options were checked by start(): the sweep only fails on the store
  // or a queue, which the report counts.
  Result<SweepReport> swept = movies_.sweep(probe_queue_, options_.sweep);
  const SweepReport report = swept.ok() ? std::move(*swept) : SweepReport{};
  if (report.errors > 0) {
    log_to(options_.logger, LogLevel::kWarn, "sweeper {}: {} reads or repairs failed: {}",
           options_.id, report.errors, report.first_error.to_string());
  }
  if (report.repairs() > 0) {
    log_to(options_.logger, LogLevel::kInfo, "sweeper {}: {} movies read, {} repaired", options_.id,
           report.read, report.repairs());
  }
  if (metrics_) metrics_->add(report);
  MutexLock lock(mu_);
  ++stats_.sweeps;
  if (report.errors > 0) ++stats_.failed;
  stats_.repairs += report.repairs();
}

Result<std::unique_ptr<Sweeper>> Sweeper::start(Movies& movies, Queue& probe_queue, Clock& clock,
                                                Random& random, SweeperOptions options) {
  if (options.every <= Duration::zero() || options.sweep.grace <= Duration::zero()) {
    return invalid_argument("the sweep's period and grace must be positive");
  }
  auto impl = std::make_unique<Impl>(movies, probe_queue, clock, random, std::move(options));
  impl->start();
  return std::unique_ptr<Sweeper>(new Sweeper(std::move(impl)));
}

Sweeper::Sweeper(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Sweeper::~Sweeper() { stop(); }
void Sweeper::sweep_now() { impl_->sweep_now(); }
void Sweeper::stop() { impl_->stop(); }
SweeperStats Sweeper::stats() const { return impl_->stats(); }

}  // namespace leasehold::movies
