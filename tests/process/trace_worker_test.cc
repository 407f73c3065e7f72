// `leasehold trace-worker` as a process beside `leasehold serve` (which runs
// no trace worker of its own here), on SQLite and on DynamoDB, and with the
// jobs on SQS and the movies on S3 (fauxqs), driven through the HTTP API
// with curl: a worker killed mid-trace (its lease
// expires, the movie reads `tracing failed`, the next trace replaces it and
// completes), a worker paused past its lease while another trace replaced
// its job (it writes nothing when it wakes), a worker stopped by SIGTERM
// (the trace is published as interrupted at once), and the flags both
// commands refuse before opening anything.
#include <signal.h>

#include <boost/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "process_util.h"
#include "sqs/sqs_queue.h"
#include "tests/aws/fauxqs_fixture.h"

namespace leasehold::process_test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr char kTracingTtl[] = "3s";
constexpr int64_t kLongMovieFrames = 2500;

class TraceWorkerTest : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    if (HasFatalFailure()) return;
    movie_ = (dir() / "long.avi").string();
    const RunResult made = run({MAKE_TEST_MOVIE_BIN, movie_, std::to_string(kLongMovieFrames)});
    ASSERT_EQ(made.exit_code, 0) << made.err;
    spot_ = parse_object(made.out);
    const RunResult added = lh({"user", "add", "ada", "--display-name", "Ada L."});
    ASSERT_EQ(added.exit_code, 0) << added.err;
    token_ = std::string(parse_object(added.out).at("token").as_string());
    std::vector<std::string> serve = {"serve",           "--listen", "127.0.0.1:0",
                                      "--trace-workers", "0",        "--tracing-lease-ttl",
                                      kTracingTtl};
    const std::vector<std::string> where = where_flags();
    if (HasFatalFailure()) return;
    serve.insert(serve.end(), where.begin(), where.end());
    serve_ = start_lh(serve);
    const std::regex listening("\"msg\":\"listening\",\"address\":\"[^\"]*:([0-9]+)\"");
    std::smatch port;
    ASSERT_TRUE(eventually(
        [&] {
          const std::string err = serve_->err_so_far();
          return std::regex_search(err, port, listening) || serve_->wait_for(0ms);
        },
        20s))
        << serve_->err_so_far();
    const std::string err = serve_->err_so_far();
    ASSERT_TRUE(std::regex_search(err, port, listening)) << err;
    base_ = "http://127.0.0.1:" + port[1].str();
  }

  // Where `serve` and the workers keep movies and queue jobs: a folder and
  // the store's queue, or on AWS (fauxqs) the S3 bucket the test makes and
  // the SQS queues `store init --queue` makes. Each process then has a work
  // folder of its own: no folder is shared.
  std::vector<std::string> where_flags() {
    if (GetParam() != Backend::kSqliteAws) return {"--media-dir", (dir() / "media").string()};
    if (queue_uri_.empty()) {
      testing::Fauxqs* fauxqs = testing::shared_fauxqs();
      EXPECT_NE(fauxqs, nullptr);
      if (fauxqs == nullptr) return {};
      const std::string name = testing::unique_aws_name("tw");
      queue_uri_ = "sqs://us-east-1/" + name + "?endpoint=" + fauxqs->endpoint();
      const RunResult made = lh({"store", "init", "--queue", queue_uri_});
      EXPECT_EQ(made.exit_code, 0) << made.err;
      const RunResult bucket = run({"curl", "-sf", "-X", "PUT", fauxqs->endpoint() + "/" + name});
      EXPECT_EQ(bucket.exit_code, 0) << bucket.err;
      media_uri_ = "s3://" + name + "/movies?region=us-east-1&endpoint=" + fauxqs->endpoint();
    }
    return {"--media-dir", media_uri_, "--queue", queue_uri_};
  }

  Http http(const std::string& method, const std::string& path, const std::string& body = "") {
    return call_api(base_, token_, method, path, body);
  }

  json::object movie(const std::string& id) {
    const Http r = http("GET", "/api/movies/" + id);
    EXPECT_EQ(r.status, 200) << r.body;
    return r.status == 200 ? r.json().as_object() : json::object{};
  }
  std::string status_of(const std::string& id) {
    const json::object m = movie(id);
    return m.contains("status") ? std::string(m.at("status").as_string()) : "";
  }
  int64_t frames_done(const std::string& id) { return movie(id).at("frames_done").as_int64(); }

  // Uploads the long movie (or `file`) and waits for its probe.
  std::string ready_movie(const std::string& file = "") {
    const RunResult r =
        run({"curl", "-s", "-H", "Authorization: Bearer " + token_, "-H",
             "Content-Type: application/octet-stream", "--data-binary",
             "@" + (file.empty() ? movie_ : file), base_ + "/api/movies?name=long"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const std::string id(parse_object(r.out).at("id").as_string());
    EXPECT_TRUE(eventually([&] { return status_of(id) == "ready"; }, 60s)) << status_of(id);
    return id;
  }

  // Takes the analysis lease, places a marker on the spot, sets the trim
  // and starts a trace: its job ID.
  std::string trace(const std::string& id, int64_t end_frame) {
    const Http started = start_trace(id, end_frame);
    EXPECT_EQ(started.status, 202) << started.body;
    return started.status == 202 ? std::string(started.json().at("job_id").as_string()) : "";
  }

  // The same up to the answer to POST …/trace.
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

  // SIGSTOPs `p`. On SQLite, a process stopped inside a write transaction
  // would hold the database's one write lock and stall every process (that
  // is SQLite's, not what these tests are about), so there it is resumed
  // and stopped again until it is stopped holding no write lock.
  void stop_outside_a_write(Process& p) {
    for (int attempt = 0; attempt < 200; ++attempt) {
      ASSERT_EQ(::kill(p.pid(), SIGSTOP), 0);
      if (GetParam() == Backend::kDynamoDb || can_write_sqlite()) return;
      ASSERT_EQ(::kill(p.pid(), SIGCONT), 0);
      std::this_thread::sleep_for(std::chrono::milliseconds(attempt % 7));
    }
    FAIL() << "the worker held the SQLite write lock at every stop";
  }
  bool can_write_sqlite() {
    return run({"sqlite3", "-cmd", ".timeout 50", db_path().string(), "BEGIN IMMEDIATE; ROLLBACK;"})
               .exit_code == 0;
  }

  std::unique_ptr<Process> start_worker(const std::vector<std::string>& more = {}) {
    std::vector<std::string> argv = {"trace-worker", "--tracing-lease-ttl", kTracingTtl};
    const std::vector<std::string> where = where_flags();
    argv.insert(argv.end(), where.begin(), where.end());
    argv.insert(argv.end(), more.begin(), more.end());
    return start_lh(argv);
  }

  // The AWS actions a process sent, from its /metrics at `url`
  // (leasehold_aws_requests_total{action="..."} N).
  std::set<std::string> aws_actions_sent(const std::string& url) {
    const RunResult r = run({"curl", "-sf", url});
    EXPECT_EQ(r.exit_code, 0) << url;
    std::set<std::string> out;
    const std::regex sent(R"re(leasehold_aws_requests_total\{action="([^"]+)"\} [1-9])re");
    for (std::sregex_iterator it(r.out.begin(), r.out.end(), sent), end; it != end; ++it) {
      out.insert((*it)[1].str());
    }
    return out;
  }

  // The actions `store schema --json` lists for `process`, the only ones it
  // may send.
  std::set<std::string> actions_listed(const std::string& process) {
    const RunResult r = lh({"store", "schema", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const json::object schema = parse_object(r.out);
    std::set<std::string> out;
    for (const json::value& p : schema.at("processes").at(process).as_array()) {
      out.emplace(p.at("action").as_string());
    }
    return out;
  }

  // The audit's events, each "event job_id".
  std::vector<std::string> audit(const std::string& id) {
    std::vector<std::string> out;
    const json::value entries = http("GET", "/api/movies/" + id + "/audit").json();
    for (const json::value& e : entries.as_array()) {
      out.push_back(std::string(e.at("event").as_string()) + " " +
                    std::string(e.at("job_id").as_string()));
    }
    return out;
  }

  // Waits until the trace is published as traced and its audit recorded
  // (the audit entry is written after the status).
  bool wait_traced(const std::string& id, const std::string& job) {
    return eventually(
        [&] {
          return status_of(id) == "traced" && audit(id).back() == "movie.tracing.completed " + job;
        },
        60s);
  }

  std::string movie_;
  json::object spot_;
  std::string token_, base_;
  std::unique_ptr<Process> serve_;
  std::string queue_uri_, media_uri_;
};

TEST_P(TraceWorkerTest, AKilledWorkersTraceFailsWhenItsLeaseExpiresAndTheNextTraceReplacesIt) {
  const std::string id = ready_movie();
  const std::string job = trace(id, kLongMovieFrames - 1);
  ASSERT_FALSE(job.empty());
  std::unique_ptr<Process> worker = start_worker();
  ASSERT_TRUE(eventually([&] { return frames_done(id) >= 1; }, 30s)) << worker->err_so_far();
  ASSERT_EQ(::kill(worker->pid(), SIGKILL), 0);
  ASSERT_TRUE(worker->wait_for(10s));
  const json::object at_kill = movie(id);
  ASSERT_LT(at_kill.at("frames_done").as_int64(), kLongMovieFrames) << "the trace ended too soon";
  EXPECT_EQ(at_kill.at("lock").at("kind"), "tracing");

  // Nobody renews the lease: once it expires the movie reads as failed and
  // is free, with nothing more written.
  ASSERT_TRUE(eventually([&] { return status_of(id) == "tracing failed"; }, 20s));
  const json::object failed = movie(id);
  EXPECT_EQ(failed.at("lock"), nullptr);
  EXPECT_EQ(failed.at("frames_done"), at_kill.at("frames_done"));
  EXPECT_EQ(failed.at("failure_summary"), "the trace stopped: its worker went away");

  const std::string next = trace(id, 99);
  ASSERT_FALSE(next.empty());
  std::unique_ptr<Process> other = start_worker();
  ASSERT_TRUE(wait_traced(id, next)) << other->err_so_far();
  EXPECT_EQ(movie(id).at("frames_done"), 100);
  EXPECT_EQ(http("GET", "/api/movies/" + id + "/frames").json().as_array().size(), 100u);
  // The dead job's end was recorded once, by the reader that found it.
  EXPECT_EQ(audit(id), (std::vector<std::string>{
                           "movie.tracing.started " + job, "movie.tracing.failed " + job,
                           "movie.tracing.started " + next, "movie.tracing.completed " + next}));
}

TEST_P(TraceWorkerTest, AWorkerPausedPastItsLeaseWritesNothingWhenItWakes) {
  const std::string id = ready_movie();
  const std::string job = trace(id, kLongMovieFrames - 1);
  std::unique_ptr<Process> paused = start_worker();
  ASSERT_TRUE(eventually([&] { return frames_done(id) >= 1; }, 30s)) << paused->err_so_far();
  stop_outside_a_write(*paused);
  if (HasFatalFailure()) return;
  ASSERT_LT(frames_done(id), kLongMovieFrames) << "the trace ended too soon";
  ASSERT_TRUE(eventually([&] { return status_of(id) == "tracing failed"; }, 20s));

  // Another trace replaces the job, and another worker completes it.
  const std::string next = trace(id, 199);
  std::unique_ptr<Process> other = start_worker();
  ASSERT_TRUE(wait_traced(id, next)) << other->err_so_far();
  const std::string frames = http("GET", "/api/movies/" + id + "/frames").body;
  const std::vector<std::string> events = audit(id);

  ASSERT_EQ(::kill(paused->pid(), SIGCONT), 0);
  ASSERT_TRUE(eventually(
      [&] { return paused->err_so_far().find("lost its lease and stopped") != std::string::npos; },
      20s))
      << paused->err_so_far();
  EXPECT_EQ(status_of(id), "traced");
  EXPECT_EQ(movie(id).at("frames_done"), 200);
  EXPECT_EQ(http("GET", "/api/movies/" + id + "/frames").body, frames);
  EXPECT_EQ(audit(id), events);
  EXPECT_EQ(events.front(), "movie.tracing.started " + job);
  ASSERT_EQ(::kill(paused->pid(), SIGTERM), 0);
  ASSERT_TRUE(paused->wait_for(10s));
  EXPECT_EQ(paused->result().exit_code, 0);
}

TEST_P(TraceWorkerTest, SigtermPublishesTheTraceUnderWayAsInterruptedAndExitsZero) {
  const std::string id = ready_movie();
  const std::string job = trace(id, kLongMovieFrames - 1);
  std::unique_ptr<Process> worker = start_worker();
  ASSERT_TRUE(eventually([&] { return frames_done(id) >= 1; }, 30s)) << worker->err_so_far();
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(worker->pid(), SIGTERM), 0);
  ASSERT_TRUE(worker->wait_for(10s));
  EXPECT_LT(std::chrono::steady_clock::now() - sent, 5s);
  const RunResult r = worker->result();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const std::string& line : lines_of(r.err)) parse_object(line);
  // At once, not after the lease's ttl.
  const json::object m = movie(id);
  EXPECT_EQ(m.at("status"), "tracing failed");
  EXPECT_EQ(m.at("failure_summary"), "the trace was interrupted");
  EXPECT_EQ(m.at("lock"), nullptr);
  EXPECT_EQ(audit(id).back(), "movie.tracing.failed " + job);
}

// On SQS and S3 too: a killed, a paused and a stopped worker keep their
// promises whatever carries the job and the movie, for the movie's tracing
// lease is the truth.
INSTANTIATE_TEST_SUITE_P(Backends, TraceWorkerTest,
                         ::testing::Values(Backend::kSqlite, Backend::kDynamoDb,
                                           Backend::kSqliteAws),
                         backend_name);

// With the jobs on SQS and the movies on S3 (fauxqs): trace workers on
// machines of their own, and what SQS itself may do on a bad day.
class AwsTraceWorkerTest : public TraceWorkerTest {};

// The drill of a fleet across machines: serve and two trace workers, each
// with its own work folder and nothing shared but the store, SQS and S3. Ten
// movies go up to S3 and are traced once each, with the right frames.
TEST_P(AwsTraceWorkerTest, TwoWorkersSharingNoFolderTraceTenMoviesOnceEach) {
  constexpr int kMovies = 10;
  constexpr int64_t kFrames = 50;
  std::vector<std::string> ids;
  for (int i = 0; i < kMovies; ++i) {
    const RunResult r = run({"curl", "-s", "-H", "Authorization: Bearer " + token_, "-H",
                             "Content-Type: application/octet-stream", "--data-binary",
                             "@" + movie_, base_ + "/api/movies?name=m" + std::to_string(i)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ids.emplace_back(parse_object(r.out).at("id").as_string());
  }
  for (const std::string& id : ids) {
    ASSERT_TRUE(eventually([&] { return status_of(id) == "ready"; }, 60s)) << status_of(id);
  }
  std::unique_ptr<Process> w1 = start_worker({"--metrics-listen", "127.0.0.1:0"});
  std::unique_ptr<Process> w2 = start_worker();
  std::vector<std::string> jobs;
  for (const std::string& id : ids) jobs.push_back(trace(id, kFrames - 1));
  for (int i = 0; i < kMovies; ++i) {
    ASSERT_TRUE(wait_traced(ids[i], jobs[i])) << w1->err_so_far() << w2->err_so_far();
  }
  for (int i = 0; i < kMovies; ++i) {
    EXPECT_EQ(audit(ids[i]), (std::vector<std::string>{"movie.tracing.started " + jobs[i],
                                                       "movie.tracing.completed " + jobs[i]}));
    EXPECT_EQ(movie(ids[i]).at("frames_done"), kFrames);
    const json::array rows = http("GET", "/api/movies/" + ids[i] + "/frames").json().as_array();
    ASSERT_EQ(rows.size(), size_t{kFrames});
    for (int64_t f = 0; f < kFrames; ++f) {
      EXPECT_EQ(rows[f].at("frame"), f);
      EXPECT_EQ(rows[f].at("status"), "tracked") << "movie " << i << " frame " << f;
    }
  }

  // What each process sent to SQS and S3 is in its list (it may send
  // nothing else), and counted: serve queued the jobs and uploaded the
  // movies; the trace worker took jobs and read the movies.
  const std::regex port_of(R"("metrics_port":([0-9]+))");
  std::smatch port;
  const std::string w1_log = w1->err_so_far();
  ASSERT_TRUE(std::regex_search(w1_log, port, port_of)) << w1_log;
  const std::set<std::string> by_serve = aws_actions_sent(base_ + "/metrics");
  const std::set<std::string> by_worker =
      aws_actions_sent("http://127.0.0.1:" + port[1].str() + "/metrics");
  for (const char* a : {"sqs:GetQueueUrl", "sqs:SendMessage", "s3:PutObject"}) {
    EXPECT_TRUE(by_serve.contains(a)) << a;
  }
  for (const char* a : {"sqs:ReceiveMessage", "sqs:DeleteMessage", "s3:GetObject"}) {
    EXPECT_TRUE(by_worker.contains(a)) << a;
  }
  const std::set<std::string> serve_may = actions_listed("serve");
  const std::set<std::string> worker_may = actions_listed("trace-worker");
  for (const std::string& a : by_serve) EXPECT_TRUE(serve_may.contains(a)) << a;
  for (const std::string& a : by_worker) EXPECT_TRUE(worker_may.contains(a)) << a;
}

// A download is a redirect to S3 (a presigned URL) that gives the uploaded
// bytes; the frame images decode from a copy that is gone once read; a
// removed movie's object is gone from the bucket.
TEST_P(AwsTraceWorkerTest, ADownloadRedirectsToS3AndARemovalRemovesTheObject) {
  const std::string id = ready_movie();
  for (const char* frame : {"0.jpg", "10.jpg", "3.jpg"}) {  // 3 starts a new decoder
    const RunResult image =
        run({"curl", "-s", "-o", (dir() / "frame.jpg").string(), "-w", "%{http_code}", "-H",
             "Authorization: Bearer " + token_, base_ + "/api/movies/" + id + "/frames/" + frame});
    EXPECT_EQ(image.out, "200") << frame;
    EXPECT_GT(std::filesystem::file_size(dir() / "frame.jpg"), 100u) << frame;
  }
  const RunResult head =
      run({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{redirect_url}", "-H",
           "Authorization: Bearer " + token_, base_ + "/api/movies/" + id + "/video"});
  ASSERT_EQ(head.exit_code, 0) << head.err;
  ASSERT_TRUE(head.out.starts_with("302 " + testing::shared_fauxqs()->endpoint() + "/"))
      << head.out;
  const std::string url = head.out.substr(4);
  EXPECT_NE(url.find("X-Amz-Signature="), std::string::npos) << url;
  const std::string got = (dir() / "got.avi").string();
  ASSERT_EQ(run({"curl", "-sf", "-o", got, url}).exit_code, 0);
  EXPECT_EQ(run({"cmp", got, movie_}).exit_code, 0) << "the bytes uploaded";

  EXPECT_EQ(http("DELETE", "/api/movies/" + id).status, 202);
  ASSERT_TRUE(eventually([&] { return http("GET", "/api/movies/" + id).status == 404; }, 30s));
  EXPECT_NE(run({"curl", "-sf", "-o", "/dev/null", url}).exit_code, 0) << "the object is gone";
}

// SQS delivers at least once: the same job's message again, after its trace
// was published, finds the job ended and changes nothing.
TEST_P(AwsTraceWorkerTest, AJobMessageDeliveredTwiceIsANoOp) {
  const std::string id = ready_movie();
  const std::string job = trace(id, 99);
  ASSERT_FALSE(job.empty());
  std::unique_ptr<Process> worker = start_worker();
  ASSERT_TRUE(wait_traced(id, job)) << worker->err_so_far();
  const std::string frames = http("GET", "/api/movies/" + id + "/frames").body;
  const std::vector<std::string> events = audit(id);

  Result<sqs::SqsQueueOptions> options = sqs::parse_sqs_uri(queue_uri_);
  ASSERT_TRUE(options.ok()) << options.status().to_string();
  options->queue_name += "-movie-trace";
  Result<std::unique_ptr<sqs::SqsQueue>> queue = sqs::SqsQueue::open(*options);
  ASSERT_TRUE(queue.ok()) << queue.status().to_string();
  const std::string body = json::serialize(json::object{{"movie_id", id}, {"job_id", job}});
  ASSERT_TRUE((*queue)->send(body).ok());
  ASSERT_TRUE(eventually(
      [&] {
        return worker->err_so_far().find("job " + job + " of movie " + id + " is stale") !=
               std::string::npos;
      },
      30s))
      << worker->err_so_far();
  EXPECT_EQ(status_of(id), "traced");
  EXPECT_EQ(http("GET", "/api/movies/" + id + "/frames").body, frames);
  EXPECT_EQ(audit(id), events);
}

// SQS stalled (the emulator stopped, SIGSTOP) while a trace runs: the trace,
// which needs only the store, completes; a trace started meanwhile cannot be
// queued and fails at once (503), leaving the movie free; once SQS answers
// again, traces queue again.
TEST_P(AwsTraceWorkerTest, AnSqsOutageMidTraceFailsOnlyTheTraceItCannotQueue) {
  testing::Fauxqs* fauxqs = testing::shared_fauxqs();
  ASSERT_NE(fauxqs, nullptr);
  const std::string id = ready_movie();
  const std::string job = trace(id, 199);
  ASSERT_FALSE(job.empty());
  std::unique_ptr<Process> worker = start_worker();
  ASSERT_TRUE(eventually([&] { return frames_done(id) >= 1; }, 30s)) << worker->err_so_far();
  fauxqs->pause();
  ASSERT_TRUE(wait_traced(id, job)) << worker->err_so_far();
  EXPECT_EQ(movie(id).at("frames_done"), 200);

  const Http refused = start_trace(id, 99);
  fauxqs->resume();
  EXPECT_EQ(refused.status, 503) << refused.body;
  const json::object failed = movie(id);
  EXPECT_EQ(failed.at("status"), "tracing failed");
  EXPECT_EQ(failed.at("failure_summary"), "the trace could not be queued");
  EXPECT_EQ(failed.at("lock"), nullptr);

  EXPECT_EQ(start_trace(id, 99).status, 202) << "queued again once SQS answers";
}

INSTANTIATE_TEST_SUITE_P(Aws, AwsTraceWorkerTest, ::testing::Values(Backend::kSqliteAws),
                         backend_name);

TEST_F(ProcessTest, TraceWorkerAndServeRefuseBadMovieFlagsBeforeOpeningAnything) {
  const std::string media = (dir() / "media").string();
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {{"trace-worker", "--media-dir", media}, "is not a folder"},
           {{"trace-worker", "--media-dir", "/etc", "--tracing-lease-ttl", "20"}, "--tracing"},
           {{"trace-worker", "--media-dir", "/etc", "--analysis-lease-ttl", "1ms"},
            "--analysis-lease-ttl"},
           {{"trace-worker", "--media-dir", "/etc", "--trace-workers", "65"}, "--trace-workers"},
           {{"trace-worker", "--media-dir", "/etc", "--trace-progress-deadline", "0"},
            "--trace-progress-deadline"},
           {{"serve", "--trace-progress-deadline", "soon"}, "--trace-progress-deadline"},
           {{"serve", "--sweep-every", "50ms"}, "--sweep-every"},
           {{"trace-worker", "--media-dir", "/etc", "--sweep-every", "often"}, "--sweep-every"},
           {{"serve", "--sweep-grace", "500ms"}, "--sweep-grace"},
           {{"trace-worker", "--media-dir", "/etc", "--sweep-grace", "0"}, "--sweep-grace"},
           {{"trace-worker", "--media-dir", "/etc", "--metrics-listen", "0.0.0.0:9"}, "loopback"},
           {{"serve", "--upload-max", "2GB"}, "--upload-max"},
           {{"serve", "--upload-max", "0"}, "--upload-max"},
           {{"serve", "--media-dir", ""}, "--media-dir"},
           {{"serve", "--queue", "kafka://jobs"}, "--queue"},
           {{"serve", "--media-dir", "s3://"}, "--media-dir"},
           {{"trace-worker", "--media-dir", "s3://Bad_Bucket/x"}, "--media-dir"},
           {{"trace-worker", "--media-dir", "/etc", "--queue", "sqs://eu-west-1"}, "--queue"},
           {{"store", "init", "--queue", "sqs://EU/jobs"}, "region"},
           {{"serve", "--tracing-lease-ttl", "soon"}, "--tracing-lease-ttl"}}) {
    const RunResult r = lh(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << " " << c.args.back() << ": " << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
  }
  // An s3:// URI without a region, where nothing configures one, is refused
  // as the AWS SDKs refuse it, saying how to name one; no region is guessed.
  for (const std::string command : {"serve", "trace-worker"}) {
    std::vector<std::string> argv = {"env",
                                     "-u",
                                     "AWS_REGION",
                                     "-u",
                                     "AWS_DEFAULT_REGION",
                                     "-u",
                                     "AWS_PROFILE",
                                     "AWS_CONFIG_FILE=" + (dir() / "no-config").string(),
                                     "AWS_SHARED_CREDENTIALS_FILE=" + (dir() / "none").string()};
    for (const std::string& arg : cli({command, "--media-dir", "s3://media-bucket/movies"})) {
      argv.push_back(arg);
    }
    const RunResult r = run(argv);
    EXPECT_EQ(r.exit_code, 2) << command << ": " << r.err;
    EXPECT_NE(r.err.find("--media-dir: s3 uri 's3://media-bucket/movies' names no region: add "
                         "'?region=REGION' to it"),
              std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find("or set AWS_REGION"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(db_path())) << "nothing was opened";
  EXPECT_FALSE(std::filesystem::exists(media)) << "nothing was made";
}

}  // namespace
}  // namespace leasehold::process_test
