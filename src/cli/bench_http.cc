#include "cli/bench_http.h"

#include <fmt/format.h>
#include <stdlib.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <memory>
#include <thread>
#include <utility>

#include "accounts/accounts.h"
#include "app/app.h"
#include "base/logging.h"
#include "cli/bench_leases.h"
#include "cli/common.h"
#include "cli/http_load.h"
#include "metrics/registry.h"
#include "runtime/runtime.h"
#include "runtime/stderr_logger.h"
#include "server/baseline_server.h"
#include "server/server.h"

namespace leasehold::cli {
namespace {

// As `serve` sizes its blocking pool: store calls wait, so more of them than
// cores may be under way; each connection has at most one request in flight.
constexpr size_t kBlockingThreads = 16;

// A directory of its own under the system's temporary directory, removed
// with what it holds.
class TempDir {
 public:
  static Result<std::unique_ptr<TempDir>> make() {
    std::string pattern = (std::filesystem::temp_directory_path() / "leasehold-bench-XXXXXX");
    if (mkdtemp(pattern.data()) == nullptr) {
      return unavailable("cannot create a temporary directory for the benchmark's store");
    }
    return std::unique_ptr<TempDir>(new TempDir(std::move(pattern)));
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  explicit TempDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

// The app of `leasehold serve` on its server, and the user the benchmark
// calls it as. Members in the order they are built; destroyed in reverse.
struct ServedApp {
  std::unique_ptr<TempDir> dir;  // holds the store when none was given
  metrics::Registry registry;
  std::unique_ptr<Logger> log;  // the server's and the app's
  std::unique_ptr<runtime::Runtime> runtime;
  std::unique_ptr<accounts::Accounts> accounts;
  std::unique_ptr<app::App> app;
  std::unique_ptr<server::Server> server;
  size_t threads = 0;  // the server's I/O threads
  std::string user;
  std::string token;

  ~ServedApp() {
    if (server) server->stop();
    if (!accounts || user.empty()) return;
    if (const Status removed = accounts->remove_user(user); !removed.ok()) {
      log_to(&runtime->logger(), LogLevel::kWarn, "bench http: the user {} is left behind: {}",
             user, removed.message());
    }
  }
};

Status open_store(ServedApp& s, std::string uri, Logger& logger) {
  if (uri.empty()) {
    ASSIGN_OR_RETURN(s.dir, TempDir::make());
    uri = "sqlite:" + s.dir->path() + "/bench.db";
  }
  runtime::RuntimeOptions options;
  options.store_uri = std::move(uri);
  options.logger = &logger;
  options.metrics = &s.registry;
  options.blocking.threads = kBlockingThreads;
  options.blocking.queue_max = server::kConnectionsMax;
  ASSIGN_OR_RETURN(s.runtime, runtime::Runtime::open(std::move(options)));
  RETURN_IF_ERROR(s.runtime->store().ensure_table(accounts::Accounts::table_spec()));
  s.accounts = std::make_unique<accounts::Accounts>(s.runtime->store(), s.runtime->clock(),
                                                    s.runtime->random());
  return Status::ok_status();
}

Result<std::unique_ptr<ServedApp>> serve_app(const std::string& uri, Logger& logger) {
  auto s = std::make_unique<ServedApp>();
  RETURN_IF_ERROR(open_store(*s, uri, logger));
  const std::string suffix = random_token(s->runtime->random()).substr(0, 8);
  accounts::NewUser user;
  user.name = "bench-http-" + suffix;
  user.display_name = "bench http " + suffix;
  ASSIGN_OR_RETURN(accounts::Accounts::Added added, s->accounts->add_user(user));
  s->user = added.user.name;
  s->token = std::move(added.token);

  s->log = runtime::make_json_stderr_logger(LogLevel::kWarn);
  s->app = std::make_unique<app::App>(*s->runtime, *s->accounts, s->registry, *s->log,
                                      app::AppOptions{});
  server::ServerOptions options;
  options.host = "127.0.0.1";
  options.port = 0;
  options.threads = std::max(1u, std::thread::hardware_concurrency());
  options.clock = &s->runtime->clock();
  options.random = &s->runtime->random();
  options.logger = s->log.get();
  s->threads = options.threads;
  ASSIGN_OR_RETURN(s->server, server::Server::start(options, s->app->router(), s->app->hooks()));
  return s;
}

std::string me_request(uint16_t port, std::string_view token, bool close) {
  return fmt::format(
      "GET /api/me HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n{}\r\n", port,
      token, close ? "Connection: close\r\n" : "");
}

// The baseline, answering what the real server answered to the same
// request: its keep-alive reply, and its last reply on a connection.
Result<std::unique_ptr<server::BaselineServer>> start_baseline(const ServedApp& s,
                                                               CapturedReply& reply) {
  const uint16_t port = s.server->port();
  ASSIGN_OR_RETURN(reply, capture_reply(port, me_request(port, s.token, false)));
  ASSIGN_OR_RETURN(const CapturedReply last, capture_reply(port, me_request(port, s.token, true)));
  if (reply.status != 200 || last.status != 200) {
    return internal_error("GET /api/me answered " + std::to_string(reply.status) + " and " +
                          std::to_string(last.status) + ", not 200");
  }
  server::BaselineOptions options;
  options.threads = s.threads;
  options.reply = reply.bytes;
  options.last_reply = last.bytes;
  options.requests_per_connection_max = server::kKeepAliveRequestsMax;
  return server::BaselineServer::start(std::move(options));
}

// What one server did at one number of connections, over both rounds.
struct Measured {
  int64_t requests = 0;
  int64_t failures = 0;
  std::vector<int64_t> latencies_ns;

  void add(HttpLoadResult r) {
    requests += r.requests;
    failures += r.failures;
    latencies_ns.insert(latencies_ns.end(), r.latencies_ns.begin(), r.latencies_ns.end());
  }
  // The nearest-rank percentile `p` (0..100) in microseconds; 0 if none.
  double percentile_us(double p) {
    if (latencies_ns.empty()) return 0;
    const auto rank = static_cast<size_t>(std::ceil(p / 100 * latencies_ns.size()));
    const size_t index = std::clamp<size_t>(rank, 1, latencies_ns.size()) - 1;
    std::nth_element(latencies_ns.begin(), latencies_ns.begin() + index, latencies_ns.end());
    return static_cast<double>(latencies_ns[index]) / 1000.0;
  }
};

std::string level_json(size_t connections, int64_t seconds, size_t threads, Measured& real,
                       Measured& baseline) {
  const double real_per_s = static_cast<double>(real.requests) / seconds;
  const double baseline_per_s = static_cast<double>(baseline.requests) / seconds;
  return fmt::format(
      R"({{"bench":"http","route":"GET /api/me","connections":{},"seconds":{},)"
      R"("requests_per_s":{:.0f},"p50_us":{:.1f},"p99_us":{:.1f},)"
      R"("baseline_requests_per_s":{:.0f},"baseline_p50_us":{:.1f},"baseline_p99_us":{:.1f},)"
      R"("vs_baseline":{:.3f},"server_threads":{},"failures":{}}})",
      connections, seconds, real_per_s, real.percentile_us(50), real.percentile_us(99),
      baseline_per_s, baseline.percentile_us(50), baseline.percentile_us(99),
      baseline_per_s > 0 ? real_per_s / baseline_per_s : 0.0, threads,
      real.failures + baseline.failures);
}

}  // namespace

Result<std::vector<size_t>> parse_connection_levels(std::string_view text) {
  std::vector<size_t> levels;
  const Status bad = invalid_argument(
      "--connections '" + std::string(text) + "': expected numbers 1.." +
      std::to_string(kBenchHttpConnectionsMax) + " separated by commas, e.g. 1,16,64");
  while (true) {
    const std::string_view item = text.substr(0, text.find(','));
    size_t n = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (ec != std::errc() || end != item.data() + item.size() || n < 1 ||
        n > kBenchHttpConnectionsMax) {
      return bad;
    }
    levels.push_back(n);
    if (item.size() == text.size()) break;
    text.remove_prefix(item.size() + 1);
  }
  if (levels.size() > kBenchHttpLevelsMax) {
    return invalid_argument("--connections: at most " + std::to_string(kBenchHttpLevelsMax) +
                            " numbers");
  }
  return levels;
}

int run_bench_http(const BenchHttpOptions& o, Logger& logger) {
  auto levels = parse_connection_levels(o.connections);
  if (!levels.ok()) return report(levels.status());
  auto served = serve_app(o.store_uri, logger);
  if (!served.ok()) return report(served.status().with_context("bench http"));
  ServedApp& s = **served;
  CapturedReply reply;
  auto baseline = start_baseline(s, reply);
  if (!baseline.ok()) return report(baseline.status().with_context("bench http"));

  HttpLoadOptions load;
  load.expected_body = reply.body;
  load.warmup = kBenchHttpWarmup;
  load.window = std::chrono::milliseconds(o.seconds * 1000 / 2);
  int64_t failures = 0;
  for (const size_t connections : *levels) {
    load.connections = connections;
    Measured real, base;
    for (int round = 0; round < 2; ++round) {
      load.port = s.server->port();
      load.request = me_request(load.port, s.token, false);
      real.add(run_http_load(load, s.runtime->clock()));
      load.port = (*baseline)->port();
      load.request = me_request(load.port, s.token, false);
      base.add(run_http_load(load, s.runtime->clock()));
    }
    print_line(level_json(connections, o.seconds, s.threads, real, base));
    failures += real.failures + base.failures;
  }
  if (failures == 0) return kExitOk;
  return report(internal_error("bench http: " + std::to_string(failures) + " requests failed"));
}

}  // namespace leasehold::cli
