#include "bench/cli/bench_http.h"

#include <fmt/format.h>

#include <charconv>
#include <memory>
#include <thread>
#include <utility>

#include "accounts/accounts.h"
#include "app/serving.h"
#include "base/logging.h"
#include "bench/baselines/baseline_server.h"
#include "bench/cli/bench_leases.h"
#include "bench/cli/bench_util.h"
#include "bench/cli/http_load.h"
#include "cli/common.h"
#include "runtime/runtime.h"
#include "runtime/stderr_logger.h"
#include "server/server.h"

namespace leasehold::bench {
namespace {

// `leasehold serve` on its server, and the user the benchmark calls it as.
// Members in the order they are built; destroyed in reverse.
struct ServedApp {
  std::unique_ptr<BenchDir> dir;  // the media folder, and the store when none was given
  std::unique_ptr<Logger> log;    // the server's, the app's and the library's
  std::unique_ptr<app::Serving> serving;
  std::string user;
  std::string token;

  size_t threads() const { return serving->threads(); }
  uint16_t port() const { return serving->server().port(); }
  Clock& clock() const { return serving->runtime().clock(); }

  ~ServedApp() {
    if (!serving || user.empty()) return;
    serving->server().stop();
    if (const Status removed = serving->accounts().remove_user(user); !removed.ok()) {
      log_to(log.get(), LogLevel::kWarn, "bench http: the user {} is left behind: {}", user,
             removed.message());
    }
  }
};

Result<std::unique_ptr<ServedApp>> serve_app(std::string uri) {
  auto s = std::make_unique<ServedApp>();
  LEASEHOLD_ASSIGN_OR_RETURN(s->dir, BenchDir::make());
  if (uri.empty()) uri = "sqlite:" + s->dir->path() + "/bench.db";
  s->log = runtime::make_json_stderr_logger(LogLevel::kWarn);
  app::ServingOptions options;
  options.store_uri = std::move(uri);
  options.log = s->log.get();
  options.server.host = "127.0.0.1";
  options.server.port = 0;
  // The movies service is built as `serve` builds it, but runs no workers:
  // nothing here is traced, and their idle polling would share the store.
  options.movies.media_dir = s->dir->path() + "/media";
  options.movies.trace_workers = 0;
  options.movies.probe_workers = 0;
  LEASEHOLD_ASSIGN_OR_RETURN(s->serving, app::Serving::start(std::move(options)));
  accounts::Accounts& accounts = s->serving->accounts();
  const std::string suffix = random_token(s->serving->runtime().random()).substr(0, 8);
  accounts::NewUser user;
  user.name = "bench-http-" + suffix;
  user.display_name = "bench http " + suffix;
  LEASEHOLD_ASSIGN_OR_RETURN(accounts::Accounts::Added added, accounts.add_user(user));
  s->user = added.user.name;
  s->token = std::move(added.token);
  return s;
}

std::string me_request(uint16_t port, std::string_view token, bool close) {
  return fmt::format(
      "GET /api/me HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n{}\r\n", port,
      token, close ? "Connection: close\r\n" : "");
}

// The baseline, answering what the real server answered to the same
// request: its keep-alive reply, and its last reply on a connection.
Result<std::unique_ptr<BaselineServer>> start_baseline(const ServedApp& s, CapturedReply& reply) {
  const uint16_t port = s.port();
  LEASEHOLD_ASSIGN_OR_RETURN(reply, capture_reply(port, me_request(port, s.token, false)));
  LEASEHOLD_ASSIGN_OR_RETURN(const CapturedReply last,
                             capture_reply(port, me_request(port, s.token, true)));
  if (reply.status != 200 || last.status != 200) {
    return internal_error("GET /api/me answered " + std::to_string(reply.status) + " and " +
                          std::to_string(last.status) + ", not 200");
  }
  BaselineOptions options;
  options.threads = s.threads();
  options.reply = reply.bytes;
  options.last_reply = last.bytes;
  options.requests_per_connection_max = server::kKeepAliveRequestsMax;
  return BaselineServer::start(std::move(options));
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
      connections, seconds, real_per_s, percentile_us(real.latencies_ns, 50),
      percentile_us(real.latencies_ns, 99), baseline_per_s,
      percentile_us(baseline.latencies_ns, 50), percentile_us(baseline.latencies_ns, 99),
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

// The library logs to the served app's JSON log, as under `serve`.
int run_bench_http(const BenchHttpOptions& o, Logger& /*logger*/) {
  auto levels = parse_connection_levels(o.connections);
  if (!levels.ok()) return cli::report(levels.status());
  auto served = serve_app(o.store_uri);
  if (!served.ok()) return cli::report(served.status().with_context("bench http"));
  ServedApp& s = **served;
  CapturedReply reply;
  auto baseline = start_baseline(s, reply);
  if (!baseline.ok()) return cli::report(baseline.status().with_context("bench http"));

  HttpLoadOptions load;
  load.expected_body = reply.body;
  load.warmup = kBenchHttpWarmup;
  load.window = std::chrono::milliseconds(o.seconds * 1000 / 2);
  int64_t failures = 0;
  for (const size_t connections : *levels) {
    load.connections = connections;
    Measured real, base;
    for (int round = 0; round < 2; ++round) {
      load.port = s.port();
      load.request = me_request(load.port, s.token, false);
      real.add(run_http_load(load, s.clock()));
      load.port = (*baseline)->port();
      load.request = me_request(load.port, s.token, false);
      base.add(run_http_load(load, s.clock()));
    }
    cli::print_line(level_json(connections, o.seconds, s.threads(), real, base));
    failures += real.failures + base.failures;
  }
  if (failures == 0) return cli::kExitOk;
  return cli::report(
      internal_error("bench http: " + std::to_string(failures) + " requests failed"));
}

}  // namespace leasehold::bench
