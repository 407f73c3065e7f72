// Tests for splitting store URIs, and for validate_store_uri(): it refuses
// exactly what open_store() refuses, in the same words, and creates nothing.
#include "store/uri.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "leasehold/store.h"
#include "testing/temp_dir.h"

namespace leasehold::store {
namespace {

TEST(StoreUri, SplitsAtTheFirstColonAndTheFirstQuestionMark) {
  auto parts = split_store_uri("dynamodb://r/p?endpoint=http://h:1");
  ASSERT_TRUE(parts.ok());
  EXPECT_EQ(parts->scheme, "dynamodb");
  EXPECT_EQ(parts->rest, "//r/p?endpoint=http://h:1");
  const PathAndQuery split = split_path_and_query(parts->rest);
  EXPECT_EQ(split.path, "//r/p");
  EXPECT_EQ(split.query, "endpoint=http://h:1");
  EXPECT_EQ(split_path_and_query("/a/b.db").query, std::nullopt);
  EXPECT_EQ(split_path_and_query("/a/b.db?").query, "");
  EXPECT_EQ(split_path_and_query("/a?b?c").query, "b?c");
  const auto none = split_store_uri("leases.db");
  EXPECT_EQ(none.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(none.status().message(),
            "malformed store URI 'leases.db' (expected sqlite:PATH, dynamodb://REGION/PREFIX or "
            "memory:)");
}

TEST(StoreUri, ParametersAreSplitWithoutJudgement) {
  const std::vector<UriParam> params = split_uri_params("a=1&b=&c&=d&&e=f=g&");
  ASSERT_EQ(params.size(), 6u);
  const auto expect = [&](size_t i, std::string_view name, std::string_view value,
                          std::string_view text, bool has_equals) {
    SCOPED_TRACE(i);
    EXPECT_EQ(params[i].name, name);
    EXPECT_EQ(params[i].value, value);
    EXPECT_EQ(params[i].text, text);
    EXPECT_EQ(params[i].has_equals, has_equals);
  };
  expect(0, "a", "1", "a=1", true);
  expect(1, "b", "", "b=", true);
  expect(2, "c", "", "c", false);
  expect(3, "", "d", "=d", true);
  expect(4, "", "", "", false);
  expect(5, "e", "f=g", "e=f=g", true);
  EXPECT_TRUE(split_uri_params("").empty());
}

using leasehold::testing::TempDir;

// Each bad URI with the message open_store() gave for it before the URI
// parser was shared; "DIR" stands for a fresh directory.
struct BadUri {
  std::string uri;
  std::string message;
};

const std::vector<BadUri>& bad_uris() {
  const std::string sqlite_known = "' (known: busy_timeout=DURATION, synchronous=normal|full)";
  const std::string dynamodb_form =
      "malformed DynamoDB URI (expected "
      "dynamodb://REGION/TABLE_PREFIX[?endpoint=URL][&table_wait=DURATION])";
  const std::string dynamodb_param = "unknown, repeated or empty DynamoDB URI parameter '";
  const std::string dynamodb_known = "' (known: endpoint=URL, table_wait=DURATION)";
  static const std::vector<BadUri> kBad = {
      {"bogus",
       "malformed store URI 'bogus' (expected sqlite:PATH, dynamodb://REGION/PREFIX or memory:)"},
      {"nope:x",
       "unknown store scheme 'nope' (known: sqlite:PATH, dynamodb://REGION/PREFIX, memory:)"},
      {"sqlite:", "sqlite URI needs a path: sqlite:PATH"},
      {"sqlite:?busy_timeout=1s", "sqlite URI needs a path: sqlite:PATH"},
      {"sqlite::memory:", "sqlite URI needs a file path that other processes can open"},
      {"sqlite:file:x.db", "sqlite URI needs a file path that other processes can open"},
      {"sqlite:DIR/a.db?foo=1", "unknown sqlite URI parameter 'foo=1" + sqlite_known},
      {"sqlite:DIR/a.db?foo=1&bad", "malformed store URI parameter 'bad'"},
      {"sqlite:DIR/a.db?=x", "malformed store URI parameter '=x'"},
      {"sqlite:DIR/a.db?a=1&&b=2", "malformed store URI parameter ''"},
      {"sqlite:DIR/a.db?busy_timeout=5",
       "invalid duration '5': missing unit (examples: 1500ms, 20s, 15m)"},
      {"sqlite:DIR/a.db?synchronous=off",
       "unknown sqlite URI parameter 'synchronous=off" + sqlite_known},
      {"memory:x", "memory: takes no path"},
      {"memory:?a=1", "memory: takes no path"},
      {"dynamodb:", dynamodb_form},
      {"dynamodb:us-east-1/p", dynamodb_form},
      {"dynamodb://us-east-1/", dynamodb_form},
      {"dynamodb:///prefix", dynamodb_form},
      {"dynamodb://us-east-1/p?", dynamodb_form},
      {"dynamodb://US EAST/p", "DynamoDB region must be like us-east-1"},
      {"dynamodb://us-east-1/p/q", "DynamoDB table prefix must be non-empty [A-Za-z0-9_.-]"},
      {"dynamodb://us-east-1/p?endpoint", dynamodb_param + "endpoint" + dynamodb_known},
      {"dynamodb://us-east-1/p?=x", dynamodb_param + "=x" + dynamodb_known},
      {"dynamodb://us-east-1/p?&endpoint=http://127.0.0.1:1", dynamodb_param + dynamodb_known},
      {"dynamodb://us-east-1/p?table_wait=1m&table_wait=2m",
       dynamodb_param + "table_wait=2m" + dynamodb_known},
      {"dynamodb://us-east-1/p?table_wait=5",
       "invalid duration '5': missing unit (examples: 1500ms, 20s, 15m)"},
      {"dynamodb://us-east-1/p?endpoint=ftp://x", "endpoint scheme must be http or https"},
      {"dynamodb://us-east-1/p?endpoint=http://127.0.0.1:1/path",
       "endpoint must be scheme://host[:port] without path or user info"},
      {"dynamodb://us-east-1/p?endpoint=http://10.1.2.3:8000",
       "plain http:// is allowed only for loopback hosts (got 10.1.2.3); use https://"},
      {"dynamodb://US/p?endpoint=http://10.1.2.3:8000", "DynamoDB region must be like us-east-1"},
  };
  return kBad;
}

std::string in_dir(std::string uri, const TempDir& dir) {
  const size_t at = uri.find("DIR");
  if (at != std::string::npos) uri.replace(at, 3, dir.path().string());
  return uri;
}

TEST(ValidateStoreUri, RefusesWhatOpenStoreRefusesInTheSameWordsAndCreatesNothing) {
  TempDir dir;
  for (const BadUri& bad : bad_uris()) {
    const std::string uri = in_dir(bad.uri, dir);
    SCOPED_TRACE(uri);
    const Status validated = validate_store_uri(uri);
    EXPECT_EQ(validated.code(), Code::kInvalidArgument);
    EXPECT_EQ(validated.message(), bad.message);
    const Status opened = open_store(uri).status();
    EXPECT_EQ(opened.code(), Code::kInvalidArgument);
    EXPECT_EQ(opened.message(), bad.message);
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

// A well-formed URI passes without anything being opened: no file appears,
// no credentials are looked for, nothing is sent to the endpoint.
TEST(ValidateStoreUri, AcceptsWellFormedUrisWithoutOpeningThem) {
  TempDir dir;
  for (const std::string& uri :
       {"sqlite:" + (dir.path() / "a.db").string(),
        "sqlite:" + (dir.path() / "b.db").string() + "?busy_timeout=2s&synchronous=full",
        std::string("memory:"), std::string("dynamodb://us-east-1/p"),
        std::string("dynamodb://eu-west-1/prod_.x?endpoint=http://127.0.0.1:1&table_wait=90s"),
        std::string("dynamodb://us-east-1/p?endpoint=https://dynamodb.example.com")}) {
    EXPECT_TRUE(validate_store_uri(uri).ok()) << uri << ": " << validate_store_uri(uri).to_string();
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir.path()));
}

}  // namespace
}  // namespace leasehold::store
