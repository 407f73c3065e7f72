// The movies API when AWS refuses the deployment: S3 or SQS, scripted
// (tests/aws/fake_endpoint.h), answering an upload with expired or refused
// credentials, access denied, a bucket or a queue that does not exist, or a
// region mismatch. The user is signed in and allowed: the answer is 503,
// "storage unavailable, try again later (request ID)", never 401, 403 or
// 400, and names no bucket, prefix, key, queue or endpoint; the server's log
// has the request's ID with AWS's error code and AWS's request ID, at error
// level, for the operator.
#include <stdlib.h>

#include "tests/app/movies_api_test_fixture.h"
#include "tests/aws/fake_endpoint.h"

namespace leasehold::app::api_testing {
namespace {

using testing::FakeEndpoint;
using testing::FakeReply;
using testing::FakeRequest;

// The names the deployment is configured with, which no answer may carry.
constexpr char kBucket[] = "leasehold-secret-bucket";
constexpr char kPrefix[] = "secret-prefix";
constexpr char kQueue[] = "secret-jobs";

// How AWS refuses: the HTTP status and its error code, and for S3 the
// bucket's region it names (x-amz-bucket-region), if any.
struct Refusal {
  int status;
  std::string code;
  std::string bucket_region = {};
};

// S3 refusing every request with `refusal`, as its REST API does: an error
// document (none for a HEAD) and the request's ID in x-amz-request-id. One
// naming a region refuses that region too: the client follows it once, and
// the second refusal is the answer.
FakeReply s3_refusal(const FakeRequest& r, const Refusal& refusal) {
  const std::string id = "S3REQ-" + refusal.code;
  const std::string body = r.method == "HEAD" ? ""
                                              : "<Error><Code>" + refusal.code +
                                                    "</Code><Message>refused</Message><RequestId>" +
                                                    id + "</RequestId></Error>";
  FakeReply reply{.status = refusal.status,
                  .body = body,
                  .content_type = "application/xml",
                  .headers = {{"x-amz-request-id", id}}};
  if (!refusal.bucket_region.empty()) {
    reply.headers.emplace_back("x-amz-bucket-region", refusal.bucket_region);
  }
  return reply;
}

// SQS that finds its queues (the server looks them up as it starts) and
// then refuses every operation with `refusal`, as its JSON protocol does.
FakeReply sqs_refusal(const FakeRequest& r, const Refusal& refusal, const std::string& url) {
  if (r.header("x-amz-target") == "AmazonSQS.GetQueueUrl") {
    return {.body = R"({"QueueUrl":")" + url + "/123456789012/" + kQueue + R"("})"};
  }
  return {.status = refusal.status,
          .body = R"({"__type":"com.amazonaws.sqs#)" + refusal.code + R"(","message":"refused"})",
          .content_type = "application/x-amz-json-1.0",
          .headers = {{"x-amzn-RequestId", "SQSREQ-" + refusal.code}}};
}

class MoviesAwsRefusalTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = std::make_unique<leasehold::testing::TempDir>("movies_aws_refusal_test_");
    ASSERT_TRUE(tracer::write_synthetic_movie((tmp_->path() / "spots.avi").string(),
                                              movies::small_test_movie())
                    .ok());
    // Credentials to sign with: the scripted services refuse them anyway.
    ::setenv("AWS_ACCESS_KEY_ID", "test", 0);
    ::setenv("AWS_SECRET_ACCESS_KEY", "test", 0);
  }
  static void TearDownTestSuite() { tmp_.reset(); }

  void TearDown() override { stop(); }

  void stop() {
    if (serving_) serving_->stop();
    serving_.reset();
  }

  // `leasehold serve` on a fresh SQLite store, the movies kept at
  // `media_dir`, the jobs on `queue` (empty: the store), no workers (the
  // upload is what is tested), and Ada signed in.
  void serve(const std::string& media_dir, const std::string& queue) {
    stop();
    const fs::path dir = tmp_->path() / ("t" + std::to_string(++servings_));
    fs::create_directories(dir);
    log_ = std::make_unique<CapturingLogger>(LogLevel::kWarn);
    ServingOptions o;
    o.store_uri = "sqlite:" + (dir / "store.db").string();
    o.log = log_.get();
    o.server.port = 0;
    o.server.threads = 2;
    o.movies.media_dir = media_dir;
    o.movies.queue = queue;
    o.movies.trace_workers = 0;
    o.movies.probe_workers = 0;
    o.movies.upload_bytes_max = kUploadMax;
    auto started = Serving::start(std::move(o));
    ASSERT_TRUE(started.ok()) << started.status().to_string();
    serving_ = std::move(started).value();
    auto added = serving_->accounts().add_user({"ada", "Ada L.", false, std::nullopt});
    ASSERT_TRUE(added.ok()) << added.status().to_string();
    ada_ = "Authorization: Bearer " + added->token + "\r\n";
  }

  HttpResponse call(std::string_view method, std::string_view target, std::string_view body = "",
                    std::string_view headers = "") {
    auto response = server::testing::exchange(serving_->server().port(), method, target,
                                              ada_ + std::string(headers), body);
    EXPECT_TRUE(response.has_value()) << method << " " << target;
    return response.value_or(HttpResponse{});
  }

  HttpResponse upload() {
    return call("POST", "/api/movies?name=spots", read_bytes(tmp_->path() / "spots.avi"),
                "Content-Type: application/octet-stream\r\n");
  }

  // The answer is 503 with the fixed text and its request's ID, and nothing
  // of the deployment; the log has that ID, at error level, with what AWS
  // said: its code and `aws_request_id`.
  void expect_storage_unavailable(const HttpResponse& r, const Refusal& refusal,
                                  const std::string& aws_request_id) {
    EXPECT_EQ(r.status, 503) << r.body;
    const std::string id = r.header("x-request-id");
    ASSERT_FALSE(id.empty());
    const json::value body = json::parse(r.body);
    EXPECT_EQ(body.at("error").at("code"), "unavailable");
    EXPECT_EQ(json::value_to<std::string>(body.at("error").at("message")),
              "storage unavailable, try again later (request " + id + ")");
    EXPECT_EQ(r.header("retry-after"), "1");
    for (const std::string& secret :
         {std::string(kBucket), std::string(kPrefix), std::string(kQueue), std::string("s3://"),
          std::string("sqs://"), std::string("127.0.0.1"), refusal.code, aws_request_id}) {
      EXPECT_EQ(r.body.find(secret), std::string::npos) << secret << " in " << r.body;
    }
    bool logged = false;
    for (const CapturingLogger::Line& line : log_->lines()) {
      if (!line.message.starts_with("the request failed") ||
          line.message.find("request_id=" + id) == std::string::npos) {
        continue;
      }
      logged = true;
      EXPECT_EQ(line.level, LogLevel::kError) << line.message;
      EXPECT_NE(line.message.find(refusal.code), std::string::npos) << line.message;
      EXPECT_NE(line.message.find("AWS request ID " + aws_request_id), std::string::npos)
          << line.message;
    }
    EXPECT_TRUE(logged) << "no log line for request " << id;
  }

  // Nothing is left of a refused upload: no movie, no upload in the work
  // folder.
  void expect_nothing_kept() {
    const HttpResponse listed = call("GET", "/api/movies");
    EXPECT_EQ(listed.status, 200) << listed.body;
    EXPECT_EQ(listed.body, "[]");
    const fs::path uploads = serving_->movies().media().work_dir() + "/" + kUploadsFolder;
    EXPECT_TRUE(!fs::exists(uploads) || fs::is_empty(uploads));
  }

  static inline std::unique_ptr<leasehold::testing::TempDir> tmp_;
  static inline int servings_ = 0;
  std::unique_ptr<CapturingLogger> log_;
  std::unique_ptr<Serving> serving_;
  std::string ada_;
};

TEST_F(MoviesAwsRefusalTest, S3RefusingTheDeploymentIsStorageUnavailableNotTheUsersFault) {
  for (const Refusal& refusal :
       {Refusal{400, "ExpiredToken"}, Refusal{403, "AccessDenied"}, Refusal{404, "NoSuchBucket"},
        Refusal{403, "SignatureDoesNotMatch"}, Refusal{403, "InvalidAccessKeyId"},
        Refusal{301, "PermanentRedirect"}, Refusal{400, "AuthorizationHeaderMalformed"},
        Refusal{301, "PermanentRedirect", "eu-west-1"}}) {
    SCOPED_TRACE(refusal.code);
    FakeEndpoint s3([&](const FakeRequest& r) { return s3_refusal(r, refusal); });
    serve("s3://" + std::string(kBucket) + "/" + kPrefix + "?region=us-east-1&endpoint=" + s3.url(),
          "");
    expect_storage_unavailable(upload(), refusal, "S3REQ-" + refusal.code);
    expect_nothing_kept();
  }
}

// A bucket in another region than the URI's is not a refusal: S3 names its
// region, the upload is sent there and kept, and the server's log warns,
// once, naming both regions, so that the operator sets the right one.
TEST_F(MoviesAwsRefusalTest, S3BucketInAnotherRegionIsFollowedAndTheLogWarns) {
  int refused = 0;
  FakeEndpoint s3([&](const FakeRequest& r) -> FakeReply {
    if (r.header("authorization").find("/eu-west-1/s3/aws4_request") == std::string::npos) {
      ++refused;
      return s3_refusal(r, {301, "PermanentRedirect", "eu-west-1"});
    }
    return {.status = 200, .body = "", .content_type = "application/xml"};
  });
  serve("s3://" + std::string(kBucket) + "/" + kPrefix + "?region=us-east-1&endpoint=" + s3.url(),
        "");
  EXPECT_EQ(upload().status, 201);
  EXPECT_EQ(upload().status, 201);
  EXPECT_EQ(refused, 1) << "the second upload went straight to eu-west-1";
  std::vector<std::string> warned;
  for (const CapturingLogger::Line& line : log_->lines()) {
    if (line.message.find("is in region") != std::string::npos) warned.push_back(line.message);
  }
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_NE(warned[0].find("is in region eu-west-1, not us-east-1"), std::string::npos)
      << warned[0];
}

// The movie is kept on S3 (fauxqs), and its probe cannot be queued: the
// upload is taken back, file and all, and answered as storage unavailable.
TEST_F(MoviesAwsRefusalTest, SqsRefusingTheDeploymentIsStorageUnavailableNotTheUsersFault) {
  testing::Fauxqs* fauxqs = testing::shared_fauxqs();
  ASSERT_NE(fauxqs, nullptr);
  for (const Refusal& refusal :
       {Refusal{400, "ExpiredToken"}, Refusal{400, "AccessDenied"},
        Refusal{400, "QueueDoesNotExist"}, Refusal{403, "InvalidClientTokenId"},
        Refusal{400, "InvalidParameterValue"}}) {
    SCOPED_TRACE(refusal.code);
    const std::string bucket = testing::unique_aws_name("refused");
    aws::S3ClientOptions s3_options;
    s3_options.bucket = bucket;
    s3_options.region = "us-east-1";
    s3_options.endpoint = fauxqs->endpoint();
    auto s3 = aws::S3Client::open(std::move(s3_options));
    ASSERT_TRUE(s3.ok()) << s3.status().to_string();
    ASSERT_TRUE((*s3)->create_bucket().ok());
    std::string url;
    FakeEndpoint sqs([&](const FakeRequest& r) { return sqs_refusal(r, refusal, url); });
    url = sqs.url();
    serve("s3://" + bucket + "/" + kPrefix + "?region=us-east-1&endpoint=" + fauxqs->endpoint(),
          "sqs://us-east-1/" + std::string(kQueue) + "?endpoint=" + sqs.url());
    expect_storage_unavailable(upload(), refusal, "SQSREQ-" + refusal.code);
    expect_nothing_kept();
  }
}

}  // namespace
}  // namespace leasehold::app::api_testing
