// --metrics-format, --metrics-every and --metrics-namespace, shared by
// `worker`, `serve` and `trace-worker`; and EmfReporter, which prints the
// process's metrics on stdout as CloudWatch embedded metric format lines
// (metrics/emf.h) with `--metrics-format emf`: one document (or more, past
// 100 metrics) every --metrics-every, and the last interval's when the
// process stops cleanly, so that a SIGTERM loses nothing counted.
//
// EmfReporter runs a thread of its own; start() and stop() are called from
// one thread (the main one).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "base/mutex.h"
#include "fleet/sink.h"
#include "leasehold/clock.h"
#include "leasehold/logger.h"
#include "leasehold/status.h"
#include "metrics/emf.h"
#include "metrics/registry.h"

namespace CLI {
class App;
}

namespace leasehold::cli {

inline constexpr Duration kMetricsEveryMin = std::chrono::seconds(1);

struct MetricsOutputArgs {
  std::string format = "prometheus";
  std::string every = "60s";
  std::string metrics_namespace = "Leasehold";
};

void add_metrics_output_flags(CLI::App& sub, MetricsOutputArgs& a);

struct MetricsOutput {
  bool emf = false;  // print EMF lines on stdout (GET /metrics is served as before)
  Duration every{};
  std::string metrics_namespace;
};

// The flags, checked: kInvalidArgument naming the flag for a format other
// than prometheus or emf, an interval below 1s or not a duration, or a name
// CloudWatch refuses as a namespace. Checked whatever the format.
Result<MetricsOutput> parse_metrics_output(const MetricsOutputArgs& a);

class EmfReporter {
 public:
  struct Options {
    Duration every{};  // REQUIRES: >= kMetricsEveryMin
    metrics::EmfOptions emf;
    // Writes whole lines at once, never interleaved with the stream's other
    // writers (a worker's stdout sink shares its lock). Its error is logged.
    std::function<Status(std::string_view lines)> write;
    // Called on the reporter's thread before each line (the figures a line
    // reads from elsewhere are refreshed there); may be empty.
    std::function<void()> before_line;
    Logger* log = nullptr;
  };

  // Starts the thread. REQUIRES: registry and clock outlive the reporter.
  EmfReporter(const metrics::Registry& registry, Clock& clock, Options options);
  ~EmfReporter();  // stop()
  EmfReporter(const EmfReporter&) = delete;
  EmfReporter& operator=(const EmfReporter&) = delete;

  // Prints the last line (what was counted since the one before), then
  // returns once the thread has ended. Idempotent.
  void stop() EXCLUDES(mu_);

 private:
  void run() EXCLUDES(mu_);
  void print_line();

  Clock& clock_;
  const Options options_;
  metrics::EmfRenderer renderer_;  // the thread's only
  Mutex mu_;
  CondVar wake_;
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// The reporter of a process whose Service dimension is `service`, printing
// on `stdout_sink` (the worker's sink when it is stdout, so that its lines
// and the EMF lines never interleave) or, if null, on a stdout of its own;
// null if `output` is not emf. The sink's error if stdout cannot be used.
// REQUIRES: registry, clock and a sink given outlive the reporter.
Result<std::unique_ptr<EmfReporter>> start_emf_output(
    const MetricsOutput& output, std::string_view service, const metrics::Registry& registry,
    Clock& clock, fleet::Sink* stdout_sink, std::function<void()> before_line, Logger* log);

}  // namespace leasehold::cli
