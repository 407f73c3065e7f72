#include "base/duration.h"

#include <gtest/gtest.h>

namespace leasehold {
namespace {

using std::chrono::milliseconds;

TEST(ParseDuration, AcceptsEachUnit) {
  EXPECT_EQ(*parse_duration("1500ms"), milliseconds(1500));
  EXPECT_EQ(*parse_duration("20s"), milliseconds(20'000));
  EXPECT_EQ(*parse_duration("15m"), milliseconds(900'000));
  EXPECT_EQ(*parse_duration("2h"), milliseconds(7'200'000));
  EXPECT_EQ(*parse_duration("0s"), milliseconds(0));
  EXPECT_EQ(*parse_duration("0"), milliseconds(0)) << "zero needs no unit";
}

TEST(ParseDuration, RefusesMalformedInput) {
  for (const char* bad : {"", "20", "00x", "s", "-5s", "+5s", "1.5s", "10x", "5 s", "5S", "ms", "20s ",
                          "99999999999999999999ms", "1000000h"}) {
    const auto d = parse_duration(bad);
    ASSERT_FALSE(d.ok()) << "'" << bad << "' was accepted";
    EXPECT_EQ(d.status().code(), Code::kInvalidArgument);
    EXPECT_NE(d.status().message().find("invalid duration"), std::string::npos);
  }
}

TEST(FormatDuration, PrintsShortestExactForm) {
  EXPECT_EQ(format_duration(milliseconds(1500)), "1500ms");
  EXPECT_EQ(format_duration(milliseconds(20'000)), "20s");
  EXPECT_EQ(format_duration(milliseconds(900'000)), "15m");
  EXPECT_EQ(format_duration(milliseconds(0)), "0ms");
}

}  // namespace
}  // namespace leasehold
