// Serving: `leasehold serve` as one object — the runtime on a store (its
// store calls metered into the registry, its blocking pool sized for a
// server), the accounts table and Accounts, the stream fleet's tables and
// API (app/fleet_api.h), the movie tracing service (its tables, its two job
// queues, Movies, its API in app/movies_api.h, and the probe and trace
// workers it runs in-process unless told not to), the App and the Server it
// runs on — built the same way by `serve` and by `bench http`.
//
// The server is stopped first when a Serving is destroyed (or stop() is
// called), then the movie workers (a trace under way is published as
// interrupted), then the rest in reverse order of building. Its parts are
// safe for concurrent use as their own headers say.
#pragma once

#include <memory>
#include <string>

#include "accounts/accounts.h"
#include "app/app.h"
#include "app/fleet_api.h"
#include "app/movies_api.h"
#include "leasehold/logger.h"
#include "metrics/registry.h"
#include "movies/service.h"
#include "runtime/runtime.h"
#include "server/server.h"

namespace leasehold::app {

// Store calls wait on the network (DynamoDB) or on SQLite's one writer, so
// more of them than cores may be under way at once.
inline constexpr size_t kBlockingThreads = 16;

// The movie tracing service of a Serving (and of `leasehold trace-worker`).
struct MoviesServingOptions {
  // Where movie files are kept: a folder, created if missing, or
  // "s3://BUCKET/PREFIX[?endpoint=URL]" (movies/media.h). Uploads stream
  // into kUploadsFolder of the media's work folder (for a folder, the folder
  // itself: a kept upload is renamed, not copied).
  std::string media_dir = "media";
  // Where jobs queue: empty for the store, or an SQS URI (movies::ServiceOptions::queue).
  std::string queue;
  Duration analysis_ttl = movies::kDefaultLeaseTtl;
  Duration tracing_ttl = movies::kDefaultLeaseTtl;
  uint64_t upload_bytes_max = kUploadBytesMaxDefault;
  size_t trace_workers = 1;  // run in this process; 0: traces run elsewhere
  size_t probe_workers = 1;  // likewise for the probes of uploads
  int trace_nice = 10;       // the trace workers' nice value (movies/trace_worker.h)
  // TraceWorkerOptions::progress_deadline.
  Duration trace_progress_deadline = std::chrono::minutes(2);
  // The sweep of movies left unfinished (movies::ServiceOptions).
  Duration sweep_every = std::chrono::minutes(1);
  Duration sweep_grace = movies::kDefaultSweepGrace;
};

// The movies service's options for a process, its workers named after the
// host and the process ID (kind "serve" or "trace-worker"), counting into
// `metrics` (may be null).
movies::ServiceOptions movies_service_options(const MoviesServingOptions& options,
                                              std::string_view kind, const LeaseConfig& lease,
                                              Logger* log, metrics::Registry* metrics);

inline constexpr char kUploadsFolder[] = ".uploads";
// An `*.upload` file in the uploads folder not written to for this long is
// left by a process that died mid-upload (a live upload writes a byte at
// least every transfer_idle_timeout): start() removes it.
inline constexpr Duration kStaleUploadAge = std::chrono::minutes(10);

struct ServingOptions {
  std::string store_uri;
  // The library's, the app's and the server's log. Not owned; must outlive
  // the Serving.
  Logger* log = nullptr;
  // Where and how to listen; the clock, random source and logger are the
  // runtime's and `log`. TLS when tls_cert_file is set.
  server::ServerOptions server;
  MoviesServingOptions movies;
};

class Serving {
 public:
  // Opens the store, ensures the accounts table, the fleet's tables
  // (connections, fleet_workers) and the movies' (movies, movie_frames,
  // movie_audit, queue_messages), prepares the media folder, starts the
  // movie workers and then the server. The store's error, the media
  // folder's (kInvalidArgument when it cannot be made), or the server's
  // (kInvalidArgument for a TLS file that cannot be loaded, kUnavailable for
  // an address that cannot be bound).
  static Result<std::unique_ptr<Serving>> start(ServingOptions options);
  ~Serving();  // stop()
  // Stops the server (draining requests in flight), then the movie workers.
  // Idempotent. REQUIRES: not called from a handler.
  void stop();
  Serving(const Serving&) = delete;
  Serving& operator=(const Serving&) = delete;

  runtime::Runtime& runtime() { return *runtime_; }
  accounts::Accounts& accounts() { return *accounts_; }
  movies::Service& movies() { return *movies_; }
  server::Server& server() { return *server_; }
  // The metrics GET /metrics shows (and `serve --metrics-format emf` prints).
  metrics::Registry& registry() { return registry_; }
  // Reads the fleet summary if its last read is stale, so that its gauges
  // in the registry (leasehold_fleet_connections_started, ..._streaming,
  // ..._not_streaming; app/fleet_api.h) are fresh. The store's error.
  // Thread-safe.
  Status read_fleet_figures() { return fleet_figures_(); }
  // The I/O threads the server runs.
  size_t threads() const { return threads_; }

 private:
  Serving() = default;
  Status start_movies(const MoviesServingOptions& options, Logger& log);

  metrics::Registry registry_;
  std::unique_ptr<runtime::Runtime> runtime_;
  std::unique_ptr<accounts::Accounts> accounts_;
  std::unique_ptr<movies::Service> movies_;
  std::unique_ptr<App> app_;
  FleetFigures fleet_figures_;
  std::unique_ptr<server::Server> server_;
  size_t threads_ = 0;
};

}  // namespace leasehold::app
