// `leasehold trace-worker`: the movie tracing service's workers
// (movies/service.h) as a process of their own, against the same store and
// media folder as `leasehold serve`: trace workers that run the queued
// traces, and a probe worker that probes uploads. Runs until SIGTERM or
// SIGINT; a trace under way is then published as interrupted. With
// --metrics-listen it also serves GET /metrics and GET /healthz.
//
// The flags shared with `serve` (MoviesArgs) are defined here too.
#pragma once

#include <cstddef>
#include <string>

#include "app/serving.h"
#include "cli/metrics_output.h"
#include "leasehold/status.h"

namespace CLI {
class App;
}

namespace leasehold::cli {

// The movie flags of `serve` and `trace-worker`.
struct MoviesArgs {
  std::string media_dir = "media";  // relative to the working directory
  std::string queue = "store";      // or sqs://REGION/NAME[?endpoint=URL]
  std::string analysis_lease_ttl = "15m";
  std::string tracing_lease_ttl = "15m";
  size_t trace_workers = 1;
  std::string trace_progress_deadline = "2m";
  std::string sweep_every = "1m";
  std::string sweep_grace = "5m";
};

// Adds --media-dir, --queue, --analysis-lease-ttl, --tracing-lease-ttl,
// --trace-workers, --trace-progress-deadline, --sweep-every and
// --sweep-grace to `sub`.
void add_movies_flags(CLI::App& sub, MoviesArgs& args);

// --queue checked: "" for `store`, else the SQS URI (kInvalidArgument for
// anything else).
Result<std::string> queue_uri(const std::string& flag);

// The flags checked (kInvalidArgument naming the flag: a ttl the leases
// cannot use, too many workers) and turned into options.
Result<app::MoviesServingOptions> movies_serving_options(const MoviesArgs& args);

struct TraceWorkerArgs {
  MoviesArgs movies;
  std::string metrics_listen;  // empty: no metrics server
  MetricsOutputArgs metrics_output;
};

CLI::App* add_trace_worker_command(CLI::App& app, TraceWorkerArgs& args);

// Runs until SIGTERM or SIGINT; returns the exit code.
int run_trace_worker(const TraceWorkerArgs& args, const std::string& store_uri, bool verbose);

}  // namespace leasehold::cli
