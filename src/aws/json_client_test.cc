// Tests for what the JSON-protocol client reads from an error reply
// (json_client_internal.h), without a server.
#include <gtest/gtest.h>

#include <string>

#include "aws/json_client_internal.h"

namespace leasehold::aws::json_client_internal {
namespace {

constexpr JsonErrorRule kRules[] = {{"QueueDoesNotExist", Code::kNotFound}};

TEST(JsonClientErrors, ReadsTheCodeAndMessage) {
  const ErrorReply e = parse_error(
      R"({"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"The queue does not exist."})");
  EXPECT_EQ(e.code, "QueueDoesNotExist");
  EXPECT_EQ(e.message, "The queue does not exist.");
  bool throttled = true;
  const Status s = error_status("GetQueueUrl", 400, e, "req-1", "sqs", kRules, &throttled);
  EXPECT_FALSE(throttled);
  EXPECT_EQ(s.code(), Code::kNotFound);
  EXPECT_EQ(s.message(),
            "GetQueueUrl: QueueDoesNotExist: The queue does not exist. (AWS request ID req-1)");
}

TEST(JsonClientErrors, AStatusHoldsNoControlCharacterAndStaysBounded) {
  const ErrorReply e{std::string(5000, 'C'),
                     "line one\nline two\r\x1b[31m" + std::string(5000, 'm')};
  bool throttled = false;
  const Status s = error_status("SendMessage", 400, e, "id\twith\ttabs" + std::string(500, 'i'),
                                "sqs", kRules, &throttled);
  EXPECT_EQ(s.code(), Code::kInvalidArgument);
  EXPECT_LE(s.message().size(), 1024u);
  for (const unsigned char c : s.message()) EXPECT_TRUE(c >= 0x20 && c != 0x7f) << s.message();
  EXPECT_NE(s.message().find("line one?line two?"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace leasehold::aws::json_client_internal
