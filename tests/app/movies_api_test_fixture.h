// What the movies API tests share (movies_api_test.cc, movies_api_trace_test.cc):
// the MoviesApiTest fixture, `leasehold serve` (app::Serving) on SQLite or on
// dynalite with a media folder holding a tiny synthetic movie, three users
// (ada, bob, and cy the admin), and helpers to upload, take the analysis
// lease, call the API and wait for a trace.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "../aws/fauxqs_fixture.h"
#include "../dynamodb/dynalite_fixture.h"
#include "../server/test_client.h"
#include "app/serving.h"
#include "aws/s3.h"
#include "movies/schema.h"
#include "movies/service.h"
#include "movies/test_movie.h"
#include "net/http_client.h"
#include "testing/capturing_logger.h"
#include "testing/eventually.h"
#include "testing/temp_dir.h"
#include "tracer/synthetic_movie.h"

namespace leasehold::app::api_testing {

namespace fs = std::filesystem;
namespace json = boost::json;
using server::testing::Client;
using server::testing::HttpResponse;
using std::chrono::milliseconds;
using std::chrono::seconds;

// kSqliteAws: SQLite, with the movies on S3 and the jobs on SQS (fauxqs).
enum class Backend { kSqlite, kDynamoDb, kSqliteAws };

constexpr uint64_t kUploadMax = 1 << 20;  // the tests' upload limit
constexpr milliseconds kWaitMax{20'000};

using leasehold::testing::eventually;

inline std::string read_bytes(const fs::path& path) {
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
    if (GetParam() == Backend::kSqliteAws) {
      testing::Fauxqs* fauxqs = testing::shared_fauxqs();
      ASSERT_NE(fauxqs, nullptr);
      bucket_ = testing::unique_aws_name("api");
      aws::S3ClientOptions s3;
      s3.bucket = bucket_;
      s3.region = "us-east-1";
      s3.endpoint = fauxqs->endpoint();
      auto client = aws::S3Client::open(std::move(s3));
      ASSERT_TRUE(client.ok()) << client.status().to_string();
      ASSERT_TRUE((*client)->create_bucket().ok());
      o.movies.media_dir = "s3://" + bucket_ + "/m?region=us-east-1&endpoint=" + fauxqs->endpoint();
      o.movies.queue = "sqs://us-east-1/" + bucket_ + "?endpoint=" + fauxqs->endpoint();
      ASSERT_TRUE(movies::create_sqs_job_queues(o.movies.queue).ok());
      s3_ = std::move(client).value();
    }
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
    if (GetParam() != Backend::kDynamoDb) return "sqlite:" + (dir_ / "store.db").string();
    return testing::dynalite_store_uri(
        dynalite_, "m" + std::to_string(getpid()) + "_" + std::to_string(tests_) + "_");
  }

  // The media folder (with the movies on S3, where `serve` would have made it).
  fs::path media() const { return dir_ / "media"; }
  // The server's work folder: the media folder, or a folder of its own with
  // the movies on S3. Uploads and frame images are kept there.
  fs::path work() const { return serving_->movies().media().work_dir(); }
  // What a movie's download answers: the file, or a redirect to S3.
  int video_status() const { return GetParam() == Backend::kSqliteAws ? 302 : 200; }
  // The movies' files and what the work folder holds (uploads, images), but
  // the folders. Not the copies of S3 objects being read: they come and go
  // with their readers (media_test.cc shows them gone after the last).
  std::vector<std::string> media_files() const {
    std::vector<std::string> out;
    for (auto it = fs::recursive_directory_iterator(work()); it != fs::end(it); ++it) {
      if (it->is_directory() && it->path().filename() == movies::kCopiesFolder) {
        it.disable_recursion_pending();
      } else if (!it->is_directory()) {
        out.push_back(it->path().filename().string());
      }
    }
    if (s3_ != nullptr) {
      for (const std::string& key : bucket_keys()) out.push_back(key);
    }
    return out;
  }
  // Whether the probe worker has made the proxies of `movies` movies (each a
  // "-proxy.mp4" file beside its movie's, Movies::make_proxy) and is making
  // none: the media then hold what they will go on holding.
  bool proxies_made(size_t movies) const {
    size_t made = 0;
    for (const std::string& f : media_files()) {
      if (f.find(".proxy-") != std::string::npos) return false;
      if (f.ends_with("-proxy.mp4")) ++made;
    }
    return made == movies;
  }
  // A GET of `target` (path and query) from fauxqs, with `headers`.
  static Result<net::HttpResponse> from_fauxqs(const std::string& target,
                                               net::HttpHeaders headers = {}) {
    LEASEHOLD_ASSIGN_OR_RETURN(net::HttpEndpoint endpoint,
                               net::parse_http_endpoint(testing::shared_fauxqs()->endpoint()));
    net::HttpClientOptions options;
    options.endpoint = endpoint;
    LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<net::HttpClient> http,
                               net::HttpClient::open(options));
    net::HttpRequest request;
    request.method = "GET";
    request.target = target;
    request.headers = std::move(headers);
    return http->send(request, seconds(10));
  }
  // The keys in the test's bucket (ListObjectsV2, unsigned: fauxqs checks
  // no signature).
  std::vector<std::string> bucket_keys() const {
    auto listed = from_fauxqs("/" + bucket_ + "?list-type=2");
    EXPECT_TRUE(listed.ok() && listed->status == 200);
    std::vector<std::string> keys;
    if (!listed.ok()) return keys;
    const std::string& xml = listed->body;
    for (size_t at = xml.find("<Key>"); at != std::string::npos; at = xml.find("<Key>", at)) {
      at += 5;
      keys.push_back(xml.substr(at, xml.find("</Key>", at) - at));
    }
    return keys;
  }
  // Puts `source` in the media as `file`, as a kept upload would be.
  void put_media(const fs::path& source, const std::string& file) {
    const fs::path staged = work() / (file + ".staged");
    fs::copy_file(source, staged);
    ASSERT_TRUE(serving_->movies().media().keep(staged.string(), file, "video/x-msvideo").ok());
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
  std::string bucket_;                 // with the movies on S3
  std::unique_ptr<aws::S3Client> s3_;  // likewise
  static inline std::unique_ptr<testing::Dynalite> dynalite_;
  static inline int tests_ = 0;
  fs::path dir_;
  CapturingLogger log_{LogLevel::kWarn};
  std::unique_ptr<Serving> serving_;
  std::string ada_, bob_, cy_;
};

}  // namespace leasehold::app::api_testing
