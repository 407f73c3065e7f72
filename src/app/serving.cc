#include "app/serving.h"

#include <algorithm>
#include <thread>

#include "app/fleet_api.h"
#include "fleet/members.h"
#include "fleet/schema.h"

namespace leasehold::app {

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
  ASSIGN_OR_RETURN(s->runtime_, runtime::Runtime::open(std::move(runtime_options)));
  runtime::Runtime& rt = *s->runtime_;
  const TableSpec table = accounts::Accounts::table_spec();
  for (const TableSpec& spec :
       {table, fleet::connections_table_spec(), fleet::workers_table_spec()}) {
    RETURN_IF_ERROR(rt.store().ensure_table(spec));
  }
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
  add_fleet_routes(s->app_->router(), rt.store(), rt.clock(), log);
  ASSIGN_OR_RETURN(s->server_,
                   server::Server::start(server_options, s->app_->router(), s->app_->hooks()));
  return s;
}

Serving::~Serving() {
  if (server_) server_->stop();
}

}  // namespace leasehold::app
