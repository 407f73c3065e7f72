// The movie tracing API (app/movies_api.h) through real sockets, on the
// server `leasehold serve` builds (app::Serving), on SQLite and on DynamoDB
// (dynalite): uploads and their probe, every refusal of bad input (and that
// it leaves nothing behind), the analysis lease (two users racing, the
// same user in another tab, heartbeats, expiry, an old page's late
// release, an admin's break) and fenced edits. Traces, pages, frames and
// removal are in movies_api_trace_test.cc, the fixture in
// movies_api_test_fixture.h; killed and paused trace workers are tested with
// real processes (tests/process/trace_worker_test.cc).
#include <cstdlib>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "tests/app/movies_api_test_fixture.h"

namespace leasehold::app::api_testing {
namespace {

TEST_P(MoviesApiTest, AnUploadIsProbedUntilReadyAndCanBePlayed) {
  serve();
  const HttpResponse created = upload(files_ / "spots.avi", "Run%203+(left)");
  const json::value body = ok_json(created, 201);
  ASSERT_TRUE(body.is_object());
  const std::string id(body.at("id").as_string());
  EXPECT_EQ(created.header("location"), "/api/movies/" + id);
  EXPECT_EQ(body.at("name"), "Run 3 (left)");
  EXPECT_EQ(body.at("lock"), nullptr);
  ASSERT_TRUE(eventually([&] { return status_of(id) == "ready"; }, kWaitMax)) << status_of(id);

  const json::object m = movie(id, bob_);
  EXPECT_EQ(m.at("fps").to_number<double>(), 25);
  EXPECT_EQ(m.at("width"), 96);
  EXPECT_EQ(m.at("height"), 64);
  EXPECT_EQ(m.at("frame_count"), 12);
  EXPECT_EQ(m.at("trim"), (json::object{{"start_frame", 0}, {"end_frame", 11}}));
  EXPECT_EQ(m.at("capture_interval"), (json::object{{"every_frames", 1}}));
  EXPECT_EQ(m.at("markers"), json::array{});
  EXPECT_EQ(m.at("failure_summary"), nullptr);
  EXPECT_EQ(m.at("frames_done"), 0);
  EXPECT_EQ(m.at("owner_display_name"), "Ada L.");
  EXPECT_EQ(m.at("frame_rate_varies"), false);
  EXPECT_DOUBLE_EQ(m.at("duration_s").to_number<double>(), 0.48);

  // Each frame's time: 12 frames 40 ms apart, kept by the browser.
  const HttpResponse times = call("GET", "/api/movies/" + id + "/times", bob_);
  EXPECT_EQ(json::parse(ok_json(times).is_object() ? times.body : "{}"),
            (json::object{{"frame_count", 12}, {"steps_us", json::array{json::array{11, 40000}}}}));
  EXPECT_EQ(times.header("cache-control"), "private, max-age=31536000, immutable");
  const HttpResponse again = call("GET", "/api/movies/" + id + "/times", bob_, "",
                                  "If-None-Match: " + times.header("etag") + "\r\n");
  EXPECT_EQ(again.status, 304);

  const json::value listed = ok_json(call("GET", "/api/movies", cy_));
  ASSERT_EQ(listed.as_array().size(), 1u);
  const json::object& entry = listed.as_array()[0].as_object();
  for (const char* field : {"id", "name", "status", "frames_done", "frames_total", "lock"}) {
    EXPECT_TRUE(entry.contains(field)) << field;
  }
  EXPECT_EQ(entry.at("status"), "ready");

  const std::string bytes = read_bytes(files_ / "spots.avi");
  const HttpResponse video = call("GET", "/api/movies/" + id + "/video", bob_);
  if (GetParam() == Backend::kSqliteAws) {
    // From S3 itself: a presigned URL, which serves the bytes and ranges.
    EXPECT_EQ(video.status, 302);
    const std::string url = video.header("location");
    const std::string endpoint = testing::shared_fauxqs()->endpoint();
    ASSERT_TRUE(url.starts_with(endpoint + "/" + bucket_ + "/m")) << url;
    auto whole = from_fauxqs(url.substr(endpoint.size()));
    ASSERT_TRUE(whole.ok()) << whole.status().to_string();
    EXPECT_EQ(whole->body, bytes);
    auto part = from_fauxqs(url.substr(endpoint.size()), {{"Range", "bytes=100-199"}});
    ASSERT_TRUE(part.ok());
    EXPECT_EQ(part->status, 206);
    EXPECT_EQ(part->body, bytes.substr(100, 100));
  } else {
    EXPECT_EQ(video.status, 200);
    EXPECT_EQ(video.header("content-type"), "video/x-msvideo");
    EXPECT_EQ(video.body, bytes);
    const HttpResponse part =
        call("GET", "/api/movies/" + id + "/video", bob_, "", "Range: bytes=100-199\r\n");
    EXPECT_EQ(part.status, 206);
    EXPECT_EQ(part.body, bytes.substr(100, 100));
  }
  // The kept file and its proxy are the only ones in the media folder.
  ASSERT_TRUE(eventually([&] { return proxies_made(1); }, kWaitMax));
  EXPECT_EQ(media_files().size(), 2u);
}

// A phone's movie whose rate drops (2 s at 30 fps, then 4 s at 10 fps,
// made with ffmpeg): it says so, its rate is its average, and its times are
// the frames' own.
TEST_P(MoviesApiTest, AMovieOfVariableRateSaysSoAndGivesEachFramesTime) {
  serve();
  const fs::path vfr = files_ / "vfr.mp4";
  const std::string command =
      "ffmpeg -hide_banner -loglevel error -y -f lavfi -i testsrc2=size=160x120:rate=30 -t 6 "
      "-vf \"select='lt(t,2)+gte(t,2)*not(mod(n,3))'\" -fps_mode passthrough -c:v libx264 "
      "-preset ultrafast -g 30 -pix_fmt yuv420p '" + vfr.string() + "'";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const json::value created = ok_json(upload(vfr, "phone"), 201);
  ASSERT_TRUE(created.is_object());
  const std::string id(created.at("id").as_string());
  ASSERT_TRUE(eventually([&] { return status_of(id) == "ready"; }, kWaitMax)) << status_of(id);
  const json::object m = movie(id);
  EXPECT_EQ(m.at("frame_count"), 100);
  EXPECT_EQ(m.at("frame_rate_varies"), true);
  EXPECT_NEAR(m.at("fps").to_number<double>(), 99 / 5.9, 0.01);
  EXPECT_NEAR(m.at("duration_s").to_number<double>(), 6.0, 0.001);
  const json::value times = ok_json(call("GET", "/api/movies/" + id + "/times", ada_));
  ASSERT_TRUE(times.is_object());
  int64_t frame = 0;
  int64_t us = 0;
  for (const json::value& run : times.at("steps_us").as_array()) {
    for (int64_t i = 0; i < run.as_array()[0].as_int64(); ++i) {
      ++frame;
      us += run.as_array()[1].as_int64();
      const double truth_us = frame < 60 ? frame * 1e6 / 30 : 2e6 + (frame - 60) * 1e5;
      EXPECT_NEAR(static_cast<double>(us), truth_us, 1000) << "frame " << frame;
    }
  }
  EXPECT_EQ(frame, 99);
}

TEST_P(MoviesApiTest, BadUploadsAreRefusedAndLeaveNothingBehind) {
  serve();
  EXPECT_EQ(upload(files_ / "notes.txt").status, 415);
  EXPECT_EQ(upload(files_ / "corrupt.avi").status, 415);
  EXPECT_EQ(
      call("POST", "/api/movies?name=empty", ada_, "", "Content-Type: application/octet-stream\r\n")
          .status,
      415);
  const HttpResponse unnamed = call("POST", "/api/movies", ada_, read_bytes(files_ / "spots.avi"),
                                    "Content-Type: application/octet-stream\r\n");
  EXPECT_EQ(unnamed.status, 400);
  EXPECT_NE(unnamed.body.find("name"), std::string::npos) << unnamed.body;
  EXPECT_EQ(upload(files_ / "spots.avi", "").status, 400);
  EXPECT_EQ(upload(files_ / "spots.avi", std::string(300, 'n')).status, 400);
  EXPECT_EQ(upload(files_ / "spots.avi", "bad%0aname").status, 400);
  EXPECT_EQ(upload(files_ / "spots.avi", "x", "").status, 201);  // control: Ada may upload
  ASSERT_TRUE(eventually([&] { return proxies_made(1); }, kWaitMax));
  const size_t kept = media_files().size();
  EXPECT_EQ(upload(files_ / "spots.avi", "anon", "X-Nobody: 1\r\n").status, 401);

  // Over the limit: refused from the Content-Length, before the body is read.
  Client client(port());
  ASSERT_TRUE(client.send("POST /api/movies?name=big HTTP/1.1\r\nHost: x\r\n" + ada_ +
                          "Content-Type: application/octet-stream\r\nContent-Length: " +
                          std::to_string(kUploadMax + 1) + "\r\n\r\n"));
  const auto refused = client.read_response();
  ASSERT_TRUE(refused.has_value());
  EXPECT_EQ(refused->status, 413);
  EXPECT_EQ(error_code(*refused), "payload_too_large");

  EXPECT_EQ(ok_json(call("GET", "/api/movies", ada_)).as_array().size(), 1u);
  EXPECT_EQ(media_files().size(), kept);
  for (const std::string& f : media_files()) EXPECT_EQ(f.find(".upload"), std::string::npos) << f;
  // The refusals say what is wrong, never where a file is.
  const HttpResponse not_video = upload(files_ / "notes.txt");
  EXPECT_EQ(error_code(not_video), "unsupported_media_type");
  EXPECT_EQ(not_video.body.find(dir_.string()), std::string::npos) << not_video.body;
}

TEST_P(MoviesApiTest, EveryRouteNeedsASignedInUserAndUnknownMoviesAre404) {
  serve();
  const std::string id = ready_movie();
  const std::string m = "/api/movies/" + id;
  const std::vector<std::pair<std::string, std::string>> routes = {
      {"GET", "/api/movies"},
      {"POST", "/api/movies?name=x"},
      {"GET", m},
      {"DELETE", m},
      {"GET", m + "/video"},
      {"POST", m + "/analysis-lease"},
      {"POST", m + "/analysis-lease/heartbeat"},
      {"DELETE", m + "/analysis-lease"},
      {"POST", m + "/analysis-lease/break"},
      {"PUT", m + "/markers"},
      {"PUT", m + "/trim"},
      {"PUT", m + "/capture-interval"},
      {"POST", m + "/trace"},
      {"GET", m + "/frames"},
      {"GET", m + "/frames.csv"},
      {"GET", m + "/frames/0.jpg"},
      {"GET", m + "/times"},
      {"GET", m + "/audit"}};
  for (const auto& [method, target] : routes) {
    EXPECT_EQ(call(method, target, "").status, 401) << method << " " << target;
  }
  const std::string fake = random_token(serving_->runtime().random());
  for (const auto& [method, target] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/api/movies/nosuchmovie"},
           {"GET", "/api/movies/nosuchmovie/video"},
           {"GET", "/api/movies/nosuchmovie/frames"},
           {"GET", "/api/movies/nosuchmovie/frames.csv"},
           {"GET", "/api/movies/nosuchmovie/frames/0.jpg"},
           {"GET", "/api/movies/nosuchmovie/times"},
           {"GET", "/api/movies/nosuchmovie/audit"},
           {"DELETE", "/api/movies/nosuchmovie"},
           {"POST", "/api/movies/nosuchmovie/analysis-lease"},
           {"POST", "/api/movies/nosuchmovie/analysis-lease/heartbeat"},
           {"PUT", "/api/movies/nosuchmovie/trim"}}) {
    const std::string body =
        method == "GET" || target.ends_with("nosuchmovie")
            ? ""
            : with_lease(fake,
                         target.ends_with("trim") ? ",\"start_frame\":0,\"end_frame\":1" : "");
    EXPECT_EQ(call(method, target, bob_, body).status, 404) << method << " " << target;
  }
}

TEST_P(MoviesApiTest, TwoUsersRacingForTheAnalysisLeaseExactlyOneWins) {
  serve();
  const std::string id = ready_movie();
  for (int round = 0; round < 8; ++round) {
    std::latch go(2);
    HttpResponse got[2];
    const std::string* who[2] = {&bob_, &cy_};
    std::thread racers[2];
    for (int i = 0; i < 2; ++i) {
      racers[i] = std::thread([&, i] {
        go.arrive_and_wait();
        got[i] = take_lease(id, *who[i]);
      });
    }
    for (std::thread& t : racers) t.join();
    ASSERT_EQ((got[0].status == 200) + (got[1].status == 200), 1)
        << got[0].status << " " << got[0].body << " / " << got[1].status << " " << got[1].body;
    const int winner = got[0].status == 200 ? 0 : 1;
    const HttpResponse& loser = got[1 - winner];
    EXPECT_EQ(loser.status, 409);
    const json::value refusal = json::parse(loser.body);
    EXPECT_EQ(refusal.at("error").at("code"), "conflict");
    const json::object& holder = refusal.at("holder").as_object();
    EXPECT_EQ(holder.at("kind"), "analysis");
    EXPECT_EQ(holder.at("user_display_name"), winner == 0 ? "Bob B." : "Cy C.");
    EXPECT_GT(holder.at("started_at_ms").as_int64(), 0);
    // The lock shows in the movie, to everybody.
    EXPECT_EQ(movie(id).at("lock"), holder);
    const std::string lease(json::parse(got[winner].body).at("lease_id").as_string());
    EXPECT_EQ(
        call("DELETE", "/api/movies/" + id + "/analysis-lease", *who[winner], with_lease(lease))
            .status,
        204);
    EXPECT_EQ(movie(id).at("lock"), nullptr);
  }
}

TEST_P(MoviesApiTest, TheSameUserInAnotherTabIsRefused) {
  serve();
  const std::string id = ready_movie();
  const std::string lease = lease_of(id, bob_);
  ASSERT_FALSE(lease.empty());
  const HttpResponse second_tab = take_lease(id, bob_);
  EXPECT_EQ(second_tab.status, 409);
  EXPECT_EQ(json::parse(second_tab.body).at("holder").at("user_display_name"), "Bob B.");
}

TEST_P(MoviesApiTest, HeartbeatsKeepTheLeasePastItsTtlAndAStaleOneIsRefused) {
  serve(1, /*analysis_ttl=*/seconds(2));
  const std::string id = ready_movie();
  const json::value first = ok_json(take_lease(id, bob_));
  const std::string lease(first.at("lease_id").as_string());
  const std::string beat = "/api/movies/" + id + "/analysis-lease/heartbeat";
  // A page beating every 400 ms holds the movie for twice the ttl.
  const auto until = std::chrono::steady_clock::now() + seconds(4);
  int64_t expires_at_ms = first.at("expires_at_ms").as_int64();
  while (std::chrono::steady_clock::now() < until) {
    const json::value renewed = ok_json(call("POST", beat, bob_, with_lease(lease)));
    ASSERT_TRUE(renewed.is_object());
    EXPECT_EQ(renewed.at("lease_id").as_string(), lease);
    EXPECT_GE(renewed.at("expires_at_ms").as_int64(), expires_at_ms);
    expires_at_ms = renewed.at("expires_at_ms").as_int64();
    ASSERT_EQ(take_lease(id, cy_).status, 409);
    std::this_thread::sleep_for(milliseconds(400));  // the page's heartbeat period
  }
  EXPECT_GT(expires_at_ms, first.at("expires_at_ms").as_int64() + 2000);

  const std::string other = random_token(serving_->runtime().random());
  EXPECT_EQ(call("POST", beat, bob_, with_lease(other)).status, 409);
  EXPECT_EQ(call("POST", beat, cy_, with_lease(lease)).status, 409);  // another user's lease
  EXPECT_EQ(call("POST", beat, bob_, with_lease("not-a-lease-id")).status, 400);
  EXPECT_EQ(call("POST", beat, bob_, "{}").status, 400);
  EXPECT_EQ(call("POST", beat, bob_, R"({"lease_id": 7})").status, 400);
  EXPECT_EQ(call("POST", beat, bob_, "{\"lease_id\":").status, 400);
  EXPECT_EQ(call("DELETE", "/api/movies/" + id + "/analysis-lease", bob_, with_lease(lease)).status,
            204);
  EXPECT_EQ(call("POST", beat, bob_, with_lease(lease)).status, 409);
  // Releasing twice is releasing: the page that leaves may say so more than once.
  EXPECT_EQ(call("DELETE", "/api/movies/" + id + "/analysis-lease", bob_, with_lease(lease)).status,
            204);
  EXPECT_EQ(take_lease(id, cy_).status, 200);
  EXPECT_EQ(call("DELETE", "/api/movies/" + id + "/analysis-lease", bob_, with_lease(lease)).status,
            409);
  EXPECT_EQ(movie(id).at("lock").at("user_display_name"), "Cy C.");
}

TEST_P(MoviesApiTest, AnExpiredLeaseIsTakenOverAndItsHolderIsRefused) {
  serve(1, /*analysis_ttl=*/seconds(2));
  const std::string id = ready_movie();
  const std::string old_lease = lease_of(id, bob_);
  std::string new_lease;
  ASSERT_TRUE(eventually(
      [&] {
        const HttpResponse r = take_lease(id, cy_);
        if (r.status == 200)
          new_lease = std::string(json::parse(r.body).at("lease_id").as_string());
        return r.status == 200;
      },
      kWaitMax));
  EXPECT_EQ(
      call("POST", "/api/movies/" + id + "/analysis-lease/heartbeat", bob_, with_lease(old_lease))
          .status,
      409);
  EXPECT_EQ(call("PUT", "/api/movies/" + id + "/capture-interval", bob_,
                 with_lease(old_lease, ",\"every_frames\":3"))
                .status,
            409);
  // The old page's late release removes nothing: Cy's lease holds.
  EXPECT_EQ(
      call("DELETE", "/api/movies/" + id + "/analysis-lease", bob_, with_lease(old_lease)).status,
      409);
  EXPECT_EQ(movie(id).at("lock").at("user_display_name"), "Cy C.");
  EXPECT_EQ(take_lease(id, bob_).status, 409);
  EXPECT_EQ(movie(id).at("capture_interval").at("every_frames"), 1);
}

TEST_P(MoviesApiTest, EditsNeedTheLeaseAndValidInputAndChangeNothingOtherwise) {
  serve();
  const std::string id = ready_movie();
  const std::string lease = lease_of(id, bob_);
  const std::string m = "/api/movies/" + id;
  const json::value edited = ok_json(
      call("PUT", m + "/markers", bob_, with_lease(lease, ",\"markers\":" + spot_marker(3))));
  ASSERT_TRUE(edited.is_object());
  ASSERT_EQ(edited.at("markers").as_array().size(), 1u);
  EXPECT_EQ(edited.at("markers").at(0).at("frame"), 3);
  EXPECT_EQ(ok_json(call("PUT", m + "/trim", bob_,
                         with_lease(lease, ",\"start_frame\":1,\"end_frame\":10")))
                .at("trim"),
            (json::object{{"start_frame", 1}, {"end_frame", 10}}));
  const json::object before = movie(id);

  struct Bad {
    std::string target, body, headers;
    int status;
  };
  const std::string other = random_token(serving_->runtime().random());
  const std::vector<Bad> bad = {
      // Without the lease, or with one that is not the movie's.
      {"/markers", with_lease(other, ",\"markers\":[]"), "", 409},
      {"/trim", R"({"start_frame":0,"end_frame":5})", "", 400},
      // Out of range.
      {"/markers", with_lease(lease, R"(,"markers":[{"id":"a","frame":0,"x":96,"y":3}])"), "", 400},
      {"/markers", with_lease(lease, R"(,"markers":[{"id":"a","frame":12,"x":5,"y":3}])"), "", 400},
      {"/markers", with_lease(lease, R"(,"markers":[{"id":"a","frame":0,"x":-1,"y":3}])"), "", 400},
      {"/markers",
       with_lease(lease, R"(,"markers":[{"id":"a","frame":0,"x":1,"y":1},)"
                         R"({"id":"a","frame":1,"x":2,"y":2}])"),
       "", 400},
      {"/markers", with_lease(lease, R"(,"markers":[{"id":"","frame":0,"x":1,"y":1}])"), "", 400},
      {"/markers", with_lease(lease, R"(,"markers":[{"id":"a","frame":0.5,"x":1,"y":1}])"), "",
       400},
      {"/markers", with_lease(lease, R"(,"markers":{"id":"a"})"), "", 400},
      {"/markers", with_lease(lease, R"(,"markers":[{"id":"a","frame":0,"x":1,"y":1,"z":0}])"), "",
       400},
      {"/trim", with_lease(lease, ",\"start_frame\":5,\"end_frame\":4"), "", 400},
      {"/trim", with_lease(lease, ",\"start_frame\":0,\"end_frame\":12"), "", 400},
      {"/trim", with_lease(lease, ",\"start_frame\":-1,\"end_frame\":3"), "", 400},
      {"/trim", with_lease(lease, ",\"start_frame\":\"0\",\"end_frame\":3"), "", 400},
      {"/capture-interval", with_lease(lease, ",\"every_frames\":0"), "", 400},
      {"/capture-interval", with_lease(lease, ",\"every_frames\":13"), "", 400},
      {"/capture-interval", with_lease(lease), "", 400},
      // Malformed bodies.
      {"/trim", "{\"lease_id\":", "", 400},
      {"/trim", "[1,2]", "", 400},
      {"/trim", with_lease(lease, ",\"start_frame\":0,\"end_frame\":3"),
       "Content-Type: text/plain\r\n", 415},
      {"/markers", with_lease(lease, ",\"markers\":[],\"pad\":\"" + std::string(17000, 'p') + "\""),
       "", 413},
  };
  for (const Bad& b : bad) {
    const HttpResponse r = call("PUT", m + b.target, bob_, b.body, b.headers);
    EXPECT_EQ(r.status, b.status) << b.target << " " << b.body.substr(0, 120) << " -> " << r.body;
  }
  // Cy, who does not hold the lease, cannot edit with Bob's lease ID either.
  EXPECT_EQ(
      call("PUT", m + "/capture-interval", cy_, with_lease(lease, ",\"every_frames\":2")).status,
      409);
  EXPECT_EQ(movie(id), before);
}

TEST_P(MoviesApiTest, AnAdminBreaksAnotherUsersAnalysisLease) {
  serve();
  const std::string id = ready_movie();
  const std::string m = "/api/movies/" + id;
  const std::string brk = m + "/analysis-lease/break";
  const std::string lease = lease_of(id, bob_);
  ASSERT_EQ(
      call("PUT", m + "/markers", bob_, with_lease(lease, ",\"markers\":" + spot_marker(0))).status,
      200);

  // Refused, and nothing changes: Bob's page goes on.
  EXPECT_EQ(call("POST", brk, cy_).status, 403);
  EXPECT_EQ(call("POST", brk, bob_, "{}").status, 403);
  EXPECT_EQ(call("POST", brk, ada_, R"({"lease_id":"x"})").status, 400);
  EXPECT_EQ(call("POST", brk, ada_, "{\"").status, 400);
  EXPECT_EQ(call("POST", brk, ada_, "[]").status, 400);
  EXPECT_EQ(call("POST", brk, ada_, "{}", "Content-Type: text/plain\r\n").status, 415);
  EXPECT_EQ(call("POST", "/api/movies/nosuchmovie/analysis-lease/break", ada_).status, 404);
  EXPECT_EQ(call("POST", m + "/analysis-lease/heartbeat", bob_, with_lease(lease)).status, 200);
  EXPECT_EQ(movie(id).at("lock").at("user_display_name"), "Bob B.");
  EXPECT_TRUE(ok_json(call("GET", m + "/audit", ada_)).as_array().empty());

  const json::value broken = ok_json(call("POST", brk, ada_, "{}"));
  ASSERT_TRUE(broken.is_object());
  EXPECT_EQ(broken.at("id").as_string(), id);
  EXPECT_EQ(broken.at("lock"), nullptr);
  EXPECT_EQ(broken, json::value(movie(id)));

  // Bob's old page is refused from now on, and changes nothing.
  EXPECT_EQ(call("POST", m + "/analysis-lease/heartbeat", bob_, with_lease(lease)).status, 409);
  const HttpResponse edit =
      call("PUT", m + "/markers", bob_, with_lease(lease, ",\"markers\":" + spot_marker(3)));
  EXPECT_EQ(edit.status, 409) << edit.body;
  EXPECT_EQ(call("POST", m + "/trace", bob_, with_lease(lease)).status, 409);
  EXPECT_EQ(call("DELETE", m + "/analysis-lease", bob_, with_lease(lease)).status, 409);
  EXPECT_EQ(movie(id).at("markers").at(0).at("frame"), 0);
  EXPECT_EQ(movie(id).at("status"), "ready");

  const json::value audit = ok_json(call("GET", m + "/audit", bob_));
  ASSERT_EQ(audit.as_array().size(), 1u);
  EXPECT_EQ(audit.at(0).at("event"), "movie.analysis.broken");
  EXPECT_EQ(audit.at(0).at("user_display_name"), "Ada L.");
  EXPECT_NE(std::string(audit.at(0).at("summary").as_string()).find("Bob B."), std::string::npos);

  // No lease left to break; somebody else may take the movie.
  const HttpResponse none = call("POST", brk, ada_);
  EXPECT_EQ(none.status, 409);
  EXPECT_NE(none.body.find("no live analysis lease"), std::string::npos) << none.body;
  EXPECT_EQ(take_lease(id, cy_).status, 200);
  EXPECT_EQ(movie(id).at("lock").at("user_display_name"), "Cy C.");
}

// And with the movies on S3 and the jobs on SQS (fauxqs).
INSTANTIATE_TEST_SUITE_P(Backends, MoviesApiTest,
                         ::testing::Values(Backend::kSqlite, Backend::kDynamoDb,
                                           Backend::kSqliteAws),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           switch (info.param) {
                             case Backend::kSqlite:
                               return std::string("sqlite");
                             case Backend::kDynamoDb:
                               return std::string("dynamodb");
                             case Backend::kSqliteAws:
                               return std::string("sqlite_aws");
                           }
                           return std::string("unknown");
                         });

}  // namespace
}  // namespace leasehold::app::api_testing
