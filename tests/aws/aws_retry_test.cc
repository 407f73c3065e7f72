// The retry policy of base/retry.h as JsonClient (SQS) and S3Client apply
// it, against a scripted endpoint (tests/aws/scripted_server.h), on a
// SteppingClock that records every pause: throttling and 5xx retried within
// the pauses' bounds, a write that may have applied not resent, a throttle
// that never ends spending the retry quota, a clock minutes off the
// service's corrected after one refused request, and S3's
// CompleteMultipartUpload retried after a 5xx, a 200 whose body is an
// error, and a lost answer. The DynamoDB store's own cases are in
// tests/dynamodb/dynamodb_conformance_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <fstream>

#include "aws/json_client.h"
#include "aws/s3.h"
#include "base/retry.h"
#include "leasehold/clock.h"
#include "testing/stepping_clock.h"
#include "testing/temp_dir.h"
#include "tests/aws/scripted_server.h"

// A namespace of its own: the unity build compiles this file with the
// other clients' tests, whose helpers have the same names.
namespace leasehold::testing::aws_retries {
namespace {

using namespace std::chrono_literals;
using aws::JsonClient;
using aws::JsonClientOptions;
using aws::S3Client;
using aws::S3ClientOptions;
using Reply = ScriptedServer::Reply;

class FixedCredentials final : public aws::CredentialsSource {
 public:
  Result<aws::Credentials> get() override { return aws::Credentials{"AKID", "secret", ""}; }
};

Reply json_error(int status, const std::string& code) {
  return {status, R"({"__type":"com.amazonaws.sqs#)" + code + R"(","message":"scripted"})"};
}

Reply s3_error(int status, const std::string& code) {
  return {.status = status,
          .body = "<Error><Code>" + code + "</Code><Message>scripted</Message></Error>",
          .content_type = "application/xml"};
}

// A client of `server` on `clock`; retry options changed by `change`.
std::unique_ptr<JsonClient> json_client(const ScriptedServer& server, Clock& clock,
                                        const std::function<void(RetryOptions&)>& change = {}) {
  JsonClientOptions o{.service = "sqs",
                      .target_prefix = "AmazonSQS.",
                      .region = "us-east-1",
                      .endpoint = server.endpoint(),
                      .credentials = std::make_shared<FixedCredentials>(),
                      .clock = &clock,
                      .request_timeout = 2s};
  if (change) change(o.retry);
  Result<std::unique_ptr<JsonClient>> client = JsonClient::open(std::move(o));
  EXPECT_TRUE(client.ok()) << client.status().to_string();
  return client.ok() ? std::move(client).value() : nullptr;
}

// A client of `server` on `clock`; options changed by `change`.
std::unique_ptr<S3Client> s3_client(const ScriptedServer& server, Clock& clock,
                                    const std::function<void(S3ClientOptions&)>& change = {}) {
  S3ClientOptions o;
  o.bucket = "retries";
  o.region = "us-east-1";
  o.endpoint = server.endpoint();
  o.credentials = std::make_shared<FixedCredentials>();
  o.clock = &clock;
  o.request_timeout = 2s;
  if (change) change(o);
  Result<std::unique_ptr<S3Client>> client = S3Client::open(std::move(o));
  EXPECT_TRUE(client.ok()) << client.status().to_string();
  return client.ok() ? std::move(client).value() : nullptr;
}

Duration pause_max(RetryCause cause, int retry) {
  return retry_pause_max(RetryOptions(), cause, retry);
}

// ---------------------------------------------------------------- JsonClient

// Three throttled replies: with the standard mode's 3 attempts the call gives
// up (kUnavailable); with 4 it gets the reply. Each pause is within its bound
// after throttling: [0, 1 s], [0, 2 s], [0, 4 s].
TEST(JsonClientRetries, ThrottlingIsRetriedOnTheLongerBase) {
  for (const int attempts_max : {3, 4}) {
    SCOPED_TRACE(attempts_max);
    ScriptedServer server({json_error(400, "ThrottlingException"),
                           json_error(400, "RequestThrottled"),
                           json_error(400, "Throttling"),
                           {200, R"({"MessageId":"m"})"}});
    SteppingClock clock;
    auto client =
        json_client(server, clock, [&](RetryOptions& r) { r.attempts_max = attempts_max; });
    ASSERT_NE(client, nullptr);
    const Result<boost::json::object> sent = client->call("SendMessage", {}, false);
    const std::vector<Duration> pauses = clock.pauses();
    ASSERT_EQ(pauses.size(), static_cast<size_t>(attempts_max - 1));
    for (size_t i = 0; i < pauses.size(); ++i) {
      EXPECT_LE(pauses[i], pause_max(RetryCause::kThrottling, static_cast<int>(i) + 1)) << i;
    }
    EXPECT_EQ(server.requests().size(), static_cast<size_t>(attempts_max));
    if (attempts_max == 3) {
      EXPECT_EQ(sent.status().code(), Code::kUnavailable);
      EXPECT_EQ(sent.status().message(),
                "gave up after 3 attempts: SendMessage: Throttling: scripted (throttled)");
    } else {
      ASSERT_TRUE(sent.ok()) << sent.status().to_string();
      EXPECT_EQ(sent->at("MessageId").as_string(), "m");
    }
  }
}

// A 5xx may follow a request that was applied: a read (idempotent) is sent
// again on the short base, a write is kUnknownOutcome at once.
TEST(JsonClientRetries, A5xxIsRetriedForAReadAndUnknownForAWrite) {
  ScriptedServer server({json_error(500, "InternalError"),
                         {502, "<html>bad gateway</html>"},
                         {200, R"({"Messages":[]})"},
                         json_error(503, "ServiceUnavailable")});
  SteppingClock clock;
  auto client = json_client(server, clock);
  ASSERT_NE(client, nullptr);
  const Result<boost::json::object> received = client->call("ReceiveMessage", {}, true);
  ASSERT_TRUE(received.ok()) << received.status().to_string();
  const std::vector<Duration> pauses = clock.pauses();
  ASSERT_EQ(pauses.size(), 2u);
  EXPECT_LE(pauses[0], pause_max(RetryCause::kTransient, 1));
  EXPECT_LE(pauses[1], pause_max(RetryCause::kTransient, 2));

  const Result<boost::json::object> sent = client->call("SendMessage", {}, false);
  EXPECT_EQ(sent.status().code(), Code::kUnknownOutcome) << sent.status().to_string();
  EXPECT_EQ(server.requests().size(), 4u) << "the write was sent once";
  EXPECT_EQ(clock.pauses().size(), 2u);
}

// A throttle that never ends: the client's quota (500 tokens, 5 a retry)
// allows 100 retries in all, then each call makes one attempt.
TEST(JsonClientRetries, ANeverEndingThrottleSpendsTheQuota) {
  ScriptedServer server(
      [](const ScriptedServer::Request&) { return json_error(400, "ThrottlingException"); });
  SteppingClock clock;
  auto client = json_client(server, clock);
  ASSERT_NE(client, nullptr);
  constexpr size_t kCalls = 60;
  Status last;
  for (size_t i = 0; i < kCalls; ++i) {
    last = client->call("ReceiveMessage", {}, true).status();
    ASSERT_EQ(last.code(), Code::kUnavailable);
  }
  EXPECT_EQ(server.requests().size(), kCalls + 100);
  EXPECT_EQ(clock.pauses().size(), 100u);
  EXPECT_TRUE(last.message().starts_with("gave up after 1 attempt (the retry quota is spent"))
      << last.to_string();
}

// The service refuses a request signed more than 5 minutes off its time,
// with its time in a Date header; a client whose clock is 20 minutes off
// signs it again with the service's time and succeeds after exactly one
// refused request, and keeps the offset for its later requests. A write
// too: a refused signature applied nothing.
TEST(JsonClientRetries, AClockMinutesOffIsCorrectedAfterOneRefusal) {
  SteppingClock service_clock;
  for (const Duration skew : {Duration(20min), -Duration(20min)}) {
    SCOPED_TRACE(skew > Duration::zero() ? "ahead" : "behind");
    int refused = 0;
    ScriptedServer server([&](const ScriptedServer::Request& request) -> Reply {
      if (auto refusal = refuse_skewed_json(request, service_clock.wall_now(), 5min)) {
        ++refused;
        return *refusal;
      }
      return {200, R"({"MessageId":"m"})"};
    });
    OffsetClock skewed(service_clock, skew);
    auto client = json_client(server, skewed);
    ASSERT_NE(client, nullptr);
    const Result<boost::json::object> sent = client->call("SendMessage", {}, false);
    ASSERT_TRUE(sent.ok()) << sent.status().to_string();
    EXPECT_EQ(refused, 1);
    EXPECT_EQ(server.requests().size(), 2u);
    EXPECT_TRUE(service_clock.pauses().empty()) << "signed again at once";
    service_clock.simulated().advance(3min);
    ASSERT_TRUE(client->call("SendMessage", {}, false).ok());
    EXPECT_EQ(refused, 1) << "the offset is kept";
  }
}

// A refusal of the signature that says nothing of the time (a wrong secret)
// is not sent again, however far the clock is.
TEST(JsonClientRetries, AWrongSecretIsNotSignedAgain) {
  ScriptedServer server({{.status = 400,
                          .body = R"({"__type":"InvalidSignatureException","message":)"
                                  R"("The request signature we calculated does not match"})",
                          .headers = {{"Date", "Tue, 14 Nov 2023 22:13:20 GMT"}}}});
  SteppingClock clock;
  OffsetClock skewed(clock, 1h);
  auto client = json_client(server, skewed);
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(client->call("SendMessage", {}, false).status().code(), Code::kUnauthenticated);
  EXPECT_EQ(server.requests().size(), 1u);
}

// ---------------------------------------------------------------- S3Client

TEST(S3ClientRetries, SlowDownAnd5xxAreRetriedWithinTheirBounds) {
  ScriptedServer server({s3_error(503, "SlowDown"), s3_error(500, "InternalError"), {200, ""}});
  SteppingClock clock;
  auto client = s3_client(server, clock);
  ASSERT_NE(client, nullptr);
  const Status put = client->put("k", "bytes", "text/plain");
  ASSERT_TRUE(put.ok()) << put.to_string();
  EXPECT_EQ(server.requests().size(), 3u);
  const std::vector<Duration> pauses = clock.pauses();
  ASSERT_EQ(pauses.size(), 2u);
  EXPECT_LE(pauses[0], pause_max(RetryCause::kThrottling, 1));
  EXPECT_LE(pauses[1], pause_max(RetryCause::kTransient, 2));
  for (const ScriptedServer::Request& r : server.requests()) EXPECT_EQ(r.body, "bytes");
}

TEST(S3ClientRetries, EndlessSlowDownGivesUpAfterThreeAttempts) {
  ScriptedServer server([](const ScriptedServer::Request&) { return s3_error(503, "SlowDown"); });
  SteppingClock clock;
  auto client = s3_client(server, clock);
  ASSERT_NE(client, nullptr);
  const Status put = client->put("k", "bytes", "");
  EXPECT_EQ(put.code(), Code::kUnavailable);
  EXPECT_TRUE(
      put.message().starts_with("gave up after 3 attempts: s3 PUT s3://retries/k: SlowDown"))
      << put.to_string();
  EXPECT_EQ(server.requests().size(), 3u);
}

// S3 allows 15 minutes either way, and answers RequestTimeTooSkewed.
TEST(S3ClientRetries, AClockMinutesOffIsCorrectedAfterOneRefusal) {
  SteppingClock s3_clock;
  int refused = 0;
  ScriptedServer server([&](const ScriptedServer::Request& request) -> Reply {
    if (auto refusal = refuse_skewed_s3(request, s3_clock.wall_now(), 15min)) {
      ++refused;
      return *refusal;
    }
    return {200, ""};
  });
  OffsetClock skewed(s3_clock, -1h);
  auto client = s3_client(server, skewed);
  ASSERT_NE(client, nullptr);
  const Status put = client->put("k", "bytes", "");
  ASSERT_TRUE(put.ok()) << put.to_string();
  EXPECT_EQ(refused, 1);
  EXPECT_EQ(server.requests().size(), 2u);
  ASSERT_TRUE(client->remove("k").ok());
  EXPECT_EQ(refused, 1) << "the offset is kept";
}

// ---------------------------------------------------------------- CompleteMultipartUpload

constexpr size_t kPartBytes = 1024;
constexpr size_t kParts = 3;
constexpr size_t kFileBytes = kPartBytes * kParts;

bool is_complete(const ScriptedServer::Request& r) {
  return r.method == "POST" && r.target.find("uploadId=") != std::string::npos;
}

// S3 taking a multipart upload: it starts one, takes each part, answers
// each CompleteMultipartUpload with the next of `completes` and a HEAD of
// the object with `head`; an abort is a 204.
ScriptedServer::Handler multipart_s3(std::deque<Reply> completes, Reply head = {404, ""}) {
  return [completes = std::move(completes), head](const ScriptedServer::Request& r) mutable {
    if (r.method == "POST" && r.target.ends_with("?uploads")) {
      return Reply{.status = 200,
                   .body =
                       "<InitiateMultipartUploadResult><UploadId>U1</UploadId>"
                       "</InitiateMultipartUploadResult>",
                   .content_type = "application/xml"};
    }
    if (r.method == "PUT") return Reply{.status = 200, .body = "", .headers = {{"ETag", "\"p\""}}};
    if (is_complete(r) && !completes.empty()) {
      Reply next = completes.front();
      completes.pop_front();
      return next;
    }
    if (r.method == "HEAD") return head;
    if (r.method == "DELETE") return Reply{.status = 204, .body = ""};
    return s3_error(400, "Unexpected");
  };
}

Reply completed() {
  return {.status = 200,
          .body =
              "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CompleteMultipartUploadResult>"
              "<ETag>\"3858f62230ac3c915f300c664312c11f-3\"</ETag>"
              "</CompleteMultipartUploadResult>",
          .content_type = "application/xml"};
}

// What S3 answers a HEAD of the object a multipart upload made: no body,
// its size and an ETag ending in the number of its parts.
Reply head_of_object(const std::string& etag) {
  return {.status = 200,
          .body = "",
          .headers = {{"Content-Length", std::to_string(kFileBytes)}, {"ETag", etag}},
          .content_type = "video/x-msvideo"};
}

// put_file() of a file of kParts parts; `server` answers it.
struct MultipartPut {
  explicit MultipartPut(ScriptedServer& server) : server(server) {
    std::ofstream(file) << std::string(kFileBytes, 'm');
    client = s3_client(server, clock, [](S3ClientOptions& o) {
      o.allow_small_parts = true;
      o.part_size_bytes = kPartBytes;
      o.multipart_threshold_bytes = kPartBytes;
    });
  }
  Status put() { return client->put_file("movie.avi", file, "video/x-msvideo"); }
  size_t count(const std::function<bool(const ScriptedServer::Request&)>& which) {
    const std::vector<ScriptedServer::Request> requests = server.requests();
    return static_cast<size_t>(std::count_if(requests.begin(), requests.end(), which));
  }
  size_t completes() { return count(is_complete); }
  size_t aborts() {
    return count([](const ScriptedServer::Request& r) { return r.method == "DELETE"; });
  }
  size_t heads() {
    return count([](const ScriptedServer::Request& r) { return r.method == "HEAD"; });
  }

  ScriptedServer& server;
  TempDir dir{"leasehold-multipart-"};
  std::string file = dir.file("movie.avi");
  SteppingClock clock;
  std::unique_ptr<S3Client> client;
};

// A 500: sent again after one pause on the short base, the same parts.
TEST(S3ClientRetries, CompleteMultipartUploadIsRetriedAfterA5xx) {
  ScriptedServer server(multipart_s3({s3_error(500, "InternalError"), completed()}));
  MultipartPut p(server);
  ASSERT_NE(p.client, nullptr);
  const Status put = p.put();
  ASSERT_TRUE(put.ok()) << put.to_string();
  EXPECT_EQ(p.completes(), 2u);
  EXPECT_EQ(p.aborts(), 0u);
  const std::vector<Duration> pauses = p.clock.pauses();
  ASSERT_EQ(pauses.size(), 1u);
  EXPECT_LE(pauses[0], pause_max(RetryCause::kTransient, 1));
  const std::vector<ScriptedServer::Request> requests = server.requests();
  std::vector<std::string> bodies;
  for (const ScriptedServer::Request& r : requests) {
    if (is_complete(r)) bodies.push_back(r.body);
  }
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_EQ(bodies[0], bodies[1]);
  EXPECT_NE(bodies[0].find("<PartNumber>3</PartNumber>"), std::string::npos) << bodies[0];
}

// S3 documents that CompleteMultipartUpload may answer 200 and fail in the
// body; that answer is a 500, sent again.
TEST(S3ClientRetries, CompleteMultipartUploadIsRetriedAfterA200WithAnError) {
  ScriptedServer server(multipart_s3(
      {{.status = 200,
        .body = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\n<Error><Code>InternalError</Code>"
                "<Message>We encountered an internal error. Please try again.</Message>"
                "<RequestId>R200</RequestId></Error>",
        .content_type = "application/xml"},
       completed()}));
  MultipartPut p(server);
  ASSERT_NE(p.client, nullptr);
  const Status put = p.put();
  ASSERT_TRUE(put.ok()) << put.to_string();
  EXPECT_EQ(p.completes(), 2u);
  EXPECT_EQ(p.clock.pauses().size(), 1u);

  // Every answer an error in a 200: the call gives up as after 5xx.
  ScriptedServer failing(
      multipart_s3(std::deque<Reply>(3, Reply{.status = 200,
                                              .body = "<Error><Code>InternalError</Code>"
                                                      "<Message>m</Message></Error>",
                                              .content_type = "application/xml"})));
  MultipartPut q(failing);
  ASSERT_NE(q.client, nullptr);
  const Status gave_up = q.put();
  EXPECT_EQ(gave_up.code(), Code::kUnavailable) << gave_up.to_string();
  EXPECT_THAT(gave_up.message(), ::testing::HasSubstr("gave up after 3 attempts"));
  EXPECT_THAT(gave_up.message(), ::testing::HasSubstr("InternalError"));
  EXPECT_EQ(q.completes(), 3u);
  EXPECT_EQ(q.aborts(), 1u) << "the parts are not left behind";
}

// The first completion's answer is lost (a 500 after S3 completed it): the
// retry finds no upload, and the object, made of the file's parts, says it
// was completed. An object that is not the upload's is not taken for it.
TEST(S3ClientRetries, CompleteMultipartUploadWhoseAnswerWasLostIsToldByTheObject) {
  ScriptedServer server(
      multipart_s3({s3_error(500, "InternalError"), s3_error(404, "NoSuchUpload")},
                   head_of_object("\"3858f62230ac3c915f300c664312c11f-3\"")));
  MultipartPut p(server);
  ASSERT_NE(p.client, nullptr);
  const Status put = p.put();
  ASSERT_TRUE(put.ok()) << put.to_string();
  EXPECT_EQ(p.completes(), 2u);
  EXPECT_EQ(p.heads(), 1u);
  EXPECT_EQ(p.aborts(), 0u);
  EXPECT_EQ(p.clock.pauses().size(), 1u);

  for (const Reply& head :
       {head_of_object("\"9b2cf535f27731c974343645a3985328\""),  // put whole
        head_of_object("\"3858f62230ac3c915f300c664312c11f-2\""), Reply{404, ""}}) {
    ScriptedServer other(
        multipart_s3({s3_error(500, "InternalError"), s3_error(404, "NoSuchUpload")}, head));
    MultipartPut q(other);
    ASSERT_NE(q.client, nullptr);
    const Status refused = q.put();
    EXPECT_EQ(refused.code(), Code::kNotFound) << refused.to_string();
    EXPECT_THAT(refused.message(), ::testing::HasSubstr("NoSuchUpload"));
    EXPECT_EQ(q.heads(), 1u);
  }

  // NoSuchUpload at the first attempt: the upload is gone (aborted, say),
  // and nothing is asked of the object.
  ScriptedServer first(multipart_s3({s3_error(404, "NoSuchUpload")},
                                    head_of_object("\"3858f62230ac3c915f300c664312c11f-3\"")));
  MultipartPut r(first);
  ASSERT_NE(r.client, nullptr);
  EXPECT_EQ(r.put().code(), Code::kNotFound);
  EXPECT_EQ(r.heads(), 0u);
}

}  // namespace
}  // namespace leasehold::testing::aws_retries
