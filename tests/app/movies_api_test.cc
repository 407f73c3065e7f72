// The movie tracing API (app/movies_api.h) through real sockets, on the
// server `leasehold serve` builds (app::Serving), on SQLite and on DynamoDB
// (dynalite): uploads and their probe, every refusal of bad input (and that
// it leaves nothing behind), the analysis lease (two users racing, the
// same user in another tab, heartbeats, expiry, an old page's late
// release, an admin's break), fenced edits, a trace from start to published
// frames, pages of movies and of frames (Link rel=next), the streamed CSV
// and its neutralised cells, audit, a redelivered job message, viewing
// while a movie is locked, and removal. Killed and paused trace workers are
// tested with real processes (tests/process/trace_worker_test.cc).
#include "app/movies_api.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <latch>
#include <set>
#include <thread>

#include "../dynamodb/dynalite_fixture.h"
#include "../server/test_client.h"
#include "app/serving.h"
#include "movies/frame_images.h"
#include "movies/schema.h"
#include "movies/test_movie.h"
#include "testing/capturing_logger.h"
#include "testing/eventually.h"
#include "testing/temp_dir.h"
#include "tracer/synthetic_movie.h"

namespace leasehold::app {
namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using server::testing::Client;
using server::testing::HttpResponse;
using std::chrono::milliseconds;
using std::chrono::seconds;

enum class Backend { kSqlite, kDynamoDb };

constexpr uint64_t kUploadMax = 1 << 20;  // the tests' upload limit
constexpr milliseconds kWaitMax{20'000};

using leasehold::testing::eventually;

std::string read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class MoviesApiTest : public ::testing::TestWithParam<Backend> {
 protected:
  static void SetUpTestSuite() {
    tmp_ = std::make_unique<leasehold::testing::TempDir>("movies_api_test_");
    files_ = tmp_->path();
    ASSERT_TRUE(
        tracer::write_synthetic_movie((files_ / "spots.avi").string(), movies::small_test_movie())
            .ok());
    std::ofstream(files_ / "notes.txt") << "not a video at all";
    // A real video's first bytes (its container header) and then garbage:
    // the container opens, no frame decodes.
    std::string corrupt = read_bytes(files_ / "spots.avi").substr(0, 600);
    corrupt.append(4000, '\x5a');
    std::ofstream(files_ / "corrupt.avi", std::ios::binary) << corrupt;
  }
  static void TearDownTestSuite() {
    tmp_.reset();
    dynalite_.reset();
  }

  void TearDown() override {
    if (serving_) serving_->stop();
    serving_.reset();
    fs::remove_all(dir_);
  }

  // Starts the server on a fresh store and media folder, and adds Ada
  // (admin), Bob and Cy.
  void serve(size_t trace_workers = 1, Duration analysis_ttl = seconds(30),
             Duration tracing_ttl = seconds(30)) {
    dir_ = files_ / ("t" + std::to_string(++tests_));
    fs::create_directories(dir_);
    ServingOptions o;
    o.store_uri = store_uri();
    o.log = &log_;
    o.server.port = 0;
    o.server.threads = 2;
    o.movies.media_dir = media().string();
    o.movies.analysis_ttl = analysis_ttl;
    o.movies.tracing_ttl = tracing_ttl;
    o.movies.trace_workers = trace_workers;
    o.movies.upload_bytes_max = kUploadMax;
    auto started = Serving::start(std::move(o));
    ASSERT_TRUE(started.ok()) << started.status().to_string();
    serving_ = std::move(started).value();
    ada_ = add_user("ada", "Ada L.", true);
    bob_ = add_user("bob", "Bob B.", false);
    cy_ = add_user("cy", "Cy C.", false);
  }

  std::string store_uri() {
    if (GetParam() == Backend::kSqlite) return "sqlite:" + (dir_ / "store.db").string();
    return testing::dynalite_store_uri(
        dynalite_, "m" + std::to_string(getpid()) + "_" + std::to_string(tests_) + "_");
  }

  fs::path media() const { return dir_ / "media"; }
  // The files in the media folder and its uploads folder, but the folder.
  std::vector<std::string> media_files() const {
    std::vector<std::string> out;
    for (const auto& e : fs::recursive_directory_iterator(media())) {
      if (!e.is_directory()) out.push_back(e.path().filename().string());
    }
    return out;
  }

  std::string add_user(std::string name, std::string display_name, bool admin) {
    auto added = serving_->accounts().add_user(
        {std::move(name), std::move(display_name), admin, std::nullopt});
    EXPECT_TRUE(added.ok()) << added.status().to_string();
    return added.ok() ? "Authorization: Bearer " + added->token + "\r\n" : "";
  }

  uint16_t port() const { return serving_->server().port(); }

  // One request on a new connection. A body goes as application/json unless
  // `headers` names another Content-Type.
  HttpResponse call(std::string_view method, std::string_view target, std::string_view who,
                    std::string_view body = "", std::string_view headers = "") {
    std::string all = std::string(who) + std::string(headers);
    if (!body.empty() && headers.find("Content-Type") == std::string_view::npos) {
      all += "Content-Type: application/json\r\n";
    }
    auto response = server::testing::exchange(port(), method, target, all, body);
    EXPECT_TRUE(response.has_value()) << method << " " << target;
    return response.value_or(HttpResponse{});
  }

  json::value ok_json(const HttpResponse& r, int status = 200) {
    EXPECT_EQ(r.status, status) << r.body;
    if (r.status != status) return nullptr;
    EXPECT_EQ(r.header("content-type"), "application/json");
    return json::parse(r.body);
  }
  std::string error_code(const HttpResponse& r) {
    const json::value body = json::parse(r.body);
    return std::string(body.at("error").at("code").as_string());
  }

  HttpResponse upload(const fs::path& file, std::string_view name = "spots",
                      std::string_view who = "") {
    const std::string bytes = read_bytes(file);
    return call("POST", "/api/movies?name=" + std::string(name), who.empty() ? ada_ : who, bytes,
                "Content-Type: application/octet-stream\r\n");
  }

  json::object movie(const std::string& id, std::string_view who = "") {
    const json::value v = ok_json(call("GET", "/api/movies/" + id, who.empty() ? ada_ : who));
    return v.is_object() ? v.as_object() : json::object{};
  }
  std::string status_of(const std::string& id) {
    return std::string(movie(id).at("status").as_string());
  }

  // An uploaded movie, probed.
  std::string ready_movie() {
    const json::value created = ok_json(upload(files_ / "spots.avi"), 201);
    if (!created.is_object()) return "";
    const std::string id(created.at("id").as_string());
    EXPECT_TRUE(eventually([&] { return status_of(id) == "ready"; }, kWaitMax)) << status_of(id);
    return id;
  }

  HttpResponse take_lease(const std::string& id, std::string_view who) {
    return call("POST", "/api/movies/" + id + "/analysis-lease", who, "{}");
  }
  std::string lease_of(const std::string& id, std::string_view who) {
    const json::value v = ok_json(take_lease(id, who));
    return v.is_object() ? std::string(v.at("lease_id").as_string()) : "";
  }
  static std::string with_lease(const std::string& lease, std::string_view rest = "") {
    return "{\"lease_id\":\"" + lease + "\"" + std::string(rest) + "}";
  }

  // A marker on the spot of the small test movie at `frame`.
  static std::string spot_marker(int64_t frame = 0) {
    const auto at = tracer::spot_position(movies::small_test_movie().spots[0], frame);
    return "[{\"id\":\"m1\",\"label\":\"spot\",\"frame\":" + std::to_string(frame) +
           ",\"x\":" + std::to_string(at.x) + ",\"y\":" + std::to_string(at.y) + "}]";
  }

  // Places the marker and a trim of frames 2..9 every 2, under `lease`.
  void prepare_trace(const std::string& id, const std::string& lease) {
    ASSERT_EQ(call("PUT", "/api/movies/" + id + "/markers", ada_,
                   with_lease(lease, ",\"markers\":" + spot_marker(2)))
                  .status,
              200);
    ASSERT_EQ(call("PUT", "/api/movies/" + id + "/trim", ada_,
                   with_lease(lease, ",\"start_frame\":2,\"end_frame\":9"))
                  .status,
              200);
    ASSERT_EQ(call("PUT", "/api/movies/" + id + "/capture-interval", ada_,
                   with_lease(lease, ",\"every_frames\":2"))
                  .status,
              200);
  }

  // Waits until the trace is published as traced and its audit recorded
  // (the audit entry is written after the status).
  bool wait_traced(const std::string& id) {
    return eventually(
        [&] {
          if (status_of(id) != "traced") return false;
          const json::value audit = ok_json(call("GET", "/api/movies/" + id + "/audit", ada_));
          return !audit.as_array().empty() &&
                 audit.as_array().back().at("event") == movies::kEventTracingCompleted;
        },
        kWaitMax);
  }

  std::string start_trace(const std::string& id, const std::string& lease) {
    const json::value v =
        ok_json(call("POST", "/api/movies/" + id + "/trace", ada_, with_lease(lease)), 202);
    return v.is_object() ? std::string(v.at("job_id").as_string()) : "";
  }

  static inline std::unique_ptr<leasehold::testing::TempDir> tmp_;
  static inline fs::path files_;
  static inline std::unique_ptr<testing::Dynalite> dynalite_;
  static inline int tests_ = 0;
  fs::path dir_;
  CapturingLogger log_{LogLevel::kWarn};
  std::unique_ptr<Serving> serving_;
  std::string ada_, bob_, cy_;
};

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

  const json::value listed = ok_json(call("GET", "/api/movies", cy_));
  ASSERT_EQ(listed.as_array().size(), 1u);
  const json::object& entry = listed.as_array()[0].as_object();
  for (const char* field : {"id", "name", "status", "frames_done", "frames_total", "lock"}) {
    EXPECT_TRUE(entry.contains(field)) << field;
  }
  EXPECT_EQ(entry.at("status"), "ready");

  const std::string bytes = read_bytes(files_ / "spots.avi");
  const HttpResponse video = call("GET", "/api/movies/" + id + "/video", bob_);
  EXPECT_EQ(video.status, 200);
  EXPECT_EQ(video.header("content-type"), "video/x-msvideo");
  EXPECT_EQ(video.body, bytes);
  const HttpResponse part =
      call("GET", "/api/movies/" + id + "/video", bob_, "", "Range: bytes=100-199\r\n");
  EXPECT_EQ(part.status, 206);
  EXPECT_EQ(part.body, bytes.substr(100, 100));
  // The kept file is the only one in the media folder.
  EXPECT_EQ(media_files().size(), 1u);
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

  // The workers counted what they did.
  const std::string metrics = call("GET", "/metrics", "").body;
  for (const char* line : {"leasehold_movies_probes_total{outcome=\"probed\"} 1\n",
                           "leasehold_movies_trace_jobs_total{outcome=\"claimed\"} 1\n",
                           "leasehold_movies_trace_jobs_total{outcome=\"traced\"} 1\n",
                           "leasehold_movies_traced_frames_total 4\n"}) {
    EXPECT_NE(metrics.find(line), std::string::npos) << line << metrics;
  }
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
  EXPECT_EQ(call("GET", "/api/movies/" + id + "/video", bob_).status, 200);
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
  EXPECT_EQ(media_files().size(), 1u);
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
  EXPECT_EQ(
      call("GET", "/api/movies", cy_, "", "If-None-Match: " + list_etag + "\r\n").status, 200);
  EXPECT_EQ(call("GET", "/api/movies/nosuchmovie", bob_, "", "If-None-Match: *\r\n").status,
            404);
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
  const fs::path kept = media() / movies::kFrameCacheFolder / id / "3.jpg";
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
  for (const auto& e : fs::directory_iterator(media() / movies::kFrameCacheFolder / id)) {
    images.insert(e.path().filename().string());
  }
  EXPECT_EQ(images, (std::set<std::string>{"3.jpg", "4.jpg", "11.jpg"}));
}

TEST_P(MoviesApiTest, FramesOfAMovieNotProbedAre409AndTheImagesGoWithTheMovie) {
  serve();
  movies::Movies& service = serving_->movies().movies();
  // Made through the service, so that no probe is queued: `processing` stays.
  fs::copy_file(files_ / "spots.avi", media() / "waiting.avi");
  auto waiting = service.create("waiting", {"ada", "Ada L."}, "waiting.avi");
  ASSERT_TRUE(waiting.ok()) << waiting.status().to_string();
  HttpResponse r = call("GET", "/api/movies/" + waiting->id + "/frames/0.jpg", bob_);
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(error_code(r), "conflict");
  EXPECT_EQ(
      call("GET", "/api/movies/" + waiting->id + "/frames/0.jpg", bob_, "", "If-None-Match: *\r\n")
          .status,
      409);
  fs::copy_file(files_ / "notes.txt", media() / "notes.avi");
  auto invalid = service.create("notes", {"ada", "Ada L."}, "notes.avi");
  ASSERT_TRUE(invalid.ok());
  ASSERT_EQ(service.probe(invalid->id)->status, "invalid");
  EXPECT_EQ(call("GET", "/api/movies/" + invalid->id + "/frames/0.jpg", bob_).status, 409);

  // Removed through the API: the removal job takes the images too.
  const std::string id = ready_movie();
  ASSERT_EQ(call("GET", "/api/movies/" + id + "/frames/2.jpg", bob_).status, 200);
  const fs::path images = media() / movies::kFrameCacheFolder / id;
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
  EXPECT_FALSE(fs::exists(media() / movies::kFrameCacheFolder / other));
}

// The target of a Link: <TARGET>; rel="next", or "" if there is none.
std::string next_link(const HttpResponse& r) {
  const std::string link = r.header("link");
  if (link.empty()) return "";
  EXPECT_TRUE(link.starts_with("<") && link.ends_with(">; rel=\"next\"")) << link;
  return link.substr(1, link.find('>') - 1);
}

TEST_P(MoviesApiTest, TheMovieListComesInPagesLinkedToTheNext) {
  serve(/*trace_workers=*/0);
  fs::copy_file(files_ / "spots.avi", media() / "listed.avi");
  std::vector<std::string> created;
  for (int i = 0; i < 7; ++i) {
    auto m = serving_->movies().movies().create("m" + std::to_string(i), {"ada", "Ada L."},
                                                "listed.avi");
    ASSERT_TRUE(m.ok()) << m.status().to_string();
    created.push_back(m->id);
  }
  // Everything on one page by default, in the order of creation.
  const HttpResponse all = call("GET", "/api/movies", bob_);
  const json::value whole = ok_json(all);
  ASSERT_EQ(whole.as_array().size(), 7u);
  EXPECT_FALSE(all.has_header("link"));

  std::vector<std::string> listed;
  std::string target = "/api/movies?limit=3";
  int pages = 0;
  while (!target.empty()) {
    const HttpResponse page = call("GET", target, bob_);
    const json::value items = ok_json(page);
    ASSERT_TRUE(items.is_array());
    ++pages;
    for (const json::value& m : items.as_array())
      listed.push_back(std::string(m.at("id").as_string()));
    target = next_link(page);
    if (!target.empty()) {
      EXPECT_EQ(target, "/api/movies?limit=3&after=" + listed.back());
    }
  }
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(listed.size(), 7u);
  for (size_t i = 0; i < listed.size(); ++i) {
    EXPECT_EQ(listed[i], std::string(whole.at(i).at("id").as_string()));
  }
  EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()),
            std::set<std::string>(created.begin(), created.end()));
  const HttpResponse last = call("GET", "/api/movies?limit=6&after=" + listed[0], bob_);
  EXPECT_EQ(ok_json(last).as_array().size(), 6u);
  EXPECT_FALSE(last.has_header("link")) << "six left: a full last page links to nothing";

  for (const std::string& bad : std::vector<std::string>{
           "limit=0", "limit=1001", "limit=abc", "limit=-1", "limit=3x", "limit=", "limit=%2B3",
           "after=", "after=no%20such", "after=0123456789abcdef",
           "limit=2&after=" + std::string(65, 'a')}) {
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

INSTANTIATE_TEST_SUITE_P(Backends, MoviesApiTest,
                         ::testing::Values(Backend::kSqlite, Backend::kDynamoDb),
                         [](const ::testing::TestParamInfo<Backend>& info) {
                           return std::string(info.param == Backend::kSqlite ? "sqlite"
                                                                             : "dynamodb");
                         });

}  // namespace
}  // namespace leasehold::app
