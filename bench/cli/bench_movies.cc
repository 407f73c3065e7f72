#include "bench/cli/bench_movies.h"

#include <fmt/format.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <thread>

#include "app/serving.h"
#include "base/duration.h"
#include "base/logging.h"
#include "bench/cli/bench_leases.h"
#include "bench/cli/bench_util.h"
#include "bench/cli/http_load.h"
#include "cli/common.h"
#include "movies/schema.h"
#include "runtime/stderr_logger.h"
#include "tracer/synthetic_movie.h"

namespace leasehold::bench {
namespace {

// The movie traced: big enough for a trace to be real work (four markers
// on 320x240 frames), short enough that one ends within a second or two, so
// that an idle round need not wait long for the last one.
constexpr int kMovieWidth = 320;
constexpr int kMovieHeight = 240;
constexpr int64_t kMovieFrames = 400;
constexpr Duration kWarmup = std::chrono::milliseconds(500);
// How often the trace loop looks at the movie to start the next trace.
constexpr Duration kLoopPoll = std::chrono::milliseconds(20);

tracer::SyntheticMovie bench_movie() {
  tracer::SyntheticMovie m;
  m.width = kMovieWidth;
  m.height = kMovieHeight;
  m.frames = kMovieFrames;
  for (int i = 0; i < 4; ++i) {
    m.spots.push_back(tracer::Spot{.x0_px = 60.3 + 140 * (i % 2),
                                   .y0_px = 50.6 + 110 * (i / 2),
                                   .vx_px_per_frame = 0.1,
                                   .vy_px_per_frame = 0.05,
                                   .amplitude_px = 4,
                                   .period_frames = 80,
                                   .radius_px = 7});
  }
  return m;
}

// The server, its movie and the user the viewers poll as. Members in the
// order they are built; destroyed in reverse.
struct Bench {
  std::unique_ptr<BenchDir> dir;
  std::unique_ptr<Logger> log;
  std::unique_ptr<app::Serving> serving;
  movies::User user;
  std::string token;
  std::string movie_id;
  std::vector<tracer::Marker> markers;

  movies::Movies& movies() { return serving->movies().movies(); }
  ~Bench() {
    if (serving && !user.name.empty()) {
      serving->stop();
      (void)serving->accounts().remove_user(user.name);
    }
  }
};

Result<std::unique_ptr<Bench>> start_bench(std::string uri, int trace_nice) {
  auto b = std::make_unique<Bench>();
  LEASEHOLD_ASSIGN_OR_RETURN(b->dir, BenchDir::make());
  if (uri.empty()) uri = "sqlite:" + b->dir->path() + "/bench.db";
  b->log = runtime::make_json_stderr_logger(LogLevel::kWarn);
  app::ServingOptions o;
  o.store_uri = std::move(uri);
  o.log = b->log.get();
  o.server.port = 0;
  o.movies.media_dir = b->dir->path() + "/media";
  o.movies.probe_workers = 0;  // the movie is probed here, before the rounds
  o.movies.trace_nice = trace_nice;
  LEASEHOLD_ASSIGN_OR_RETURN(b->serving, app::Serving::start(std::move(o)));
  const std::string suffix = random_token(b->serving->runtime().random()).substr(0, 8);
  accounts::NewUser user{"bench-movies-" + suffix, "bench movies " + suffix, false, std::nullopt};
  LEASEHOLD_ASSIGN_OR_RETURN(accounts::Accounts::Added added,
                             b->serving->accounts().add_user(user));
  b->user = {added.user.name, added.user.display_name};
  b->token = std::move(added.token);

  const tracer::SyntheticMovie movie = bench_movie();
  LEASEHOLD_RETURN_IF_ERROR(
      tracer::write_synthetic_movie(b->dir->path() + "/media/bench.avi", movie));
  LEASEHOLD_ASSIGN_OR_RETURN(const movies::MovieDetail created,
                             b->movies().create("bench", b->user, "bench.avi"));
  b->movie_id = created.id;
  LEASEHOLD_ASSIGN_OR_RETURN(const movies::MovieDetail probed, b->movies().probe(created.id));
  if (probed.status != movies::kStatusReady) return internal_error("the bench movie is invalid");
  for (size_t i = 0; i < movie.spots.size(); ++i) {
    const tracer::SpotPosition at = tracer::spot_position(movie.spots[i], 0);
    b->markers.push_back({"m" + std::to_string(i), "spot", 0, at.x, at.y});
  }
  return b;
}

// Keeps a trace of the bench movie running while tracing is on, through
// the service's calls, as a page would make them: the analysis lease, the
// markers, the trace.
class TraceLoop {
 public:
  explicit TraceLoop(Bench& b) : b_(b), thread_([this] { loop(); }) {}
  ~TraceLoop() {
    stop_ = true;
    thread_.join();
  }

  void set_tracing(bool on) { tracing_ = on; }
  // True once no trace is queued or runs (after set_tracing(false)).
  bool idle() { return !busy(status()); }
  int64_t started() const { return started_; }
  int64_t failures() const { return failures_; }

 private:
  std::string status() {
    Result<movies::MovieDetail> m = b_.movies().get(b_.movie_id);
    return m.ok() ? m->status : "";
  }
  static bool busy(const std::string& status) {
    return status == movies::kStatusQueued || status == movies::kStatusTracing;
  }

  void loop() {
    while (!stop_) {
      if (tracing_ && !busy(status())) start_one();
      std::this_thread::sleep_for(kLoopPoll);
    }
  }

  void start_one() {
    Result<movies::AnalysisLease> lease = b_.movies().acquire_analysis(b_.movie_id, b_.user);
    Status ok = lease.status();
    if (ok.ok())
      ok = b_.movies().set_markers(b_.movie_id, b_.user.name, lease->lease_id, b_.markers);
    if (ok.ok()) ok = b_.movies().start_trace(b_.movie_id, b_.user, lease->lease_id).status();
    if (!ok.ok()) {
      ++failures_;
      log_to(b_.log.get(), LogLevel::kWarn, "bench movies: no trace started: {}", ok.to_string());
      return;
    }
    b_.serving->movies().trace_queued();
    ++started_;
  }

  Bench& b_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> tracing_{false};
  std::atomic<int64_t> started_{0};
  std::atomic<int64_t> failures_{0};
  std::thread thread_;
};

uint64_t frames_written(Bench& b) {
  uint64_t n = 0;
  for (const movies::TraceWorkerStats& s : b.serving->movies().trace_stats()) {
    n += s.frames_written;
  }
  return n;
}

struct Rounds {
  HttpLoadResult idle, tracing;
  uint64_t frames = 0;  // sampled frames traced during the tracing rounds

  static void add(HttpLoadResult& to, HttpLoadResult r) {
    to.requests += r.requests;
    to.failures += r.failures;
    to.latencies_ns.insert(to.latencies_ns.end(), r.latencies_ns.begin(), r.latencies_ns.end());
  }
};

std::string result_json(const BenchMoviesOptions& o, Duration every, Rounds& r, int64_t traces,
                        int64_t failures) {
  const double seconds = static_cast<double>(o.seconds);
  const double idle_p99 = percentile_us(r.idle.latencies_ns, 99);
  const double tracing_p99 = percentile_us(r.tracing.latencies_ns, 99);
  return fmt::format(
      R"({{"bench":"movies_poll","route":"GET /api/movies/{{id}}","viewers":{},"every_ms":{},)"
      R"("seconds":{},"idle_requests_per_s":{:.0f},"idle_p50_us":{:.1f},"idle_p99_us":{:.1f},)"
      R"("tracing_requests_per_s":{:.0f},"tracing_p50_us":{:.1f},"tracing_p99_us":{:.1f},)"
      R"("p99_vs_idle":{:.2f},"traced_frames_per_s":{:.1f},"traces":{},"trace_nice":{},)"
      R"("failures":{}}})",
      o.viewers, std::chrono::duration_cast<std::chrono::milliseconds>(every).count(), o.seconds,
      r.idle.requests / seconds, percentile_us(r.idle.latencies_ns, 50), idle_p99,
      r.tracing.requests / seconds, percentile_us(r.tracing.latencies_ns, 50), tracing_p99,
      idle_p99 > 0 ? tracing_p99 / idle_p99 : 0.0, static_cast<double>(r.frames) / seconds, traces,
      o.trace_nice, failures);
}

}  // namespace

int run_bench_movies(const BenchMoviesOptions& o, Logger& /*logger*/) {
  Result<Duration> every = parse_duration(o.every);
  if (!every.ok()) return cli::report(every.status().with_context("--every"));
  auto started = start_bench(o.store_uri, o.trace_nice);
  if (!started.ok()) return cli::report(started.status().with_context("bench movies"));
  Bench& b = **started;
  Clock& clock = b.serving->runtime().clock();

  HttpLoadOptions load;
  load.port = b.serving->server().port();
  load.connections = o.viewers;
  load.request = fmt::format(
      "GET /api/movies/{} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n\r\n",
      b.movie_id, load.port, b.token);
  load.check_body = false;  // frames_done moves while a trace runs
  load.interval = *every;
  load.warmup = kWarmup;
  load.window = std::chrono::milliseconds(o.seconds * 1000 / 2);

  Rounds rounds;
  TraceLoop traces(b);
  for (int round = 0; round < 2; ++round) {
    traces.set_tracing(false);
    while (!traces.idle()) std::this_thread::sleep_for(kLoopPoll);
    Rounds::add(rounds.idle, run_http_load(load, clock));
    traces.set_tracing(true);
    while (traces.idle()) std::this_thread::sleep_for(kLoopPoll);
    const uint64_t frames_before = frames_written(b);
    Rounds::add(rounds.tracing, run_http_load(load, clock));
    rounds.frames += frames_written(b) - frames_before;
  }
  // The last trace ends before the server stops (which would interrupt it).
  traces.set_tracing(false);
  while (!traces.idle()) std::this_thread::sleep_for(kLoopPoll);
  const int64_t failures = rounds.idle.failures + rounds.tracing.failures + traces.failures();
  cli::print_line(result_json(o, *every, rounds, traces.started(), failures));
  if (failures > 0) {
    return cli::report(internal_error("bench movies: " + std::to_string(failures) + " failures"));
  }
  if (rounds.frames == 0) return cli::report(internal_error("bench movies: nothing was traced"));
  return cli::kExitOk;
}

}  // namespace leasehold::bench
