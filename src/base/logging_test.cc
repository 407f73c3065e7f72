// log_to(): a message reaches the logger only when it is enabled, and is not
// even formatted otherwise.
#include "base/logging.h"

#include <gtest/gtest.h>

#include "testing/capturing_logger.h"

namespace {

// Counts how often it is formatted.
struct Counted {
  int* formatted;
};

}  // namespace

template <>
struct fmt::formatter<Counted> : fmt::formatter<std::string_view> {
  auto format(const Counted& c, fmt::format_context& ctx) const {
    ++*c.formatted;
    return fmt::formatter<std::string_view>::format("counted", ctx);
  }
};

namespace leasehold {
namespace {

TEST(LoggingTest, WritesTheFormattedMessageWhenTheLevelIsOn) {
  CapturingLogger log(LogLevel::kInfo);
  int formatted = 0;
  log_to(log, LogLevel::kWarn, "{} of {}: {}", 2, 3, Counted{&formatted});
  ASSERT_EQ(log.lines().size(), 1u);
  EXPECT_EQ(log.lines()[0].level, LogLevel::kWarn);
  EXPECT_EQ(log.lines()[0].message, "2 of 3: counted");
  EXPECT_EQ(formatted, 1);
}

TEST(LoggingTest, FormatsNothingWhenTheLevelIsOff) {
  CapturingLogger log(LogLevel::kWarn);
  int formatted = 0;
  log_to(log, LogLevel::kInfo, "{}", Counted{&formatted});
  log_to(log, LogLevel::kDebug, "{}", Counted{&formatted});
  EXPECT_TRUE(log.lines().empty());
  EXPECT_EQ(formatted, 0);
}

TEST(LoggingTest, ANullLoggerLogsNothing) {
  int formatted = 0;
  log_to(nullptr, LogLevel::kError, "{}", Counted{&formatted});
  NullLogger null;
  log_to(null, LogLevel::kError, "{}", Counted{&formatted});
  EXPECT_EQ(formatted, 0);
}

}  // namespace
}  // namespace leasehold
