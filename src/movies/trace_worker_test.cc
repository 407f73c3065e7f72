// Tests for TraceWorker on the memory store, a real clock with short ttls
// and a real (tiny, synthetic) movie: a completed trace, redelivered and
// stale messages, a worker that loses its lease mid-trace, a killed worker
// whose lease expires before the next trace replaces it, and a failure with
// a safe summary. Waits are on conditions with deadlines, never sleeps.
#include "movies/trace_worker.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include "movies/movies.h"
#include "movies/schema.h"
#include "movies/test_movie.h"
#include "store/memory/memory_store.h"
#include "store/store_wrapper.h"
#include "testing/eventually.h"
#include "testing/temp_dir.h"
#include "tracer/synthetic_movie.h"

namespace leasehold::movies {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const User kAda{"ada", "Ada L."};

using leasehold::testing::eventually;

// How long a test waits for a worker's threads.
constexpr milliseconds kWaitMax = seconds(20);

// Holds the first write of a frame row of frame `frame` until opened.
class GateStore final : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  void hold_frame(int64_t frame) {
    std::lock_guard lock(mu_);
    frame_ = frame;
  }
  bool wait_held(Duration limit) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return held_; });
  }
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  Result<Item> update(std::string_view table, const Key& key, const Update& update,
                      const Condition& condition) override {
    if (table == kFramesTable) {
      std::unique_lock lock(mu_);
      if (frame_ >= 0 && key.sk.rfind(frame_sk_prefix(frame_), 0) == 0 && !held_) {
        held_ = true;
        cv_.notify_all();
        cv_.wait(lock, [&] { return open_; });
      }
    }
    return StoreWrapper::update(table, key, update, condition);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t frame_ = -1;
  bool held_ = false;
  bool open_ = false;
};

class TraceWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(
        tracer::write_synthetic_movie((dir_ / "spots.avi").string(), small_test_movie()).ok());
    ASSERT_TRUE(inner_->ensure_table(StoreQueue::table_spec()).ok());
    for (const TableSpec& s : movie_table_specs()) {
      ASSERT_TRUE(inner_->ensure_table(s).ok());
    }
    auto queue = StoreQueue::open(*inner_, clock_, random_, QueueOptions{.name = kTraceQueueName});
    ASSERT_TRUE(queue.ok());
    queue_ = std::move(queue).value();
    media_ = folder_media(dir_);
    MoviesOptions o;
    o.media = media_.get();
    o.analysis_ttl = seconds(5);
    o.tracing_ttl = seconds(5);
    o.lease = lease_config();
    auto movies = Movies::open(*inner_, clock_, random_, *queue_, o);
    ASSERT_TRUE(movies.ok()) << movies.status().to_string();
    movies_ = std::move(movies).value();
  }

  static LeaseConfig lease_config() {
    LeaseConfig c;
    c.max_clock_skew = milliseconds(50);
    c.safety_margin = milliseconds(50);
    return c;
  }

  std::unique_ptr<TraceWorker> start_worker(const std::string& id, ItemStore* store = nullptr,
                                            Duration ttl = seconds(2)) {
    TraceWorkerOptions o;
    o.id = id;
    o.tracing_ttl = ttl;
    o.media = media_.get();
    o.queue_visibility = seconds(30);
    o.idle_wait = milliseconds(10);
    o.lease = lease_config();
    auto w = TraceWorker::start(store ? *store : *inner_, clock_, random_, *queue_, o);
    EXPECT_TRUE(w.ok()) << w.status().to_string();
    return w.ok() ? std::move(w).value() : nullptr;
  }

  // A probed movie with one marker on the spot, traced every frame.
  std::string movie_with_marker(std::string* lease_id) {
    return movies::movie_with_marker(*movies_, kAda, "spots.avi", lease_id);
  }

  std::string start_trace(const std::string& id, const std::string& lease_id) {
    auto started = movies_->start_trace(id, kAda, lease_id);
    EXPECT_TRUE(started.ok()) << started.status().to_string();
    return started.ok() ? started->job_id : "";
  }

  // Every row of the movie's latest trace, page after page.
  Result<std::vector<FrameRow>> all_rows(const std::string& id) {
    std::vector<FrameRow> out;
    FramesOptions o{kFramesLimitMax, ""};
    do {
      LEASEHOLD_ASSIGN_OR_RETURN(FramePage page, movies_->frames(id, o));
      out.insert(out.end(), page.items.begin(), page.items.end());
      o.after = page.next_after;
    } while (!o.after.empty());
    return out;
  }

  std::vector<std::string> events(const std::string& id) {
    std::vector<std::string> out;
    auto audit = movies_->audit(id);
    EXPECT_TRUE(audit.ok());
    if (!audit.ok()) return out;
    for (const AuditEntry& e : *audit) out.push_back(e.event);
    return out;
  }

  const leasehold::testing::TempDir tmp_{"trace_worker_test_"};
  const std::filesystem::path dir_ = tmp_.path();
  RealClock clock_;
  SystemRandom random_;
  std::unique_ptr<ItemStore> inner_ = store::make_memory_store();
  std::unique_ptr<StoreQueue> queue_;
  std::unique_ptr<MediaStore> media_;
  std::unique_ptr<Movies> movies_;
};

TEST_F(TraceWorkerTest, ACompletedTraceIsPublishedWithItsFramesAndAudit) {
  std::string lease_id;
  const std::string id = movie_with_marker(&lease_id);
  const std::string job = start_trace(id, lease_id);
  auto w = start_worker("w1");
  ASSERT_TRUE(eventually([&] { return w->stats().traced == 1; }, kWaitMax));

  auto m = movies_->get(id);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->status, kStatusTraced);
  EXPECT_EQ(m->frames_done, 12);
  EXPECT_EQ(m->frames_total, 12);
  EXPECT_FALSE(m->lock.has_value()) << "the tracing lease is ended";
  EXPECT_TRUE(m->failure_summary.empty());
  auto rows = all_rows(id);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 12u);
  for (const FrameRow& r : *rows) {
    const auto truth = tracer::spot_position(small_test_movie().spots[0], r.frame);
    EXPECT_LT(std::hypot(r.x - truth.x, r.y - truth.y), 1.5) << "frame " << r.frame;
    EXPECT_EQ(r.job_id, job);
    EXPECT_EQ(r.job_epoch, 1);
    EXPECT_EQ(r.status, "tracked");
  }
  auto audit = movies_->audit(id);
  ASSERT_TRUE(audit.ok());
  ASSERT_EQ(audit->size(), 2u);
  EXPECT_EQ((*audit)[1].event, kEventTracingCompleted);
  EXPECT_EQ((*audit)[1].job_id, job);
  EXPECT_EQ((*audit)[1].user_display_name, "Ada L.");
  // The message was deleted, and the movie may be edited again.
  EXPECT_TRUE(queue_->receive(1, seconds(1))->empty());
  EXPECT_TRUE(movies_->acquire_analysis(id, kAda).ok());
}

TEST_F(TraceWorkerTest, RedeliveredAndStaleMessagesAreNoOps) {
  std::string lease_id;
  const std::string id = movie_with_marker(&lease_id);
  const std::string job = start_trace(id, lease_id);
  const std::string body =
      boost::json::serialize(boost::json::object{{"movie_id", id}, {"job_id", job}});
  const std::string stale = boost::json::serialize(
      boost::json::object{{"movie_id", id}, {"job_id", random_token(random_)}});
  ASSERT_TRUE(queue_->send(body).ok());
  ASSERT_TRUE(queue_->send(stale).ok());
  ASSERT_TRUE(queue_->send("not json").ok());
  auto w = start_worker("w1");
  ASSERT_TRUE(eventually(
      [&] {
        const auto s = w->stats();
        return s.traced == 1 && s.messages == 4;
      },
      kWaitMax));
  ASSERT_TRUE(queue_->send(body).ok());  // a redelivery after the job completed
  ASSERT_TRUE(eventually([&] { return w->stats().messages == 5; }, kWaitMax));
  w->stop();
  const auto s = w->stats();
  EXPECT_EQ(s.claimed, 1u);
  EXPECT_EQ(s.stale_messages, 3u);
  EXPECT_EQ(movies_->get(id)->status, kStatusTraced);
  EXPECT_EQ(all_rows(id)->size(), 12u);
  EXPECT_EQ(events(id), (std::vector<std::string>{kEventTracingStarted, kEventTracingCompleted}));
  EXPECT_TRUE(queue_->receive(kReceiveBatchMax, seconds(1))->empty());
}

TEST_F(TraceWorkerTest, AMessageRedeliveredWhileItsJobRunsIsNotClaimedAgain) {
  std::string lease_id;
  const std::string id = movie_with_marker(&lease_id);
  const std::string job = start_trace(id, lease_id);
  GateStore gate(*inner_);
  gate.hold_frame(3);
  auto w1 = start_worker("w1", &gate);
  ASSERT_TRUE(gate.wait_held(seconds(20)));
  auto w2 = start_worker("w2");
  ASSERT_TRUE(
      queue_->send(boost::json::serialize(boost::json::object{{"movie_id", id}, {"job_id", job}}))
          .ok());
  ASSERT_TRUE(eventually([&] { return w2->stats().messages == 1; }, kWaitMax));
  EXPECT_EQ(w2->stats().claimed, 0u);
  EXPECT_EQ(w2->stats().stale_messages, 1u);
  gate.open();
  ASSERT_TRUE(eventually([&] { return w1->stats().traced == 1; }, kWaitMax));
  EXPECT_EQ(w2->stats().rows_written, 0u);
  EXPECT_EQ(*get_string(*inner_->get(kMoviesTable, movie_key(id), true), attr::kJobClaimedBy),
            "w1");
}

TEST_F(TraceWorkerTest, AWorkerThatLosesItsLeaseMidTraceStopsAndWritesNothingMore) {
  std::string lease_id;
  const std::string id = movie_with_marker(&lease_id);
  start_trace(id, lease_id);
  GateStore gate(*inner_);
  gate.hold_frame(5);
  auto w = start_worker("w1", &gate);
  ASSERT_TRUE(gate.wait_held(seconds(20)));
  // Another holder takes the tracing lease over while frame 5 is in flight.
  Update takeover;
  takeover.set("tracing_owner", std::string("intruder"))
      .set("tracing_token", random_token(random_))
      .set(attr::kStatus, std::string("taken"));
  ASSERT_TRUE(inner_->update(kMoviesTable, movie_key(id), takeover, {}).ok());
  gate.open();
  ASSERT_TRUE(eventually([&] { return w->stats().lost == 1; }, kWaitMax));
  w->stop();

  const Item item = *inner_->get(kMoviesTable, movie_key(id), true);
  EXPECT_EQ(*get_string(item, attr::kStatus), "taken") << "nothing published";
  EXPECT_EQ(*get_int(item, attr::kFramesDone), 5) << "frames 0..4 done, 5 refused";
  auto rows = all_rows(id);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 6u) << "frames 0..5: the row in flight, nothing after";
  EXPECT_EQ(rows->back().frame, 5);
  EXPECT_EQ(events(id), std::vector<std::string>{kEventTracingStarted});
  EXPECT_EQ(w->stats().traced + w->stats().failed, 0u);
}

// A newer job's rows are never overwritten by an older job that still
// believes its lease valid (a paused worker, a skewed clock): here the
// newer job's row for frame 6 is already there while the older one is
// held at frame 5, with its lease untouched, so that only the row's epoch
// condition stands between them.
TEST_F(TraceWorkerTest, AnOlderJobNeverOverwritesTheRowsOfANewerOne) {
  std::string lease_id;
  const std::string id = movie_with_marker(&lease_id);
  start_trace(id, lease_id);
  GateStore gate(*inner_);
  gate.hold_frame(5);
  auto w = start_worker("w1", &gate);
  ASSERT_TRUE(gate.wait_held(seconds(20)));
  Update newer;
  newer.set("marker_id", std::string("m1"))
      .set("label", std::string("spot"))
      .set("frame", int64_t{6})
      .set("time_s", std::string("0.25"))
      .set("x", std::string("1"))
      .set("y", std::string("2"))
      .set("score", std::string("1"))
      .set("status", std::string("tracked"))
      .set(attr::kJobId, std::string("newer-job"))
      .set(attr::kJobEpoch, int64_t{2});
  ASSERT_TRUE(inner_->update(kFramesTable, Key{movie_pk(id), frame_sk(6, "m1")}, newer, {}).ok());
  gate.open();
  ASSERT_TRUE(eventually([&] { return w->stats().lost == 1; }, kWaitMax));
  w->stop();

  const Item row = *inner_->get(kFramesTable, Key{movie_pk(id), frame_sk(6, "m1")}, true);
  EXPECT_EQ(*get_string(row, attr::kJobId), "newer-job");
  EXPECT_EQ(*get_int(row, attr::kJobEpoch), 2);
  EXPECT_EQ(*get_string(row, "x"), "1");
  const Item item = *inner_->get(kMoviesTable, movie_key(id), true);
  EXPECT_EQ(*get_string(item, attr::kStatus), kStatusTracing) << "nothing published";
  EXPECT_EQ(*get_int(item, attr::kFramesDone), 6) << "frames 0..5 done, 6 refused";
  auto rows = inner_->query(kFramesTable, movie_pk(id), KeyRange::all(), {});
  ASSERT_TRUE(rows.ok());
  EXPECT_EQ(rows->items.size(), 7u)
      << "frames 0..5 of the older job and 6 of the newer, nothing after";
  EXPECT_EQ(events(id), std::vector<std::string>{kEventTracingStarted});
  EXPECT_EQ(w->stats().traced + w->stats().failed, 0u);
}

TEST_F(TraceWorkerTest, AKilledWorkersLeaseExpiresAndTheNextTraceReplacesIt) {
  std::string lease_id;
  const std::string id = movie_with_marker(&lease_id);
  const std::string first_job = start_trace(id, lease_id);
  GateStore gate(*inner_);
  gate.hold_frame(3);
  auto killed = start_worker("w1", &gate, milliseconds(800));
  ASSERT_TRUE(gate.wait_held(seconds(20)));
  std::thread killer([&] { killed->abandon(); });
  ASSERT_TRUE(eventually([&] { return killed->stats().stopped; }, kWaitMax));
  gate.open();
  killer.join();
  EXPECT_EQ(movies_->get(id)->lock->kind, "tracing") << "abandoned, not released";

  // Once the lease expires, the movie can be taken and traced again.
  Result<AnalysisLease> again = internal_error("");
  ASSERT_TRUE(eventually(
      [&] {
        again = movies_->acquire_analysis(id, kAda);
        return again.ok();
      },
      kWaitMax));
  const std::string second_job = start_trace(id, again->lease_id);
  auto w2 = start_worker("w2");
  ASSERT_TRUE(eventually([&] { return w2->stats().traced == 1; }, kWaitMax));
  EXPECT_EQ(movies_->get(id)->status, kStatusTraced);
  auto rows = all_rows(id);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 12u);
  for (const FrameRow& r : *rows) {
    EXPECT_EQ(r.job_id, second_job);
    EXPECT_EQ(r.job_epoch, 2);
  }
  EXPECT_EQ(killed->stats().traced + killed->stats().failed, 0u);
  EXPECT_EQ(events(id), (std::vector<std::string>{kEventTracingStarted, kEventTracingFailed,
                                                  kEventTracingStarted, kEventTracingCompleted}))
      << "the killed worker's job ended once, as failed, when the movie was taken";
}

TEST_F(TraceWorkerTest, AFailedTraceIsPublishedWithASafeSummary) {
  std::string lease_id;
  const std::string id = movie_with_marker(&lease_id);
  const std::string job = start_trace(id, lease_id);
  std::filesystem::remove(dir_ / "spots.avi");
  auto w = start_worker("w1");
  ASSERT_TRUE(eventually([&] { return w->stats().failed == 1; }, kWaitMax));
  auto m = movies_->get(id);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->status, kStatusTracingFailed);
  EXPECT_FALSE(m->lock.has_value());
  EXPECT_EQ(m->failure_summary, "the movie's file is missing");
  auto audit = movies_->audit(id);
  ASSERT_TRUE(audit.ok());
  ASSERT_EQ(audit->size(), 2u);
  EXPECT_EQ((*audit)[1].event, kEventTracingFailed);
  EXPECT_EQ((*audit)[1].job_id, job);
  EXPECT_EQ((*audit)[1].summary, "the movie's file is missing");
  EXPECT_EQ((*audit)[1].summary.find(dir_.string()), std::string::npos);
}

TEST_F(TraceWorkerTest, AWorkerStoppedMidTracePublishesTheTraceAsInterrupted) {
  std::string lease_id;
  const std::string id = movie_with_marker(&lease_id);
  start_trace(id, lease_id);
  GateStore gate(*inner_);
  gate.hold_frame(4);
  auto w = start_worker("w1", &gate);
  ASSERT_TRUE(gate.wait_held(seconds(20)));
  std::thread stopper([&] { w->stop(); });
  ASSERT_TRUE(eventually([&] { return w->stats().stopped; }, kWaitMax));
  gate.open();
  stopper.join();
  EXPECT_EQ(w->stats().failed, 1u);
  auto m = movies_->get(id);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->status, kStatusTracingFailed);
  EXPECT_EQ(m->failure_summary, "the trace was interrupted");
  EXPECT_FALSE(m->lock.has_value()) << "the tracing lease is ended";
  EXPECT_LT(m->frames_done, 12);
  EXPECT_EQ(events(id), (std::vector<std::string>{kEventTracingStarted, kEventTracingFailed}));
}

// A decode that hangs after its first frame and does not heed the stop: the
// watchdog takes the lease back and publishes the job as failed, and the
// stuck thread, once it returns, writes nothing more.
TEST_F(TraceWorkerTest, ATraceThatMakesNoProgressIsEndedByTheWatchdog) {
  std::string lease_id;
  const std::string id = movie_with_marker(&lease_id);
  start_trace(id, lease_id);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  TraceWorkerOptions o;
  o.id = "w1";
  o.tracing_ttl = seconds(2);
  o.media = media_.get();
  o.idle_wait = milliseconds(10);
  o.lease = lease_config();
  o.progress_deadline = milliseconds(300);
  Status second_write;
  o.trace_fn = [&](const std::string&, const tracer::VideoInfo&, const tracer::TraceRequest&,
                   const tracer::FrameCallback& on_frame, std::stop_token) {
    tracer::TracedFrame frame;
    frame.rows.emplace_back();
    frame.rows[0].marker_id = "m1";
    LEASEHOLD_RETURN_IF_ERROR(on_frame(frame));
    std::unique_lock lock(mu);
    cv.wait(lock, [&] { return release; });  // deaf to the stop token
    frame.rows[0].frame = 1;
    second_write = on_frame(frame);
    return second_write;
  };
  auto w = TraceWorker::start(*inner_, clock_, random_, *queue_, o);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  ASSERT_TRUE(
      eventually([&] { return movies_->get(id)->status == kStatusTracingFailed; }, kWaitMax));
  auto m = movies_->get(id);
  EXPECT_NE(m->failure_summary.find("no progress"), std::string::npos) << m->failure_summary;
  EXPECT_FALSE(m->lock.has_value()) << "the tracing lease is ended";
  EXPECT_EQ(m->frames_done, 1);
  EXPECT_EQ(events(id), (std::vector<std::string>{kEventTracingStarted, kEventTracingFailed}));
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  ASSERT_TRUE(eventually([&] { return (*w)->stats().failed == 1; }, kWaitMax));
  (*w)->stop();
  EXPECT_EQ(second_write.code(), Code::kFailedPrecondition) << second_write.to_string();
  EXPECT_EQ(movies_->get(id)->frames_done, 1);
  EXPECT_EQ((*w)->stats().rows_written, 1u);
  EXPECT_EQ(events(id).size(), 2u);
}

TEST_F(TraceWorkerTest, StartRefusesBadOptions) {
  TraceWorkerOptions o;
  o.media = media_.get();
  EXPECT_EQ(TraceWorker::start(*inner_, clock_, random_, *queue_, o).status().code(),
            Code::kInvalidArgument);
  o.id = "w";
  o.tracing_ttl = milliseconds(100);
  EXPECT_EQ(TraceWorker::start(*inner_, clock_, random_, *queue_, o).status().code(),
            Code::kInvalidArgument);
}

}  // namespace
}  // namespace leasehold::movies
