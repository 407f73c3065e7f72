// Tests for Movies on the memory store, a simulated clock and a real (tiny,
// synthetic) movie: creation and probing, the analysis lease (races,
// heartbeats, releases, expiry, an admin's break), fenced and validated
// edits, removal, and the list in pages. Traces (start_trace and its
// refusals, a job's end, the frames in pages, the CSV in parts and its
// neutralised cells) are in movies_trace_test.cc; the worker's side is in
// trace_worker_test.cc.
#include "movies/movies.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>
#include <tuple>

#include "movies/frame_images.h"
#include "movies/frame_times.h"
#include "movies/movies_test_fixture.h"
#include "movies/schema.h"
#include "store/store_wrapper.h"

namespace leasehold::movies::testing {
namespace {

// Gives the movies of one millisecond in each page of the index in the
// reverse of the memory store's order (which is by ID, or its reverse for a
// descending query): an order of the store's choosing, as
// ItemStore::query_index allows.
class TiesReversedStore final : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Result<Page> query_index(std::string_view table, std::string_view index,
                           std::string_view hash_value, const KeyRange& range,
                           const QueryOptions& options) override {
    LEASEHOLD_ASSIGN_OR_RETURN(Page page,
                               StoreWrapper::query_index(table, index, hash_value, range, options));
    const auto oldest_first_ids_down = [](const Item& a, const Item& b) {
      return std::tuple(*get_int(a, attr::kCreatedAtMs), *get_string(b, attr::kPk)) <
             std::tuple(*get_int(b, attr::kCreatedAtMs), *get_string(a, attr::kPk));
    };
    std::stable_sort(page.items.begin(), page.items.end(), [&](const Item& a, const Item& b) {
      return options.descending ? oldest_first_ids_down(b, a) : oldest_first_ids_down(a, b);
    });
    return page;
  }
};

// Stored markers whose place is past a double's range read as infinity,
// which markers_json() wrote back as "Infinity", not JSON (found replaying
// the movies_stored fuzz target's inputs, fuzz/corpus/movies_stored/regress-*).
TEST(StoredMarkers, ReadBackTheSameAndRefuseAPlaceThatIsNotFinite) {
  const std::string text =
      R"([{"id":"m1","label":"left knee","frame":3,"x":320.5,"y":0.30000000000000004}])";
  const auto markers = internal::parse_markers(text);
  ASSERT_TRUE(markers.ok()) << markers.status().to_string();
  // Written as Boost.JSON writes doubles ("3.205E2"), then read back the
  // same and written again to the same text: what a trace's start is
  // conditioned on.
  const std::string written = internal::markers_json(*markers);
  const auto again = internal::parse_markers(written);
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(internal::markers_json(*again), written);
  ASSERT_EQ(again->size(), 1u);
  EXPECT_EQ(again->at(0).x, 320.5);
  EXPECT_EQ(again->at(0).y, 0.30000000000000004);
  EXPECT_EQ(again->at(0).frame, 3);
  EXPECT_EQ(again->at(0).label, "left knee");
  for (const char* bad : {R"([{"id":"m1","label":"","frame":3,"x":1e400,"y":2}])",
                          R"([{"id":"m1","label":"","frame":3,"x":1,"y":-1e999}])"}) {
    EXPECT_EQ(internal::parse_markers(bad).status().code(), Code::kInternal) << bad;
  }
}

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
  EXPECT_FALSE(m->frame_rate_varies);
  EXPECT_EQ(m->duration_us, 12 * 40000);  // 12 frames of 40 ms
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
// once, in one order (or, newest first, in its reverse), however the pages
// fall across them; the list does not stop at a thousand.
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
  o.media = media_.get();
  auto other = Movies::open(reversed, clock_, random_, *queue_, o);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(list_all(7, &pages, other->get()), expected);
  EXPECT_EQ(list_all(kListLimitMax, &pages, other->get()), expected);

  const std::vector<std::string> newest_first(expected.rbegin(), expected.rend());
  const ListOrder newest = ListOrder::kNewestFirst;
  EXPECT_EQ(list_all(kListLimitMax, &pages, nullptr, newest), newest_first);
  EXPECT_EQ(pages, 2u);
  EXPECT_EQ(list_all(7, &pages, nullptr, newest), newest_first);
  EXPECT_EQ(pages, 144u);
  EXPECT_EQ(list_all(7, &pages, other->get(), newest), newest_first);
  EXPECT_EQ(list_all(kListLimitMax, &pages, other->get(), newest), newest_first);
}

// A movie created after the first page was read is at the top of page one,
// and the pages after it carry on downwards from where they were.
TEST_F(MoviesTest, ListNewestFirstShowsANewMovieFirstAndResumesBelowTheAfterMovie) {
  // The movie removed below has a file of its own: its removal takes the file.
  std::filesystem::copy_file(dir_ / "spots.avi", dir_ / "listed.avi",
                             std::filesystem::copy_options::overwrite_existing);
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    clock_.advance(milliseconds(1));
    ids.push_back(
        movies_->create("m" + std::to_string(i), kAda, i == 3 ? "listed.avi" : "spots.avi")->id);
  }
  const ListOrder newest = ListOrder::kNewestFirst;
  auto page = movies_->list({2, "", newest});
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->items.size(), 2u);
  EXPECT_EQ(page->items[0].id, ids[4]);
  EXPECT_EQ(page->items[1].id, ids[3]);
  clock_.advance(milliseconds(1));
  const std::string added = movies_->create("late", kAda, "spots.avi")->id;
  auto next = movies_->list({2, page->next_after, newest});
  ASSERT_TRUE(next.ok());
  ASSERT_EQ(next->items.size(), 2u);
  EXPECT_EQ(next->items[0].id, ids[2]);
  EXPECT_EQ(next->items[1].id, ids[1]);
  auto last = movies_->list({2, next->next_after, newest});
  ASSERT_TRUE(last.ok());
  ASSERT_EQ(last->items.size(), 1u);
  EXPECT_EQ(last->items[0].id, ids[0]);
  EXPECT_TRUE(last->next_after.empty());
  auto again = movies_->list({2, "", newest});
  ASSERT_TRUE(again.ok());
  ASSERT_FALSE(again->items.empty());
  EXPECT_EQ(again->items[0].id, added);

  ASSERT_TRUE(movies_->remove(ids[3], "ada", false).ok());
  ASSERT_TRUE(movies_->finish_remove(ids[3]).ok());
  EXPECT_EQ(movies_->list({2, ids[3], newest}).status().code(), Code::kInvalidArgument);
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
  EXPECT_EQ(open_media((dir_ / "nowhere").string()).status().code(), Code::kInvalidArgument);
  MoviesOptions o;
  EXPECT_EQ(Movies::open(*store_, clock_, random_, *queue_, o).status().code(),
            Code::kInvalidArgument)
      << "no media";
  o.media = media_.get();
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

// The proxy (every frame, a key frame every 4) is made once, kept in the
// media beside the movie's file, named on the movie, and goes with it.
TEST_F(MoviesTest, AProxyIsMadeOnceKeptBesideTheMovieAndGoesWithIt) {
  std::filesystem::copy_file(dir_ / "spots.avi", dir_ / "proxied.avi",
                             std::filesystem::copy_options::overwrite_existing);
  const std::string id = ready_movie("proxied.avi");
  EXPECT_TRUE(movies_->get(id)->proxy_file.empty());
  ASSERT_TRUE(movies_->make_proxy(id).ok());
  const Result<MovieDetail> m = movies_->get(id);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->proxy_file, "proxied-proxy.mp4");
  EXPECT_EQ(m->proxy_key_every, 4);
  EXPECT_GT(m->proxy.pts_per_frame, 0);
  ASSERT_TRUE(std::filesystem::exists(dir_ / m->proxy_file));
  Result<tracer::VideoInfo> proxy = tracer::probe((dir_ / m->proxy_file).string());
  ASSERT_TRUE(proxy.ok()) << proxy.status().to_string();
  EXPECT_EQ(proxy->frame_count, m->frame_count);
  EXPECT_EQ(proxy->times.pts, tracer::proxy_times(m->proxy, m->proxy_key_every).pts);
  // Once: asked again, nothing is written.
  const auto written = std::filesystem::last_write_time(dir_ / m->proxy_file);
  ASSERT_TRUE(movies_->make_proxy(id).ok());
  EXPECT_EQ(std::filesystem::last_write_time(dir_ / m->proxy_file), written);

  ASSERT_TRUE(movies_->remove(id, "ada", false).ok());
  EXPECT_EQ(movies_->make_proxy(id).code(), Code::kOk) << "it has one: nothing to do";
  ASSERT_TRUE(movies_->finish_remove(id).ok());
  EXPECT_FALSE(std::filesystem::exists(dir_ / "proxied-proxy.mp4"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "proxied.avi"));
}

TEST_F(MoviesTest, NoProxyIsMadeForAMovieBeingRemovedOrNotProbed) {
  std::filesystem::copy_file(dir_ / "spots.avi", dir_ / "going.avi",
                             std::filesystem::copy_options::overwrite_existing);
  const std::string id = ready_movie("going.avi");
  ASSERT_TRUE(movies_->remove(id, "ada", false).ok());
  EXPECT_EQ(movies_->make_proxy(id).code(), Code::kFailedPrecondition);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "going-proxy.mp4"));
  EXPECT_EQ(movies_->make_proxy("nosuchmovie").code(), Code::kNotFound);
}

TEST_F(MoviesTest, RemoveMarksTheMovieAndFinishRemoveTakesEverything) {
  std::filesystem::copy_file(dir_ / "spots.avi", dir_ / "copy.avi",
                             std::filesystem::copy_options::overwrite_existing);
  const std::string id = ready_movie("copy.avi");
  Item row{{"pk", movie_pk(id)}, {"sk", frame_sk(0, "m1")}, {"frame", int64_t{0}}};
  ASSERT_TRUE(store_->put(kFramesTable, row, {}).ok());
  // The probe kept each frame's time.
  const int64_t frames = movies_->get(id)->frame_count;
  ASSERT_TRUE(read_frame_times(*store_, id, frames).ok());
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
  EXPECT_EQ(read_frame_times(*store_, id, frames).status().code(), Code::kNotFound);
  EXPECT_EQ(movies_->finish_remove(id).code(), Code::kNotFound);
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
}  // namespace leasehold::movies::testing
