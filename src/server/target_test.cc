// Request targets: the path decoded exactly once, the query kept raw, and
// targets that are not paths refused.
#include "server/target.h"

#include <gtest/gtest.h>

namespace leasehold::server {
namespace {

TEST(TargetTest, SplitsThePathFromTheRawQuery) {
  auto target = parse_target("/api/movies?name=a%20b&x=1");
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(target->path, "/api/movies");
  EXPECT_EQ(target->query, "name=a%20b&x=1");
  target = parse_target("/a?b?c");
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(target->path, "/a");
  EXPECT_EQ(target->query, "b?c");
  target = parse_target("/");
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(target->path, "/");
  EXPECT_EQ(target->query, "");
}

TEST(TargetTest, DecodesThePathOnce) {
  struct Case {
    const char* target;
    const char* path;
  };
  for (const Case& c :
       {Case{"/a%20b", "/a b"}, Case{"/%2e%2e/etc", "/../etc"},
        Case{"/static/..%2F..%2fsecret", "/static/../../secret"}, Case{"/a%252e", "/a%2e"},
        Case{"/caf%C3%A9", "/caf\xc3\xa9"}, Case{"/a+b", "/a+b"}}) {
    auto target = parse_target(c.target);
    ASSERT_TRUE(target.ok()) << c.target;
    EXPECT_EQ(target->path, c.path) << c.target;
  }
}

TEST(TargetTest, RefusesWhatIsNotAPath) {
  for (const char* bad : {"", "*", "http://example.com/", "a/b", "/a%", "/a%2", "/a%zz", "/a%g0",
                          "/a%00b", "/a%0d%0aSet-Cookie:x", "/a%7f", "/%1f"}) {
    auto target = parse_target(bad);
    ASSERT_FALSE(target.ok()) << bad;
    EXPECT_EQ(target.status().code(), Code::kInvalidArgument) << bad;
  }
}

TEST(TargetTest, QueryValuesAreDecodedWithPlusAsSpace) {
  const std::string query = "x=1&name=a%20b+c&flag&name=second&caf%C3%A9=ok";
  EXPECT_EQ(query_value(query, "name").value(), "a b c");
  EXPECT_EQ(query_value(query, "x").value(), "1");
  EXPECT_EQ(query_value(query, "flag").value(), "");
  EXPECT_EQ(query_value(query, "caf\xc3\xa9").value(), "ok");
  EXPECT_EQ(query_value(query, "missing").value(), std::nullopt);
  EXPECT_EQ(query_value("", "name").value(), std::nullopt);
  EXPECT_EQ(query_value("names=a", "name").value(), std::nullopt);
}

TEST(TargetTest, QueryValuesRefuseBadEscapesAndControlCharacters) {
  for (const char* bad : {"name=a%", "name=%zz", "name=a%00", "name=%0d%0a"}) {
    auto value = query_value(bad, "name");
    ASSERT_FALSE(value.ok()) << bad;
    EXPECT_EQ(value.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_NE(value.status().message().find("query parameter 'name'"), std::string::npos);
  }
  // A bad escape in another parameter does not matter.
  EXPECT_EQ(query_value("x=%zz&name=ok", "name").value(), "ok");
}

TEST(TargetTest, QueryCountsAreOneToTheMostOrTheFallback) {
  EXPECT_EQ(query_count(std::nullopt, "limit", 100, 500).value(), 100u);
  EXPECT_EQ(query_count("1", "limit", 100, 500).value(), 1u);
  EXPECT_EQ(query_count("500", "limit", 100, 500).value(), 500u);
  for (const char* bad : {"0", "501", "x", "", "12x", "-1", " 5"}) {
    const Status s = query_count(std::string(bad), "limit", 100, 500).status();
    EXPECT_EQ(s.message(), "limit: expected an integer from 1 to 500") << bad;
  }
}

}  // namespace
}  // namespace leasehold::server
