// The stream fleet's HTTP API, under /api/fleet/: the connections (listed by
// any signed-in user; added, started, stopped and removed by admins) and the
// workers' membership, for the Fleet page and for scripts.
//
//   GET    /api/fleet/connections             user   {now_ms, connections: [...]}
//   POST   /api/fleet/connections             admin  201 the connection added
//   POST   /api/fleet/connections/{id}/start  admin  200 the connection
//   POST   /api/fleet/connections/{id}/stop   admin  200 the connection
//   DELETE /api/fleet/connections/{id}        admin  200 {id, removed: true}
//   GET    /api/fleet/workers                 user   {now_ms, workers: [...]}
//   GET    /api/fleet/summary                 user   {connections, workers, free, more_free}
//
// Every list carries the server's wall clock (now_ms), so that a page counts
// leases down against the server's time, not its own. The summary
// (fleet/summary.h) carries none: it is read once a second at most however
// many ask, and answered 304 to a poll whose If-None-Match names it. On a
// store that bills reads (DynamoDB), the summary (with the workers) and
// each page of connections are read again only as often as their last
// read's cost allows (docs/server.md, "How often the fleet API reads the
// store"); a page says when it was read (Leasehold-Read-At-Ms). A
// connection's ws_url may carry a credential in its query: users other
// than admins get it with the query replaced by "?…", and nobody gets the
// lease token. Each handler validates its input, calls fleet/connections.h,
// fleet/members.h or fleet/summary.h, and maps the Status through
// server/errors.h. docs/server.md lists the fields and statuses.
//
// The handlers call the store, so they are blocking routes (they run on the
// server's pool); they hold references and the summary's last answer
// (under a mutex), and are safe on many threads.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "leasehold/clock.h"
#include "leasehold/logger.h"
#include "leasehold/store.h"
#include "metrics/registry.h"
#include "server/router.h"

namespace leasehold::app {

// The summary's connection figures as gauges, for the metrics of `serve`:
// what the last summary read from the store said, by a request or by
// FleetFigures; nothing before the first read. Rendering them never reads
// the store.
inline constexpr char kStartedGauge[] = "leasehold_fleet_connections_started";
inline constexpr char kStreamingGauge[] = "leasehold_fleet_connections_streaming";
inline constexpr char kNotStreamingGauge[] = "leasehold_fleet_connections_not_streaming";

// Reads the summary, as GET /api/fleet/summary does (from the store only
// if its last read is stale: at most once a second, or as its cost paces
// it on DynamoDB), so that the gauges above are fresh. The store's error.
// Thread-safe.
using FleetFigures = std::function<Status()>;

// Adds the routes above to `router`, and the gauges above to `metrics` if
// it is not null. A store failure behind a 5xx answer is logged to `log`
// with the request's ID (the answer names only the ID). Returns the read
// that refreshes the gauges.
// REQUIRES: store, clock and log outlive the router and what is returned;
// the store has the tables fleet::connections_table_spec() and
// fleet::workers_table_spec() (Serving ensures them).
FleetFigures add_fleet_routes(server::Router& router, ItemStore& store, Clock& clock, Logger& log,
                              metrics::Registry* metrics = nullptr);

// `url` with everything from its first '?' replaced by "?…" ("wss://h/s?…");
// a URL without a query is returned as it is.
std::string redact_url_query(std::string_view url);

}  // namespace leasehold::app
