// Serving: `leasehold serve` as one object — the runtime on a store (its
// store calls metered into the registry, its blocking pool sized for a
// server), the accounts table and Accounts, the stream fleet's tables and
// API (app/fleet_api.h), the App and the Server it runs on — built the same
// way by `serve` and by `bench http`.
//
// The server is stopped first when a Serving is destroyed, then the rest in
// reverse order of building. Its parts are safe for concurrent use as their
// own headers say.
#pragma once

#include <memory>
#include <string>

#include "accounts/accounts.h"
#include "app/app.h"
#include "leasehold/logger.h"
#include "metrics/registry.h"
#include "runtime/runtime.h"
#include "server/server.h"

namespace leasehold::app {

// Store calls wait on the network (DynamoDB) or on SQLite's one writer, so
// more of them than cores may be under way at once.
inline constexpr size_t kBlockingThreads = 16;

struct ServingOptions {
  std::string store_uri;
  // The library's, the app's and the server's log. Not owned; must outlive
  // the Serving.
  Logger* log = nullptr;
  // Where and how to listen; the clock, random source and logger are the
  // runtime's and `log`. TLS when tls_cert_file is set.
  server::ServerOptions server;
};

class Serving {
 public:
  // Opens the store, ensures the accounts table and the fleet's tables
  // (connections, fleet_workers), and starts the server. The
  // store's error, or the server's (kInvalidArgument for a TLS file that
  // cannot be loaded, kUnavailable for an address that cannot be bound).
  static Result<std::unique_ptr<Serving>> start(ServingOptions options);
  ~Serving();
  Serving(const Serving&) = delete;
  Serving& operator=(const Serving&) = delete;

  runtime::Runtime& runtime() { return *runtime_; }
  accounts::Accounts& accounts() { return *accounts_; }
  server::Server& server() { return *server_; }
  // The I/O threads the server runs.
  size_t threads() const { return threads_; }

 private:
  Serving() = default;

  metrics::Registry registry_;
  std::unique_ptr<runtime::Runtime> runtime_;
  std::unique_ptr<accounts::Accounts> accounts_;
  std::unique_ptr<App> app_;
  std::unique_ptr<server::Server> server_;
  size_t threads_ = 0;
};

}  // namespace leasehold::app
