#include "bench/cli/bench_fleet_page.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "app/serving.h"
#include "base/duration.h"
#include "base/logging.h"
#include "base/text.h"
#include "bench/cli/bench_util.h"
#include "bench/cli/http_load.h"
#include "cli/common.h"
#include "fleet/connections.h"
#include "runtime/stderr_logger.h"

namespace leasehold::bench {
namespace {

constexpr size_t kPageLimit = 100;
// The connections a fill thread adds in one Connections::add_many(): each
// call writes the counts once, so that the counts item, which every call
// writes, is not what the fill waits on.
constexpr size_t kFillChunk = 1000;
// How long the latency of one page of the list is measured, after the window.
constexpr Duration kLatencyWindow = std::chrono::seconds(5);

// The server, and the user the page polls as. Members in the order they
// are built; destroyed in reverse.
struct PageBench {
  std::unique_ptr<BenchDir> dir;
  std::unique_ptr<Logger> log;
  std::unique_ptr<app::Serving> serving;
  std::string user;
  std::string token;

  ~PageBench() {
    if (serving && !user.empty()) {
      serving->stop();
      (void)serving->accounts().remove_user(user);
    }
  }
};

std::string connection_id(size_t i) { return fmt::format("c{:07d}", i); }

// Adds connections 0..n-1 from `threads` threads, kFillChunk at a time with
// Connections::add_many; every tenth STOPPED. An ID already there (a store
// filled by an earlier run) counts as added.
Status fill(ItemStore& store, Clock& clock, size_t n, size_t threads) {
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  Status first_failure;
  std::mutex mu;
  const auto fail = [&](const Status& why) {
    std::lock_guard lock(mu);
    if (!failed.exchange(true)) first_failure = why;
  };
  std::vector<std::thread> pool;
  for (size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      fleet::Connections connections(store, clock);
      std::vector<fleet::NewConnection> chunk;
      for (size_t begin = next.fetch_add(kFillChunk); begin < n && !failed;
           begin = next.fetch_add(kFillChunk)) {
        chunk.clear();
        for (size_t i = begin; i < std::min(n, begin + kFillChunk); ++i) {
          chunk.push_back({connection_id(i),
                           "ws://127.0.0.1:9/s/" + connection_id(i) + "?from={next_seq}", "seq",
                           i % 10 == 9});
        }
        Result<fleet::AddedConnections> added = connections.add_many(chunk);
        if (!added.ok()) {
          fail(added.status());
          continue;
        }
        for (const Status& result : added->results) {
          if (result.ok() || result.code() == Code::kAlreadyExists) continue;
          fail(result);
          break;
        }
      }
    });
  }
  for (std::thread& t : pool) t.join();
  return failed ? first_failure : Status::ok_status();
}

double read_units(ItemStore& store) {
  double units = 0;
  for (const CapacityUse& use : store.consumed_capacity()) units += use.read_units;
  return units;
}

// The value of header `name` (lower case) in a raw reply; empty if none.
std::string header_of(const std::string& reply, std::string_view name) {
  const size_t end = reply.find("\r\n\r\n");
  size_t at = reply.find("\r\n");
  while (at != std::string::npos && at < end) {
    const size_t next = reply.find("\r\n", at + 2);
    const std::string_view line(reply.data() + at + 2, next - at - 2);
    const size_t colon = line.find(':');
    if (colon != std::string_view::npos && equal_ignoring_case(line.substr(0, colon), name)) {
      std::string_view value = line.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      return std::string(value);
    }
    at = next;
  }
  return {};
}

// One polled resource: its path, and the ETag of its last answer.
struct Polled {
  Polled(std::string name_, std::string path_, bool tagged_ = true)
      : name(std::move(name_)), path(std::move(path_)), tagged(tagged_) {}
  std::string name;  // in the figures
  std::string path;
  std::string etag;
  bool tagged = true;  // sends If-None-Match
  double units = 0;    // read units its requests cost in the window
  int64_t asked = 0;   // its requests in the window
};

struct PageLoad {
  int64_t polls = 0;
  int64_t requests = 0;
  int64_t not_modified = 0;
  int64_t failures = 0;
  int64_t bytes = 0;  // every reply, headers included, as received
};

// One request of the page; true if the resource changed (200).
bool ask(const PageBench& b, Polled& p, PageLoad& load) {
  std::string request = fmt::format(
      "GET {} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\nConnection: close\r\n",
      p.path, b.token);
  if (p.tagged && !p.etag.empty()) request += "If-None-Match: " + p.etag + "\r\n";
  request += "\r\n";
  Result<CapturedReply> reply = capture_reply(b.serving->server().port(), request);
  ++load.requests;
  if (!reply.ok() || (reply->status != 200 && reply->status != 304)) {
    ++load.failures;
    return false;
  }
  load.bytes += static_cast<int64_t>(reply->bytes.size());
  if (reply->status == 304) {
    ++load.not_modified;
    return false;
  }
  p.etag = header_of(reply->bytes, "etag");
  return true;
}

}  // namespace

int run_bench_fleet_page(const BenchFleetPageOptions& o, Logger& /*logger*/) {
  Result<Duration> every = parse_duration(o.every);
  if (!every.ok()) return cli::report(every.status().with_context("--every"));
  Result<Duration> every_max = parse_duration(o.every_max);
  if (!every_max.ok()) return cli::report(every_max.status().with_context("--every-max"));

  PageBench b;
  Result<std::unique_ptr<BenchDir>> dir = BenchDir::make();
  if (!dir.ok()) return cli::report(dir.status());
  b.dir = std::move(*dir);
  b.log = runtime::make_json_stderr_logger(LogLevel::kWarn);
  app::ServingOptions so;
  so.store_uri = o.store_uri.empty() ? "sqlite:" + b.dir->path() + "/bench.db" : o.store_uri;
  so.log = b.log.get();
  so.server.port = 0;
  so.movies.media_dir = b.dir->path() + "/media";
  so.movies.probe_workers = 0;
  const std::string store_uri = so.store_uri;
  auto serving = app::Serving::start(std::move(so));
  if (!serving.ok()) return cli::report(serving.status().with_context("bench fleet-page"));
  b.serving = std::move(*serving);
  ItemStore& store = b.serving->runtime().store();
  Clock& clock = b.serving->runtime().clock();
  const std::string suffix = random_token(b.serving->runtime().random()).substr(0, 8);
  auto added = b.serving->accounts().add_user(
      {"bench-fleet-" + suffix, "bench fleet " + suffix, false, std::nullopt});
  if (!added.ok()) return cli::report(added.status());
  b.user = added->user.name;
  b.token = added->token;

  const MonoTime fill_start = clock.mono_now();
  if (const Status filled = fill(store, clock, o.connections, o.fill_threads); !filled.ok()) {
    return cli::report(filled.with_context("adding the connections"));
  }
  const double fill_s = std::chrono::duration<double>(clock.mono_now() - fill_start).count();

  // What the page asks for, as web/js/fleet.js does. A first round before
  // the window: the counts are counted once, and the tags are known.
  std::vector<Polled> polled{{"summary", "/api/fleet/summary"},
                             {"page", "/api/fleet/connections?limit=" + std::to_string(kPageLimit)},
                             {"workers", "/api/fleet/workers", /*tagged=*/false}};
  PageLoad warm;
  for (Polled& p : polled) ask(b, p, warm);
  if (warm.failures > 0) {
    return cli::report(internal_error("bench fleet-page: the page's first round failed"));
  }

  PageLoad load;
  const double units_before = read_units(store);
  const MonoTime start = clock.mono_now();
  const MonoTime end = start + std::chrono::seconds(o.seconds);
  Duration period = *every;
  for (MonoTime next = start; next < end;) {
    ++load.polls;
    bool changed = false;
    for (Polled& p : polled) {
      const double before = read_units(store);
      if (ask(b, p, load) && p.tagged) changed = true;
      p.units += read_units(store) - before;
      ++p.asked;
    }
    period = changed ? *every : std::min<Duration>(period * 2, *every_max);
    next += period;
    const MonoTime now = clock.mono_now();
    if (next > now) std::this_thread::sleep_for(std::min(next, end) - now);
  }
  const double minutes = std::chrono::duration<double>(clock.mono_now() - start).count() / 60;
  const double units = read_units(store) - units_before;

  // The latency of a page of 100 from the middle of the list, closed loop.
  HttpLoadOptions latency;
  latency.port = b.serving->server().port();
  latency.request = fmt::format(
      "GET /api/fleet/connections?limit={}&after={} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Authorization: Bearer {}\r\n\r\n",
      kPageLimit, connection_id(o.connections / 2), b.token);
  latency.check_body = false;
  latency.window = kLatencyWindow;
  HttpLoadResult pages = run_http_load(latency, clock);

  const bool dynamodb = store_uri.starts_with("dynamodb:");
  std::string per_request;  // read units a request of each kind cost
  for (const Polled& p : polled) {
    per_request += fmt::format(R"({}"{}":{:.2f})", per_request.empty() ? "" : ",", p.name,
                               p.asked > 0 ? p.units / static_cast<double>(p.asked) : 0.0);
  }
  cli::print_line(fmt::format(
      R"({{"bench":"fleet_page","store":"{}","connections":{},"fill_s":{:.1f},"window_s":{},)"
      R"("polls":{},"requests_per_min":{:.1f},"not_modified":{},"bytes_per_min":{:.0f},)"
      R"("read_units_per_min":{},"read_units_per_request":{},"page_requests":{},)"
      R"("page_p50_us":{:.0f},"page_p99_us":{:.0f},"failures":{}}})",
      store.backend_name(), o.connections, fill_s, o.seconds, load.polls,
      static_cast<double>(load.requests) / minutes, load.not_modified,
      static_cast<double>(load.bytes) / minutes,
      dynamodb ? fmt::format("{:.1f}", units / minutes) : std::string("null"),
      dynamodb ? "{" + per_request + "}" : std::string("null"), pages.requests,
      percentile_us(pages.latencies_ns, 50), percentile_us(pages.latencies_ns, 99),
      load.failures + pages.failures));
  if (load.failures + pages.failures > 0) {
    return cli::report(internal_error("bench fleet-page: requests failed"));
  }
  return cli::kExitOk;
}

}  // namespace leasehold::bench
