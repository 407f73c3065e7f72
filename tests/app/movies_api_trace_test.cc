// The movies API's traces through real sockets, on SQLite and on DynamoDB
// (dynalite): a trace from start to published frames, CSV and audit; a
// movie viewed while locked; a redelivered job message; removal; answers
// that are 304 until the movie changes; frames as cached images; pages of
// movies and of frames (Link rel=next) and the streamed CSV with its
// neutralised cells. The fixture is in movies_api_test_fixture.h.
#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "movies/frame_images.h"
#include "tests/app/movies_api_test_fixture.h"

namespace leasehold::app::api_testing {
namespace {

TEST_P(MoviesApiTest, ATraceRunsToTracedWithFramesCsvAndAudit) {
  serve();
  const std::string id = ready_movie();
  const std::string lease = lease_of(id, ada_);
  prepare_trace(id, lease);
  const json::value started =
      ok_json(call("POST", "/api/movies/" + id + "/trace", ada_, with_lease(lease)), 202);
  ASSERT_TRUE(started.is_object());
  const std::string job(started.at("job_id").as_string());
  EXPECT_EQ(started.at("frames_total"), 4);
  ASSERT_TRUE(wait_traced(id)) << status_of(id);

  const json::object m = movie(id);
  EXPECT_EQ(m.at("frames_done"), 4);
  EXPECT_EQ(m.at("frames_total"), 4);
  EXPECT_EQ(m.at("lock"), nullptr);
  const json::value frames = ok_json(call("GET", "/api/movies/" + id + "/frames", bob_));
  ASSERT_EQ(frames.as_array().size(), 4u);
  int64_t frame = 2;
  for (const json::value& row : frames.as_array()) {
    EXPECT_EQ(row.at("marker_id"), "m1");
    EXPECT_EQ(row.at("label"), "spot");
    EXPECT_EQ(row.at("frame"), frame);
    EXPECT_EQ(row.at("status"), "tracked");
    EXPECT_NEAR(row.at("time_s").to_number<double>(), frame / 25.0, 1e-9);
    const auto truth = tracer::spot_position(movies::small_test_movie().spots[0], frame);
    EXPECT_NEAR(row.at("x").to_number<double>(), truth.x, 0.5);
    EXPECT_NEAR(row.at("y").to_number<double>(), truth.y, 0.5);
    for (const char* f : {"score", "vx", "vy"}) EXPECT_TRUE(row.as_object().contains(f)) << f;
    frame += 2;
  }
  // Velocities by central difference: none at the ends.
  EXPECT_EQ(frames.at(0).at("vx"), nullptr);
  EXPECT_EQ(frames.at(3).at("vy"), nullptr);
  EXPECT_TRUE(frames.at(1).at("vx").is_number());

  const HttpResponse csv = call("GET", "/api/movies/" + id + "/frames.csv", bob_);
  EXPECT_EQ(csv.status, 200);
  EXPECT_EQ(csv.header("content-type"), "text/csv; charset=utf-8");
  EXPECT_EQ(csv.header("content-disposition"), "attachment; filename=\"spots-frames.csv\"");
  EXPECT_EQ(std::count(csv.body.begin(), csv.body.end(), '\n'), 5);
  EXPECT_TRUE(csv.body.starts_with("frame,time_s,marker_id,label,x,y,score,status,")) << csv.body;

  const json::value audit = ok_json(call("GET", "/api/movies/" + id + "/audit", bob_));
  ASSERT_EQ(audit.as_array().size(), 2u);
  EXPECT_EQ(audit.at(0).at("event"), movies::kEventTracingStarted);
  EXPECT_EQ(audit.at(1).at("event"), movies::kEventTracingCompleted);
  for (const json::value& e : audit.as_array()) {
    EXPECT_EQ(e.at("job_id").as_string(), job);
    EXPECT_EQ(e.at("user_display_name"), "Ada L.");
    EXPECT_GT(e.at("at_ms").as_int64(), 0);
  }
  // The movie is free to edit again.
  EXPECT_EQ(take_lease(id, bob_).status, 200);

  // The workers counted what they did. The probe is counted once its
  // worker has made the movie's proxy too, which may end after the trace.
  const std::vector<std::string> lines = {
      "leasehold_movies_probes_total{outcome=\"probed\"} 1\n",
      "leasehold_movies_trace_jobs_total{outcome=\"claimed\"} 1\n",
      "leasehold_movies_trace_jobs_total{outcome=\"traced\"} 1\n",
      "leasehold_movies_traced_frames_total 4\n"};
  std::string metrics;
  const bool counted = eventually(
      [&] {
        metrics = call("GET", "/metrics", "").body;
        return std::ranges::all_of(
            lines, [&](const std::string& l) { return metrics.find(l) != std::string::npos; });
      },
      kWaitMax);
  EXPECT_TRUE(counted) << metrics;
}

TEST_P(MoviesApiTest, WhileLockedAMovieCanStillBeViewedAndNothingElseStartsOrEnds) {
  serve(/*trace_workers=*/0);  // the trace stays queued: the lock holds
  const std::string id = ready_movie();
  const std::string lease = lease_of(id, ada_);
  prepare_trace(id, lease);
  const std::string job = start_trace(id, lease);
  ASSERT_FALSE(job.empty());

  const json::object m = movie(id, bob_);
  EXPECT_EQ(m.at("status"), "queued");
  EXPECT_EQ(m.at("lock").at("kind"), "tracing");
  EXPECT_EQ(m.at("lock").at("user_display_name"), "Ada L.");
  EXPECT_EQ(ok_json(call("GET", "/api/movies", bob_)).at(0).at("lock").at("kind"), "tracing");
  EXPECT_EQ(call("GET", "/api/movies/" + id + "/video", bob_).status, video_status());
  EXPECT_EQ(call("GET", "/api/movies/" + id + "/frames", bob_).status, 200);

  // Nobody takes the analysis lease, nobody traces again, nobody removes it,
  // and the old page's late release of the replaced analysis lease fails.
  const HttpResponse refused = take_lease(id, bob_);
  EXPECT_EQ(refused.status, 409);
  EXPECT_EQ(json::parse(refused.body).at("holder").at("kind"), "tracing");
  EXPECT_EQ(call("POST", "/api/movies/" + id + "/trace", ada_, with_lease(lease)).status, 409);
  EXPECT_EQ(call("PUT", "/api/movies/" + id + "/capture-interval", ada_,
                 with_lease(lease, ",\"every_frames\":3"))
                .status,
            409);
  EXPECT_EQ(call("DELETE", "/api/movies/" + id + "/analysis-lease", ada_, with_lease(lease)).status,
            409);
  EXPECT_EQ(call("DELETE", "/api/movies/" + id, ada_).status, 409);
  EXPECT_EQ(movie(id).at("lock").at("kind"), "tracing");
  EXPECT_EQ(movie(id).at("capture_interval").at("every_frames"), 2);
}

TEST_P(MoviesApiTest, ATraceCannotStartWhileAnotherBrowserHoldsTheLease) {
  serve();
  const std::string id = ready_movie();
  const std::string lease = lease_of(id, ada_);
  prepare_trace(id, lease);
  ASSERT_EQ(call("DELETE", "/api/movies/" + id + "/analysis-lease", ada_, with_lease(lease)).status,
            204);
  const std::string bobs = lease_of(id, bob_);
  ASSERT_FALSE(bobs.empty());
  EXPECT_EQ(call("POST", "/api/movies/" + id + "/trace", ada_, with_lease(lease)).status, 409);
  EXPECT_EQ(call("POST", "/api/movies/" + id + "/trace", ada_, with_lease(bobs)).status, 409);
  EXPECT_EQ(movie(id).at("status"), "ready");
  EXPECT_EQ(movie(id).at("lock").at("user_display_name"), "Bob B.");
}

TEST_P(MoviesApiTest, ARedeliveredJobMessageIsANoOp) {
  serve();
  const std::string id = ready_movie();
  const std::string lease = lease_of(id, ada_);
  prepare_trace(id, lease);
  const std::string job = start_trace(id, lease);
  ASSERT_TRUE(wait_traced(id));
  const std::string frames = call("GET", "/api/movies/" + id + "/frames", ada_).body;
  const std::string audit = call("GET", "/api/movies/" + id + "/audit", ada_).body;

  const std::string message = json::serialize(json::object{{"movie_id", id}, {"job_id", job}});
  ASSERT_TRUE(serving_->movies().trace_queue().send(message).ok());
  serving_->movies().trace_queued();
  ASSERT_TRUE(eventually([&] { return serving_->movies().trace_stats().at(0).stale_messages == 1; },
                         kWaitMax));
  EXPECT_EQ(serving_->movies().trace_stats().at(0).claimed, 1u);
  EXPECT_EQ(status_of(id), "traced");
  EXPECT_EQ(call("GET", "/api/movies/" + id + "/frames", ada_).body, frames);
  EXPECT_EQ(call("GET", "/api/movies/" + id + "/audit", ada_).body, audit);
}

TEST_P(MoviesApiTest, OnlyTheOwnerOrAnAdminRemovesAMovieAndOnlyWhenItIsFree) {
  serve();
  const json::value created = ok_json(upload(files_ / "spots.avi", "bobs", bob_), 201);
  const std::string id(created.at("id").as_string());
  ASSERT_TRUE(eventually([&] { return status_of(id) == "ready"; }, kWaitMax));
  EXPECT_EQ(call("DELETE", "/api/movies/" + id, cy_).status, 403);
  const std::string lease = lease_of(id, cy_);
  EXPECT_EQ(call("DELETE", "/api/movies/" + id, bob_).status, 409);
  ASSERT_EQ(call("DELETE", "/api/movies/" + id + "/analysis-lease", cy_, with_lease(lease)).status,
            204);
  ASSERT_TRUE(eventually([&] { return proxies_made(1); }, kWaitMax));
  EXPECT_EQ(media_files().size(), 2u) << "the movie's file and its proxy";
  EXPECT_EQ(call("DELETE", "/api/movies/" + id, bob_).status, 202);
  // Marked at once, removed off the request by the probe worker.
  ASSERT_TRUE(
      eventually([&] { return call("GET", "/api/movies/" + id, bob_).status == 404; }, kWaitMax));
  EXPECT_EQ(call("GET", "/api/movies/" + id + "/video", bob_).status, 404);
  EXPECT_TRUE(media_files().empty());

  // An admin may remove anybody's movie.
  const std::string other = ready_movie();
  const std::string bobs_again(
      ok_json(upload(files_ / "spots.avi", "again", bob_), 201).at("id").as_string());
  EXPECT_EQ(call("DELETE", "/api/movies/" + bobs_again, ada_).status, 202);
  ASSERT_TRUE(eventually(
      [&] { return call("GET", "/api/movies/" + bobs_again, bob_).status == 404; }, kWaitMax));
  EXPECT_EQ(ok_json(call("GET", "/api/movies", bob_)).as_array().size(), 1u);
  EXPECT_EQ(call("GET", "/api/movies/" + other, bob_).status, 200);
}

// The list and a movie, which pages poll every second or two, answer 304
// while nothing changed, and 200 with a new tag once anything has.
TEST_P(MoviesApiTest, PolledAnswersAre304UntilTheMovieChanges) {
  serve();
  const std::string id = ready_movie();
  for (const std::string& path : {"/api/movies/" + id, std::string("/api/movies")}) {
    SCOPED_TRACE(path);
    const HttpResponse first = call("GET", path, bob_);
    ASSERT_EQ(first.status, 200) << first.body;
    const std::string etag = first.header("etag");
    EXPECT_TRUE(etag.starts_with("W/\"") && etag.ends_with("\"")) << etag;
    EXPECT_EQ(first.header("cache-control"), "private, no-cache");
    const HttpResponse same = call("GET", path, cy_, "", "If-None-Match: " + etag + "\r\n");
    EXPECT_EQ(same.status, 304);
    EXPECT_EQ(same.body, "");
    EXPECT_EQ(same.header("etag"), etag);
    EXPECT_EQ(call("GET", path, bob_, "", "If-None-Match: W/\"0-0\"\r\n").status, 200);
  }
  const std::string movie_etag = call("GET", "/api/movies/" + id, bob_).header("etag");
  const std::string list_etag = call("GET", "/api/movies", bob_).header("etag");
  lease_of(id, bob_);
  const HttpResponse locked =
      call("GET", "/api/movies/" + id, cy_, "", "If-None-Match: " + movie_etag + "\r\n");
  EXPECT_EQ(locked.status, 200) << "the lock shows";
  EXPECT_NE(locked.header("etag"), movie_etag);
  EXPECT_EQ(call("GET", "/api/movies", cy_, "", "If-None-Match: " + list_etag + "\r\n").status,
            200);
  EXPECT_EQ(call("GET", "/api/movies/nosuchmovie", bob_, "", "If-None-Match: *\r\n").status, 404);
}

TEST_P(MoviesApiTest, AFrameIsAnImageKeptForAYearAndRevalidatedBy304) {
  serve();
  const std::string id = ready_movie();
  const std::string frames = "/api/movies/" + id + "/frames/";
  const HttpResponse first = call("GET", frames + "3.jpg", bob_);
  ASSERT_EQ(first.status, 200) << first.body;
  EXPECT_EQ(first.header("content-type"), "image/jpeg");
  EXPECT_EQ(first.header("cache-control"), "private, max-age=31536000, immutable");
  const std::string etag = first.header("etag");
  EXPECT_TRUE(etag.size() > 2 && etag.front() == '"' && etag.back() == '"') << etag;
  EXPECT_TRUE(first.body.starts_with("\xff\xd8\xff")) << "a JPEG";
  const fs::path kept = work() / movies::kFrameCacheFolder / id / "3.jpg";
  EXPECT_EQ(read_bytes(kept), first.body) << "kept under the media folder";

  const HttpResponse again =
      call("GET", frames + "3.jpg", cy_, "", "If-None-Match: " + etag + "\r\n");
  EXPECT_EQ(again.status, 304);
  EXPECT_EQ(again.body, "");
  EXPECT_EQ(again.header("etag"), etag);
  EXPECT_EQ(again.header("cache-control"), "private, max-age=31536000, immutable");
  const HttpResponse among =
      call("GET", frames + "3.jpg", cy_, "", "If-None-Match: \"x\", W/" + etag + "\r\n");
  EXPECT_EQ(among.status, 304);
  const HttpResponse other = call("GET", frames + "3.jpg", cy_, "", "If-None-Match: \"x\"\r\n");
  EXPECT_EQ(other.status, 200);
  EXPECT_EQ(other.body, first.body) << "the same image every time";
  const HttpResponse last = call("GET", frames + "11.jpg", cy_);
  EXPECT_EQ(last.status, 200);
  EXPECT_NE(last.header("etag"), etag);
  EXPECT_NE(last.body, first.body);
  // An ETag of another frame does not stand for this one.
  EXPECT_EQ(call("GET", frames + "4.jpg", cy_, "", "If-None-Match: " + etag + "\r\n").status, 200);

  EXPECT_EQ(call("GET", frames + "3.jpg", "").status, 401);
  EXPECT_EQ(call("GET", frames + "3.jpg", "", "", "If-None-Match: " + etag + "\r\n").status, 401);
  // Frames outside 0..11, and names that are not N.jpg: 404, nothing decoded
  // or kept.
  for (const std::string bad :
       {"12.jpg", "-1.jpg", "+3.jpg", "03.jpg", "3", "3.png", "3.JPG", "3.jpg.jpg", ".jpg", "x.jpg",
        "3x.jpg", "%203.jpg", "99999999999999999999999.jpg", "9223372036854775807.jpg"}) {
    const HttpResponse r = call("GET", frames + bad, bob_);
    EXPECT_EQ(r.status, 404) << bad;
    EXPECT_EQ(error_code(r), "not_found") << bad;
  }
  EXPECT_EQ(call("GET", frames + "12.jpg", bob_, "", "If-None-Match: *\r\n").status, 404);
  EXPECT_EQ(call("GET", "/api/movies/nosuchmovie/frames/0.jpg", bob_).status, 404);
  EXPECT_EQ(
      call("GET", "/api/movies/nosuchmovie/frames/0.jpg", bob_, "", "If-None-Match: *\r\n").status,
      404);
  std::set<std::string> images;
  for (const auto& e : fs::directory_iterator(work() / movies::kFrameCacheFolder / id)) {
    images.insert(e.path().filename().string());
  }
  EXPECT_EQ(images, (std::set<std::string>{"3.jpg", "4.jpg", "11.jpg"}));
}

TEST_P(MoviesApiTest, FramesOfAMovieNotProbedAre409AndTheImagesGoWithTheMovie) {
  serve();
  movies::Movies& service = serving_->movies().movies();
  // Made through the service, so that no probe is queued: `processing` stays.
  put_media(files_ / "spots.avi", "waiting.avi");
  auto waiting = service.create("waiting", {"ada", "Ada L."}, "waiting.avi");
  ASSERT_TRUE(waiting.ok()) << waiting.status().to_string();
  HttpResponse r = call("GET", "/api/movies/" + waiting->id + "/frames/0.jpg", bob_);
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(error_code(r), "conflict");
  EXPECT_EQ(
      call("GET", "/api/movies/" + waiting->id + "/frames/0.jpg", bob_, "", "If-None-Match: *\r\n")
          .status,
      409);
  put_media(files_ / "notes.txt", "notes.avi");
  auto invalid = service.create("notes", {"ada", "Ada L."}, "notes.avi");
  ASSERT_TRUE(invalid.ok());
  ASSERT_EQ(service.probe(invalid->id)->status, "invalid");
  EXPECT_EQ(call("GET", "/api/movies/" + invalid->id + "/frames/0.jpg", bob_).status, 409);

  // Removed through the API: the removal job takes the images too.
  const std::string id = ready_movie();
  ASSERT_EQ(call("GET", "/api/movies/" + id + "/frames/2.jpg", bob_).status, 200);
  const fs::path images = work() / movies::kFrameCacheFolder / id;
  ASSERT_TRUE(fs::exists(images / "2.jpg"));
  EXPECT_EQ(call("DELETE", "/api/movies/" + id, ada_).status, 202);
  ASSERT_TRUE(
      eventually([&] { return call("GET", "/api/movies/" + id, bob_).status == 404; }, kWaitMax));
  EXPECT_FALSE(fs::exists(images));
  EXPECT_EQ(call("GET", "/api/movies/" + id + "/frames/2.jpg", bob_).status, 404);

  // While `deleting`, 409, and its removal (run here, not by the job) takes
  // the images.
  const std::string other = ready_movie();
  ASSERT_EQ(call("GET", "/api/movies/" + other + "/frames/5.jpg", bob_).status, 200);
  ASSERT_TRUE(service.remove(other, "ada", true).ok());
  EXPECT_EQ(call("GET", "/api/movies/" + other + "/frames/5.jpg", bob_).status, 409);
  EXPECT_EQ(call("GET", "/api/movies/" + other + "/frames/6.jpg", bob_).status, 409);
  ASSERT_TRUE(service.finish_remove(other).ok());
  EXPECT_FALSE(fs::exists(work() / movies::kFrameCacheFolder / other));
}

// The target of a Link: <TARGET>; rel="next", or "" if there is none.
std::string next_link(const HttpResponse& r) {
  const std::string link = r.header("link");
  if (link.empty()) return "";
  EXPECT_TRUE(link.starts_with("<") && link.ends_with(">; rel=\"next\"")) << link;
  return link.substr(1, link.find('>') - 1);
}

std::vector<std::string> ids_of(const json::value& movies) {
  std::vector<std::string> ids;
  for (const json::value& m : movies.as_array()) ids.push_back(std::string(m.at("id").as_string()));
  return ids;
}

// The movie list in pages of three (oldest first, or with ?order=newest the
// reverse), each linked to the next; an unknown order is refused.
TEST_P(MoviesApiTest, TheMovieListComesInPagesLinkedToTheNext) {
  serve(/*trace_workers=*/0);
  put_media(files_ / "spots.avi", "listed.avi");
  std::vector<std::string> created;
  for (int i = 0; i < 7; ++i) {
    auto m = serving_->movies().movies().create("m" + std::to_string(i), {"ada", "Ada L."},
                                                "listed.avi");
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    created.push_back(m->id);
  }
  // Everything on one page by default, in the order of creation.
  const HttpResponse all = call("GET", "/api/movies", bob_);
  const std::vector<std::string> whole = ids_of(ok_json(all));
  ASSERT_EQ(whole.size(), 7u);
  EXPECT_FALSE(all.has_header("link"));
  EXPECT_EQ(ids_of(ok_json(call("GET", "/api/movies?order=oldest", bob_))), whole);

  // Every page from `target` on, each link naming the last ID listed and
  // keeping `order` (a parameter: "&order=newest").
  const auto follow = [&](std::string target, const std::string& order, int& pages) {
    std::vector<std::string> listed;
    pages = 0;
    while (!target.empty()) {
      const HttpResponse page = call("GET", target, bob_);
      ++pages;
      for (const std::string& id : ids_of(ok_json(page))) listed.push_back(id);
      target = next_link(page);
      if (!target.empty()) {
        EXPECT_EQ(target, "/api/movies?limit=3&after=" + listed.back() + order);
      }
    }
    return listed;
  };
  int pages = 0;
  const std::vector<std::string> listed = follow("/api/movies?limit=3", "", pages);
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(listed, whole);
  EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()),
            std::set<std::string>(created.begin(), created.end()));
  EXPECT_EQ(follow("/api/movies?order=newest&limit=3", "&order=newest", pages),
            std::vector<std::string>(whole.rbegin(), whole.rend()));
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(follow("/api/movies?order=oldest&limit=3", "&order=oldest", pages), whole);
  const HttpResponse last = call("GET", "/api/movies?limit=6&after=" + listed[0], bob_);
  EXPECT_EQ(ok_json(last).as_array().size(), 6u);
  EXPECT_FALSE(last.has_header("link")) << "six left: a full last page links to nothing";
  const HttpResponse first = call("GET", "/api/movies?order=newest&after=" + listed[0], bob_);
  EXPECT_TRUE(ok_json(first).as_array().empty()) << "nothing is older than the first";

  for (const std::string& bad :
       std::vector<std::string>{"limit=0", "limit=1001", "limit=abc", "limit=-1", "limit=3x",
                                "limit=", "limit=%2B3", "after=", "after=no%20such",
                                "after=0123456789abcdef", "limit=2&after=" + std::string(65, 'a'),
                                "order=", "order=Newest", "order=desc", "order=newest%00"}) {
    const HttpResponse r = call("GET", "/api/movies?" + bad, bob_);
    EXPECT_EQ(r.status, 400) << bad << " " << r.body;
    EXPECT_EQ(error_code(r), "bad_request") << bad;
  }
  EXPECT_EQ(ok_json(call("GET", "/api/movies?limit=1000", bob_)).as_array().size(), 7u);
}

TEST_P(MoviesApiTest, FramesComeInPagesOfTheLatestTraceAndTheCsvIsStreamedAndSafe) {
  serve();
  const std::string id = ready_movie();
  const std::string m = "/api/movies/" + id;
  std::string lease = lease_of(id, ada_);
  prepare_trace(id, lease);  // frames 2, 4, 6, 8
  start_trace(id, lease);
  ASSERT_TRUE(wait_traced(id));

  // Traced again from frame 6, with a marker a spreadsheet would run.
  lease = lease_of(id, ada_);
  const auto at = tracer::spot_position(movies::small_test_movie().spots[0], 6);
  const std::string markers =
      R"js([{"id":"@SUM(A1)","label":"=HYPERLINK(\"http://x\")","frame":6,"x":)js" +
      std::to_string(at.x) + ",\"y\":" + std::to_string(at.y) + "}]";
  ASSERT_EQ(call("PUT", m + "/markers", ada_, with_lease(lease, ",\"markers\":" + markers)).status,
            200);
  ASSERT_EQ(call("PUT", m + "/trim", ada_, with_lease(lease, ",\"start_frame\":6,\"end_frame\":9"))
                .status,
            200);
  start_trace(id, lease);
  ASSERT_TRUE(eventually(
      [&] {
        const json::value audit = ok_json(call("GET", m + "/audit", ada_));
        return audit.as_array().size() == 4 &&
               audit.as_array().back().at("event") == movies::kEventTracingCompleted;
      },
      kWaitMax));

  // Frames 2 and 4 of the first trace are still stored; only 6 and 8 are read.
  const HttpResponse first = call("GET", m + "/frames?limit=1", bob_);
  const json::value page = ok_json(first);
  ASSERT_EQ(page.as_array().size(), 1u);
  EXPECT_EQ(page.at(0).at("frame"), 6);
  EXPECT_EQ(page.at(0).at("marker_id"), "@SUM(A1)");
  const std::string next = next_link(first);
  ASSERT_TRUE(next.starts_with(m + "/frames?limit=1&after=")) << next;
  const HttpResponse second = call("GET", next, bob_);
  ASSERT_EQ(ok_json(second).as_array().size(), 1u);
  EXPECT_EQ(ok_json(second).at(0).at("frame"), 8);
  EXPECT_FALSE(second.has_header("link"));
  const json::value whole = ok_json(call("GET", m + "/frames", bob_));
  ASSERT_EQ(whole.as_array().size(), 2u);
  for (const std::string& bad :
       {std::string("limit=0"), std::string("limit=10001"), std::string("limit=1.5"),
        std::string("after=zz"), std::string("after="), std::string("after=2.3030")}) {
    EXPECT_EQ(call("GET", m + "/frames?" + bad, bob_).status, 400) << bad;
  }
  // A cursor of the first trace's rows: that listing is over.
  EXPECT_EQ(call("GET", m + "/frames?after=1" + next.substr(next.find('.')), bob_).status, 409);
  EXPECT_EQ(call("GET", m + "/frames?limit=10000", bob_).status, 200);

  const HttpResponse csv = call("GET", m + "/frames.csv", bob_);
  EXPECT_EQ(csv.status, 200);
  EXPECT_EQ(csv.header("transfer-encoding"), "chunked");
  EXPECT_EQ(csv.header("content-type"), "text/csv; charset=utf-8");
  EXPECT_EQ(std::count(csv.body.begin(), csv.body.end(), '\n'), 3) << csv.body;
  EXPECT_NE(csv.body.find("\n6,0.24,'@SUM(A1),\"'=HYPERLINK(\"\"http://x\"\")\","),
            std::string::npos)
      << csv.body;
  EXPECT_EQ(csv.body.find("\n2,"), std::string::npos) << "the older trace's rows";

  // Traced again while a client pages: its next page would mix two traces.
  lease = lease_of(id, ada_);
  start_trace(id, lease);
  ASSERT_TRUE(eventually(
      [&] { return ok_json(call("GET", m + "/audit", ada_)).as_array().size() == 6; }, kWaitMax));
  const HttpResponse stale = call("GET", next, bob_);
  EXPECT_EQ(stale.status, 409);
  EXPECT_NE(stale.body.find("first page"), std::string::npos) << stale.body;
}

}  // namespace
}  // namespace leasehold::app::api_testing
