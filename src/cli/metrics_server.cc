#include "cli/metrics_server.h"

#include "cli/serve.h"
#include "net/endpoint.h"
#include "server/http.h"

namespace leasehold::cli {

Status check_metrics_listen(std::string_view listen) {
  ASSIGN_OR_RETURN(const ListenAddress address, parse_listen(listen));
  if (!net::is_loopback_host(address.host)) {
    return invalid_argument("--metrics-listen must be a loopback address");
  }
  return {};
}

Result<std::unique_ptr<server::Server>> start_metrics_server(std::string_view listen,
                                                             metrics::Registry& registry,
                                                             server::Router& router, Logger* log) {
  ASSIGN_OR_RETURN(const ListenAddress address, parse_listen(listen));
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
      [](server::Request&) {
        server::Response r;
        r.body = "{\"status\":\"ok\"}";
        r.set_header("Content-Type", "application/json");
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

}  // namespace leasehold::cli
