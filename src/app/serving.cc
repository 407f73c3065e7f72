#include "app/serving.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <thread>

#include "app/fleet_api.h"
#include "base/logging.h"
#include "fleet/members.h"
#include "fleet/schema.h"
#include "movies/schema.h"

namespace leasehold::app {
namespace {

namespace fs = std::filesystem;

// Makes the media folder, if the media are a folder.
Status make_media_folder(const std::string& media_dir) {
  if (movies::is_s3_media(media_dir)) return {};
  std::error_code ec;
  fs::create_directories(media_dir, ec);
  if (ec || !fs::is_directory(media_dir)) {
    return invalid_argument("the media folder '" + media_dir +
                            "' cannot be used: " + (ec ? ec.message() : "not a folder"));
  }
  return {};
}

// Makes the uploads folder in the media's work folder, and removes the
// uploads a process that died mid-upload left behind. Their age is read on
// the file system's own clock, the one that stamped them.
Result<std::string> prepare_uploads(const std::string& work_dir, Logger& log) {
  const fs::path uploads = fs::path(work_dir) / kUploadsFolder;
  std::error_code ec;
  fs::create_directories(uploads, ec);
  if (ec || !fs::is_directory(uploads)) {
    return invalid_argument("the uploads folder '" + uploads.string() +
                            "' cannot be used: " + (ec ? ec.message() : "not a folder"));
  }
  const auto now = fs::file_time_type::clock::now();
  for (const fs::directory_entry& entry : fs::directory_iterator(uploads, ec)) {
    if (entry.path().extension() != ".upload") continue;
    const auto written = entry.last_write_time(ec);
    if (ec || now - written < kStaleUploadAge) continue;
    if (fs::remove(entry.path(), ec)) {
      log_to(log, LogLevel::kInfo, "removed an unfinished upload left behind: {}",
             entry.path().filename().string());
    }
  }
  return uploads.string();
}

}  // namespace

movies::ServiceOptions movies_service_options(const MoviesServingOptions& o, std::string_view kind,
                                              const LeaseConfig& lease, Logger* log,
                                              metrics::Registry* metrics) {
  char host[64] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "host");
  movies::ServiceOptions so;
  so.media_dir = o.media_dir;
  so.queue = o.queue;
  so.analysis_ttl = o.analysis_ttl;
  so.tracing_ttl = o.tracing_ttl;
  so.trace_workers = o.trace_workers;
  so.probe_workers = o.probe_workers;
  so.trace_nice = o.trace_nice;
  so.trace_progress_deadline = o.trace_progress_deadline;
  so.sweep_every = o.sweep_every;
  so.sweep_grace = o.sweep_grace;
  so.worker_prefix = std::string(kind) + "-" + host + "-" + std::to_string(getpid());
  so.lease = lease;
  so.logger = log;
  so.metrics = metrics;
  return so;
}

Status Serving::start_movies(const MoviesServingOptions& o, Logger& log) {
  runtime::Runtime& rt = *runtime_;
  LEASEHOLD_RETURN_IF_ERROR(make_media_folder(o.media_dir));
  LEASEHOLD_ASSIGN_OR_RETURN(
      movies_, movies::Service::start(
                   rt.store(), rt.clock(), rt.random(),
                   movies_service_options(o, "serve", rt.leases().config(), &log, &registry_)));
  LEASEHOLD_ASSIGN_OR_RETURN(const std::string uploads,
                             prepare_uploads(movies_->media().work_dir(), log));
  MoviesApiOptions api;
  api.media = &movies_->media();
  api.upload_dir = uploads;
  api.upload_bytes_max = o.upload_bytes_max;
  movies::Service& service = *movies_;
  api.probe_queued = [&service] { service.probe_queued(); };
  api.trace_queued = [&service] { service.trace_queued(); };
  return add_movie_routes(app_->router(), service.movies(), service.probe_queue(), rt.random(), log,
                          std::move(api));
}

Result<std::unique_ptr<Serving>> Serving::start(ServingOptions options) {
  // Not make_unique: the constructor is private, so that start() is the
  // only way to get a Serving, and every Serving serves.
  std::unique_ptr<Serving> s(new Serving());
  runtime::RuntimeOptions runtime_options;
  runtime_options.store_uri = std::move(options.store_uri);
  runtime_options.logger = options.log;
  runtime_options.metrics = &s->registry_;
  // Handlers that call the store run here. Each connection has at most one
  // request in flight, so the queue never needs to hold more than there can
  // be connections.
  runtime_options.blocking.threads = kBlockingThreads;
  runtime_options.blocking.queue_max = server::kConnectionsMax;
  LEASEHOLD_ASSIGN_OR_RETURN(s->runtime_, runtime::Runtime::open(std::move(runtime_options)));
  runtime::Runtime& rt = *s->runtime_;
  const TableSpec table = accounts::Accounts::table_spec();
  std::vector<TableSpec> specs = movies::movie_table_specs();
  for (const TableSpec& spec : {table, fleet::connections_table_spec(), fleet::workers_table_spec(),
                                StoreQueue::table_spec()}) {
    specs.push_back(spec);
  }
  for (const TableSpec& spec : specs) LEASEHOLD_RETURN_IF_ERROR(rt.store().ensure_table(spec));
  s->accounts_ = std::make_unique<accounts::Accounts>(rt.store(), rt.clock(), rt.random());

  server::ServerOptions& server_options = options.server;
  if (server_options.threads == 0) {
    server_options.threads = std::max(1u, std::thread::hardware_concurrency());
  }
  server_options.clock = &rt.clock();
  server_options.random = &rt.random();
  server_options.logger = options.log;
  s->threads_ = server_options.threads;
  const AppOptions app_options{.tls = !server_options.tls_cert_file.empty(),
                               .accounts_table = table.name};
  Logger& log = options.log != nullptr ? *options.log : rt.logger();
  s->app_ = std::make_unique<App>(rt, *s->accounts_, s->registry_, log, app_options);
  s->fleet_figures_ =
      add_fleet_routes(s->app_->router(), rt.store(), rt.clock(), log, &s->registry_);
  LEASEHOLD_RETURN_IF_ERROR(s->start_movies(options.movies, log));
  LEASEHOLD_ASSIGN_OR_RETURN(
      s->server_, server::Server::start(server_options, s->app_->router(), s->app_->hooks()));
  return s;
}

Serving::~Serving() { stop(); }

void Serving::stop() {
  if (server_) server_->stop();
  if (movies_) movies_->stop();
}

}  // namespace leasehold::app
