// Tests for Movies on the memory store, a simulated clock and a real (tiny,
// synthetic) movie: creation and probing, the analysis lease (races,
// heartbeats, releases, expiry, an admin's break), fenced and validated
// edits, start_trace and its refusals, removal, and the reads (the list and
// the frames in pages, the CSV in parts and its neutralised cells). The
// worker's side is in trace_worker_test.cc.
#include "movies/movies.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <thread>
#include <tuple>

#include "movies/frame_images.h"
#include "movies/schema.h"
#include "movies/test_movie.h"
#include "store/memory/memory_store.h"
#include "store/store_wrapper.h"
#include "tracer/synthetic_movie.h"

namespace leasehold::movies {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const User kAda{"ada", "Ada L."};
const User kBob{"bob", "Bob B."};

// Gives the movies of one millisecond in each page of the index in the
// reverse of the memory store's order (which is by ID): an order of the
// store's choosing, as ItemStore::query_index allows.
class TiesReversedStore final : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Result<Page> query_index(std::string_view table, std::string_view index,
                           std::string_view hash_value, const KeyRange& range,
                           const QueryOptions& options) override {
    ASSIGN_OR_RETURN(Page page,
                     StoreWrapper::query_index(table, index, hash_value, range, options));
    std::stable_sort(page.items.begin(), page.items.end(), [](const Item& a, const Item& b) {
      return std::tuple(*get_int(a, attr::kCreatedAtMs), *get_string(b, attr::kPk)) <
             std::tuple(*get_int(b, attr::kCreatedAtMs), *get_string(a, attr::kPk));
    });
    return page;
  }
};

class MoviesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::filesystem::temp_directory_path() / ("movies_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    ASSERT_TRUE(
        tracer::write_synthetic_movie((dir_ / "spots.avi").string(), small_test_movie()).ok());
    std::ofstream(dir_ / "notes.txt") << "not a video";
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir_); }

  void SetUp() override {
    ASSERT_TRUE(store_->ensure_table(StoreQueue::table_spec()).ok());
    for (const TableSpec& s : {movies_table_spec(), frames_table_spec(), audit_table_spec()}) {
      ASSERT_TRUE(store_->ensure_table(s).ok());
    }
    auto queue = StoreQueue::open(*store_, clock_, random_, QueueOptions{.name = kTraceQueueName});
    ASSERT_TRUE(queue.ok());
    queue_ = std::move(queue).value();
    MoviesOptions o;
    o.media_dir = dir_.string();
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

  // Every page of list() with `limit` (of `movies`, else movies_), checking
  // that only the last has no next_after; the IDs in order.
  std::vector<std::string> list_all(size_t limit, size_t* pages = nullptr,
                                    Movies* movies = nullptr) {
    std::vector<std::string> ids;
    ListOptions o{limit, ""};
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
      ASSIGN_OR_RETURN(bool more, csv.next(part));
      all += part;
      if (!more) {
        if (parts != nullptr) *parts = n;
        return all;
      }
    }
  }

  static inline std::filesystem::path dir_;
  SimulatedClock clock_;
  SystemRandom random_;
  std::unique_ptr<ItemStore> store_ = store::make_memory_store();
  std::unique_ptr<StoreQueue> queue_;
  std::unique_ptr<Movies> movies_;
};

TEST_F(MoviesTest, CreateProbeGetAndList) {
  auto created = movies_->create("spots", kAda, "spots.avi");
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  EXPECT_EQ(created->status, kStatusProcessing);
  auto m = movies_->probe(created->id);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->status, kStatusReady);
  EXPECT_EQ(m->width, 96);
  EXPECT_EQ(m->height, 64);
  EXPECT_EQ(m->frame_count, 12);
  EXPECT_DOUBLE_EQ(m->fps, 25);
  EXPECT_EQ(m->trim.start_frame, 0);
  EXPECT_EQ(m->trim.end_frame, 11);
  EXPECT_EQ(m->every_frames, 1);
  EXPECT_TRUE(m->markers.empty());
  EXPECT_FALSE(m->lock.has_value());
  EXPECT_EQ(movies_->probe(created->id).status().code(), Code::kFailedPrecondition);

  auto listed = movies_->list();
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->items.size(), 1u);
  EXPECT_EQ(listed->items[0].id, created->id);
  EXPECT_EQ(listed->items[0].name, "spots");
  EXPECT_EQ(listed->items[0].status, kStatusReady);
  EXPECT_TRUE(listed->next_after.empty());
}

// Movies created in one millisecond (the index's sort key) are each listed
// once, in one order, however the pages fall across them; the list does not
// stop at a thousand.
TEST_F(MoviesTest, ListPagesEveryMovieOnceInCreationOrderThroughTiesInOneMillisecond) {
  std::vector<std::pair<int64_t, std::string>> created;
  for (int i = 0; i < 1005; ++i) {
    if (i % 250 == 0 || (i > 600 && i % 7 == 0)) clock_.advance(milliseconds(1));
    auto m = movies_->create("m" + std::to_string(i), kAda, "spots.avi");
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    created.emplace_back(m->created_at_ms, m->id);
  }
  std::sort(created.begin(), created.end());
  std::vector<std::string> expected;
  for (const auto& [at_ms, id] : created) expected.push_back(id);

  size_t pages = 0;
  EXPECT_EQ(list_all(kListLimitMax, &pages), expected);
  EXPECT_EQ(pages, 2u);
  EXPECT_EQ(list_all(7, &pages), expected);
  EXPECT_EQ(pages, 144u);  // 1005 / 7 = 143.6
  EXPECT_EQ(list_all(5, &pages), expected);
  EXPECT_EQ(pages, 201u) << "1005 / 5: the last full page has no next";
  EXPECT_EQ(movies_->list()->items.size(), kListLimitDefault);

  // The same on a store that gives the movies of one millisecond in another
  // order: the list's order is its own.
  TiesReversedStore reversed(*store_);
  MoviesOptions o;
  o.media_dir = dir_.string();
  auto other = Movies::open(reversed, clock_, random_, *queue_, o);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(list_all(7, &pages, other->get()), expected);
  EXPECT_EQ(list_all(kListLimitMax, &pages, other->get()), expected);
}

TEST_F(MoviesTest, ListRefusesABadLimitAndAnAfterThatNamesNoMovie) {
  std::filesystem::copy_file(dir_ / "spots.avi", dir_ / "listed.avi",
                             std::filesystem::copy_options::overwrite_existing);
  const std::string first = movies_->create("a", kAda, "listed.avi")->id;
  clock_.advance(milliseconds(1));
  const std::string second = movies_->create("b", kAda, "spots.avi")->id;
  EXPECT_EQ(movies_->list({0, ""}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(movies_->list({kListLimitMax + 1, ""}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(movies_->list({10, "no such"}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(movies_->list({10, std::string(65, 'a')}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(movies_->list({10, "0123456789abcdef"}).status().code(), Code::kInvalidArgument);

  auto page = movies_->list({1, ""});
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->items.size(), 1u);
  EXPECT_EQ(page->items[0].id, first);
  EXPECT_EQ(page->next_after, first);
  // The movie a client resumes after is removed meanwhile: its place is gone.
  ASSERT_TRUE(movies_->remove(first, "ada", false).ok());
  ASSERT_TRUE(movies_->finish_remove(first).ok());
  auto gone = movies_->list({1, page->next_after});
  EXPECT_EQ(gone.status().code(), Code::kInvalidArgument);
  EXPECT_NE(gone.status().message().find("first page"), std::string::npos);
  auto rest = movies_->list({1, ""});
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->items.size(), 1u);
  EXPECT_EQ(rest->items[0].id, second);
  EXPECT_TRUE(rest->next_after.empty());
}

TEST_F(MoviesTest, CreateRefusesBadInputAndProbeMarksNonVideosInvalidWithoutPaths) {
  EXPECT_EQ(movies_->create("", kAda, "spots.avi").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(movies_->create("x", kAda, "../spots.avi").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(movies_->create("x", kAda, "missing.avi").status().code(), Code::kInvalidArgument);
  auto created = movies_->create("notes", kAda, "notes.txt");
  ASSERT_TRUE(created.ok());
  auto m = movies_->probe(created->id);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->status, kStatusInvalid);
  EXPECT_FALSE(m->failure_summary.empty());
  EXPECT_EQ(m->failure_summary.find('/'), std::string::npos) << m->failure_summary;
  EXPECT_EQ(movies_->acquire_analysis(created->id, kAda).status().code(),
            Code::kFailedPrecondition);
}

TEST_F(MoviesTest, OpenRefusesAMissingMediaFolderAndTooShortTtls) {
  MoviesOptions o;
  o.media_dir = (dir_ / "nowhere").string();
  EXPECT_EQ(Movies::open(*store_, clock_, random_, *queue_, o).status().code(),
            Code::kInvalidArgument);
  o.media_dir = dir_.string();
  o.analysis_ttl = milliseconds(200);
  EXPECT_EQ(Movies::open(*store_, clock_, random_, *queue_, o).status().code(),
            Code::kInvalidArgument);
}

TEST_F(MoviesTest, UnknownMovieIsNotFoundEverywhere) {
  const std::string lease_id(32, 'a');
  EXPECT_EQ(movies_->get("nope").status().code(), Code::kNotFound);
  EXPECT_EQ(movies_->probe("nope").status().code(), Code::kNotFound);
  EXPECT_EQ(movies_->acquire_analysis("nope", kAda).status().code(), Code::kNotFound);
  EXPECT_EQ(movies_->heartbeat("nope", "ada", lease_id).status().code(), Code::kNotFound);
  EXPECT_EQ(movies_->release("nope", "ada", lease_id).code(), Code::kNotFound);
  EXPECT_EQ(movies_->set_markers("nope", "ada", lease_id, {}).code(), Code::kNotFound);
  EXPECT_EQ(movies_->start_trace("nope", kAda, lease_id).status().code(), Code::kNotFound);
  EXPECT_EQ(movies_->remove("nope", "ada", true).code(), Code::kNotFound);
  EXPECT_EQ(movies_->audit("nope").status().code(), Code::kNotFound);
  EXPECT_FALSE(store_->get(kMoviesTable, movie_key("nope"), true).ok()) << "nothing created";
}

TEST_F(MoviesTest, TwoUsersRacingForTheAnalysisLeaseExactlyOneWins) {
  const std::string id = ready_movie();
  constexpr int kUsers = 8;
  std::vector<Result<AnalysisLease>> results(kUsers, Result<AnalysisLease>(internal_error("")));
  std::vector<Lock> holders(kUsers);
  std::vector<std::thread> threads;
  for (int i = 0; i < kUsers; ++i) {
    threads.emplace_back([&, i] {
      const User u{"user" + std::to_string(i), "User " + std::to_string(i)};
      results[i] = movies_->acquire_analysis(id, u, &holders[i]);
    });
  }
  for (auto& t : threads) t.join();
  int winners = 0;
  int winner = -1;
  for (int i = 0; i < kUsers; ++i) {
    if (results[i].ok()) {
      ++winners;
      winner = i;
    } else {
      EXPECT_EQ(results[i].status().code(), Code::kAlreadyExists)
          << results[i].status().to_string();
    }
  }
  ASSERT_EQ(winners, 1);
  for (int i = 0; i < kUsers; ++i) {
    if (i == winner) continue;
    EXPECT_EQ(holders[i].kind, "analysis");
    EXPECT_EQ(holders[i].user_display_name, "User " + std::to_string(winner));
    EXPECT_EQ(holders[i].started_at_ms, to_unix_ms(clock_.wall_now()));
  }
  auto m = movies_->get(id);
  ASSERT_TRUE(m.ok() && m->lock.has_value());
  EXPECT_EQ(m->lock->kind, "analysis");
}

TEST_F(MoviesTest, ASecondBrowserOfTheSameUserIsRefusedUntilTheLeaseExpires) {
  const std::string id = ready_movie();
  auto first = movies_->acquire_analysis(id, kAda);
  ASSERT_TRUE(first.ok());
  Lock holder;
  EXPECT_EQ(movies_->acquire_analysis(id, kAda, &holder).status().code(), Code::kAlreadyExists);
  EXPECT_EQ(holder.user_display_name, "Ada L.");

  // The heartbeat extends the lease past its first expiry.
  clock_.advance(milliseconds(1500));
  auto beat = movies_->heartbeat(id, "ada", first->lease_id);
  ASSERT_TRUE(beat.ok()) << beat.status().to_string();
  EXPECT_GT(beat->expires_at_ms, first->expires_at_ms);
  clock_.advance(milliseconds(1500));
  EXPECT_EQ(movies_->acquire_analysis(id, kBob).status().code(), Code::kAlreadyExists);

  // Expired: nobody holds it, and the next browser replaces it.
  clock_.advance(seconds(1));
  ASSERT_TRUE(movies_->get(id).ok());
  EXPECT_FALSE(movies_->get(id)->lock.has_value());
  auto second = movies_->acquire_analysis(id, kAda);
  ASSERT_TRUE(second.ok());
  EXPECT_NE(second->lease_id, first->lease_id);

  // The first browser's lease ID is worth nothing now.
  const Item before = raw(id);
  EXPECT_EQ(movies_->heartbeat(id, "ada", first->lease_id).status().code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(movies_->set_markers(id, "ada", first->lease_id, one_marker()).code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(movies_->release(id, "ada", first->lease_id).code(), Code::kFailedPrecondition);
  EXPECT_EQ(raw(id), before);

  ASSERT_TRUE(movies_->release(id, "ada", second->lease_id).ok());
  EXPECT_FALSE(movies_->get(id)->lock.has_value());
  EXPECT_TRUE(movies_->acquire_analysis(id, kBob).ok());
}

TEST_F(MoviesTest, EditsNeedTheLeaseAndChangeNothingWithoutIt) {
  const std::string id = ready_movie();
  auto lease = movies_->acquire_analysis(id, kAda);
  ASSERT_TRUE(lease.ok());
  const Item before = raw(id);
  const std::string wrong(32, 'b');
  EXPECT_EQ(movies_->set_markers(id, "ada", "", one_marker()).code(), Code::kInvalidArgument);
  EXPECT_EQ(movies_->set_markers(id, "ada", wrong, one_marker()).code(), Code::kFailedPrecondition);
  EXPECT_EQ(movies_->set_markers(id, "bob", lease->lease_id, one_marker()).code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(movies_->set_trim(id, "ada", wrong, {1, 5}).code(), Code::kFailedPrecondition);
  EXPECT_EQ(movies_->set_capture_interval(id, "ada", wrong, 2).code(), Code::kFailedPrecondition);
  EXPECT_EQ(raw(id), before);

  ASSERT_TRUE(movies_->set_markers(id, "ada", lease->lease_id, one_marker(2)).ok());
  ASSERT_TRUE(movies_->set_trim(id, "ada", lease->lease_id, {1, 9}).ok());
  ASSERT_TRUE(movies_->set_capture_interval(id, "ada", lease->lease_id, 2).ok());
  auto m = movies_->get(id);
  ASSERT_TRUE(m.ok());
  ASSERT_EQ(m->markers.size(), 1u);
  EXPECT_EQ(m->markers[0].id, "m1");
  EXPECT_EQ(m->markers[0].frame, 2);
  EXPECT_DOUBLE_EQ(m->markers[0].x, one_marker(2)[0].x);
  EXPECT_EQ(m->trim.start_frame, 1);
  EXPECT_EQ(m->trim.end_frame, 9);
  EXPECT_EQ(m->every_frames, 2);

  // Past its expiry (not renewed), the same lease ID writes nothing.
  clock_.advance(seconds(3));
  const Item after = raw(id);
  EXPECT_EQ(movies_->set_trim(id, "ada", lease->lease_id, {0, 11}).code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(raw(id), after);
}

TEST_F(MoviesTest, BadEditsAreRefusedAndWriteNothing) {
  const std::string id = ready_movie();
  auto lease = movies_->acquire_analysis(id, kAda);
  ASSERT_TRUE(lease.ok());
  const std::string& l = lease->lease_id;
  const Item before = raw(id);
  auto with = [&](auto change) {
    auto markers = one_marker();
    change(markers);
    return movies_->set_markers(id, "ada", l, markers).code();
  };
  EXPECT_EQ(with([](auto& m) { m[0].x = 96; }), Code::kInvalidArgument);
  EXPECT_EQ(with([](auto& m) { m[0].y = -0.5; }), Code::kInvalidArgument);
  EXPECT_EQ(with([](auto& m) { m[0].frame = 12; }), Code::kInvalidArgument);
  EXPECT_EQ(with([](auto& m) { m[0].id = ""; }), Code::kInvalidArgument);
  EXPECT_EQ(with([](auto& m) { m[0].label = std::string(kMarkerLabelBytesMax + 1, 'x'); }),
            Code::kInvalidArgument);
  EXPECT_EQ(with([](auto& m) { m.push_back(m[0]); }), Code::kInvalidArgument);
  EXPECT_EQ(with([](auto& m) { m.resize(kMarkersMax + 1, m[0]); }), Code::kInvalidArgument);
  EXPECT_EQ(movies_->set_trim(id, "ada", l, {5, 4}).code(), Code::kInvalidArgument);
  EXPECT_EQ(movies_->set_trim(id, "ada", l, {-1, 4}).code(), Code::kInvalidArgument);
  EXPECT_EQ(movies_->set_trim(id, "ada", l, {0, 12}).code(), Code::kInvalidArgument);
  EXPECT_EQ(movies_->set_capture_interval(id, "ada", l, 0).code(), Code::kInvalidArgument);
  EXPECT_EQ(raw(id), before);
}

TEST_F(MoviesTest, StartTraceReplacesTheAnalysisLeaseQueuesTheJobAndAudits) {
  const std::string id = ready_movie();
  auto lease = movies_->acquire_analysis(id, kAda);
  ASSERT_TRUE(lease.ok());
  ASSERT_TRUE(movies_->set_markers(id, "ada", lease->lease_id, one_marker(0)).ok());
  ASSERT_TRUE(movies_->set_capture_interval(id, "ada", lease->lease_id, 2).ok());
  auto started = movies_->start_trace(id, kAda, lease->lease_id);
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  EXPECT_EQ(started->frames_total, 6);  // frames 0, 2, ..., 10

  auto m = movies_->get(id);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->status, kStatusQueued);
  EXPECT_EQ(m->frames_done, 0);
  EXPECT_EQ(m->frames_total, 6);
  ASSERT_TRUE(m->lock.has_value());
  EXPECT_EQ(m->lock->kind, "tracing");
  EXPECT_EQ(m->lock->user_display_name, "Ada L.");
  EXPECT_EQ(*get_string(raw(id), "tracing_token"), started->job_id);

  const auto messages = drain_queue();
  ASSERT_EQ(messages.size(), 1u);
  const auto body = boost::json::parse(messages[0].body).as_object();
  EXPECT_EQ(body.at("movie_id").as_string(), id);
  EXPECT_EQ(body.at("job_id").as_string(), started->job_id);

  auto audit = movies_->audit(id);
  ASSERT_TRUE(audit.ok());
  ASSERT_EQ(audit->size(), 1u);
  EXPECT_EQ((*audit)[0].event, kEventTracingStarted);
  EXPECT_EQ((*audit)[0].job_id, started->job_id);
  EXPECT_EQ((*audit)[0].user_display_name, "Ada L.");

  // A late release, edit or second start of the replaced analysis lease
  // changes nothing; nobody takes the analysis lease while tracing.
  const Item before = raw(id);
  EXPECT_EQ(movies_->release(id, "ada", lease->lease_id).code(), Code::kFailedPrecondition);
  EXPECT_EQ(movies_->set_trim(id, "ada", lease->lease_id, {0, 3}).code(),
            Code::kFailedPrecondition);
  EXPECT_NE(movies_->start_trace(id, kAda, lease->lease_id).status().code(), Code::kOk);
  Lock holder;
  EXPECT_EQ(movies_->acquire_analysis(id, kBob, &holder).status().code(), Code::kAlreadyExists);
  EXPECT_EQ(holder.kind, "tracing");
  EXPECT_EQ(raw(id), before);
  EXPECT_TRUE(drain_queue().empty());
  EXPECT_EQ(movies_->remove(id, "ada", false).code(), Code::kFailedPrecondition);
}

TEST_F(MoviesTest, StartTraceRefusalsWriteNothing) {
  const std::string id = ready_movie();
  auto lease = movies_->acquire_analysis(id, kAda);
  ASSERT_TRUE(lease.ok());
  Item before = raw(id);
  EXPECT_EQ(movies_->start_trace(id, kAda, lease->lease_id).status().code(), Code::kInvalidArgument)
      << "no markers";
  ASSERT_TRUE(movies_->set_markers(id, "ada", lease->lease_id, one_marker(5)).ok());
  ASSERT_TRUE(movies_->set_trim(id, "ada", lease->lease_id, {6, 11}).ok());
  before = raw(id);
  EXPECT_EQ(movies_->start_trace(id, kAda, lease->lease_id).status().code(), Code::kInvalidArgument)
      << "a marker outside the trim";
  ASSERT_TRUE(movies_->set_trim(id, "ada", lease->lease_id, {0, 11}).ok());
  before = raw(id);
  EXPECT_EQ(movies_->start_trace(id, kBob, lease->lease_id).status().code(),
            Code::kFailedPrecondition)
      << "another user with Ada's lease ID";
  EXPECT_EQ(movies_->start_trace(id, kAda, std::string(32, 'c')).status().code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(raw(id), before);
  EXPECT_TRUE(drain_queue().empty());
  EXPECT_TRUE(movies_->audit(id)->empty());
}

// Past its tracing ttl a queued job still holds its movie (a worker's claim
// would re-arm its lease): nobody else takes or removes it. Its starter may
// take the movie back, which ends the job in the same write, with one
// failed event in the audit.
TEST_F(MoviesTest, AQueuedJobPastItsTtlEndsOnceWhenItsStarterTakesTheMovieBack) {
  const std::string id = ready_movie();
  auto lease = movies_->acquire_analysis(id, kAda);
  ASSERT_TRUE(lease.ok());
  ASSERT_TRUE(movies_->set_markers(id, "ada", lease->lease_id, one_marker(0)).ok());
  auto first = movies_->start_trace(id, kAda, lease->lease_id);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(movies_->acquire_analysis(id, kBob).status().code(), Code::kAlreadyExists);

  clock_.advance(seconds(4));  // past the tracing ttl: no worker came
  auto m = movies_->get(id);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->status, kStatusQueued) << "the queue's wait does not end a job";
  ASSERT_TRUE(m->lock.has_value());
  EXPECT_EQ(m->lock->kind, "tracing");
  EXPECT_EQ(m->lock->user_display_name, "Ada L.");
  EXPECT_EQ(movies_->remove(id, "ada", false).code(), Code::kFailedPrecondition);
  Lock holder;
  EXPECT_EQ(movies_->acquire_analysis(id, kBob, &holder).status().code(), Code::kAlreadyExists)
      << "only its starter or an admin ends a queued job";
  EXPECT_EQ(holder.user_display_name, "Ada L.");
  EXPECT_EQ(*get_string(raw(id), "status"), kStatusQueued);

  auto again = movies_->acquire_analysis(id, kAda);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  m = movies_->get(id);
  EXPECT_EQ(m->status, kStatusTracingFailed);
  EXPECT_NE(m->failure_summary.find("cancelled"), std::string::npos) << m->failure_summary;
  auto audit = movies_->audit(id);
  ASSERT_TRUE(audit.ok());
  ASSERT_EQ(audit->size(), 2u);
  EXPECT_EQ((*audit)[0].event, kEventTracingStarted);
  EXPECT_EQ((*audit)[1].event, kEventTracingFailed);
  EXPECT_EQ((*audit)[1].job_id, first->job_id);
  EXPECT_EQ((*audit)[1].user_display_name, "Ada L.");

  auto second = movies_->start_trace(id, kAda, again->lease_id);
  ASSERT_TRUE(second.ok()) << second.status().to_string();
  EXPECT_NE(second->job_id, first->job_id);
  EXPECT_EQ(*get_int(raw(id), "tracing_epoch"), 2);
  EXPECT_EQ(movies_->audit(id)->size(), 3u);

  // An admin may end it too, once its lease has expired.
  clock_.advance(seconds(4));
  const User root{"root", "Root", /*admin=*/true};
  ASSERT_TRUE(movies_->acquire_analysis(id, root).ok());
  EXPECT_EQ(movies_->get(id)->status, kStatusTracingFailed);
  EXPECT_EQ(movies_->audit(id)->size(), 4u);
}

// A claimed job whose worker died (its lease expired unrenewed) is ended by
// the next reader: one conditional write, one failed event, however many
// read it.
TEST_F(MoviesTest, AJobWhoseWorkerWentAwayEndsOnceAtTheNextRead) {
  const std::string id = ready_movie();
  auto lease = movies_->acquire_analysis(id, kAda);
  ASSERT_TRUE(lease.ok());
  ASSERT_TRUE(movies_->set_markers(id, "ada", lease->lease_id, one_marker(0)).ok());
  auto started = movies_->start_trace(id, kAda, lease->lease_id);
  ASSERT_TRUE(started.ok());
  Update claim;  // as a worker's claim, then nothing: the worker was killed
  claim.set("status", std::string(kStatusTracing)).set("job_claimed_by", std::string("w1"));
  ASSERT_TRUE(store_->update(kMoviesTable, movie_key(id), claim, {}).ok());
  EXPECT_EQ(movies_->get(id)->status, kStatusTracing);
  EXPECT_EQ(movies_->audit(id)->size(), 1u);

  clock_.advance(seconds(4));
  EXPECT_EQ(*get_string(raw(id), "status"), kStatusTracing) << "nobody read it yet";
  std::vector<std::thread> readers;
  for (int i = 0; i < 4; ++i) readers.emplace_back([&] { (void)movies_->get(id); });
  for (auto& t : readers) t.join();
  EXPECT_EQ(*get_string(raw(id), "status"), kStatusTracingFailed);
  EXPECT_EQ(raw(id).count("job_audit_pending"), 0u);
  auto audit = movies_->audit(id);
  ASSERT_TRUE(audit.ok());
  ASSERT_EQ(audit->size(), 2u);
  EXPECT_EQ((*audit)[0].event, kEventTracingStarted);
  EXPECT_EQ((*audit)[1].event, kEventTracingFailed);
  EXPECT_EQ((*audit)[1].summary, internal::kSummaryWorkerWentAway);
  EXPECT_TRUE(movies_->acquire_analysis(id, kBob).ok());
  EXPECT_EQ(movies_->audit(id)->size(), 2u);
}

// A start whose audit write was lost still gets both events, the start
// first, when the job ends.
TEST_F(MoviesTest, AJobsStartIsAuditedAtItsEndIfItsOwnWriteWasLost) {
  const std::string id = ready_movie();
  auto lease = movies_->acquire_analysis(id, kAda);
  ASSERT_TRUE(lease.ok());
  ASSERT_TRUE(movies_->set_markers(id, "ada", lease->lease_id, one_marker(0)).ok());
  auto started = movies_->start_trace(id, kAda, lease->lease_id);
  ASSERT_TRUE(started.ok());
  auto written = store_->query(kAuditTable, movie_pk(id), KeyRange::all(), {});
  ASSERT_TRUE(written.ok());
  ASSERT_EQ(written->items.size(), 1u);
  const Key start{movie_pk(id), *get_string(written->items[0], "sk")};
  ASSERT_TRUE(store_->remove(kAuditTable, start, {}).ok());  // as if never written
  clock_.advance(seconds(4));
  ASSERT_TRUE(movies_->acquire_analysis(id, kAda).ok());  // its starter ends the queued job
  auto audit = movies_->audit(id);
  ASSERT_EQ(audit->size(), 2u);
  EXPECT_EQ((*audit)[0].event, kEventTracingStarted);
  EXPECT_EQ((*audit)[1].event, kEventTracingFailed);
  EXPECT_LE((*audit)[0].at_ms, (*audit)[1].at_ms);
}

TEST_F(MoviesTest, RemoveMarksTheMovieAndFinishRemoveTakesEverything) {
  std::filesystem::copy_file(dir_ / "spots.avi", dir_ / "copy.avi",
                             std::filesystem::copy_options::overwrite_existing);
  const std::string id = ready_movie("copy.avi");
  Item row{{"pk", movie_pk(id)}, {"sk", frame_sk(0, "m1")}, {"frame", int64_t{0}}};
  ASSERT_TRUE(store_->put(kFramesTable, row, {}).ok());
  EXPECT_EQ(movies_->remove(id, "bob", false).code(), Code::kPermissionDenied);
  EXPECT_EQ(movies_->finish_remove(id).code(), Code::kFailedPrecondition) << "not deleting";
  auto lease = movies_->acquire_analysis(id, kBob);
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(movies_->remove(id, "ada", false).code(), Code::kFailedPrecondition);
  ASSERT_TRUE(movies_->release(id, "bob", lease->lease_id).ok());
  ASSERT_TRUE(movies_->remove(id, "root", true).ok());
  EXPECT_EQ(movies_->get(id)->status, kStatusDeleting);
  EXPECT_EQ(movies_->acquire_analysis(id, kBob).status().code(), Code::kFailedPrecondition);
  EXPECT_TRUE(std::filesystem::exists(dir_ / "copy.avi")) << "nothing more in the request";
  ASSERT_TRUE(movies_->remove(id, "ada", false).ok()) << "asked again: allowed";
  // An image of one of its frames (frame_images.h), as a page left it.
  const std::filesystem::path images = frame_cache_dir(dir_.string(), id);
  std::filesystem::create_directories(images);
  std::ofstream(images / "0.jpg") << "jpeg";

  ASSERT_TRUE(movies_->finish_remove(id).ok());
  EXPECT_EQ(movies_->get(id).status().code(), Code::kNotFound);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "copy.avi"));
  EXPECT_FALSE(std::filesystem::exists(images));
  auto left = store_->query(kFramesTable, movie_pk(id), KeyRange::all(), {});
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->items.empty());
  EXPECT_EQ(movies_->finish_remove(id).code(), Code::kNotFound);
}

TEST_F(MoviesTest, FramesCsvQuotesLabels) {
  const std::string id = ready_movie();
  set_tracing_epoch(id, 1);
  Item row{{"pk", movie_pk(id)},
           {"sk", frame_sk(3, "m1")},
           {"marker_id", std::string("m1")},
           {"label", std::string("a, \"b\"")},
           {"frame", int64_t{3}},
           {"time_s", std::string("0.12")},
           {"x", std::string("1.5")},
           {"y", std::string("2")},
           {"score", std::string("0.9")},
           {"status", std::string("tracked")},
           {"vx", std::string("-3")},
           {"job_epoch", int64_t{1}}};
  ASSERT_TRUE(store_->put(kFramesTable, row, {}).ok());
  auto csv = read_csv(id);
  ASSERT_TRUE(csv.ok()) << csv.status().to_string();
  EXPECT_EQ(*csv,
            "frame,time_s,marker_id,label,x,y,score,status,vx_px_per_s,vy_px_per_s\n"
            "3,0.12,m1,\"a, \"\"b\"\"\",1.5,2,0.9,tracked,-3,\n");
}

// A cell that a spreadsheet would take for a formula is shown as text.
TEST_F(MoviesTest, FramesCsvNeutralisesCellsThatWouldRunAsFormulas) {
  const std::string id = ready_movie();
  set_tracing_epoch(id, 1);
  const std::vector<std::pair<std::string, std::string>> cells = {
      {"=HYPERLINK(\"http://x\")", "\"'=HYPERLINK(\"\"http://x\"\")\""},
      {"+1", "'+1"},
      {"-1", "'-1"},
      {"@SUM(A1)", "'@SUM(A1)"},
      {"\tlabel", "'\tlabel"},
      {"\rlabel", "\"'\rlabel\""},
      {"a=1", "a=1"},
      {"", ""},
  };
  for (size_t i = 0; i < cells.size(); ++i) {
    put_row(id, 0, "m" + std::to_string(i), cells[i].first, 1);
  }
  put_row(id, 1, "=cmd|' /C calc'!A0", "plain", 1);
  auto csv = read_csv(id);
  ASSERT_TRUE(csv.ok()) << csv.status().to_string();
  std::string expected = "frame,time_s,marker_id,label,x,y,score,status,vx_px_per_s,vy_px_per_s\n";
  for (size_t i = 0; i < cells.size(); ++i) {
    expected += "0,0,m" + std::to_string(i) + "," + cells[i].second + ",1.5,2,0.9,tracked,,\n";
  }
  expected += "1,0.04,'=cmd|' /C calc'!A0,plain,1.5,2,0.9,tracked,,\n";
  EXPECT_EQ(*csv, expected);

  // The status cell too, though the worker writes only tracked or lost.
  Update status;
  status.set("status", std::string("-lost"));
  ASSERT_TRUE(
      store_->update(kFramesTable, Key{movie_pk(id), frame_sk(1, "=cmd|' /C calc'!A0")}, status, {})
          .ok());
  EXPECT_NE(read_csv(id)->find(",'-lost,"), std::string::npos);
}

TEST_F(MoviesTest, FramesCsvStreamsEveryRowOfTheLatestTraceInParts) {
  const std::string id = ready_movie();
  set_tracing_epoch(id, 2);
  const size_t rows = 2 * kFramesCsvRowsPerPart + 5;
  for (size_t i = 0; i < rows; ++i) {
    put_row(id, static_cast<int64_t>(i / 3), "m" + std::to_string(i % 3), "spot", 2);
  }
  put_row(id, 0, "old", "an older trace's", 1);
  put_row(id, 900, "old", "an older trace's", 1);
  size_t parts = 0;
  auto csv = read_csv(id, &parts);
  ASSERT_TRUE(csv.ok()) << csv.status().to_string();
  EXPECT_EQ(parts, 3u);
  EXPECT_EQ(static_cast<size_t>(std::count(csv->begin(), csv->end(), '\n')), rows + 1);
  EXPECT_EQ(csv->find("older"), std::string::npos);
  EXPECT_TRUE(csv->ends_with("\n668,26.72,m0,spot,1.5,2,0.9,tracked,,\n")) << "the last row";

  // A movie never traced has a header and no rows; a removed one is not found.
  const std::string untraced = ready_movie();
  put_row(untraced, 0, "m1", "stray", 0);
  EXPECT_EQ(*read_csv(untraced),
            "frame,time_s,marker_id,label,x,y,score,status,vx_px_per_s,vy_px_per_s\n");
  EXPECT_EQ(read_csv("nope").status().code(), Code::kNotFound);
}

TEST_F(MoviesTest, FramesPagesTheRowsOfTheLatestTraceOnly) {
  const std::string id = ready_movie();
  EXPECT_TRUE(movies_->frames(id, {})->items.empty()) << "never traced";
  set_tracing_epoch(id, 3);
  for (int64_t frame = 0; frame < 4; ++frame) {
    put_row(id, frame, "a", "spot", 3);
    put_row(id, frame, "b", "other", frame % 2 == 0 ? 2 : 3);  // b's even frames: older
    put_row(id, frame, "c", "spot", 1);
  }
  std::vector<std::string> got;
  FramesOptions o{3, ""};
  size_t pages = 0;
  while (true) {
    auto page = movies_->frames(id, o);
    ASSERT_TRUE(page.ok()) << page.status().to_string();
    ++pages;
    for (const FrameRow& r : page->items) {
      EXPECT_EQ(r.job_epoch, 3);
      got.push_back(std::to_string(r.frame) + r.marker_id);
    }
    if (page->next_after.empty()) break;
    EXPECT_EQ(page->items.size(), 3u);
    o.after = page->next_after;
  }
  EXPECT_EQ(got, (std::vector<std::string>{"0a", "1a", "1b", "2a", "3a", "3b"}));
  EXPECT_EQ(pages, 2u) << "six rows in pages of three: no empty third page";

  // A cursor is this movie's, of this trace, and as given.
  auto first = movies_->frames(id, {2, ""});
  ASSERT_TRUE(first.ok());
  const std::string cursor = first->next_after;
  ASSERT_FALSE(cursor.empty());
  for (const std::string& bad : std::vector<std::string>{
           "x", "3.", "3" + cursor.substr(1) + "0", "0" + cursor.substr(1), "-3" + cursor.substr(1),
           "3.zz", "3." + std::string(600, 'a'), "3.3030"}) {
    EXPECT_EQ(movies_->frames(id, {2, bad}).status().code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_EQ(movies_->frames(id, {0, ""}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(movies_->frames(id, {kFramesLimitMax + 1, ""}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(movies_->frames("nope", {}).status().code(), Code::kNotFound);
  auto second = movies_->frames(id, {2, cursor});
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->items.at(0).frame, 1);
  EXPECT_EQ(second->items.at(0).marker_id, "b");
  // Traced again: the next page of the old listing would mix two traces.
  set_tracing_epoch(id, 4);
  EXPECT_EQ(movies_->frames(id, {2, cursor}).status().code(), Code::kFailedPrecondition);
  EXPECT_TRUE(movies_->frames(id, {})->items.empty());
}

const User kRoot{"root", "Root A."};

TEST_F(MoviesTest, AnAdminBreaksAnAnalysisLeaseAndItsHolderIsRefusedFromThenOn) {
  const std::string id = ready_movie();
  auto lease = movies_->acquire_analysis(id, kBob);
  ASSERT_TRUE(lease.ok());
  ASSERT_TRUE(movies_->set_markers(id, "bob", lease->lease_id, one_marker()).ok());
  const int64_t epoch = *get_int(raw(id), "analysis_epoch");

  ASSERT_TRUE(movies_->break_analysis(id, kRoot, /*is_admin=*/true).ok());
  auto m = movies_->get(id);
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->lock.has_value());
  EXPECT_EQ(m->markers.size(), 1u) << "the edits made under the lease stay";
  EXPECT_EQ(*get_int(raw(id), "analysis_epoch"), epoch) << "an epoch never goes back";
  auto audit = movies_->audit(id);
  ASSERT_TRUE(audit.ok());
  ASSERT_EQ(audit->size(), 1u);
  EXPECT_EQ((*audit)[0].event, kEventAnalysisBroken);
  EXPECT_EQ((*audit)[0].user_display_name, "Root A.");
  EXPECT_NE((*audit)[0].summary.find("Bob B."), std::string::npos) << (*audit)[0].summary;
  EXPECT_TRUE((*audit)[0].job_id.empty());

  // Bob's page: every call with the old lease ID is refused and changes nothing.
  const Item before = raw(id);
  EXPECT_EQ(movies_->heartbeat(id, "bob", lease->lease_id).status().code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(movies_->set_markers(id, "bob", lease->lease_id, {}).code(), Code::kFailedPrecondition);
  EXPECT_EQ(movies_->start_trace(id, kBob, lease->lease_id).status().code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(movies_->release(id, "bob", lease->lease_id).code(), Code::kFailedPrecondition);
  EXPECT_EQ(raw(id), before);
  EXPECT_TRUE(drain_queue().empty());

  // Nothing left to break; anybody may take the movie now.
  EXPECT_EQ(movies_->break_analysis(id, kRoot, true).code(), Code::kFailedPrecondition);
  auto next = movies_->acquire_analysis(id, kAda);
  ASSERT_TRUE(next.ok()) << next.status().to_string();
  EXPECT_EQ(*get_int(raw(id), "analysis_epoch"), epoch + 1);
  EXPECT_EQ(movies_->get(id)->lock->user_display_name, "Ada L.");
}

TEST_F(MoviesTest, BreakingALeaseIsForAdminsAndOnlyALiveAnalysisLease) {
  const std::string id = ready_movie();
  EXPECT_EQ(movies_->break_analysis(id, kRoot, true).code(), Code::kFailedPrecondition)
      << "no lease yet";
  auto lease = movies_->acquire_analysis(id, kBob);
  ASSERT_TRUE(lease.ok());
  const Item before = raw(id);
  EXPECT_EQ(movies_->break_analysis(id, kAda, /*is_admin=*/false).code(), Code::kPermissionDenied);
  EXPECT_EQ(movies_->break_analysis("nope", kRoot, true).code(), Code::kNotFound);
  EXPECT_EQ(raw(id), before);
  EXPECT_TRUE(movies_->heartbeat(id, "bob", lease->lease_id).ok());

  // Expired: nothing live to break.
  clock_.advance(seconds(3));
  const Item expired = raw(id);
  const Status refused = movies_->break_analysis(id, kRoot, true);
  EXPECT_EQ(refused.code(), Code::kFailedPrecondition);
  EXPECT_NE(refused.message().find("no live analysis lease"), std::string::npos);
  EXPECT_EQ(raw(id), expired);

  // A tracing lease is not an analysis lease.
  auto again = movies_->acquire_analysis(id, kAda);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE(movies_->set_markers(id, "ada", again->lease_id, one_marker()).ok());
  ASSERT_TRUE(movies_->start_trace(id, kAda, again->lease_id).ok());
  EXPECT_EQ(movies_->break_analysis(id, kRoot, true).code(), Code::kFailedPrecondition);
  EXPECT_EQ(movies_->get(id)->lock->kind, "tracing");
  EXPECT_EQ(movies_->audit(id)->size(), 1u) << "only the trace's start";
}

}  // namespace
}  // namespace leasehold::movies
