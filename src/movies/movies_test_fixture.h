// What the tests of Movies share (movies_test.cc, movies_trace_test.cc):
// two users, and the MoviesTest fixture: Movies on the memory store, a
// simulated clock and a media folder holding a tiny synthetic movie and a
// file that is not one, with helpers to make a ready movie, place a marker,
// read an item raw, drain the queue, write a trace's rows, and read the list
// and the CSV whole.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "movies/movies.h"
#include "movies/schema.h"
#include "movies/test_movie.h"
#include "store/memory/memory_store.h"
#include "testing/temp_dir.h"
#include "tracer/synthetic_movie.h"

namespace leasehold::movies::testing {

using std::chrono::milliseconds;
using std::chrono::seconds;

inline const User kAda{"ada", "Ada L."};
inline const User kBob{"bob", "Bob B."};

class MoviesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = std::make_unique<leasehold::testing::TempDir>("movies_test_");
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
    auto queue = StoreQueue::open(*store_, clock_, random_, QueueOptions{.name = kTraceQueueName});
    ASSERT_TRUE(queue.ok());
    queue_ = std::move(queue).value();
    media_ = folder_media(dir_);
    MoviesOptions o;
    o.media = media_.get();
    o.analysis_ttl = seconds(2);
    o.tracing_ttl = seconds(3);
    o.lease.max_clock_skew = milliseconds(100);
    o.lease.safety_margin = milliseconds(50);
    auto movies = Movies::open(*store_, clock_, random_, *queue_, o);
    ASSERT_TRUE(movies.ok()) << movies.status().to_string();
    movies_ = std::move(movies).value();
  }

  std::string ready_movie(const std::string& file = "spots.avi") {
    auto created = movies_->create("spots", kAda, file);
    EXPECT_TRUE(created.ok()) << created.status().to_string();
    auto probed = movies_->probe(created->id);
    EXPECT_TRUE(probed.ok()) << probed.status().to_string();
    EXPECT_EQ(probed->status, kStatusReady);
    return created->id;
  }

  std::vector<tracer::Marker> one_marker(int64_t frame = 0) {
    const auto at = tracer::spot_position(small_test_movie().spots[0], frame);
    return {tracer::Marker{"m1", "spot", frame, at.x, at.y}};
  }

  Item raw(const std::string& id) {
    auto item = store_->get(kMoviesTable, movie_key(id), true);
    EXPECT_TRUE(item.ok());
    return item.ok() ? *item : Item{};
  }

  std::vector<Message> drain_queue() {
    auto got = queue_->receive(kReceiveBatchMax, seconds(60));
    EXPECT_TRUE(got.ok());
    return got.ok() ? *got : std::vector<Message>{};
  }

  // A frame row as a trace of epoch `epoch` writes it, and the movie's
  // tracing slot at that epoch (as start_trace leaves it).
  void put_row(const std::string& id, int64_t frame, const std::string& marker_id,
               const std::string& label, int64_t epoch) {
    Item row{{"pk", movie_pk(id)},
             {"sk", frame_sk(frame, marker_id)},
             {"marker_id", marker_id},
             {"label", label},
             {"frame", frame},
             {"time_s", format_double(static_cast<double>(frame) / 25)},
             {"x", std::string("1.5")},
             {"y", std::string("2")},
             {"score", std::string("0.9")},
             {"status", std::string("tracked")},
             {"job_id", "job" + std::to_string(epoch)},
             {"job_epoch", epoch}};
    ASSERT_TRUE(store_->put(kFramesTable, row, {}).ok());
  }
  void set_tracing_epoch(const std::string& id, int64_t epoch) {
    Update update;
    update.set("tracing_epoch", epoch);
    ASSERT_TRUE(store_->update(kMoviesTable, movie_key(id), update, {}).ok());
  }

  // Every page of list() with `limit` in `order` (of `movies`, else
  // movies_), checking that only the last has no next_after; the IDs in
  // order.
  std::vector<std::string> list_all(size_t limit, size_t* pages = nullptr, Movies* movies = nullptr,
                                    ListOrder order = ListOrder::kOldestFirst) {
    std::vector<std::string> ids;
    ListOptions o{limit, "", order};
    for (size_t page = 1;; ++page) {
      auto listed = (movies != nullptr ? movies : movies_.get())->list(o);
      EXPECT_TRUE(listed.ok()) << listed.status().to_string();
      if (!listed.ok()) return ids;
      EXPECT_LE(listed->items.size(), limit);
      for (const MovieSummary& m : listed->items) ids.push_back(m.id);
      if (listed->next_after.empty()) {
        if (pages != nullptr) *pages = page;
        return ids;
      }
      EXPECT_EQ(listed->items.size(), limit) << "a page before the last is full";
      EXPECT_EQ(listed->next_after, listed->items.back().id);
      o.after = listed->next_after;
    }
  }

  // The whole of frames_csv(id), and how many parts it came in.
  Result<std::string> read_csv(const std::string& id, size_t* parts = nullptr) {
    FramesCsv csv = movies_->frames_csv(id);
    std::string all;
    for (size_t n = 1;; ++n) {
      std::string part;
      LEASEHOLD_ASSIGN_OR_RETURN(bool more, csv.next(part));
      all += part;
      if (!more) {
        if (parts != nullptr) *parts = n;
        return all;
      }
    }
  }

  static inline std::unique_ptr<leasehold::testing::TempDir> tmp_;
  static inline std::filesystem::path dir_;
  SimulatedClock clock_;
  SystemRandom random_;
  std::unique_ptr<ItemStore> store_ = store::make_memory_store();
  std::unique_ptr<StoreQueue> queue_;
  std::unique_ptr<MediaStore> media_;
  std::unique_ptr<Movies> movies_;
};

}  // namespace leasehold::movies::testing
