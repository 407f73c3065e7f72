// Tests for finding sequence numbers in upstream messages and for sink lines.
#include "fleet/message.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

namespace leasehold::fleet {
namespace {

TEST(FindSeqTest, FindsTheIntegerAtADottedPath) {
  EXPECT_EQ(*find_seq(R"({"seq":7,"x":1})", {"seq"}), 7);
  EXPECT_EQ(*find_seq(R"({"data":{"seq":9007199254740993}})", {"data", "seq"}), 9007199254740993);
  EXPECT_EQ(*find_seq(R"({"seq":9223372036854775807})", {"seq"}), INT64_MAX);
  EXPECT_EQ(*find_seq(" {\"seq\" : -3}\n", {"seq"}), -3);
}

TEST(FindSeqTest, RefusesWhatHasNoIntegerThere) {
  for (const char* bad : {"", "not json", "{\"seq\":1", "[1,2]", "{\"seq\":\"7\"}", "{\"seq\":7.5}",
                          "{\"seq\":1e3}", "{\"seq\":null}", "{\"other\":1}", "{\"seq\":{\"a\":1}}",
                          "{\"seq\":9223372036854775808}", "7"}) {
    EXPECT_EQ(find_seq(bad, {"seq"}).status().code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_EQ(find_seq(R"({"data":7})", {"data", "seq"}).status().code(), Code::kInvalidArgument);
  // The error never quotes the message, which may hold anything.
  EXPECT_EQ(find_seq("secret-ish text", {"seq"}).status().message().find("secret"),
            std::string::npos);
}

TEST(SplitSeqFieldTest, Splits) {
  EXPECT_EQ(split_seq_field("seq"), std::vector<std::string>{"seq"});
  EXPECT_EQ(split_seq_field("a.b.c"), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(SinkLineTest, OneJsonLineWithTheMessageInside) {
  std::string line;
  append_sink_line({"a", 7, "w1", 3, 1700000000000, R"({"seq":7,"v":"x"})"}, line);
  EXPECT_EQ(line, R"({"conn":"a","seq":7,"worker":"w1","epoch":3,"written_at_ms":1700000000000,)"
                  R"("msg":{"seq":7,"v":"x"}})");
  EXPECT_TRUE(boost::json::parse(line).is_object());
}

TEST(SinkLineTest, AMessageOnSeveralLinesIsPutOnOne) {
  std::string line;
  append_sink_line({"a", 1, "w\"1", 1, 5, "{\n  \"seq\": 1,\r\n  \"v\": \"x\\ny\"\n}"}, line);
  EXPECT_EQ(line.find_first_of("\r\n"), std::string::npos) << line;
  const auto parsed = boost::json::parse(line);
  EXPECT_EQ(parsed.at("msg").at("v").as_string(), "x\ny");
  EXPECT_EQ(parsed.at("worker").as_string(), "w\"1");
}

}  // namespace
}  // namespace leasehold::fleet
