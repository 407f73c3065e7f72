// build_info() and version_line(): what `leasehold --version` prints.
#include "runtime/build_info.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace leasehold::runtime {
namespace {

// gtest's regular expressions (POSIX extended here), not <regex>, which
// GCC 12 warns about under the sanitizers.
TEST(BuildInfoTest, TheVersionLineNamesVersionCompilerCommitAndBuildType) {
  EXPECT_THAT(version_line(),
              ::testing::MatchesRegex("leasehold [0-9]+\\.[0-9]+\\.[0-9]+ "
                                      "\\((gcc|clang) [0-9]+\\.[0-9]+\\.[0-9]+, "
                                      "commit ([0-9a-f]{8}|unknown), [A-Za-z]+\\)"));
}

TEST(BuildInfoTest, TheVersionIsTheProjects) {
  EXPECT_EQ(build_info().version, LEASEHOLD_TEST_VERSION);
}

}  // namespace
}  // namespace leasehold::runtime
