// Tests for finding sequence numbers in upstream messages and for sink lines.
#include "fleet/message.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <boost/json/value.hpp>

#include "leasehold/random.h"

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

TEST(FindSeqTest, AKeyInEscapesAndARepeatedKey) {
  EXPECT_EQ(*find_seq(R"({"s\u0065q":5})", {"seq"}), 5);
  // A repeated key keeps its last value, as a parse into a tree does.
  EXPECT_EQ(*find_seq(R"({"seq":1,"seq":2})", {"seq"}), 2);
  EXPECT_FALSE(find_seq(R"({"data":{"seq":1},"data":3})", {"data", "seq"}).ok());
  EXPECT_EQ(*find_seq(R"({"data":3,"data":{"seq":4}})", {"data", "seq"}), 4);
  EXPECT_FALSE(find_seq(R"({"data":{"seq":1},"data":{"x":1}})", {"data", "seq"}).ok());
  EXPECT_FALSE(find_seq(R"({"data":[{"seq":1}]})", {"data", "seq"}).ok());
  EXPECT_FALSE(find_seq(R"([{"seq":1}])", {"seq"}).ok());
  EXPECT_EQ(*find_seq(R"({"x":{"seq":1},"seq":2,"y":{"seq":3}})", {"seq"}), 2);
}

// The reading find_seq must agree with: parse the text into a tree, then
// walk the path.
Result<int64_t> find_seq_in_tree(std::string_view message, const std::vector<std::string>& path) {
  boost::system::error_code ec;
  const boost::json::value root = boost::json::parse(message, ec);
  if (ec) return invalid_argument("message is not JSON");
  const boost::json::value* at = &root;
  for (const std::string& name : path) {
    const boost::json::object* object = at->if_object();
    at = object == nullptr ? nullptr : object->if_contains(name);
    if (at == nullptr) return invalid_argument("message has no sequence number");
  }
  if (const int64_t* n = at->if_int64()) return *n;
  if (const uint64_t* n = at->if_uint64()) {
    if (*n <= static_cast<uint64_t>(INT64_MAX)) return static_cast<int64_t>(*n);
  }
  return invalid_argument("message's sequence number is not an int64");
}

// A random JSON-like text over a few keys, with repeated keys, escapes,
// every kind of value and, sometimes, a byte cut or changed.
std::string random_text(Random& random, int depth) {
  static const char* const kKeys[] = {"seq", "data", "x", "s\\u0065q", "da\\u0074a"};
  static const char* const kScalars[] = {
      "7",    "-3", "9223372036854775807", "9223372036854775808", "1.5", "1e3", "\"7\"", "null",
      "true", "0",  "18446744073709551616"};
  const int64_t kind = depth >= 3 ? random.uniform(0, 1) : random.uniform(0, 4);
  if (kind <= 1) return kScalars[random.uniform(0, std::size(kScalars) - 1)];
  if (kind == 2) {
    std::string out = "[";
    for (int64_t i = random.uniform(0, 2); i > 0; --i) {
      out += random_text(random, depth + 1) + (i > 1 ? "," : "");
    }
    return out + "]";
  }
  std::string out = "{";
  for (int64_t i = random.uniform(0, 4); i > 0; --i) {
    out += std::string("\"") + kKeys[random.uniform(0, std::size(kKeys) - 1)] + "\":";
    out += random_text(random, depth + 1) + (i > 1 ? "," : "");
  }
  return out + "}";
}

TEST(FindSeqTest, AgreesWithAParseIntoATree) {
  SeededRandom random(20240601);
  const std::vector<std::vector<std::string>> paths = {
      {"seq"}, {"data", "seq"}, {"data", "x", "seq"}};
  int found = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text = random_text(random, 0);
    if (random.chance(0.1) && !text.empty()) {  // cut or change a byte
      const size_t at =
          static_cast<size_t>(random.uniform(0, static_cast<int64_t>(text.size()) - 1));
      if (random.chance(0.5)) {
        text.resize(at);
      } else {
        text[at] = "{}[],:\"x1 "[random.uniform(0, 10)];
      }
    }
    for (const auto& path : paths) {
      const Result<int64_t> got = find_seq(text, path);
      const Result<int64_t> want = find_seq_in_tree(text, path);
      ASSERT_EQ(got.ok(), want.ok()) << text;
      if (got.ok()) {
        ASSERT_EQ(*got, *want) << text;
        ++found;
      } else {
        ASSERT_EQ(got.status().message(), want.status().message()) << text;
      }
    }
  }
  EXPECT_GT(found, 300);  // the texts do reach numbers on the paths
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

// Found by fuzzing (fuzz/fleet_message_fuzz.cc): a message on several lines
// was parsed and serialised again, which could change a double's last
// digit; its line breaks are now spaces, and its numbers stay as they came.
TEST(SinkLineTest, AMessageOnSeveralLinesKeepsItsNumbers) {
  std::string line;
  append_sink_line({"a", 1, "w", 1, 5, "{\"seq\":1,\n\"x\":[1.9223372036854774E17,1.0]}"}, line);
  EXPECT_EQ(line, R"({"conn":"a","seq":1,"worker":"w","epoch":1,"written_at_ms":5,)"
                  R"("msg":{"seq":1, "x":[1.9223372036854774E17,1.0]}})");
}

TEST(SinkBatchTest, LinesEndInNewlinesAndAPartWriteCountsOnlyWholeLines) {
  SinkBatch batch;
  EXPECT_TRUE(batch.empty());
  std::string one, two;
  append_sink_line({"a", 3, "w1", 1, 5, R"({"seq":3})"}, one);
  append_sink_line({"a", 9, "w1", 1, 5, R"({"seq":9})"}, two);
  batch.add({"a", 3, "w1", 1, 5, R"({"seq":3})"});
  batch.add({"a", 9, "w1", 1, 5, R"({"seq":9})"});
  EXPECT_EQ(batch.text(), one + "\n" + two + "\n");
  EXPECT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch.seq(0), 3);
  EXPECT_EQ(batch.last_seq(), 9);
  EXPECT_EQ(batch.lines_within(0), 0u);
  EXPECT_EQ(batch.lines_within(one.size()), 0u) << "its newline is not in";
  EXPECT_EQ(batch.lines_within(one.size() + 1), 1u);
  EXPECT_EQ(batch.lines_within(batch.text().size() - 1), 1u);
  EXPECT_EQ(batch.lines_within(batch.text().size()), 2u);
  batch.clear();
  EXPECT_TRUE(batch.empty());
  EXPECT_TRUE(batch.text().empty());
  batch.add({"a", 1, "w1", 1, 5, R"({"seq":1})"});  // a new batch may start lower
  EXPECT_EQ(batch.last_seq(), 1);
}

// The stamp taken at the last moment before the write replaces the one the
// lines were made with, in place or, with another count of digits, by
// rebuilding them; the line ends move with it.
TEST(SinkBatchTest, StampSetsEveryLinesWriteTime) {
  const auto line = [](int64_t seq, int64_t at) {
    std::string out;
    append_sink_line({"a", seq, "w1", 2, at, R"({"seq":1,"x":"written_at_ms"})"}, out);
    return out + "\n";
  };
  SinkBatch batch;
  batch.add({"a", 1, "w1", 2, 1796110627714, R"({"seq":1,"x":"written_at_ms"})"});
  batch.add({"a", 2, "w1", 2, 1796110627714, R"({"seq":1,"x":"written_at_ms"})"});
  batch.stamp(1796110699999);
  EXPECT_EQ(batch.text(), line(1, 1796110699999) + line(2, 1796110699999));
  batch.stamp(7);  // fewer digits
  EXPECT_EQ(batch.text(), line(1, 7) + line(2, 7));
  EXPECT_EQ(batch.lines_within(line(1, 7).size()), 1u);
  EXPECT_EQ(batch.lines_within(batch.text().size() - 1), 1u);
  batch.stamp(12345678901234);  // more
  EXPECT_EQ(batch.text(), line(1, 12345678901234) + line(2, 12345678901234));
  EXPECT_EQ(batch.lines_within(batch.text().size()), 2u);
  EXPECT_EQ(batch.lines_within(batch.text().size() - 1), 1u);
}

TEST(SinkBatchDeathTest, ASequenceNumberThatDoesNotGoUpIsABug) {
  SinkBatch batch;
  batch.add({"a", 3, "w1", 1, 5, R"({"seq":3})"});
  EXPECT_DEATH(batch.add({"a", 3, "w1", 1, 5, R"({"seq":3})"}), "last_seq");
}

}  // namespace
}  // namespace leasehold::fleet
