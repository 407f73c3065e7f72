// Tests for what a sink to an SQS FIFO queue sends and reads back
// (sqs_fifo_wire.h), which need no server: the messages' IDs and the
// checks of their bodies, the batches, the request and the answer read.
#include "sqs/sqs_fifo_wire.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace leasehold::sqs {
namespace {

namespace json = boost::json;
using Batches = std::vector<std::vector<size_t>>;

json::object fifo_answer(std::string_view text) { return json::parse(text).as_object(); }

// Messages with bodies of the given sizes (fifo_batches() reads no more).
std::vector<FifoMessage> sized(const std::vector<size_t>& sizes) {
  std::vector<FifoMessage> out;
  for (const size_t size : sizes) out.push_back({"c", "c:0", std::string(size, 'b')});
  return out;
}

TEST(SqsFifoMessage, GroupIsTheConnectionAndDeduplicationTheConnectionAndSeq) {
  const auto m = fifo_message("conn-1.a_b~", 42, R"({"seq":42})");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->group_id, "conn-1.a_b~");
  EXPECT_EQ(m->deduplication_id, "conn-1.a_b~:42");
  EXPECT_EQ(m->body, R"({"seq":42})");
  EXPECT_EQ(fifo_message("c", -7, "x")->deduplication_id, "c:-7");
  // SQS's punctuation is all accepted in a group ID.
  const std::string punctuation = R"(!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~)";
  EXPECT_EQ(fifo_message(punctuation, 0, "x")->group_id, punctuation);
}

TEST(SqsFifoMessage, ADeduplicationIdOver128CharactersIsHashed) {
  // 119 + ":" + 8 digits: 128, kept as it is.
  const auto kept = fifo_message(std::string(119, 'x'), 12345678, "x");
  ASSERT_TRUE(kept.ok()) << kept.status().to_string();
  EXPECT_EQ(kept->deduplication_id, std::string(119, 'x') + ":12345678");
  // 129: SHA-256 of the text (hashlib.sha256(("x"*120 + ":12345678").encode())).
  const auto hashed = fifo_message(std::string(120, 'x'), 12345678, "x");
  ASSERT_TRUE(hashed.ok()) << hashed.status().to_string();
  EXPECT_EQ(hashed->deduplication_id,
            "86888648b42ae781c69ad4350865243b4293558f433286739000dd36cdaab158");
  EXPECT_EQ(hashed->group_id, std::string(120, 'x'));
  // The longest connection ID the fleet takes (128) still makes a group ID.
  const auto longest = fifo_message(std::string(128, 'y'), 0, "x");
  ASSERT_TRUE(longest.ok()) << longest.status().to_string();
  EXPECT_EQ(longest->deduplication_id.size(), 64u);
}

TEST(SqsFifoMessage, AConnectionIdThatIsNoGroupIdIsRefused) {
  for (const std::string& id :
       {std::string(), std::string(129, 'x'), std::string("a b"), std::string("a\tb"),
        std::string("caf\xc3\xa9"), std::string("a\x7f"), std::string("a\0b", 3)}) {
    const auto m = fifo_message(id, 1, "x");
    EXPECT_EQ(m.status().code(), Code::kInvalidArgument) << "'" << id << "'";
  }
}

TEST(SqsFifoMessage, ABodyIsOneByteTo256KiBOfWhatSqsAccepts) {
  EXPECT_TRUE(fifo_message("c", 1, std::string(262'144, 'a')).ok());
  const auto over = fifo_message("c", 1, std::string(262'145, 'a'));
  EXPECT_EQ(over.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(over.status().message(), "message body of 262145 bytes is longer than SQS's 262144");
  EXPECT_EQ(fifo_message("c", 1, "").status().code(), Code::kInvalidArgument);
  // Tab, newline, carriage return; U+D7FF, U+E000, U+FFFD, U+10FFFF.
  EXPECT_TRUE(
      fifo_message("c", 1, "a\tb\nc\rd \xed\x9f\xbf\xee\x80\x80\xef\xbf\xbd\xf4\x8f\xbf\xbf").ok());
  for (const std::string& body : {
           std::string("a\x01"),             // a control character
           std::string("a\0b", 3),           // NUL
           std::string("\xff"),              // no UTF-8
           std::string("\xc3"),              // cut short
           std::string("\xc0\x80"),          // overlong NUL
           std::string("\xed\xa0\x80"),      // a surrogate, U+D800
           std::string("\xef\xbf\xbe"),      // U+FFFE
           std::string("\xf4\x90\x80\x80"),  // past U+10FFFF
       }) {
    EXPECT_EQ(fifo_message("c", 1, body).status().code(), Code::kInvalidArgument)
        << json::serialize(json::string(body));
  }
}

TEST(SqsFifoBatches, TenMessagesABatch) {
  EXPECT_EQ(fifo_batches({}), Batches{});
  EXPECT_EQ(fifo_batches(sized(std::vector<size_t>(10, 1))),
            (Batches{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}));
  EXPECT_EQ(fifo_batches(sized(std::vector<size_t>(11, 1))),
            (Batches{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {10}}));
  EXPECT_EQ(
      fifo_batches(sized(std::vector<size_t>(21, 1))),
      (Batches{{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, {10, 11, 12, 13, 14, 15, 16, 17, 18, 19}, {20}}));
}

TEST(SqsFifoBatches, AtMost256KiBOfBodiesABatchInOrder) {
  EXPECT_EQ(fifo_batches(sized({100'000, 100'000, 62'144})), (Batches{{0, 1, 2}}));
  EXPECT_EQ(fifo_batches(sized({100'000, 100'000, 62'145})), (Batches{{0, 1}, {2}}));
  EXPECT_EQ(fifo_batches(sized({262'144, 1, 262'144})), (Batches{{0}, {1}, {2}}));
  // A small message after one that did not fit does not move ahead of it.
  EXPECT_EQ(fifo_batches(sized({200'000, 100'000, 10, 10})), (Batches{{0}, {1, 2, 3}}));
  // One over the limit (not fifo_message's) goes alone, for SQS to refuse.
  EXPECT_EQ(fifo_batches(sized({1, 262'145, 1})), (Batches{{0}, {1}, {2}}));
}

TEST(SqsFifoRequest, EntriesAreNumberedByTheirPlaceInTheBatch) {
  std::vector<FifoMessage> messages = sized({1, 1, 1});
  messages[1] = *fifo_message("c1", 5, "five");
  messages[2] = *fifo_message("c2", 6, "six\n\"q\"");
  const std::vector<size_t> batch = {2, 1};
  EXPECT_EQ(json::serialize(send_batch_request("https://sqs.eu-west-1.amazonaws.com/1/s.fifo",
                                               messages, batch)),
            R"({"QueueUrl":"https://sqs.eu-west-1.amazonaws.com/1/s.fifo","Entries":[)"
            R"({"Id":"0","MessageBody":"six\n\"q\"","MessageGroupId":"c2",)"
            R"("MessageDeduplicationId":"c2:6"},)"
            R"({"Id":"1","MessageBody":"five","MessageGroupId":"c1",)"
            R"("MessageDeduplicationId":"c1:5"}]})");
}

TEST(SqsFifoOutcome, EntriesTakenAreSent) {
  const std::vector<size_t> batch = {7, 8, 9};
  const BatchOutcome o = batch_outcome(fifo_answer(R"({"Successful":[
      {"Id":"2","MessageId":"m2","MD5OfMessageBody":"x","SequenceNumber":"1"},
      {"Id":"0","MessageId":"m0"},{"Id":"1","MessageId":"m1"}]})"),
                                       batch);
  EXPECT_EQ(o.sent, (std::vector<size_t>{7, 8, 9}));
  EXPECT_EQ(o.retry, std::vector<size_t>{});
  EXPECT_TRUE(o.refused.ok()) << o.refused.to_string();
}

TEST(SqsFifoOutcome, SqsFaultsAreSentAgainAndSenderFaultsRefused) {
  const std::vector<size_t> batch = {3, 4, 5, 6};
  const BatchOutcome o = batch_outcome(fifo_answer(R"({
      "Successful":[{"Id":"0","MessageId":"m0"}],
      "Failed":[{"Id":"1","Code":"InternalError","Message":"try again","SenderFault":false},
                {"Id":"2","Code":"InvalidMessageContents","Message":"bad\u0001body",
                 "SenderFault":true},
                {"Id":"3","Code":"InvalidParameterValue","SenderFault":true}]})"),
                                       batch);
  EXPECT_EQ(o.sent, std::vector<size_t>{3});
  EXPECT_EQ(o.retry, std::vector<size_t>{4});
  EXPECT_EQ(o.refused.code(), Code::kInvalidArgument);
  EXPECT_EQ(o.refused.message(),
            "SendMessageBatch refused 2 of 4 messages, the first message 5: "
            "InvalidMessageContents: bad?body");
}

TEST(SqsFifoOutcome, ARefusalsCodeIsBounded) {
  const std::string code(5000, 'C');
  const BatchOutcome o = batch_outcome(
      fifo_answer(R"({"Failed":[{"Id":"0","Code":")" + code + R"(","SenderFault":true}]})"),
      std::vector<size_t>{0});
  EXPECT_EQ(o.refused.code(), Code::kInvalidArgument);
  EXPECT_LT(o.refused.message().size(), 300u);
  EXPECT_TRUE(o.sent.empty());
  EXPECT_TRUE(o.retry.empty());
}

TEST(SqsFifoOutcome, UnknownDuplicateAndMissingEntriesAreSentAgain) {
  const std::vector<size_t> batch = {0, 1, 2, 3};
  const BatchOutcome o = batch_outcome(fifo_answer(R"({
      "Successful":[{"Id":"0","MessageId":"a"},{"Id":"0","MessageId":"b"},
                    {"Id":"1","MessageId":"c"},{"Id":"4","MessageId":"d"},
                    {"Id":"01","MessageId":"e"},{"Id":"m3","MessageId":"f"},
                    {"Id":"-1","MessageId":"g"},{"Id":" 3","MessageId":"h"}],
      "Failed":[{"Id":"1","Code":"X","SenderFault":true},{"Id":"9","SenderFault":true}]})"),
                                       batch);
  // 0 twice, 1 both taken and refused, 2 and 3 not listed (only under Ids
  // not the batch's): all unknown.
  EXPECT_EQ(o.sent, std::vector<size_t>{});
  EXPECT_EQ(o.retry, (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_TRUE(o.refused.ok()) << o.refused.to_string();
}

TEST(SqsFifoOutcome, WhatCannotBeReadIsSentAgain) {
  const std::vector<size_t> batch = {0, 1, 2, 3, 4, 5};
  for (const std::string_view garbage : {
           R"({})",
           R"({"Successful":{"Id":"0","MessageId":"m"},"Failed":"none"})",
           R"({"Successful":[1,"0",null,[{"Id":"0"}]],"Failed":[true]})",
       }) {
    const BatchOutcome o = batch_outcome(fifo_answer(garbage), batch);
    EXPECT_EQ(o.sent, std::vector<size_t>{}) << garbage;
    EXPECT_EQ(o.retry, (std::vector<size_t>{0, 1, 2, 3, 4, 5})) << garbage;
    EXPECT_TRUE(o.refused.ok()) << garbage;
  }
  const BatchOutcome o = batch_outcome(fifo_answer(R"({
      "Successful":[{"Id":0,"MessageId":"m"},{"Id":"1"},{"Id":"2","MessageId":""},
                    {"Id":"3","MessageId":7}],
      "Failed":[{"Id":"4","Code":"X","SenderFault":"true"},{"Id":"5","Code":"X"}]})"),
                                       batch);
  EXPECT_EQ(o.sent, std::vector<size_t>{});
  EXPECT_EQ(o.retry, (std::vector<size_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(o.refused.ok()) << o.refused.to_string();
}

TEST(SqsFifoOutcome, AFullBatchAnsweredInParts) {
  const std::vector<size_t> batch = {10, 11, 12, 13, 14, 15, 16, 17, 18, 19};
  const BatchOutcome o = batch_outcome(fifo_answer(R"({
      "Successful":[{"Id":"9","MessageId":"a"},{"Id":"0","MessageId":"b"},
                    {"Id":"5","MessageId":"c"}],
      "Failed":[{"Id":"8","Code":"ServiceUnavailable","SenderFault":false}]})"),
                                       batch);
  EXPECT_EQ(o.sent, (std::vector<size_t>{10, 15, 19}));
  EXPECT_EQ(o.retry, (std::vector<size_t>{11, 12, 13, 14, 16, 17, 18}));
  EXPECT_TRUE(o.refused.ok());
}

}  // namespace
}  // namespace leasehold::sqs
