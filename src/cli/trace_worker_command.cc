#include "cli/trace_worker_command.h"

#include <signal.h>

#include <CLI/CLI.hpp>
#include <filesystem>

#include "base/duration.h"
#include "cli/common.h"
#include "cli/permissions.h"
#include "cli/serve.h"
#include "cli/worker_process.h"
#include "movies/service.h"
#include "sqs/sqs_queue.h"

namespace leasehold::cli {
namespace {

constexpr Duration kSweepEveryMin = std::chrono::milliseconds(100);

// A lease ttl for the movies' leases, checked with the lease layer's timing
// rules (default configuration) at the default renew period.
Result<Duration> movie_ttl(std::string_view flag, const std::string& text) {
  Result<Duration> ttl = parse_duration(text);
  if (!ttl.ok()) return invalid_argument(std::string(flag) + ": " + ttl.status().message());
  const LeaseConfig config;
  if (const Status ok = check_timing(config, *ttl, validity(config, *ttl) / 3); !ok.ok()) {
    return invalid_argument(std::string(flag) + " " + text + ": " + ok.message());
  }
  return ttl;
}

}  // namespace

Result<std::string> queue_uri(const std::string& flag) {
  if (flag == "store") return std::string();
  if (!sqs::is_sqs_uri(flag)) {
    return invalid_argument("--queue must be `store` or sqs://REGION/NAME[?endpoint=URL], not '" +
                            flag + "'");
  }
  Result<sqs::SqsQueueOptions> parsed = sqs::parse_sqs_uri(flag);
  if (!parsed.ok()) return invalid_argument("--queue: " + parsed.status().message());
  return flag;
}

void add_movies_flags(CLI::App& sub, MoviesArgs& a) {
  sub.add_option("--media-dir", a.media_dir,
                 "Where movie files are kept, shared by `serve` and `trace-worker`: a folder, or "
                 "s3://BUCKET/PREFIX[?endpoint=URL][&region=REGION]")
      ->capture_default_str();
  sub.add_option("--queue", a.queue,
                 "Where trace and probe jobs queue: `store` (the store's queue table) or "
                 "sqs://REGION/NAME[?endpoint=URL] (the SQS queues NAME-movie-trace and "
                 "NAME-movie-probe, made by `store init --queue`)")
      ->capture_default_str();
  sub.add_option("--analysis-lease-ttl", a.analysis_lease_ttl,
                 "How long a browser's analysis lease lasts without a heartbeat")
      ->capture_default_str();
  sub.add_option("--tracing-lease-ttl", a.tracing_lease_ttl,
                 "How long a trace's lease lasts without renewal (a dead worker's trace is "
                 "failed, and the movie free, after this)")
      ->capture_default_str();
  sub.add_option("--trace-workers", a.trace_workers,
                 "Traces run at once in this process (0: none here)")
      ->capture_default_str();
  sub.add_option("--trace-progress-deadline", a.trace_progress_deadline,
                 "The longest a trace may go without writing a frame (a decode stuck in a "
                 "broken file) before it is stopped and published as failed")
      ->capture_default_str();
  sub.add_option("--sweep-every", a.sweep_every,
                 "How often this process sweeps the movies left unfinished by a crash "
                 "(processing, queued, tracing or deleting past their bound) and repairs them; "
                 "0 never (other processes still do)")
      ->capture_default_str();
  sub.add_option("--sweep-grace", a.sweep_grace,
                 "How long a movie's probe or removal may show no sign of life before the sweep "
                 "queues it again, and a queued trace may wait once queued again before it is "
                 "failed")
      ->capture_default_str();
}

Result<app::MoviesServingOptions> movies_serving_options(const MoviesArgs& a) {
  app::MoviesServingOptions o;
  if (a.media_dir.empty()) return invalid_argument("--media-dir must not be empty");
  if (movies::is_s3_media(a.media_dir)) {
    const Status valid = movies::validate_media(a.media_dir);
    if (!valid.ok()) return invalid_argument("--media-dir: " + valid.message());
  }
  o.media_dir = a.media_dir;
  LEASEHOLD_ASSIGN_OR_RETURN(o.queue, queue_uri(a.queue));
  LEASEHOLD_ASSIGN_OR_RETURN(o.analysis_ttl,
                             movie_ttl("--analysis-lease-ttl", a.analysis_lease_ttl));
  LEASEHOLD_ASSIGN_OR_RETURN(o.tracing_ttl, movie_ttl("--tracing-lease-ttl", a.tracing_lease_ttl));
  if (a.trace_workers > movies::kWorkersMax) {
    return invalid_argument("--trace-workers must be 0.." + std::to_string(movies::kWorkersMax));
  }
  o.trace_workers = a.trace_workers;
  Result<Duration> deadline = parse_duration(a.trace_progress_deadline);
  if (!deadline.ok() || *deadline < std::chrono::seconds(1)) {
    return invalid_argument("--trace-progress-deadline must be a duration of at least 1s");
  }
  o.trace_progress_deadline = *deadline;
  Result<Duration> every =
      a.sweep_every == "0" ? Result<Duration>(Duration::zero()) : parse_duration(a.sweep_every);
  if (!every.ok() || (*every != Duration::zero() && *every < kSweepEveryMin)) {
    return invalid_argument("--sweep-every must be 0 (no sweep) or a duration of at least 100ms");
  }
  o.sweep_every = *every;
  Result<Duration> grace = parse_duration(a.sweep_grace);
  if (!grace.ok() || *grace < std::chrono::seconds(1)) {
    return invalid_argument("--sweep-grace must be a duration of at least 1s");
  }
  o.sweep_grace = *grace;
  return o;
}

CLI::App* add_trace_worker_command(CLI::App& app, TraceWorkerArgs& a) {
  CLI::App* w = app.add_subcommand(
      "trace-worker",
      "Run movie traces (and probe uploads) from the queue, beside `serve`, on the same store "
      "and media folder");
  add_movies_flags(*w, a.movies);
  w->add_option("--metrics-listen", a.metrics_listen,
                "Serve GET /metrics and /healthz on HOST:PORT (loopback)");
  add_metrics_output_flags(*w, a.metrics_output);
  return w;
}

int run_trace_worker(const TraceWorkerArgs& args, const std::string& store_uri, bool verbose) {
  Result<app::MoviesServingOptions> options = movies_serving_options(args.movies);
  if (!options.ok()) return report(options.status());
  std::error_code ec;
  if (!movies::is_s3_media(options->media_dir) &&
      !std::filesystem::is_directory(options->media_dir, ec)) {
    return report(invalid_argument("--media-dir '" + options->media_dir +
                                   "' is not a folder (`leasehold serve` makes it)"));
  }
  if (!args.metrics_listen.empty()) {
    if (const Status ok = check_metrics_listen(args.metrics_listen); !ok.ok()) return report(ok);
  }
  const Result<MetricsOutput> metrics_output = parse_metrics_output(args.metrics_output);
  if (!metrics_output.ok()) return report(metrics_output.status());
  limit_to_process_permissions("trace-worker");
  const sigset_t stop_signals = block_stop_signals();
  auto process = start_worker_process(store_uri, verbose, args.metrics_listen);
  if (!process.ok()) return report(process.status());
  WorkerProcess& p = **process;
  runtime::Runtime& rt = *p.runtime;
  auto service = movies::Service::start(
      rt.store(), rt.clock(), rt.random(),
      app::movies_service_options(*options, "trace-worker", rt.leases().config(), p.log.get(),
                                  &p.registry));
  if (!service.ok()) return report(service.status());
  const LogField started[] = {{"trace_workers", static_cast<int64_t>(options->trace_workers)},
                              {"store", std::string_view(rt.store().backend_name())},
                              {"media_dir", std::string_view(options->media_dir)},
                              {"metrics_port", static_cast<int64_t>(p.metrics_port())}};
  p.log->log_fields(LogLevel::kInfo, "trace worker started", started);
  auto emf = start_emf_output(*metrics_output, "trace-worker", p.registry, rt.clock(), nullptr,
                              nullptr, p.log.get());
  if (!emf.ok()) return report(emf.status());

  wait_for_stop_signal(stop_signals, *p.log);
  (*service)->stop();
  if (*emf) (*emf)->stop();  // the last line, with what the stop counted
  p.log->log(LogLevel::kInfo, "stopped");
  return kExitOk;
}

}  // namespace leasehold::cli
