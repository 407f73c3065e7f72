// The sweep of movies left unfinished (movies/sweeper.h), in processes:
// `leasehold serve` is started with LEASEHOLD_CRASH_AT naming a point
// between two steps of an upload, a trace or a removal
// (base/crash_point.h), driven through the HTTP API with curl to that
// point, where it kills itself; a fresh `serve` on the same store and media
// folder, sweeping often with a short grace, then brings the movie to a
// final state (ready, traced, tracing failed, or gone) without anyone
// asking, with one start and one end in the audit for each trace job, and
// nothing left processing, queued, tracing or deleting.
#include <boost/json.hpp>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "process_util.h"

namespace leasehold::process_test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr int64_t kMovieFrames = 200;
// How long a repair may take here: a grace, a sweep period and the work.
constexpr milliseconds kRepairTimeout{30'000};

class SweepTest : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (HasFatalFailure()) return;
    movie_ = (dir() / "spots.avi").string();
    const RunResult made = run({MAKE_TEST_MOVIE_BIN, movie_, std::to_string(kMovieFrames)});
    ASSERT_EQ(made.exit_code, 0) << made.err;
    spot_ = parse_object(made.out);
    const RunResult added = lh({"user", "add", "ada", "--display-name", "Ada L."});
    ASSERT_EQ(added.exit_code, 0) << added.err;
    token_ = std::string(parse_object(added.out).at("token").as_string());
  }

  // `serve` with a trace worker and a sweep every 200 ms with a grace of
  // 2 s, killing itself at `crash_at` if given.
  std::unique_ptr<Process> start_serve(const std::string& crash_at = "") {
    std::vector<std::string> argv =
        cli({"serve", "--listen", "127.0.0.1:0", "--media-dir", (dir() / "media").string(),
             "--tracing-lease-ttl", "3s", "--sweep-every", "200ms", "--sweep-grace", "2s"});
    if (!crash_at.empty()) argv.insert(argv.begin(), {"env", "LEASEHOLD_CRASH_AT=" + crash_at});
    auto serve = std::make_unique<Process>(argv, dir());
    const std::regex listening("\"msg\":\"listening\",\"address\":\"[^\"]*:([0-9]+)\"");
    std::smatch port;
    std::string err;
    EXPECT_TRUE(eventually(
        [&] {
          err = serve->err_so_far();
          return std::regex_search(err, port, listening) || serve->wait_for(0ms);
        },
        20s))
        << serve->err_so_far();
    if (std::regex_search(err, port, listening)) base_ = "http://127.0.0.1:" + port[1].str();
    return serve;
  }

  // Waits for `serve` to kill itself at `crash_at`.
  void expect_crashed(Process& serve, const std::string& crash_at) {
    ASSERT_TRUE(serve.wait_for(kEventTimeout)) << "no crash at " << crash_at;
    const RunResult r = serve.result();
    EXPECT_EQ(r.exit_code, 128 + 9) << r.err;
    EXPECT_NE(r.err.find("crash point " + crash_at + ": killed"), std::string::npos) << r.err;
  }

  Http http(const std::string& method, const std::string& path, const std::string& body = "") {
    return call_api(base_, token_, method, path, body);
  }

  std::string status_of(const std::string& id) {
    const Http r = http("GET", "/api/movies/" + id);
    if (r.status == 404) return "gone";
    if (r.status != 200) return "HTTP " + std::to_string(r.status);
    return std::string(r.json().at("status").as_string());
  }

  // Uploads the movie: its ID, or empty if the answer never came.
  std::string upload() {
    const RunResult r = run({"curl", "-s", "-H", "Authorization: Bearer " + token_, "-H",
                             "Content-Type: application/octet-stream", "--data-binary",
                             "@" + movie_, base_ + "/api/movies?name=spots"});
    if (r.exit_code != 0 || r.out.empty()) return "";
    return std::string(parse_object(r.out).at("id").as_string());
  }

  // The one movie there is (the answer to its upload may have been lost).
  std::string only_movie() {
    const Http list = http("GET", "/api/movies");
    EXPECT_EQ(list.status, 200) << list.body;
    if (list.status != 200 || list.json().as_array().size() != 1) return "";
    return std::string(list.json().as_array()[0].at("id").as_string());
  }

  std::string ready_movie() {
    const std::string id = upload();
    EXPECT_FALSE(id.empty());
    EXPECT_TRUE(eventually([&] { return status_of(id) == "ready"; }, 60s)) << status_of(id);
    return id;
  }

  // Takes the analysis lease, places a marker on the spot, trims to frames
  // 0..end_frame and starts the trace: the answer (none if the server died).
  Http start_trace(const std::string& id, int64_t end_frame) {
    const Http lease = http("POST", "/api/movies/" + id + "/analysis-lease");
    EXPECT_EQ(lease.status, 200) << lease.body;
    if (lease.status != 200) return {};
    const std::string l =
        "\"lease_id\":\"" + std::string(lease.json().at("lease_id").as_string()) + "\"";
    const std::string marker =
        "[{\"id\":\"m1\",\"label\":\"spot\",\"frame\":0,\"x\":" + json::serialize(spot_.at("x")) +
        ",\"y\":" + json::serialize(spot_.at("y")) + "}]";
    EXPECT_EQ(
        http("PUT", "/api/movies/" + id + "/markers", "{" + l + ",\"markers\":" + marker + "}")
            .status,
        200);
    EXPECT_EQ(http("PUT", "/api/movies/" + id + "/trim",
                   "{" + l + ",\"start_frame\":0,\"end_frame\":" + std::to_string(end_frame) + "}")
                  .status,
              200);
    return http("POST", "/api/movies/" + id + "/trace", "{" + l + "}");
  }

  // The audit's events, each "event job_id".
  std::vector<std::string> audit(const std::string& id) {
    std::vector<std::string> out;
    const Http r = http("GET", "/api/movies/" + id + "/audit");
    EXPECT_EQ(r.status, 200) << r.body;
    if (r.status != 200) return out;
    const json::value entries = r.json();
    for (const json::value& e : entries.as_array()) {
      out.push_back(std::string(e.at("event").as_string()) + " " +
                    std::string(e.at("job_id").as_string()));
    }
    return out;
  }
  // The job ID of the audit's last entry.
  std::string last_job(const std::string& id) {
    const std::vector<std::string> events = audit(id);
    if (events.empty()) return "";
    return events.back().substr(events.back().find(' ') + 1);
  }

  // Waits until the movie reads `status`, a final one. A read that finds a
  // job's audit unwritten writes it, so the audit is whole by then.
  void expect_reaches(const std::string& id, const std::string& status) {
    ASSERT_TRUE(eventually([&] { return status_of(id) == status; }, kRepairTimeout))
        << "the movie is " << status_of(id) << ", not " << status;
    expect_nothing_unfinished();
  }

  // No movie is processing, queued, tracing or deleting.
  void expect_nothing_unfinished() {
    const Http list = http("GET", "/api/movies");
    ASSERT_EQ(list.status, 200) << list.body;
    const json::value movies = list.json();
    for (const json::value& m : movies.as_array()) {
      const std::string status(m.at("status").as_string());
      EXPECT_TRUE(status == "ready" || status == "invalid" || status == "traced" ||
                  status == "tracing failed")
          << m;
    }
  }

  // The movie files in the media folder (not the work folders in it).
  size_t media_files() {
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir() / "media")) {
      if (e.is_regular_file() && !e.path().filename().string().starts_with(".")) ++n;
    }
    return n;
  }

  // The steps of a removal of a traced movie, until `crash_at`; then the
  // removal is finished by the next serve: the movie is gone, and its file.
  void crash_while_removing(const std::string& crash_at) {
    std::unique_ptr<Process> serve = start_serve(crash_at);
    const std::string id = ready_movie();
    ASSERT_EQ(start_trace(id, 19).status, 202);
    ASSERT_TRUE(eventually([&] { return status_of(id) == "traced"; }, 60s)) << status_of(id);
    ASSERT_GE(media_files(), 1u);
    http("DELETE", "/api/movies/" + id);  // answered or not, as the crash falls
    expect_crashed(*serve, crash_at);
    if (HasFatalFailure()) return;
    std::unique_ptr<Process> next = start_serve();
    expect_reaches(id, "gone");
    EXPECT_EQ(media_files(), 0u);
  }

  // The steps of a trace's start, until `crash_at`; then the job is queued
  // again by the next serve and traced.
  void crash_while_starting_trace(const std::string& crash_at) {
    std::unique_ptr<Process> serve = start_serve(crash_at);
    const std::string id = ready_movie();
    EXPECT_EQ(start_trace(id, 19).status, 0) << "no answer";
    expect_crashed(*serve, crash_at);
    if (HasFatalFailure()) return;
    std::unique_ptr<Process> next = start_serve();
    expect_reaches(id, "traced");
    const std::string job = last_job(id);
    EXPECT_EQ(audit(id),
              (std::vector<std::string>{"movie.tracing.started " + job, "movie.repaired " + job,
                                        "movie.tracing.completed " + job}));
  }

  std::string movie_;
  json::object spot_;
  std::string token_, base_;
};

TEST_P(SweepTest, AnUploadKilledBeforeItsProbeJobIsProbed) {
  const std::string at = "movies.upload.after_create";
  std::unique_ptr<Process> serve = start_serve(at);
  EXPECT_EQ(upload(), "") << "no answer";
  expect_crashed(*serve, at);
  if (HasFatalFailure()) return;
  std::unique_ptr<Process> next = start_serve();
  const std::string id = only_movie();
  ASSERT_FALSE(id.empty());
  expect_reaches(id, "ready");
  EXPECT_EQ(audit(id), std::vector<std::string>{"movie.repaired "});
}

TEST_P(SweepTest, AProbeKilledBeforeItsStatusIsProbedAgain) {
  const std::string at = "movies.probe.before_status";
  std::unique_ptr<Process> serve = start_serve(at);
  std::string id = upload();  // answered, unless the probe was quicker
  expect_crashed(*serve, at);
  if (HasFatalFailure()) return;
  std::unique_ptr<Process> next = start_serve();
  if (id.empty()) id = only_movie();
  ASSERT_FALSE(id.empty());
  expect_reaches(id, "ready");
  EXPECT_EQ(audit(id), std::vector<std::string>{"movie.repaired "});
}

// A trace started, its server killed before its job was queued (before or
// after its start was audited): once its lease expires its job is queued
// again and traced, and its start and end audited once each.
TEST_P(SweepTest, ATraceKilledBeforeItsAuditIsQueuedAgainAndTraced) {
  crash_while_starting_trace("movies.trace.after_start");
}

TEST_P(SweepTest, ATraceKilledBeforeItsMessageIsQueuedAgainAndTraced) {
  crash_while_starting_trace("movies.trace.before_enqueue");
}

// A worker killed once it claimed its job: once the lease expires the job is
// ended as failed, though nobody reads the movie.
TEST_P(SweepTest, AWorkerKilledAfterItsClaimLeavesTheTraceFailed) {
  const std::string at = "movies.trace.after_claim";
  std::unique_ptr<Process> serve = start_serve(at);
  const std::string id = ready_movie();
  start_trace(id, 19);  // answered (202), unless the worker was quicker
  expect_crashed(*serve, at);
  if (HasFatalFailure()) return;
  std::unique_ptr<Process> next = start_serve();
  // The sweep ends it: wait for its log line rather than read the movie
  // (a read would end it too).
  ASSERT_TRUE(eventually(
      [&] { return next->err_so_far().find("ended: its worker went away") != std::string::npos; },
      kRepairTimeout))
      << next->err_so_far();
  expect_reaches(id, "tracing failed");
  const std::string job = last_job(id);
  EXPECT_EQ(audit(id), (std::vector<std::string>{"movie.tracing.started " + job,
                                                 "movie.tracing.failed " + job}));
}

// A worker killed between publishing its trace and auditing it: traced, and
// its audit written by the next reader, once.
TEST_P(SweepTest, AWorkerKilledBeforeItsAuditLeavesItToTheNextReader) {
  const std::string at = "movies.trace.after_publish";
  std::unique_ptr<Process> serve = start_serve(at);
  const std::string id = ready_movie();
  start_trace(id, 19);  // answered (202), unless the worker was quicker
  expect_crashed(*serve, at);
  if (HasFatalFailure()) return;
  std::unique_ptr<Process> next = start_serve();
  expect_reaches(id, "traced");
  const std::string job = last_job(id);
  EXPECT_EQ(audit(id), (std::vector<std::string>{"movie.tracing.started " + job,
                                                 "movie.tracing.completed " + job}));
}

TEST_P(SweepTest, ARemovalKilledBeforeItsJobIsFinished) {
  crash_while_removing("movies.delete.after_mark");
}

TEST_P(SweepTest, ARemovalKilledAfterTheRowsIsFinished) {
  crash_while_removing("movies.delete.after_rows");
}

TEST_P(SweepTest, ARemovalKilledBeforeTheItemIsFinished) {
  crash_while_removing("movies.delete.before_item");
}

INSTANTIATE_TEST_SUITE_P(Backends, SweepTest,
                         ::testing::Values(Backend::kSqlite, Backend::kDynamoDb), backend_name);

// A crash point that names none is refused before anything starts.
TEST_F(ProcessTest, AnUnknownCrashPointIsRefused) {
  std::vector<std::string> argv = cli({"store", "init"});
  argv.insert(argv.begin(), {"env", "LEASEHOLD_CRASH_AT=movies.nowhere"});
  const RunResult r = run(argv);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("LEASEHOLD_CRASH_AT: no crash point 'movies.nowhere'"), std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(db_path())) << "nothing was opened";
}

}  // namespace
}  // namespace leasehold::process_test
