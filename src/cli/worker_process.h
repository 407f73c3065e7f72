// What a worker process (`leasehold worker`, `leasehold trace-worker`) runs
// on, built the same way by both: its JSON log on stderr, its metrics
// registry, the runtime on the store (its calls metered into the registry),
// and with --metrics-listen a small HTTP server on one I/O thread, loopback
// only: GET /metrics (the registry, Prometheus text format) and GET
// /healthz (what the process's health check says: 200 when it does its job,
// 503 saying what is wrong when not). And the wait for SIGTERM or SIGINT
// that ends such a process.
//
// Used from the main thread only.
#pragma once

#include <signal.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "leasehold/logger.h"
#include "leasehold/status.h"
#include "metrics/registry.h"
#include "runtime/runtime.h"
#include "server/router.h"
#include "server/server.h"

namespace leasehold::cli {

// What /healthz answers: whether the process does its job, what is wrong
// if not, and its figures; the body is {"status","problems",<figures>...}.
struct Health {
  bool ok = true;
  std::vector<std::string> problems;
  std::vector<std::pair<std::string, int64_t>> figures;
};

// The process's health check, called on the metrics server's thread. Until
// one is set (and after it is cleared) /healthz answers ok.
class HealthCheck {
 public:
  void set(std::function<Health()> check) EXCLUDES(mu_);
  Health run() const EXCLUDES(mu_);

 private:
  mutable Mutex mu_;
  std::function<Health()> check_ GUARDED_BY(mu_);
};

// Members in the order they are built; destroyed in reverse (the metrics
// server first, the log last).
struct WorkerProcess {
  std::unique_ptr<Logger> log;
  metrics::Registry registry;
  HealthCheck health;
  std::unique_ptr<runtime::Runtime> runtime;
  server::Router router;
  std::unique_ptr<server::Server> metrics_server;  // null without --metrics-listen

  uint16_t metrics_port() const { return metrics_server ? metrics_server->port() : 0; }
};

// Opens the runtime on `store_uri` and starts the metrics server on
// `metrics_listen` unless it is empty (checked by check_metrics_listen).
// The runtime's or the server's error.
Result<std::unique_ptr<WorkerProcess>> start_worker_process(const std::string& store_uri,
                                                            bool verbose,
                                                            const std::string& metrics_listen);

// Waits for SIGTERM or SIGINT (blocked by block_stop_signals(), cli/serve.h)
// and logs `stopping` with the signal's name.
void wait_for_stop_signal(const sigset_t& stop_signals, Logger& log);

// kInvalidArgument, naming --metrics-listen, unless `listen` is a loopback
// HOST:PORT.
Status check_metrics_listen(std::string_view listen);

}  // namespace leasehold::cli
