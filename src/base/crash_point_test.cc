#include "base/crash_point.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

namespace leasehold {
namespace {

TEST(CrashPointTest, EveryPointHasAUniqueNameOfItsStep) {
  std::set<std::string_view> seen;
  const std::regex shape("[a-z]+\\.[a-z]+\\.[a-z_]+");
  for (std::string_view name : crash_point_names()) {
    EXPECT_TRUE(seen.insert(name).second) << name;
    EXPECT_TRUE(std::regex_match(std::string(name), shape)) << name;
  }
  EXPECT_EQ(crash_point_name(CrashPoint::kUploadAfterCreate), "movies.upload.after_create");
  EXPECT_EQ(crash_point_name(CrashPoint::kDeleteBeforeItem), "movies.delete.before_item");
}

// The unit tests run without the variable: every point returns at once.
TEST(CrashPointTest, WithoutTheVariableNothingHappens) {
  ASSERT_EQ(std::getenv(kCrashAtEnv), nullptr);
  EXPECT_TRUE(check_crash_point_env().ok());
  crash_point(CrashPoint::kTraceAfterClaim);
}

}  // namespace
}  // namespace leasehold
