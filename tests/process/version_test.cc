// `leasehold --version` (and -V): one line on stdout naming the version and
// the build, exit 0, and no store opened, so no database file appears. And
// what the binary loads at start.
#include <gmock/gmock.h>

#include "process_util.h"

namespace leasehold::process_test {
namespace {

// "leasehold 0.1.0 (gcc 12.2.0, commit 1a2b3c4d, RelWithDebInfo)". gtest's
// regular expressions (POSIX extended here), not <regex>, which GCC 12 warns
// about under the sanitizers.
::testing::Matcher<const std::string&> is_version_line() {
  return ::testing::MatchesRegex("leasehold " LEASEHOLD_TEST_VERSION
                                 " \\((gcc|clang) [0-9]+\\.[0-9]+\\.[0-9]+, "
                                 "commit ([0-9a-f]{8}|unknown), [A-Za-z]+\\)\n");
}

TEST_F(ProcessTest, VersionPrintsTheBuildAndOpensNoStore) {
  for (const char* flag : {"--version", "-V"}) {
    const RunResult r = lh({flag});
    EXPECT_EQ(r.exit_code, 0) << flag << ": " << r.err;
    EXPECT_THAT(r.out, is_version_line()) << flag;
    EXPECT_EQ(r.err, "") << flag;
    EXPECT_FALSE(std::filesystem::exists(db_path())) << flag << " created the store";
  }
}

// It wins over a command, which is not run: `--version` after a command
// line is still only the version.
TEST_F(ProcessTest, VersionAfterACommandRunsNoCommand) {
  const RunResult r = lh({"lease", "acquire", "k", "--owner", "w", "--version"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, is_version_line());
  EXPECT_FALSE(std::filesystem::exists(db_path())) << "the command ran";
}

// The binary starts without the tracer's codecs (src/tracer/codecs.h):
// OpenCV's videoio and imgcodecs, and the some 250 libraries they bring,
// load when a movie or an image is first read or written. The dynamic
// loader's list of what the binary loads at start (what ldd prints) holds
// OpenCV's core, which the tracer links, and neither of those.
TEST_F(ProcessTest, TheBinaryStartsWithoutTheVideoCodecs) {
  const RunResult r = run({"env", "LD_TRACE_LOADED_OBJECTS=1", leasehold_bin()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, ::testing::HasSubstr("libopencv_core"));
  EXPECT_THAT(r.out, ::testing::Not(::testing::HasSubstr("libopencv_videoio")));
  EXPECT_THAT(r.out, ::testing::Not(::testing::HasSubstr("libopencv_imgcodecs")));
}

}  // namespace
}  // namespace leasehold::process_test
