#include "cli/metrics_output.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cassert>

#include "base/duration.h"
#include "base/logging.h"

namespace leasehold::cli {

void add_metrics_output_flags(CLI::App& sub, MetricsOutputArgs& a) {
  sub.add_option("--metrics-format", a.format,
                 "prometheus: metrics only at GET /metrics (where served); emf: also one "
                 "CloudWatch embedded metric format JSON line on stdout every --metrics-every, "
                 "and one when stopped")
      ->capture_default_str();
  sub.add_option("--metrics-every", a.every,
                 "With --metrics-format emf, the interval each line covers (at least 1s)")
      ->capture_default_str();
  sub.add_option("--metrics-namespace", a.metrics_namespace,
                 "With --metrics-format emf, the CloudWatch namespace of the metrics")
      ->capture_default_str();
}

Result<MetricsOutput> parse_metrics_output(const MetricsOutputArgs& a) {
  MetricsOutput out;
  if (a.format != "prometheus" && a.format != "emf") {
    return invalid_argument("--metrics-format must be prometheus or emf, not '" + a.format + "'");
  }
  out.emf = a.format == "emf";
  Result<Duration> every = parse_duration(a.every);
  if (!every.ok()) return invalid_argument("--metrics-every: " + every.status().message());
  if (*every < kMetricsEveryMin) {
    return invalid_argument("--metrics-every must be at least 1s, not " + a.every);
  }
  out.every = *every;
  if (const Status ok = metrics::check_emf_namespace(a.metrics_namespace); !ok.ok()) {
    return invalid_argument("--metrics-namespace '" + a.metrics_namespace + "': " + ok.message());
  }
  out.metrics_namespace = a.metrics_namespace;
  return out;
}

EmfReporter::EmfReporter(const metrics::Registry& registry, Clock& clock, Options options)
    : clock_(clock), options_(std::move(options)), renderer_(registry, options_.emf) {
  assert(options_.every >= kMetricsEveryMin && options_.write);
  thread_ = std::thread([this] { run(); });
}

EmfReporter::~EmfReporter() { stop(); }

void EmfReporter::stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void EmfReporter::run() {
  MonoTime next = clock_.mono_now() + options_.every;
  for (;;) {
    {
      MutexLock lock(mu_);
      while (!stopping_ && clock_.mono_now() < next) wake_.wait_until(mu_, clock_, next);
      if (stopping_) break;
    }
    print_line();
    // A line that was late does not make the next one early.
    next = std::max(next + options_.every, clock_.mono_now() + options_.every / 2);
  }
  print_line();  // the rest of the interval, up to the stop
}

void EmfReporter::print_line() {
  if (options_.before_line) options_.before_line();
  const std::string lines = renderer_.render(to_unix_ms(clock_.wall_now()));
  if (lines.empty()) return;
  if (const Status written = options_.write(lines); !written.ok()) {
    log_to(options_.log, LogLevel::kWarn, "printing the EMF metrics line: {}", written.message());
  }
}

Result<std::unique_ptr<EmfReporter>> start_emf_output(
    const MetricsOutput& output, std::string_view service, const metrics::Registry& registry,
    Clock& clock, fleet::Sink* stdout_sink, std::function<void()> before_line, Logger* log) {
  if (!output.emf) return std::unique_ptr<EmfReporter>();
  std::shared_ptr<fleet::Sink> own;
  if (stdout_sink == nullptr) {
    LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<fleet::Sink> opened, fleet::open_sink("stdout"));
    own = std::move(opened);
    stdout_sink = own.get();
  }
  EmfReporter::Options o;
  o.every = output.every;
  o.emf.metrics_namespace = output.metrics_namespace;
  o.emf.service = std::string(service);
  o.write = [own, stdout_sink](std::string_view lines) {
    size_t written = 0;
    return stdout_sink->write_lines(lines, &written);
  };
  o.before_line = std::move(before_line);
  o.log = log;
  return std::make_unique<EmfReporter>(registry, clock, std::move(o));
}

}  // namespace leasehold::cli
