// The small HTTP server a worker process (`leasehold worker`,
// `leasehold trace-worker`) runs with --metrics-listen: GET /metrics (the
// process's registry, Prometheus text format) and GET /healthz, answered on
// one I/O thread, loopback only.
#pragma once

#include <memory>
#include <string_view>

#include "leasehold/logger.h"
#include "leasehold/status.h"
#include "metrics/registry.h"
#include "server/router.h"
#include "server/server.h"

namespace leasehold::cli {

// kInvalidArgument, naming --metrics-listen, unless `listen` is a loopback
// HOST:PORT.
Status check_metrics_listen(std::string_view listen);

// Adds the two routes to `router` and starts the server on `listen`
// (checked by check_metrics_listen). REQUIRES: registry and router outlive
// the server.
Result<std::unique_ptr<server::Server>> start_metrics_server(std::string_view listen,
                                                             metrics::Registry& registry,
                                                             server::Router& router, Logger* log);

}  // namespace leasehold::cli
