// Tests for what the SQS queue reads from SQS's answers (sqs_wire.h) that
// need no server: the dead letters' listing and count.
#include "sqs/sqs_wire.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cstdint>
#include <string_view>

namespace leasehold::sqs {
namespace {

boost::json::object answer(std::string_view json) { return boost::json::parse(json).as_object(); }

TEST(SqsDeadLetters, TheCountAddsUpToItsMostWithoutOverflow) {
  EXPECT_EQ(dead_letter_count(answer(R"({"Attributes":{"ApproximateNumberOfMessages":"3",
      "ApproximateNumberOfMessagesNotVisible":"1","ApproximateNumberOfMessagesDelayed":"2"}})"),
                              100),
            6);
  EXPECT_EQ(dead_letter_count(answer(R"({"Attributes":{"ApproximateNumberOfMessages":"99999",
      "ApproximateNumberOfMessagesNotVisible":"5"}})"),
                              100'000),
            100'000);
  // Past int64 once added up (undefined behaviour before): the most asked for.
  EXPECT_EQ(dead_letter_count(answer(R"({"Attributes":{
      "ApproximateNumberOfMessages":"9223372036854775807",
      "ApproximateNumberOfMessagesNotVisible":"9223372036854775807"}})"),
                              100),
            100);
}

TEST(SqsDeadLetters, ANegativeAttributeCountsAsNone) {
  EXPECT_EQ(dead_letter_count(answer(R"({"Attributes":{"ApproximateNumberOfMessages":"-5",
      "ApproximateNumberOfMessagesNotVisible":"3"}})"),
                              100),
            3);
  const auto messages =
      received_messages(answer(R"({"Messages":[{"MessageId":"5fea7756-0ea4-451a-a703-a558b933e274",
          "ReceiptHandle":"AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a","Body":"x",
          "Attributes":{"ApproximateReceiveCount":"-1","SentTimestamp":"-1699998000000"}}]})"),
                        0);
  ASSERT_TRUE(messages.ok()) << messages.status().to_string();
  const DeadLetterPage page = dead_letter_page(*messages);
  ASSERT_EQ(page.letters.size(), 1u);
  EXPECT_EQ(page.letters[0].receive_count, 0);
  EXPECT_EQ(page.letters[0].sent_at_ms, 0);
}

}  // namespace
}  // namespace leasehold::sqs
