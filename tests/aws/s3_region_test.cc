// S3Client and a bucket in another region than the client's, against a
// scripted S3 (tests/aws/scripted_server.h) that refuses what is not signed
// for the bucket's region as S3 does: a 301 PermanentRedirect with
// x-amz-bucket-region, a 400 AuthorizationHeaderMalformed naming the
// <Region>, a 301 naming nothing (the region then comes from a HEAD of the
// bucket). The client sends the request once more, signed for that region,
// keeps the region for its later requests and presigned URLs, warns once,
// and never follows a second refusal.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "aws/s3.h"
#include "testing/capturing_logger.h"
#include "testing/stepping_clock.h"
#include "tests/aws/scripted_server.h"

// A namespace of its own: the unity build compiles this file with the
// other clients' tests, whose helpers have the same names.
namespace leasehold::testing::s3_region {
namespace {

using namespace std::chrono_literals;
using aws::S3Client;
using aws::S3ClientOptions;
using ::testing::HasSubstr;
using Reply = ScriptedServer::Reply;
using Request = ScriptedServer::Request;

constexpr char kBucket[] = "moved";

class FixedCredentials final : public aws::CredentialsSource {
 public:
  Result<aws::Credentials> get() override {
    return aws::Credentials{"AKIDREGION", "region-secret", ""};
  }
};

// The region a request is signed for: its Authorization header's credential
// scope, "Credential=AKID/DATE/REGION/s3/aws4_request".
std::string signed_region(const Request& request) {
  const std::string authorization = request.header("authorization");
  const size_t credential = authorization.find("Credential=");
  if (credential == std::string::npos) return "";
  size_t start = credential;
  for (int slash = 0; slash < 2; ++slash) start = authorization.find('/', start) + 1;
  return authorization.substr(start, authorization.find('/', start) - start);
}

std::vector<std::string> signed_regions(ScriptedServer& server) {
  std::vector<std::string> out;
  for (const Request& r : server.requests()) out.push_back(signed_region(r));
  return out;
}

// What S3 answers a request signed for the wrong region when it knows the
// bucket's: 301 PermanentRedirect, naming it in x-amz-bucket-region.
Reply permanent_redirect(const std::string& region) {
  return {.status = 301,
          .body =
              "<Error><Code>PermanentRedirect</Code><Message>The bucket you are attempting "
              "to access must be addressed using the specified endpoint.</Message>"
              "<Bucket>moved</Bucket><RequestId>R301</RequestId></Error>",
          .headers = {{"x-amz-bucket-region", region}, {"x-amz-request-id", "R301"}},
          .content_type = "application/xml"};
}

// S3 with the bucket in `*region`: requests signed for another are refused
// with `refuse(region)`; the others succeed.
ScriptedServer::Handler s3_in(const std::atomic<const char*>* region,
                              std::function<Reply(const std::string&)> refuse) {
  return [region, refuse](const Request& r) -> Reply {
    const std::string bucket_region = region->load();
    if (signed_region(r) != bucket_region) return refuse(bucket_region);
    return {.status = 200, .body = ""};
  };
}

struct Client {
  SteppingClock clock;
  CapturingLogger log{LogLevel::kDebug};
  std::unique_ptr<S3Client> s3;
};

std::unique_ptr<Client> open_client(const ScriptedServer& server) {
  auto c = std::make_unique<Client>();
  S3ClientOptions o;
  o.bucket = kBucket;
  o.region = "us-east-1";
  o.endpoint = server.endpoint();
  o.credentials = std::make_shared<FixedCredentials>();
  o.clock = &c->clock;
  o.info_log = &c->log;
  o.request_timeout = 2s;
  Result<std::unique_ptr<S3Client>> s3 = S3Client::open(std::move(o));
  EXPECT_TRUE(s3.ok()) << s3.status().to_string();
  if (!s3.ok()) return nullptr;
  c->s3 = std::move(s3).value();
  return c;
}

// The warnings the client logged of a moved bucket.
std::vector<std::string> moved_warnings(const Client& c) {
  std::vector<std::string> out;
  for (const CapturingLogger::Line& line : c.log.lines()) {
    if (line.level == LogLevel::kWarn && line.message.find("is in region") != std::string::npos) {
      out.push_back(line.message);
    }
  }
  return out;
}

// (a) The retry is signed for the bucket's region, the request is sent
// whole again, later requests go straight there, and the log says so once,
// naming both regions and no secret. A bucket that moves again is followed
// again, without another warning.
TEST(S3RegionRedirect, APermanentRedirectIsFollowedOnceAndTheRegionKept) {
  std::atomic<const char*> region = "eu-west-1";
  ScriptedServer server(s3_in(&region, permanent_redirect));
  auto c = open_client(server);
  ASSERT_NE(c, nullptr);

  const Status put = c->s3->put("k", "bytes", "text/plain");
  ASSERT_TRUE(put.ok()) << put.to_string();
  EXPECT_THAT(signed_regions(server), ::testing::ElementsAre("us-east-1", "eu-west-1"));
  const std::vector<Request> sent = server.requests();
  EXPECT_EQ(sent[1].method, "PUT");
  EXPECT_EQ(sent[1].target, sent[0].target);
  EXPECT_EQ(sent[1].body, "bytes");
  EXPECT_EQ(sent[1].header("host"), sent[0].header("host")) << "a configured endpoint is kept";
  EXPECT_EQ(c->s3->region(), "eu-west-1");
  EXPECT_EQ(c->s3->options().region, "us-east-1");
  EXPECT_TRUE(c->clock.pauses().empty()) << "sent again at once";

  ASSERT_TRUE(c->s3->remove("k").ok());
  ASSERT_TRUE(c->s3->put("k2", "more", "").ok());
  EXPECT_THAT(signed_regions(server),
              ::testing::ElementsAre("us-east-1", "eu-west-1", "eu-west-1", "eu-west-1"));

  const std::vector<std::string> warned = moved_warnings(*c);
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_THAT(warned[0], HasSubstr("in region eu-west-1, not us-east-1 as configured"));
  EXPECT_THAT(warned[0], HasSubstr("region=eu-west-1"));
  EXPECT_THAT(warned[0], ::testing::Not(HasSubstr("AKIDREGION")));
  EXPECT_THAT(warned[0], ::testing::Not(HasSubstr("region-secret")));

  region = "ap-south-1";
  ASSERT_TRUE(c->s3->put("k3", "moved again", "").ok());
  EXPECT_EQ(c->s3->region(), "ap-south-1");
  EXPECT_EQ(signed_regions(server).back(), "ap-south-1");
  EXPECT_EQ(moved_warnings(*c).size(), 1u) << "warned once per client";
}

// (b) S3 refuses a signature for the wrong region with a 400 naming the
// right one in its document.
TEST(S3RegionRedirect, AuthorizationHeaderMalformedNamingTheRegionIsFollowed) {
  std::atomic<const char*> region = "eu-central-1";
  ScriptedServer server([&](const Request& r) -> Reply {
    if (signed_region(r) != region.load()) {
      return {.status = 400,
              .body =
                  "<Error><Code>AuthorizationHeaderMalformed</Code><Message>The "
                  "authorization header is malformed; the region 'us-east-1' is wrong; "
                  "expecting 'eu-central-1'</Message><Region>eu-central-1</Region>"
                  "<RequestId>R400</RequestId></Error>",
              .content_type = "application/xml"};
    }
    return {.status = 206,
            .body = "0123456789",
            .headers = {{"Content-Range", "bytes 0-9/100"}},
            .content_type = "application/octet-stream"};
  });
  auto c = open_client(server);
  ASSERT_NE(c, nullptr);
  const Result<aws::S3Range> range = c->s3->get_range("k", 0, 9);
  ASSERT_TRUE(range.ok()) << range.status().to_string();
  EXPECT_EQ(range->bytes, "0123456789");
  EXPECT_EQ(range->object_size, 100u);
  EXPECT_THAT(signed_regions(server), ::testing::ElementsAre("us-east-1", "eu-central-1"));
  EXPECT_EQ(server.requests()[1].header("range"), "bytes=0-9");
  EXPECT_EQ(c->s3->region(), "eu-central-1");
}

// (c) A 301 that names no region: the client asks the bucket with a HEAD,
// whose answer names it even when it is itself a 301, then sends the
// request there.
TEST(S3RegionRedirect, ARedirectNamingNoRegionIsAskedOfTheBucket) {
  ScriptedServer server([](const Request& r) -> Reply {
    if (r.method == "HEAD" && r.target == "/moved") {
      return {.status = 301, .body = "", .headers = {{"x-amz-bucket-region", "sa-east-1"}}};
    }
    if (signed_region(r) != "sa-east-1") {
      return {.status = 301,
              .body = "<Error><Code>PermanentRedirect</Code><Message>m</Message></Error>",
              .content_type = "application/xml"};
    }
    return {.status = 204, .body = ""};
  });
  auto c = open_client(server);
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->s3->remove("a/k").ok());
  const std::vector<Request> sent = server.requests();
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_EQ(sent[0].method + " " + sent[0].target, "DELETE /moved/a/k");
  EXPECT_EQ(sent[1].method + " " + sent[1].target, "HEAD /moved");
  EXPECT_EQ(sent[2].method + " " + sent[2].target, "DELETE /moved/a/k");
  EXPECT_THAT(signed_regions(server),
              ::testing::ElementsAre("us-east-1", "us-east-1", "sa-east-1"));
  EXPECT_EQ(c->s3->region(), "sa-east-1");
}

// (d) A request is sent on at most once: a second refusal is its answer,
// the error it was before redirects were followed (the 4xx's
// kInvalidArgument, which the media answer as storage unavailable). So is
// a refusal that names no region, even after a HEAD, and a 403 whose
// x-amz-bucket-region is the region it was signed for.
TEST(S3RegionRedirect, ASecondRefusalOrOneNamingNoRegionIsTheAnswer) {
  {
    SCOPED_TRACE("a second redirect");
    ScriptedServer server([](const Request& r) {
      return permanent_redirect(signed_region(r) == "us-east-1" ? "eu-west-1" : "us-west-2");
    });
    auto c = open_client(server);
    ASSERT_NE(c, nullptr);
    const Status put = c->s3->put("k", "bytes", "");
    EXPECT_EQ(put.code(), Code::kInvalidArgument) << put.to_string();
    EXPECT_THAT(put.message(), HasSubstr("PermanentRedirect"));
    EXPECT_THAT(put.message(), HasSubstr("(HTTP 301, AWS request ID R301)"));
    EXPECT_THAT(signed_regions(server), ::testing::ElementsAre("us-east-1", "eu-west-1"));
    EXPECT_EQ(c->s3->region(), "eu-west-1") << "where S3 said the bucket was";
  }
  {
    SCOPED_TRACE("a redirect naming no region, nor does the bucket's HEAD");
    ScriptedServer server([](const Request& r) -> Reply {
      if (r.method == "HEAD") return {.status = 301, .body = ""};
      return {.status = 301,
              .body = "<Error><Code>PermanentRedirect</Code><Message>m</Message></Error>",
              .content_type = "application/xml"};
    });
    auto c = open_client(server);
    ASSERT_NE(c, nullptr);
    const Status put = c->s3->put("k", "bytes", "");
    EXPECT_EQ(put.code(), Code::kInvalidArgument) << put.to_string();
    EXPECT_THAT(put.message(), HasSubstr("s3 PUT s3://moved/k: PermanentRedirect"));
    EXPECT_EQ(server.requests().size(), 2u) << "the PUT and the HEAD of the bucket";
    EXPECT_EQ(c->s3->region(), "us-east-1");
    EXPECT_TRUE(moved_warnings(*c).empty());
  }
  {
    SCOPED_TRACE("access denied in the bucket's own region");
    ScriptedServer server({{.status = 403,
                            .body = "<Error><Code>AccessDenied</Code><Message>m</Message></Error>",
                            .headers = {{"x-amz-bucket-region", "us-east-1"}},
                            .content_type = "application/xml"}});
    auto c = open_client(server);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->s3->put("k", "bytes", "").code(), Code::kPermissionDenied);
    EXPECT_EQ(server.requests().size(), 1u);
  }
  {
    SCOPED_TRACE("a region that is not one");
    ScriptedServer server({permanent_redirect("evil.example.com/")});
    auto c = open_client(server);
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->s3->put("k", "bytes", "").code(), Code::kInvalidArgument);
    EXPECT_EQ(server.requests().size(), 1u);
    EXPECT_EQ(c->s3->region(), "us-east-1");
  }
}

// (e) A URL presigned after the move is signed for the bucket's region:
// one for the configured region would be refused.
TEST(S3RegionRedirect, APresignedUrlAfterTheMoveIsForTheBucketsRegion) {
  std::atomic<const char*> region = "eu-west-1";
  ScriptedServer server(s3_in(&region, permanent_redirect));
  auto c = open_client(server);
  ASSERT_NE(c, nullptr);
  const WallTime now = c->clock.wall_now();
  const Result<std::string> before = c->s3->presign_get("k", 60s, now);
  ASSERT_TRUE(before.ok()) << before.status().to_string();
  EXPECT_THAT(*before, HasSubstr("%2Fus-east-1%2Fs3%2Faws4_request"));

  ASSERT_TRUE(c->s3->put("k", "bytes", "").ok());
  const Result<std::string> after = c->s3->presign_get("k", 60s, now);
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  EXPECT_THAT(*after, ::testing::StartsWith(server.endpoint() + "/moved/k?X-Amz-Algorithm="));
  EXPECT_THAT(*after, HasSubstr("X-Amz-Credential=AKIDREGION%2F"));
  EXPECT_THAT(*after, HasSubstr("%2Feu-west-1%2Fs3%2Faws4_request"));
}

// Many threads meeting the move at once: each request is sent on at most
// once, every one succeeds, and the log hears of it once.
TEST(S3RegionRedirect, ThreadsMeetingTheMoveAtOnceAllSucceed) {
  std::atomic<const char*> region = "eu-north-1";
  ScriptedServer server(s3_in(&region, permanent_redirect));
  auto c = open_client(server);
  ASSERT_NE(c, nullptr);
  constexpr int kThreads = 8;
  constexpr int kPuts = 5;
  std::atomic<int> failed = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPuts; ++i) {
        if (!c->s3->put("k" + std::to_string(t) + "-" + std::to_string(i), "x", "").ok()) {
          ++failed;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(failed.load(), 0);
  const std::vector<std::string> regions = signed_regions(server);
  const auto refused = std::count(regions.begin(), regions.end(), "us-east-1");
  EXPECT_LE(refused, kThreads) << "each thread is refused at most once";
  EXPECT_EQ(regions.size(), static_cast<size_t>(kThreads * kPuts + refused));
  EXPECT_EQ(moved_warnings(*c).size(), 1u);
}

}  // namespace
}  // namespace leasehold::testing::s3_region
