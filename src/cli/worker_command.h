// `leasehold worker`: one member of the stream fleet (fleet/worker.h) on the
// runtime's store, streaming to a sink until SIGTERM or SIGINT, then handing
// every connection over. With --metrics-listen it also serves GET /metrics
// (the worker's metrics and the store's) and GET /healthz; with
// --metrics-format emf it prints them on stdout too (cli/metrics_output.h),
// through the stdout sink's lock when that is its sink.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "cli/metrics_output.h"
#include "leasehold/status.h"

namespace CLI {
class App;
}

namespace leasehold::cli {

struct WorkerArgs {
  std::optional<std::string> id;  // none: default_worker_id() at start
  size_t max_connections = 1000;
  std::string lease_ttl;            // empty: 20s, or 2h with a session
  std::string renew_every;          // empty: 5s, or 40m with a session
  std::string session_ttl = "3s";   // 0: no session
  std::string session_renew_every;  // empty: a third of the session's validity
  std::string reconcile_every = "2s";
  std::string checkpoint_every;  // empty: the renew period, or 5s with a session
  std::string poll_every;        // empty: every reconcile, or 10s with a session on DynamoDB
  std::string nudge_read_every;  // empty: 0.6 session heartbeat periods
  std::string max_clock_skew = "500ms";
  std::string stall_after = "60s";
  std::string sink = "stdout";
  std::string metrics_listen;  // empty: no metrics server
  std::string ca_file;         // PEM CAs for wss:// instead of the system store
  MetricsOutputArgs metrics_output;
};

// Adds the `worker` subcommand to `app`, filling `args`.
CLI::App* add_worker_command(CLI::App& app, WorkerArgs& args);

// Every rule on the flags, before anything is opened.
Status check_worker(const WorkerArgs& args);

// Runs until SIGTERM or SIGINT; returns the exit code.
int run_worker(const WorkerArgs& args, const std::string& store_uri, bool verbose);

}  // namespace leasehold::cli
