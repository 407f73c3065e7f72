#include "cli/worker_process.h"

#include <boost/json.hpp>

#include "cli/serve.h"
#include "net/endpoint.h"
#include "runtime/stderr_logger.h"
#include "server/http.h"
#include "server/json.h"

namespace leasehold::cli {

Status check_metrics_listen(std::string_view listen) {
  LEASEHOLD_ASSIGN_OR_RETURN(const ListenAddress address, parse_listen(listen));
  if (!net::is_loopback_host(address.host)) {
    return invalid_argument("--metrics-listen must be a loopback address");
  }
  return {};
}

void HealthCheck::set(std::function<Health()> check) {
  MutexLock lock(mu_);
  check_ = std::move(check);
}

Health HealthCheck::run() const {
  MutexLock lock(mu_);  // held while it runs, so that set() waits for it
  return check_ ? check_() : Health{};
}

namespace {

// Adds the two routes to `router` and starts the server on `listen`.
// REQUIRES: registry and router outlive the server.
Result<std::unique_ptr<server::Server>> start_metrics_server(std::string_view listen,
                                                             metrics::Registry& registry,
                                                             const HealthCheck& health,
                                                             server::Router& router, Logger* log) {
  LEASEHOLD_ASSIGN_OR_RETURN(const ListenAddress address, parse_listen(listen));
  const server::RouteOptions open_inline{.access = server::Access::kPublic, .blocking = false};
  router.add(
      "GET", "/metrics",
      [&registry](server::Request&) {
        server::Response r;
        r.body = registry.render();
        r.set_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
        return r;
      },
      open_inline);
  router.add(
      "GET", "/healthz",
      [&health](server::Request&) {
        const Health h = health.run();
        boost::json::object body{{"status", h.ok ? "ok" : "failing"},
                                 {"problems", server::json_array(h.problems, [](const auto& p) {
                                    return boost::json::string(p);
                                  })}};
        for (const auto& [name, value] : h.figures) body[name] = value;
        server::Response r;
        r.status = h.ok ? 200 : 503;
        r.body = boost::json::serialize(body);
        r.set_header("Content-Type", "application/json");
        r.set_header("Cache-Control", "no-store");
        return r;
      },
      open_inline);
  server::ServerOptions o;
  o.host = address.host;
  o.port = address.port;
  o.threads = 1;
  o.logger = log;
  server::ServerHooks hooks;
  hooks.submit_blocking = [](std::function<void()>) { return false; };  // no route blocks
  return server::Server::start(std::move(o), router, std::move(hooks));
}

}  // namespace

Result<std::unique_ptr<WorkerProcess>> start_worker_process(const std::string& store_uri,
                                                            bool verbose,
                                                            const std::string& metrics_listen) {
  auto p = std::make_unique<WorkerProcess>();
  p->log = runtime::make_json_stderr_logger(verbose ? LogLevel::kDebug : LogLevel::kInfo);
  runtime::RuntimeOptions ro;
  ro.store_uri = store_uri;
  ro.logger = p->log.get();
  ro.metrics = &p->registry;
  LEASEHOLD_ASSIGN_OR_RETURN(p->runtime, runtime::Runtime::open(std::move(ro)));
  if (!metrics_listen.empty()) {
    LEASEHOLD_ASSIGN_OR_RETURN(
        p->metrics_server,
        start_metrics_server(metrics_listen, p->registry, p->health, p->router, p->log.get()));
  }
  return p;
}

void wait_for_stop_signal(const sigset_t& stop_signals, Logger& log) {
  int signal = 0;
  sigwait(&stop_signals, &signal);
  const LogField stopping[] = {
      {"signal", std::string_view(signal == SIGINT ? "SIGINT" : "SIGTERM")}};
  log.log_fields(LogLevel::kInfo, "stopping", stopping);
}

}  // namespace leasehold::cli
