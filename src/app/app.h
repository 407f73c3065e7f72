// App: what `leasehold serve` answers, on a Server (server.h). It builds the
// Router — sign-in and sessions, /api/me, the admin's /api/users,
// /healthz, /readyz, /metrics and the web shell's static files — and the
// hooks the transport calls: authentication (a bearer token, or the session
// cookie with an Origin check on writes), the access log and the HTTP
// metrics, and the runtime's BlockingPool for handlers that call the store.
// A bearer token is checked on the I/O thread when the runtime's store
// reads_are_local() (a token check only reads), on the pool otherwise; a
// session cookie always on the pool (its check may write: the expiry
// slides).
//
// Later services add their routes to router() before the server starts.
//
// Thread-safe once built: handlers and hooks run on many threads at once.
#pragma once

#include <memory>
#include <string>

#include "accounts/accounts.h"
#include "leasehold/logger.h"
#include "metrics/registry.h"
#include "runtime/runtime.h"
#include "server/router.h"
#include "server/server.h"

namespace leasehold::app {

struct AppOptions {
  // The server speaks TLS: cookies get Secure, and the expected Origin is
  // https (also, on plain HTTP, for a request a TLS proxy forwarded with
  // X-Forwarded-Proto: https).
  bool tls = false;
  std::string accounts_table = "accounts";  // read by /readyz
};

class App {
 public:
  // REQUIRES: everything given outlives the app, registry is the one the
  // runtime reports its store metrics to, and accounts keeps its table in
  // the runtime's store.
  App(runtime::Runtime& runtime, accounts::Accounts& accounts, metrics::Registry& registry,
      Logger& log, AppOptions options);
  ~App();
  App(const App&) = delete;
  App& operator=(const App&) = delete;

  server::Router& router();
  server::ServerHooks hooks();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace leasehold::app
