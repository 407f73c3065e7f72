// Trace jobs and removals under faults, through Movies, the job queue
// (StoreQueue) and a TraceWorker on SQLite and on DynamoDB (dynalite): a
// queue wait longer than the tracing ttl; claims, renewals, publications
// and enqueues the store does not answer (or answers only after applying);
// a removal stopped after each of its steps. Whatever happens, no job is
// lost and each ends with exactly one terminal audit event, its start
// sorting before it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <mutex>

#include "../dynamodb/dynalite_fixture.h"
#include "leasehold/queue.h"
#include "movies/movies.h"
#include "movies/schema.h"
#include "movies/test_movie.h"
#include "movies/trace_worker.h"
#include "store/store_wrapper.h"
#include "testing/eventually.h"
#include "testing/temp_dir.h"
#include "tracer/synthetic_movie.h"

namespace leasehold::movies {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::seconds;

enum class Backend { kSqlite, kDynamoDb };
enum class Fault {
  kUnavailable,  // nothing applied
  kDropReply,    // applied, then no answer: kUnknownOutcome
  kLoseRequest,  // not applied, and no answer: kUnknownOutcome
};

const User kAda{"ada", "Ada L."};

using leasehold::testing::eventually;

// How long a test waits for a worker or the store.
constexpr milliseconds kWaitMax = seconds(30);

// Faults for chosen writes and reads: the next writes to a table that touch
// an attribute, the next reads of a table, or every call after a number of
// writes (a process killed). Safe for the worker's threads and the test's.
class ScriptedStore final : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;

  void fail_writes(std::string table, std::string attr, Fault fault, int times = 1) {
    std::lock_guard lock(mu_);
    writes_.push_back({std::move(table), std::move(attr), fault, times});
  }
  void fail_reads(std::string table, int times) {
    std::lock_guard lock(mu_);
    read_table_ = std::move(table);
    reads_ = times;
  }
  // After `writes` more writes, every call fails, as for a process that was
  // killed there.
  void die_after(int writes) {
    std::lock_guard lock(mu_);
    writes_left_ = writes;
  }
  void clear_faults() {
    std::lock_guard lock(mu_);
    writes_.clear();
    reads_ = 0;
  }
  void revive() {
    std::lock_guard lock(mu_);
    writes_left_ = -1;
  }
  int faults() const {
    std::lock_guard lock(mu_);
    return faults_;
  }

  Result<Item> get(std::string_view table, const Key& key, bool consistent) override {
    if (!read_allowed(table)) return unavailable("injected: read failed");
    return StoreWrapper::get(table, key, consistent);
  }
  Result<Page> query(std::string_view table, std::string_view pk, const KeyRange& range,
                     const QueryOptions& options) override {
    if (dead()) return unavailable("injected: dead");
    return StoreWrapper::query(table, pk, range, options);
  }
  Status put(std::string_view table, const Item& item, const Condition& condition) override {
    std::vector<std::string> attrs;
    for (const auto& [name, value] : item) attrs.push_back(name);
    return write(table, attrs, [&] { return StoreWrapper::put(table, item, condition); });
  }
  Result<Item> update(std::string_view table, const Key& key, const Update& update,
                      const Condition& condition) override {
    std::vector<std::string> attrs;
    for (const UpdateAction& a : update.actions()) attrs.push_back(a.attr);
    Result<Item> out = internal_error("unset");
    const Status s = write(table, attrs, [&] {
      out = StoreWrapper::update(table, key, update, condition);
      return out.status();
    });
    if (!s.ok() && (out.ok() || s.code() != out.status().code())) return s;
    return out;
  }
  Status remove(std::string_view table, const Key& key, const Condition& condition) override {
    return write(table, {}, [&] { return StoreWrapper::remove(table, key, condition); });
  }

 private:
  struct WriteFault {
    std::string table;
    std::string attr;
    Fault fault;
    int times;
  };

  bool dead() {
    std::lock_guard lock(mu_);
    return writes_left_ == 0;
  }
  bool read_allowed(std::string_view table) {
    std::lock_guard lock(mu_);
    if (writes_left_ == 0) return false;
    if (reads_ > 0 && table == read_table_) {
      --reads_;
      ++faults_;
      return false;
    }
    return true;
  }
  Status write(std::string_view table, const std::vector<std::string>& attrs,
               const std::function<Status()>& apply) {
    std::optional<Fault> fault;
    {
      std::lock_guard lock(mu_);
      if (writes_left_ == 0) return unavailable("injected: dead");
      if (writes_left_ > 0) --writes_left_;
      for (WriteFault& w : writes_) {
        if (w.times == 0 || w.table != table) continue;
        if (std::find(attrs.begin(), attrs.end(), w.attr) == attrs.end()) continue;
        --w.times;
        ++faults_;
        fault = w.fault;
        break;
      }
    }
    if (!fault) return apply();
    switch (*fault) {
      case Fault::kUnavailable:
        return unavailable("injected: unavailable");
      case Fault::kDropReply:
        (void)apply();
        return unknown_outcome("injected: reply dropped");
      case Fault::kLoseRequest:
        return unknown_outcome("injected: request lost");
    }
    return internal_error("unreachable");
  }

  mutable std::mutex mu_;
  std::vector<WriteFault> writes_;
  std::string read_table_;
  int reads_ = 0;
  int writes_left_ = -1;  // -1: no limit
  int faults_ = 0;
};

class TraceJobsTest : public ::testing::TestWithParam<Backend> {
 protected:
  static void SetUpTestSuite() {
    tmp_ = std::make_unique<leasehold::testing::TempDir>("trace_jobs_test_");
    files_ = tmp_->path();
    ASSERT_TRUE(
        tracer::write_synthetic_movie((files_ / "spots.avi").string(), small_test_movie()).ok());
  }
  static void TearDownTestSuite() {
    tmp_.reset();
    dynalite_.reset();
  }

  void SetUp() override {
    dir_ = files_ / ("t" + std::to_string(++tests_));
    fs::create_directories(dir_ / "media");
    media_ = folder_media(dir_ / "media");
    auto opened = open_store(store_uri());
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    backend_ = std::move(opened).value();
    store_ = std::make_unique<ScriptedStore>(*backend_);
    ASSERT_TRUE(store_->ensure_table(StoreQueue::table_spec()).ok());
    for (const TableSpec& s : movie_table_specs()) {
      ASSERT_TRUE(store_->ensure_table(s).ok());
    }
    auto queue = StoreQueue::open(*store_, clock_, random_, QueueOptions{.name = kTraceQueueName});
    ASSERT_TRUE(queue.ok());
    queue_ = std::move(queue).value();
    open_movies(seconds(5));
  }
  void TearDown() override {
    if (worker_) worker_->stop();
    worker_.reset();
    fs::remove_all(dir_);
  }

  std::string store_uri() {
    if (GetParam() == Backend::kSqlite) return "sqlite:" + (dir_ / "store.db").string();
    return testing::dynalite_store_uri(
        dynalite_, "j" + std::to_string(getpid()) + "_" + std::to_string(tests_) + "_");
  }

  static LeaseConfig lease_config() {
    LeaseConfig c;
    c.max_clock_skew = milliseconds(50);
    c.safety_margin = milliseconds(50);
    return c;
  }

  // Movies whose trace jobs start with a tracing lease of `tracing_ttl`.
  void open_movies(Duration tracing_ttl) {
    MoviesOptions o;
    o.media = media_.get();
    o.analysis_ttl = seconds(30);
    o.tracing_ttl = tracing_ttl;
    o.lease = lease_config();
    auto movies = Movies::open(*store_, clock_, random_, *queue_, o);
    ASSERT_TRUE(movies.ok()) << movies.status().to_string();
    movies_ = std::move(movies).value();
  }

  void start_worker(Duration visibility = seconds(30)) {
    TraceWorkerOptions o;
    o.id = "w1";
    o.tracing_ttl = seconds(2);
    o.media = media_.get();
    o.queue_visibility = visibility;
    o.idle_wait = milliseconds(20);
    o.lease = lease_config();
    auto w = TraceWorker::start(*store_, clock_, random_, *queue_, o);
    ASSERT_TRUE(w.ok()) << w.status().to_string();
    worker_ = std::move(w).value();
  }

  // A probed movie of a file of its own with one marker, its analysis lease
  // in *lease_id.
  std::string movie_with_marker(std::string* lease_id) {
    const std::string file = "m" + std::to_string(++movies_made_) + ".avi";
    fs::copy_file(files_ / "spots.avi", dir_ / "media" / file);
    return movies::movie_with_marker(*movies_, kAda, file, lease_id);
  }

  std::string traced_movie_started() {
    std::string lease_id;
    const std::string id = movie_with_marker(&lease_id);
    auto started = movies_->start_trace(id, kAda, lease_id);
    EXPECT_TRUE(started.ok()) << started.status().to_string();
    return id;
  }

  std::vector<std::string> events(const std::string& id) {
    std::vector<std::string> out;
    auto audit = movies_->audit(id);
    EXPECT_TRUE(audit.ok()) << audit.status().to_string();
    if (audit.ok()) {
      for (const AuditEntry& e : *audit) out.push_back(e.event);
    }
    return out;
  }

  std::string status(const std::string& id) {
    auto m = movies_->get(id);
    return m.ok() ? m->status : m.status().to_string();
  }

  // The job ends traced, with its start and completion audited once each.
  void expect_traced(const std::string& id) {
    ASSERT_TRUE(eventually([&] { return status(id) == kStatusTraced; }, kWaitMax)) << status(id);
    EXPECT_EQ(movies_->get(id)->frames_done, 12);
    ASSERT_TRUE(eventually([&] { return events(id).size() >= 2; }, kWaitMax));
    EXPECT_EQ(events(id), (std::vector<std::string>{kEventTracingStarted, kEventTracingCompleted}));
  }

  static inline std::unique_ptr<leasehold::testing::TempDir> tmp_;
  static inline fs::path files_;
  static inline int tests_ = 0;
  static inline std::unique_ptr<testing::Dynalite> dynalite_;
  fs::path dir_;
  RealClock clock_;
  SystemRandom random_;
  std::unique_ptr<ItemStore> backend_;
  std::unique_ptr<ScriptedStore> store_;
  std::unique_ptr<StoreQueue> queue_;
  std::unique_ptr<MediaStore> media_;
  std::unique_ptr<Movies> movies_;
  std::unique_ptr<TraceWorker> worker_;
  int movies_made_ = 0;
};

// Four jobs queued behind nobody, each longer than its tracing ttl: each is
// claimed (its lease re-armed) and traced when a worker comes.
TEST_P(TraceJobsTest, JobsWaitingLongerThanTheirTtlAreStillTraced) {
  open_movies(milliseconds(400));
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) ids.push_back(traced_movie_started());
  const auto expired = [&](const std::string& id) {
    auto item = store_->get(kMoviesTable, movie_key(id), true);
    return item.ok() && *get_string(*item, attr::kStatus) == kStatusQueued &&
           *get_int(*item, "tracing_expires_at_ms") + 100 < to_unix_ms(clock_.wall_now());
  };
  ASSERT_TRUE(eventually([&] { return std::all_of(ids.begin(), ids.end(), expired); }, kWaitMax))
      << "the leases expire while queued; the movies stay queued";
  start_worker();
  for (const std::string& id : ids) expect_traced(id);
  // The worker counts a job after publishing it: the count may trail the
  // events just read.
  EXPECT_TRUE(eventually([&] { return worker_->stats().traced == 4u; }, kWaitMax))
      << worker_->stats().traced << " traced";
}

// Each fault is armed once the job is queued (start_trace touches the same
// attributes), before a worker runs.
TEST_P(TraceJobsTest, AClaimWithoutAnAnswerIsReadBackAndItsJobRuns) {
  for (Fault fault : {Fault::kDropReply, Fault::kLoseRequest, Fault::kUnavailable}) {
    SCOPED_TRACE(static_cast<int>(fault));
    if (worker_) worker_->stop();
    const std::string id = traced_movie_started();
    store_->fail_writes(kMoviesTable, attr::kJobClaimedBy, fault);
    start_worker(milliseconds(500));
    expect_traced(id);
  }
  EXPECT_EQ(store_->faults(), 3);
}

// The claim applied, its answer was lost and so was the read-back: the
// message stays, comes back, and the worker finds the job its own.
TEST_P(TraceJobsTest, AClaimThatCannotBeReadBackIsLeftForRedelivery) {
  const std::string id = traced_movie_started();
  store_->fail_writes(kMoviesTable, attr::kJobClaimedBy, Fault::kDropReply);
  store_->fail_reads(kMoviesTable, 1);
  start_worker(milliseconds(500));
  // No read of the test's own until the worker's read-back has failed.
  ASSERT_TRUE(eventually([&] { return worker_->stats().messages >= 2; }, kWaitMax))
      << "delivered again";
  expect_traced(id);
  EXPECT_EQ(store_->faults(), 2);
}

TEST_P(TraceJobsTest, ARenewalWithoutAnAnswerAfterTheClaimIsTriedAgain) {
  const std::string id = traced_movie_started();
  store_->fail_writes(kMoviesTable, "tracing_heartbeat_at_ms", Fault::kUnavailable, 2);
  store_->fail_writes(kMoviesTable, "tracing_heartbeat_at_ms", Fault::kLoseRequest, 1);
  start_worker();
  expect_traced(id);
  EXPECT_EQ(store_->faults(), 3);
}

TEST_P(TraceJobsTest, APublicationWithoutAnAnswerIsResolvedOnce) {
  const std::string first = traced_movie_started();
  store_->fail_writes(kMoviesTable, attr::kJobAuditPending, Fault::kDropReply);
  start_worker();
  expect_traced(first);
  worker_->stop();
  const std::string second = traced_movie_started();
  store_->fail_writes(kMoviesTable, attr::kJobAuditPending, Fault::kUnavailable, 2);
  start_worker();
  expect_traced(second);
  EXPECT_EQ(store_->faults(), 3);
}

// The store refuses every publication while the lease lasts: the worker
// gives up, and the next reader after the lease's expiry ends the job as
// failed, once.
TEST_P(TraceJobsTest, AJobNeverPublishedIsEndedOnceByTheNextReader) {
  const std::string id = traced_movie_started();
  store_->fail_writes(kMoviesTable, attr::kJobAuditPending, Fault::kUnavailable, 1'000'000);
  start_worker();
  ASSERT_TRUE(eventually([&] { return worker_->stats().lost == 1; }, kWaitMax));
  store_->clear_faults();
  ASSERT_TRUE(eventually([&] { return status(id) == kStatusTracingFailed; }, kWaitMax));
  ASSERT_TRUE(eventually([&] { return events(id).size() >= 2; }, kWaitMax));
  EXPECT_EQ(events(id), (std::vector<std::string>{kEventTracingStarted, kEventTracingFailed}));
  (void)movies_->get(id);
  EXPECT_EQ(events(id).size(), 2u);
}

// A job message the store did not take (or took without saying so): the
// trace fails at once, once; a message that was stored after all finds its
// job ended and does nothing.
//
// The worker starts after the sends: one running meanwhile may claim a
// message that a dropped reply stored before start_trace ends its job, and
// that trace then rightly goes on (end_unqueued), which is not this case.
TEST_P(TraceJobsTest, AnEnqueueWithoutAnAnswerEndsTheJobOnce) {
  for (Fault fault : {Fault::kUnavailable, Fault::kDropReply, Fault::kLoseRequest}) {
    SCOPED_TRACE(static_cast<int>(fault));
    std::string lease_id;
    const std::string id = movie_with_marker(&lease_id);
    // Every try of the send (StoreQueue tries up to three times).
    store_->clear_faults();
    store_->fail_writes(std::string(kQueueTable), "body", fault, 3);
    auto started = movies_->start_trace(id, kAda, lease_id);
    EXPECT_EQ(started.status().code(), Code::kUnavailable) << started.status().to_string();
    EXPECT_EQ(status(id), kStatusTracingFailed);
    EXPECT_EQ(movies_->get(id)->failure_summary, "the trace could not be queued");
    EXPECT_EQ(events(id), (std::vector<std::string>{kEventTracingStarted, kEventTracingFailed}));
  }
  store_->clear_faults();
  ASSERT_NO_FATAL_FAILURE(start_worker());
  const uint64_t messages = worker_->stats().messages;
  ASSERT_TRUE(eventually([&] { return worker_->stats().stale_messages >= 1; }, kWaitMax))
      << "the message stored without an answer is received, and found stale: messages "
      << worker_->stats().messages << ", claimed " << worker_->stats().claimed;
  EXPECT_EQ(worker_->stats().claimed, 0u);
  EXPECT_GE(worker_->stats().messages, messages);
}

// A removal stopped after each of its writes (a process killed there) is
// finished by the next run, and leaves nothing: rows, audit, file, item.
TEST_P(TraceJobsTest, ARemovalStoppedAfterAnyStepIsFinishedByTheNextRun) {
  const int rows = 12, audit = 2;
  // Stopped before the rows, among them, after them, among the audit, and
  // after the audit and the file, before the item.
  for (int writes : {0, 5, rows, rows + 1, rows + audit}) {
    SCOPED_TRACE(writes);
    std::string lease_id;
    const std::string id = movie_with_marker(&lease_id);
    // Rows and audit as a trace leaves them.
    for (int frame = 0; frame < rows; ++frame) {
      Item row{{attr::kPk, movie_pk(id)}, {attr::kSk, frame_sk(frame, "m1")}};
      ASSERT_TRUE(store_->put(kFramesTable, row, {}).ok());
    }
    for (int i = 0; i < audit; ++i) {
      Item entry{{attr::kPk, movie_pk(id)}, {attr::kSk, job_audit_sk(1000 + i, 0, "j")}};
      ASSERT_TRUE(store_->put(kAuditTable, entry, {}).ok());
    }
    ASSERT_TRUE(movies_->release(id, "ada", lease_id).ok());
    const std::string file = movies_->get(id)->file;
    ASSERT_TRUE(movies_->remove(id, "ada", false).ok());
    store_->die_after(writes);
    EXPECT_FALSE(movies_->finish_remove(id).ok());
    store_->revive();
    EXPECT_EQ(status(id), kStatusDeleting) << "the item goes last";
    ASSERT_TRUE(movies_->finish_remove(id).ok());
    EXPECT_EQ(movies_->get(id).status().code(), Code::kNotFound);
    EXPECT_FALSE(fs::exists(dir_ / "media" / file));
    for (const char* table : {kFramesTable, kAuditTable}) {
      auto left = store_->query(table, movie_pk(id), KeyRange::all(), {});
      ASSERT_TRUE(left.ok());
      EXPECT_TRUE(left->items.empty()) << table;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, TraceJobsTest,
                         ::testing::Values(Backend::kSqlite, Backend::kDynamoDb),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return info.param == Backend::kSqlite ? "sqlite" : "dynamodb";
                         });

}  // namespace
}  // namespace leasehold::movies
