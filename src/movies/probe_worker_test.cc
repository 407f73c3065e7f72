// Tests for ProbeWorker on the memory store and a tiny synthetic movie: a
// queued probe makes the movie ready (or invalid), a repeated or stale job
// and a malformed message are removed without effect, and wake() and
// stop() are prompt.
#include "movies/probe_worker.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "movies/schema.h"
#include "movies/test_movie.h"
#include "store/memory/memory_store.h"
#include "testing/eventually.h"
#include "testing/temp_dir.h"

namespace leasehold::movies {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const User kAda{"ada", "Ada L."};

using leasehold::testing::eventually;

// How long a test waits for the worker's thread.
constexpr milliseconds kWaitMax = seconds(20);

class ProbeWorkerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = std::make_unique<leasehold::testing::TempDir>("probe_worker_test_");
    dir_ = tmp_->path();
    ASSERT_TRUE(
        tracer::write_synthetic_movie((dir_ / "spots.avi").string(), small_test_movie()).ok());
    std::ofstream(dir_ / "notes.txt") << "not a video";
  }
  static void TearDownTestSuite() { tmp_.reset(); }

  void SetUp() override {
    ASSERT_TRUE(store_->ensure_table(StoreQueue::table_spec()).ok());
    for (const TableSpec& s : movie_table_specs()) {
      ASSERT_TRUE(store_->ensure_table(s).ok());
    }
    auto traces = StoreQueue::open(*store_, clock_, random_, {.name = kTraceQueueName});
    auto probes = StoreQueue::open(*store_, clock_, random_, {.name = kProbeQueueName});
    ASSERT_TRUE(traces.ok() && probes.ok());
    traces_ = std::move(traces).value();
    probes_ = std::move(probes).value();
    media_ = folder_media(dir_);
    MoviesOptions o;
    o.media = media_.get();
    auto movies = Movies::open(*store_, clock_, random_, *traces_, o);
    ASSERT_TRUE(movies.ok()) << movies.status().to_string();
    movies_ = std::move(movies).value();
  }

  // A worker that would wait a minute between looks at an empty queue, so
  // that a prompt probe shows wake() worked.
  std::unique_ptr<ProbeWorker> start_worker() {
    auto worker =
        ProbeWorker::start(*movies_, *probes_, clock_, {.id = "p", .idle_wait = seconds(60)});
    EXPECT_TRUE(worker.ok()) << worker.status().to_string();
    return worker.ok() ? std::move(worker).value() : nullptr;
  }

  std::string status_of(const std::string& id) {
    auto m = movies_->get(id);
    return m.ok() ? m->status : m.status().to_string();
  }
  int64_t messages_left() {
    auto got = probes_->receive(kReceiveBatchMax, seconds(60));
    return got.ok() ? static_cast<int64_t>(got->size()) : -1;
  }

  static inline std::unique_ptr<leasehold::testing::TempDir> tmp_;
  static inline std::filesystem::path dir_;
  RealClock clock_;
  SystemRandom random_;
  std::unique_ptr<ItemStore> store_ = store::make_memory_store();
  std::unique_ptr<StoreQueue> traces_, probes_;
  std::unique_ptr<MediaStore> media_;
  std::unique_ptr<Movies> movies_;
};

TEST_F(ProbeWorkerTest, AQueuedProbeMakesTheMovieReadyOrInvalidAndRemovesTheJob) {
  std::unique_ptr<ProbeWorker> worker = start_worker();
  ASSERT_NE(worker, nullptr);
  const auto video = movies_->create("spots", kAda, "spots.avi");
  const auto notes = movies_->create("notes", kAda, "notes.txt");
  ASSERT_TRUE(video.ok() && notes.ok());
  ASSERT_TRUE(enqueue_probe(*probes_, video->id).ok());
  ASSERT_TRUE(enqueue_probe(*probes_, notes->id).ok());
  worker->wake();
  ASSERT_TRUE(eventually([&] { return worker->stats().probed == 2; }, kWaitMax));
  EXPECT_EQ(status_of(video->id), kStatusReady);
  EXPECT_EQ(status_of(notes->id), kStatusInvalid);
  EXPECT_EQ(movies_->get(video->id)->frame_count, 12);
  worker->stop();
  EXPECT_EQ(messages_left(), 0);
}

TEST_F(ProbeWorkerTest, RepeatedStaleAndMalformedJobsAreRemovedWithoutEffect) {
  const auto video = movies_->create("spots", kAda, "spots.avi");
  ASSERT_TRUE(video.ok());
  ASSERT_TRUE(movies_->probe(video->id).ok());  // probed already: a repeated job
  const auto gone = movies_->create("gone", kAda, "spots.avi");
  ASSERT_TRUE(gone.ok());
  ASSERT_TRUE(movies_->remove(gone->id, kAda.name, false).ok());
  ASSERT_TRUE(
      std::filesystem::exists(dir_ / "spots.avi") ||
      tracer::write_synthetic_movie((dir_ / "spots.avi").string(), small_test_movie()).ok());
  const Item before = store_->get(kMoviesTable, movie_key(video->id), true).value();
  ASSERT_TRUE(enqueue_probe(*probes_, video->id).ok());
  ASSERT_TRUE(enqueue_probe(*probes_, gone->id).ok());
  ASSERT_TRUE(probes_->send("not json").ok());
  ASSERT_TRUE(probes_->send(R"({"movie_id": 7})").ok());
  std::unique_ptr<ProbeWorker> worker = start_worker();
  ASSERT_NE(worker, nullptr);
  // All four received and the two stale jobs counted; stop() then waits for
  // the last one's handling to end.
  ASSERT_TRUE(eventually(
      [&] { return worker->stats().stale == 2 && worker->stats().messages == 4; }, kWaitMax));
  worker->stop();
  EXPECT_EQ(messages_left(), 0);
  EXPECT_EQ(worker->stats().probed, 0u);
  EXPECT_EQ(store_->get(kMoviesTable, movie_key(video->id), true).value(), before);
}

TEST_F(ProbeWorkerTest, StopIsPromptWhileTheWorkerWaitsAndRefusesBadOptions) {
  std::unique_ptr<ProbeWorker> worker = start_worker();
  ASSERT_NE(worker, nullptr);
  const auto asked = std::chrono::steady_clock::now();
  worker->stop();
  worker->stop();  // idempotent
  EXPECT_LT(std::chrono::steady_clock::now() - asked, seconds(5));
  EXPECT_EQ(
      ProbeWorker::start(*movies_, *probes_, clock_, {.id = "p", .visibility = Duration::zero()})
          .status()
          .code(),
      Code::kInvalidArgument);
}

}  // namespace
}  // namespace leasehold::movies
