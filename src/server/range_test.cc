// Range headers against files of known sizes: single ranges served,
// clamped or refused, and everything else ignored (the whole file).
#include "server/range.h"

#include <gtest/gtest.h>

namespace leasehold::server {
namespace {

using Kind = RangeAnswer::Kind;

void expect_part(std::string_view header, uint64_t size, uint64_t first, uint64_t length) {
  const RangeAnswer answer = resolve_range(header, size);
  EXPECT_EQ(answer.kind, Kind::kPart) << header;
  EXPECT_EQ(answer.range.first, first) << header;
  EXPECT_EQ(answer.range.length, length) << header;
}

void expect_whole(std::optional<std::string_view> header, uint64_t size) {
  const RangeAnswer answer = resolve_range(header, size);
  EXPECT_EQ(answer.kind, Kind::kWhole) << header.value_or("(none)");
  EXPECT_EQ(answer.range.first, 0u);
  EXPECT_EQ(answer.range.length, size);
}

void expect_unsatisfiable(std::string_view header, uint64_t size) {
  EXPECT_EQ(resolve_range(header, size).kind, Kind::kUnsatisfiable) << header;
}

TEST(RangeTest, ServesTheThreeFormsOfOneRange) {
  expect_part("bytes=0-99", 1000, 0, 100);
  expect_part("bytes=500-", 1000, 500, 500);
  expect_part("bytes=-100", 1000, 900, 100);
  expect_part("bytes=999-999", 1000, 999, 1);
  expect_part("Bytes = 10-19 ", 1000, 10, 10);  // the unit without case, spaces around
}

TEST(RangeTest, ClampsALastPositionAndASuffixPastTheEnd) {
  expect_part("bytes=900-5000", 1000, 900, 100);
  expect_part("bytes=-5000", 1000, 0, 1000);
  expect_part("bytes=0-99999999999999999999999", 1000, 0, 1000);  // saturates
  expect_part("bytes=-99999999999999999999999", 1000, 0, 1000);
}

TEST(RangeTest, ARangeStartingPastTheEndIsUnsatisfiable) {
  expect_unsatisfiable("bytes=1000-", 1000);
  expect_unsatisfiable("bytes=1000-2000", 1000);
  expect_unsatisfiable("bytes=99999999999999999999999-", 1000);
  expect_unsatisfiable("bytes=-0", 1000);
  expect_unsatisfiable("bytes=0-0", 0);
}

TEST(RangeTest, IgnoresWhatItDoesNotServe) {
  expect_whole(std::nullopt, 1000);
  for (std::string_view header :
       {"bytes=0-1,5-6", "bytes=0-1, 5-", "items=0-1", "bytes 0-1", "bytes=", "bytes=-",
        "bytes=5-4", "bytes=a-b", "bytes=+1-2", "bytes=1-+2", "bytes=0x10-", "", "bytes=--1"}) {
    expect_whole(header, 1000);
  }
  expect_whole("bytes=-10", 0);  // nothing to cut from an empty file
}

TEST(RangeTest, IfRangeMustMatchAStrongETagOrTheLastModified) {
  EXPECT_TRUE(if_range_matches(std::nullopt, std::nullopt, std::nullopt));
  EXPECT_TRUE(if_range_matches("\"v1\"", "\"v1\"", std::nullopt));
  EXPECT_FALSE(if_range_matches("\"v0\"", "\"v1\"", std::nullopt));
  EXPECT_FALSE(if_range_matches("W/\"v1\"", "W/\"v1\"", std::nullopt));  // weak: never
  const std::string_view date = "Tue, 01 Dec 2026 10:00:00 GMT";
  EXPECT_TRUE(if_range_matches(date, std::nullopt, date));
  EXPECT_FALSE(if_range_matches(date, std::nullopt, std::nullopt));
}

TEST(RangeTest, ContentRangeHeaders) {
  EXPECT_EQ(content_range({.first = 0, .length = 100}, 1000), "bytes 0-99/1000");
  EXPECT_EQ(content_range({.first = 999, .length = 1}, 1000), "bytes 999-999/1000");
  EXPECT_EQ(unsatisfied_content_range(1000), "bytes */1000");
}

}  // namespace
}  // namespace leasehold::server
