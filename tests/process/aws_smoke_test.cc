// The AWS smoke test (tests/aws/aws_smoke.cc), run as an operator runs it,
// with LEASEHOLD_AWS_SMOKE=1 and the standard variables, but pointed at local
// emulators, since the tests have no route to AWS: AWS_ENDPOINT_URL_DYNAMODB
// at DynamoDB Local, AWS_ENDPOINT_URL_SQS and AWS_ENDPOINT_URL_S3 at fauxqs,
// fake credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and the
// bucket made first, as the operator would have. Each run has an environment
// of its own (env -i), so that nothing of the developer's AWS configuration
// leaks in; after it, the emulators are asked what it left.
#include <gmock/gmock.h>

#include "aws/json_client.h"
#include "aws/s3.h"
#include "net/http_client.h"
#include "process_util.h"
#include "tests/aws/fauxqs_fixture.h"
#include "tests/dynamodb/dynamodb_local_fixture.h"

namespace leasehold::process_test {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

constexpr char kSmokeAccessKeyId[] = "AKIDSMOKETEST";
constexpr char kSmokeSecretKey[] = "smoke-test-secret-never-printed";

class AwsSmokeRun : public ProcessTest {
 protected:
  // `aws_smoke` with only these variables, HOME (the test's empty folder)
  // and EC2's metadata service off.
  RunResult run_smoke(const std::vector<std::string>& vars) const {
    std::vector<std::string> argv{"env", "-i", "HOME=" + dir().string(),
                                  "AWS_EC2_METADATA_DISABLED=true"};
    argv.insert(argv.end(), vars.begin(), vars.end());
    argv.push_back(AWS_SMOKE_BIN);
    return run(argv);
  }
};

TEST_F(AwsSmokeRun, IsOffUnlessAskedForAndMakesNothingWithoutRegionOrCredentials) {
  const RunResult off = run_smoke({"LEASEHOLD_AWS_SMOKE=yes"});
  EXPECT_EQ(off.exit_code, 77) << off.out << off.err;  // ctest's SKIP_RETURN_CODE
  EXPECT_THAT(off.out, HasSubstr("off (set LEASEHOLD_AWS_SMOKE=1"));

  const RunResult no_region = run_smoke({"LEASEHOLD_AWS_SMOKE=1"});
  EXPECT_EQ(no_region.exit_code, 1);
  EXPECT_THAT(no_region.out,
              AllOf(HasSubstr("cannot start, nothing was made"), HasSubstr("AWS_REGION")));

  const RunResult no_credentials = run_smoke({"LEASEHOLD_AWS_SMOKE=1", "AWS_REGION=eu-west-1"});
  EXPECT_EQ(no_credentials.exit_code, 1);
  EXPECT_THAT(no_credentials.out, HasSubstr("cannot start, nothing was made"));
}

class AwsSmokeTest : public AwsSmokeRun {
 protected:
  void SetUp() override {
    auto dynamodb = testing::DynamoDbLocal::start();
    ASSERT_TRUE(dynamodb.ok()) << dynamodb.status().to_string();
    dynamodb_ = std::move(dynamodb).value();
    auto fauxqs = testing::Fauxqs::start();
    ASSERT_TRUE(fauxqs.ok()) << fauxqs.status().to_string();
    fauxqs_ = std::move(fauxqs).value();
    // For the test's own clients, which look at what the run left.
    setenv("AWS_ACCESS_KEY_ID", kSmokeAccessKeyId, 1);
    setenv("AWS_SECRET_ACCESS_KEY", kSmokeSecretKey, 1);
    unsetenv("AWS_SESSION_TOKEN");
  }

  // A run on the emulators; LEASEHOLD_AWS_SMOKE_BUCKET=`bucket` unless empty.
  RunResult smoke(const std::string& bucket) const {
    std::vector<std::string> vars{"LEASEHOLD_AWS_SMOKE=1",
                                  "AWS_REGION=us-east-1",
                                  "AWS_ENDPOINT_URL_DYNAMODB=" + dynamodb_->endpoint(),
                                  "AWS_ENDPOINT_URL_SQS=" + fauxqs_->endpoint(),
                                  "AWS_ENDPOINT_URL_S3=" + fauxqs_->endpoint(),
                                  std::string("AWS_ACCESS_KEY_ID=") + kSmokeAccessKeyId,
                                  std::string("AWS_SECRET_ACCESS_KEY=") + kSmokeSecretKey};
    if (!bucket.empty()) vars.push_back("LEASEHOLD_AWS_SMOKE_BUCKET=" + bucket);
    const RunResult r = run_smoke(vars);
    EXPECT_THAT(r.out + r.err,
                AllOf(Not(HasSubstr(kSmokeSecretKey)), Not(HasSubstr(kSmokeAccessKeyId)),
                      Not(HasSubstr("X-Amz-Signature"))))
        << "secrets are never printed";
    return r;
  }

  std::unique_ptr<aws::S3Client> s3_client(const std::string& bucket) const {
    auto s3 = aws::S3Client::open({.bucket = bucket,
                                   .region = "us-east-1",
                                   .endpoint = fauxqs_->endpoint(),
                                   .credentials = nullptr,  // the chain: SetUp's variables
                                   .clock = nullptr});
    EXPECT_TRUE(s3.ok()) << s3.status().to_string();
    return s3.ok() ? std::move(s3).value() : nullptr;
  }

  // The names in `field` of what `op` lists on a JSON API.
  std::vector<std::string> listed(const std::string& service, const std::string& prefix,
                                  const std::string& endpoint, const char* op,
                                  const char* field) const {
    auto client = aws::JsonClient::open(
        {.service = service, .target_prefix = prefix, .region = "us-east-1", .endpoint = endpoint});
    EXPECT_TRUE(client.ok()) << client.status().to_string();
    if (!client.ok()) return {"(no client)"};
    auto reply = (*client)->call(op, {}, true);
    EXPECT_TRUE(reply.ok()) << reply.status().to_string();
    std::vector<std::string> names;
    if (!reply.ok() || !reply->contains(field)) return names;
    for (const auto& name : reply->at(field).as_array()) names.emplace_back(name.as_string());
    return names;
  }

  // What the run left: tables, queues and the objects of `bucket`, if any.
  void expect_nothing_left(const std::string& bucket) const {
    EXPECT_THAT(
        listed("dynamodb", "DynamoDB_20120810.", dynamodb_->endpoint(), "ListTables", "TableNames"),
        IsEmpty());
    EXPECT_THAT(listed("sqs", "AmazonSQS.", fauxqs_->endpoint(), "ListQueues", "QueueUrls"),
                IsEmpty());
    if (bucket.empty()) return;
    net::HttpClientOptions options;
    options.endpoint = *net::parse_http_endpoint(fauxqs_->endpoint());
    auto http = net::HttpClient::open(options);
    ASSERT_TRUE(http.ok());
    // fauxqs checks no signature.
    auto list = (*http)->send(
        {.method = "GET", .target = "/" + bucket + "?list-type=2", .headers = {}, .body = {}},
        std::chrono::seconds(10));
    ASSERT_TRUE(list.ok()) << list.status().to_string();
    EXPECT_EQ(list->status, 200) << list->body;
    EXPECT_THAT(list->body, Not(HasSubstr("<Key>"))) << list->body;
  }

  std::unique_ptr<testing::DynamoDbLocal> dynamodb_;
  std::unique_ptr<testing::Fauxqs> fauxqs_;
};

// A step's line: "SERVICE  ok|FAILED  SECONDS s  WHAT[: DETAIL]".
auto step(const std::string& service, const std::string& outcome, const std::string& what) {
  return AllOf(::testing::StartsWith(service + " "), HasSubstr(" " + outcome + " "),
               HasSubstr(" s  " + what));
}

TEST_F(AwsSmokeTest, PassesOnLocalEmulatorsAndLeavesNothing) {
  const std::string bucket = testing::unique_aws_name("lhsmoke-test");
  std::unique_ptr<aws::S3Client> s3 = s3_client(bucket);
  ASSERT_NE(s3, nullptr);
  ASSERT_TRUE(s3->create_bucket().ok());

  const RunResult r = smoke(bucket + "/deploy/media");
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  for (const char* what : {"store init: 9 tables lhsmoke", "lease acquired: epoch 1",
                           "lease renewed", "fenced write: applied under its token, refused",
                           "lease released", "tables deleted: 9 of 9 deleted"}) {
    EXPECT_THAT(lines, Contains(step("dynamodb", "ok", what))) << r.out;
  }
  for (const char* what :
       {"store init --queue: 4 queues lhsmoke", "message sent: to lhsmoke", "message received",
        "visibility extended: by 60 s", "message removed", "queues deleted: 4 of 4 deleted"}) {
    EXPECT_THAT(lines, Contains(step("sqs", "ok", what))) << r.out;
  }
  for (const char* what : {"client opened", "object put: ", "object read back", "ranged read",
                           "presigned GET: fetched unsigned", "object removed"}) {
    EXPECT_THAT(lines, Contains(step("s3", "ok", what))) << r.out;
  }
  EXPECT_THAT(r.out, HasSubstr(" at deploy/media/lhsmoke")) << "the key is under the prefix";
  EXPECT_THAT(r.out, AllOf(HasSubstr("aws smoke test passed: 18 steps"), Not(HasSubstr("FAILED"))));
  expect_nothing_left(bucket);
}

// Without a bucket S3 is skipped, saying so; a bucket that does not exist
// fails its steps with S3's code and AWS's request ID, is not created, and
// the other services pass and clean up all the same.
TEST_F(AwsSmokeTest, SaysWhatFailedAndCleansUpAllTheSame) {
  const RunResult skipped = smoke("");
  EXPECT_EQ(skipped.exit_code, 0) << skipped.out << skipped.err;
  EXPECT_THAT(lines_of(skipped.out),
              Contains(HasSubstr("s3        skipped: LEASEHOLD_AWS_SMOKE_BUCKET is not set")));

  const std::string missing = testing::unique_aws_name("lhsmoke-missing");
  const RunResult r = smoke(missing);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  EXPECT_THAT(lines, Contains(step("dynamodb", "ok", "tables deleted: 9 of 9 deleted"))) << r.out;
  EXPECT_THAT(lines, Contains(step("sqs", "ok", "queues deleted: 4 of 4 deleted"))) << r.out;
  const auto put = std::find_if(lines.begin(), lines.end(), [](const std::string& line) {
    return line.find("object put") != std::string::npos;
  });
  ASSERT_NE(put, lines.end()) << r.out;
  EXPECT_THAT(*put, step("s3", "FAILED", "object put"));
  ASSERT_NE(put + 1, lines.end());
  EXPECT_THAT(*(put + 1), AllOf(HasSubstr("NoSuchBucket"), HasSubstr("AWS request ID")));
  EXPECT_THAT(lines, Contains(HasSubstr("object removed"))) << "cleanup runs after a failed step";
  EXPECT_THAT(r.out, HasSubstr("aws smoke test FAILED"));
  std::unique_ptr<aws::S3Client> s3 = s3_client(missing);
  ASSERT_NE(s3, nullptr);
  EXPECT_EQ(s3->put("probe", "x", "text/plain").code(), Code::kUnavailable)
      << "the smoke test never creates a bucket";
  expect_nothing_left("");
}

}  // namespace
}  // namespace leasehold::process_test
