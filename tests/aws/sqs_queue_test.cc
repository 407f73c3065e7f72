// SqsQueue against fauxqs: the job queue's contract (QueueConformance, in
// real time with a visibility of one second), creating queues, and faults.
#include "sqs/sqs_queue.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <boost/json.hpp>

#include "testing/eventually.h"
#include "tests/aws/fake_endpoint.h"
#include "tests/aws/fauxqs_fixture.h"
#include "tests/conformance/queue_conformance.h"

namespace leasehold::sqs {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
namespace json = boost::json;

SqsQueueOptions options_on(const testing::Fauxqs& fauxqs, const std::string& name) {
  return {.region = "us-east-1",
          .queue_name = name,
          .endpoint = fauxqs.endpoint(),
          .request_timeout = seconds(5)};
}

// The Queue contract on SQS: each queue name of a test becomes a queue of
// its own on the shared fauxqs, created with its dead-letter queue.
class SqsBackend final : public conformance::QueueBackend {
 public:
  SqsBackend() : fauxqs_(testing::shared_fauxqs()), prefix_(testing::unique_aws_name("c")) {}

  std::unique_ptr<Queue> open(const std::string& name, int max_receives) override {
    if (fauxqs_ == nullptr) return nullptr;
    const SqsQueueOptions options = options_on(*fauxqs_, prefix_ + "-" + name);
    const Status created = SqsQueue::create(options, max_receives);
    EXPECT_TRUE(created.ok()) << created.to_string();
    Result<std::unique_ptr<SqsQueue>> queue = SqsQueue::open(options);
    EXPECT_TRUE(queue.ok()) << queue.status().to_string();
    return queue.ok() ? std::move(queue).value() : nullptr;
  }
  Duration visibility() const override { return seconds(1); }
  // Real time, and a little more: fauxqs makes a message visible again at
  // the first receive after its deadline.
  void pass(Duration d) override { std::this_thread::sleep_for(d + milliseconds(50)); }
  int64_t now_ms() override { return to_unix_ms(clock_.wall_now()); }
  Duration clock_tolerance() const override { return milliseconds(5); }
  int64_t held(const std::string& name) override {
    int64_t n = 0;
    for (const std::string& queue : {prefix_ + "-" + name, prefix_ + "-" + name + "-dead"}) {
      n += count(queue);
    }
    return n;
  }
  bool detects_stale_receipts() const override { return false; }
  bool dead_letters_keep_ids_and_pages() const override { return false; }

 private:
  int64_t count(const std::string& queue) {
    auto client = aws::JsonClient::open({.service = "sqs",
                                         .target_prefix = "AmazonSQS.",
                                         .region = "us-east-1",
                                         .endpoint = fauxqs_->endpoint()});
    EXPECT_TRUE(client.ok()) << client.status().to_string();
    if (!client.ok()) return -1;
    auto url = (*client)->call("GetQueueUrl", {{"QueueName", queue}}, true);
    EXPECT_TRUE(url.ok()) << url.status().to_string();
    if (!url.ok()) return -1;
    const json::array names{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
                            "ApproximateNumberOfMessagesDelayed"};
    auto attrs = (*client)->call(
        "GetQueueAttributes", {{"QueueUrl", url->at("QueueUrl")}, {"AttributeNames", names}}, true);
    EXPECT_TRUE(attrs.ok()) << attrs.status().to_string();
    if (!attrs.ok()) return -1;
    int64_t n = 0;
    for (const auto& [key, value] : attrs->at("Attributes").as_object()) {
      n += std::stoll(std::string(value.as_string()));
    }
    return n;
  }

  RealClock clock_;
  testing::Fauxqs* fauxqs_;
  std::string prefix_;
};

}  // namespace
}  // namespace leasehold::sqs

namespace leasehold::conformance {

INSTANTIATE_TEST_SUITE_P(Sqs, QueueConformance,
                         ::testing::Values(QueueBackendFactory{
                             "sqs", [] { return std::make_unique<sqs::SqsBackend>(); }}),
                         queue_backend_name);

}  // namespace leasehold::conformance

namespace leasehold::sqs {
namespace {

TEST(SqsQueue, CreatingTwiceChangesNothingAndOpeningAMissingQueueSaysHow) {
  testing::Fauxqs* fauxqs = testing::shared_fauxqs();
  ASSERT_NE(fauxqs, nullptr);
  const SqsQueueOptions options = options_on(*fauxqs, testing::unique_aws_name("create"));
  Result<std::unique_ptr<SqsQueue>> missing = SqsQueue::open(options);
  EXPECT_EQ(missing.status().code(), Code::kNotFound);
  EXPECT_NE(missing.status().message().find("store init --queue"), std::string::npos)
      << missing.status().message();
  ASSERT_TRUE(SqsQueue::create(options, 3).ok());
  ASSERT_TRUE(SqsQueue::create(options, 3).ok()) << "idempotent";
  Result<std::unique_ptr<SqsQueue>> queue = SqsQueue::open(options);
  ASSERT_TRUE(queue.ok()) << queue.status().to_string();
  ASSERT_TRUE((*queue)->send("job").ok());
}

TEST(SqsQueue, BadOptionsAreRefusedBeforeAnythingIsSent) {
  SqsQueueOptions options{
      .region = "us-east-1", .queue_name = "jobs", .endpoint = "http://127.0.0.1:1"};
  for (const std::string& name : {std::string(), std::string("a b"), std::string("jobs.fifo"),
                                  std::string(81, 'a'), std::string(76, 'a')}) {
    options.queue_name = name;
    EXPECT_EQ(SqsQueue::open(options).status().code(), Code::kInvalidArgument) << name;
  }
  options.queue_name = "jobs";
  options.receive_wait = seconds(21);
  EXPECT_EQ(SqsQueue::open(options).status().code(), Code::kInvalidArgument);
  options.receive_wait = seconds(1);
  options.region = "EU WEST";
  EXPECT_EQ(SqsQueue::open(options).status().code(), Code::kInvalidArgument);
  options.region = "us-east-1";
  EXPECT_EQ(SqsQueue::create(options, 0).code(), Code::kInvalidArgument);
}

// A long poll waits for a message sent while it waits, and returns it then.
TEST(SqsQueue, ALongPollReturnsAMessageSentWhileItWaits) {
  testing::Fauxqs* fauxqs = testing::shared_fauxqs();
  ASSERT_NE(fauxqs, nullptr);
  SqsQueueOptions options = options_on(*fauxqs, testing::unique_aws_name("poll"));
  ASSERT_TRUE(SqsQueue::create(options, 3).ok());
  options.receive_wait = seconds(10);
  auto receiver = SqsQueue::open(options);
  auto sender = SqsQueue::open(options);
  ASSERT_TRUE(receiver.ok() && sender.ok());
  std::thread send_later([&] {
    std::this_thread::sleep_for(milliseconds(300));  // the receive is waiting by now
    EXPECT_TRUE((*sender)->send("late").ok());
  });
  const auto start = std::chrono::steady_clock::now();
  Result<std::vector<Message>> got = (*receiver)->receive(1, seconds(30));
  const auto waited = std::chrono::steady_clock::now() - start;
  send_later.join();
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].body, "late");
  EXPECT_LT(waited, seconds(9)) << "returned when the message came, not at the end of the wait";
}

// SQS stopped (a stalled process) ends a call within its timeout, with
// kUnavailable or, for a send, kUnknownOutcome; once it answers again the
// queue works and nothing sent before is lost.
TEST(SqsQueue, AStalledServiceEndsCallsInTheirTimeoutAndLosesNothing) {
  auto fauxqs = testing::Fauxqs::start();
  ASSERT_TRUE(fauxqs.ok()) << fauxqs.status().to_string();
  SqsQueueOptions options = options_on(**fauxqs, "stall");
  options.request_timeout = milliseconds(500);
  options.retry.attempts_max = 2;
  const Status created = SqsQueue::create(options, 3);
  ASSERT_TRUE(created.ok()) << created.to_string();
  auto queue = SqsQueue::open(options);
  ASSERT_TRUE(queue.ok());
  ASSERT_TRUE((*queue)->send("before").ok());
  (*fauxqs)->pause();
  const auto start = std::chrono::steady_clock::now();
  const Result<std::string> sent = (*queue)->send("during");
  // Hidden for a second only, should the stalled service act on it later.
  const Result<std::vector<Message>> got = (*queue)->receive(1, seconds(1));
  (*fauxqs)->resume();
  EXPECT_LT(std::chrono::steady_clock::now() - start, seconds(8));
  EXPECT_TRUE(sent.status().code() == Code::kUnknownOutcome ||
              sent.status().code() == Code::kUnavailable)
      << sent.status().to_string();
  EXPECT_FALSE(got.ok());
  // The send may have landed once the service woke (its outcome was
  // unknown); "before" certainly did, delivered once its hidden time ends if
  // the stalled receive took it.
  std::multiset<std::string> bodies;
  EXPECT_TRUE(testing::eventually(
      [&] {
        Result<std::vector<Message>> batch = (*queue)->receive(kReceiveBatchMax, seconds(30));
        if (batch.ok()) {
          for (const Message& m : *batch) bodies.insert(m.body);
        }
        return bodies.contains("before");
      },
      seconds(10), milliseconds(100)));
}

// SQS refusing the deployment once the queue is open (its credentials, its
// permissions, its queue, its region) is kUnavailable to the Queue's caller,
// never a code a server would answer as the user's fault; the message keeps
// SQS's code and AWS's request ID for the log. A stale receipt keeps its
// meaning.
TEST(SqsQueue, RefusalsOfTheDeploymentAreUnavailableAndAStaleReceiptIsNot) {
  struct Refusal {
    int status;
    std::string type;
  };
  // Credentials to sign with, which the fake refuses whatever they are.
  ::setenv("AWS_ACCESS_KEY_ID", "test", 0);
  ::setenv("AWS_SECRET_ACCESS_KEY", "test", 0);
  for (const Refusal& refusal :
       {Refusal{403, "ExpiredToken"}, Refusal{403, "AccessDenied"},
        Refusal{400, "com.amazonaws.sqs#QueueDoesNotExist"}, Refusal{400, "InvalidClientTokenId"},
        Refusal{400, "UnknownOperationException"}}) {
    SCOPED_TRACE(refusal.type);
    testing::FakeEndpoint sqs([&](const testing::FakeRequest& r) {
      const std::string target = r.header("x-amz-target");
      if (target == "AmazonSQS.GetQueueUrl") {
        return testing::FakeReply{.body = R"({"QueueUrl":"http://sqs.local/1/jobs"})"};
      }
      if (target == "AmazonSQS.ChangeMessageVisibility") {
        return testing::FakeReply{
            .status = 400,
            .body = R"({"__type":"com.amazonaws.sqs#MessageNotInflight","message":"no"})",
            .headers = {{"x-amzn-RequestId", "STALE1"}}};
      }
      return testing::FakeReply{
          .status = refusal.status,
          .body = R"({"__type":")" + refusal.type + R"(","message":"refused"})",
          .headers = {{"x-amzn-RequestId", "REQ-" + refusal.type}}};
    });
    auto queue =
        SqsQueue::open({.region = "us-east-1", .queue_name = "jobs", .endpoint = sqs.url()});
    ASSERT_TRUE(queue.ok()) << queue.status().to_string();
    const Status sent = (*queue)->send("job").status();
    const Status got = (*queue)->receive(1, seconds(30)).status();
    const Status removed = (*queue)->remove(std::string(32, 'a') + ".handle");
    for (const Status& s : {sent, got, removed}) {
      EXPECT_EQ(s.code(), Code::kUnavailable) << s.to_string();
      EXPECT_NE(s.message().find("queue unavailable"), std::string::npos) << s.message();
      EXPECT_NE(s.message().find("(AWS request ID REQ-" + refusal.type + ")"), std::string::npos)
          << s.message();
    }
    const Status stale =
        (*queue)->extend_visibility(std::string(32, 'a') + ".handle", seconds(30)).status();
    EXPECT_EQ(stale.code(), Code::kFailedPrecondition) << stale.to_string();
    EXPECT_NE(stale.message().find("STALE1"), std::string::npos) << stale.message();
  }
}

// SQS itself answers the extension of a receipt whose message was
// delivered again with InvalidParameterValue naming the ReceiptHandle (its
// API reference lists MessageNotInflight, which it does not send): that is
// a stale receipt, not the deployment's fault nor the caller's. Another
// InvalidParameterValue still is the deployment's (kUnavailable).
TEST(SqsQueue, AStaleReceiptAsSqsItselfAnswersIsFailedPrecondition) {
  ::setenv("AWS_ACCESS_KEY_ID", "test", 0);
  ::setenv("AWS_SECRET_ACCESS_KEY", "test", 0);
  std::atomic<int> changes{0};
  testing::FakeEndpoint sqs([&](const testing::FakeRequest& r) {
    const std::string target = r.header("x-amz-target");
    if (target == "AmazonSQS.GetQueueUrl") {
      return testing::FakeReply{.body = R"({"__type":"x","QueueUrl":"http://sqs.local/1/jobs"})"};
    }
    const bool first = changes.fetch_add(1) == 0;
    return testing::FakeReply{
        .status = 400,
        .body =
            first
                ? R"({"__type":"com.amazonaws.sqs#InvalidParameterValue","message":"Value AQEBx for parameter ReceiptHandle is invalid. Reason: Message does not exist or is not available for visibility timeout change."})"
                : R"({"__type":"com.amazonaws.sqs#InvalidParameterValue","message":"Value 99999 for parameter VisibilityTimeout is invalid."})",
        .headers = {{"x-amzn-RequestId", first ? "STALE2" : "OTHER"}}};
  });
  auto queue = SqsQueue::open({.region = "us-east-1", .queue_name = "jobs", .endpoint = sqs.url()});
  ASSERT_TRUE(queue.ok()) << queue.status().to_string();
  const std::string receipt = std::string(32, 'a') + ".AQEBx";
  const Status stale = (*queue)->extend_visibility(receipt, seconds(30)).status();
  EXPECT_EQ(stale.code(), Code::kFailedPrecondition) << stale.to_string();
  EXPECT_NE(stale.message().find("STALE2"), std::string::npos) << stale.message();
  const Status other = (*queue)->extend_visibility(receipt, seconds(30)).status();
  EXPECT_EQ(other.code(), Code::kUnavailable) << other.to_string();
}

// The dead letters a scan hid are made visible again ten to a request
// (ChangeMessageVisibilityBatch), not one request each; an entry SQS could
// not change (h7) stops none of the others.
TEST(SqsQueue, DeadLettersAScanHidAreReleasedTenToARequest) {
  ::setenv("AWS_ACCESS_KEY_ID", "test", 0);
  ::setenv("AWS_SECRET_ACCESS_KEY", "test", 0);
  std::atomic<int> receives{0};
  testing::FakeEndpoint sqs([&](const testing::FakeRequest& r) {
    const std::string target = r.header("x-amz-target");
    if (target == "AmazonSQS.GetQueueUrl") {
      return testing::FakeReply{.body = R"({"QueueUrl":"http://sqs.local/1/q"})"};
    }
    if (target == "AmazonSQS.ReceiveMessage") {
      // 10, 10 and 5 letters, then none.
      const int round = receives.fetch_add(1);
      const int n = round < 2 ? 10 : round == 2 ? 5 : 0;
      json::array messages;
      for (int i = 0; i < n; ++i) {
        char id[37];
        std::snprintf(id, sizeof id, "00000000-0000-0000-0000-%012d", round * 10 + i);
        messages.push_back({{"MessageId", id},
                            {"ReceiptHandle", "h" + std::to_string(round * 10 + i)},
                            {"Body", "job"},
                            {"Attributes", {{"ApproximateReceiveCount", "3"}}}});
      }
      return testing::FakeReply{.body = json::serialize(json::object{{"Messages", messages}})};
    }
    if (target == "AmazonSQS.ChangeMessageVisibilityBatch") {
      const json::object body = json::parse(r.body).as_object();
      json::array ok, failed;
      for (const json::value& e : body.at("Entries").as_array()) {
        const json::object& entry = e.as_object();
        if (entry.at("ReceiptHandle").as_string() == "h7") {
          failed.push_back(
              json::object{{"Id", entry.at("Id")}, {"Code", "ReceiptHandleIsInvalid"}});
        } else {
          ok.push_back(json::object{{"Id", entry.at("Id")}});
        }
      }
      return testing::FakeReply{
          .body = json::serialize(json::object{{"Successful", ok}, {"Failed", failed}})};
    }
    return testing::FakeReply{.status = 400, .body = R"({"__type":"Unexpected"})"};
  });
  auto queue = SqsQueue::open({.region = "us-east-1", .queue_name = "q", .endpoint = sqs.url()});
  ASSERT_TRUE(queue.ok()) << queue.status().to_string();
  EXPECT_EQ((*queue)->remove_dead(std::string(32, 'f')).code(), Code::kNotFound);
  std::vector<size_t> batches;
  for (const testing::FakeRequest& r : sqs.requests()) {
    const std::string target = r.header("x-amz-target");
    EXPECT_NE(target, "AmazonSQS.ChangeMessageVisibility");
    if (target == "AmazonSQS.ChangeMessageVisibilityBatch") {
      const json::object body = json::parse(r.body).as_object();
      for (const json::value& e : body.at("Entries").as_array()) {
        EXPECT_EQ(e.as_object().at("VisibilityTimeout").to_number<int>(), 0);
      }
      batches.push_back(body.at("Entries").as_array().size());
    }
  }
  EXPECT_EQ(batches, (std::vector<size_t>{10, 10, 5}));
}

TEST(SqsQueue, AUriWithoutEndpointTakesTheOneConfiguredForSqs) {
  const aws::EnvLookup env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "AWS_ENDPOINT_URL_SQS") return "http://127.0.0.1:9324";
    return std::nullopt;
  };
  EXPECT_EQ(parse_sqs_uri("sqs://eu-west-1/jobs", env)->endpoint, "http://127.0.0.1:9324");
  EXPECT_EQ(parse_sqs_uri("sqs://eu-west-1/jobs?endpoint=http://127.0.0.1:1", env)->endpoint,
            "http://127.0.0.1:1");
  EXPECT_EQ(parse_sqs_uri("sqs://eu-west-1/jobs",
                          [](const std::string&) { return std::optional<std::string>(); })
                ->endpoint,
            "");
}

}  // namespace
}  // namespace leasehold::sqs
