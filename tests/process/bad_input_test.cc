// Bad input gets exit 2 and a clear message, and changes nothing: the
// database is not even created. A store that cannot be opened gets exit 1.
#include <sys/stat.h>

#include "process_util.h"

namespace leasehold::process_test {
namespace {

const std::string kToken = "0123456789abcdef0123456789abcdef";

struct BadCase {
  std::string name;
  std::vector<std::string> args;  // after `leasehold --store sqlite:DIR/leases.db`
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

std::vector<BadCase> bad_cases() {
  const std::string long_key(1025, 'k');
  const std::string long_owner(257, 'o');
  const std::string long_holder(1025, 'h');
  std::vector<BadCase> cases = {
      {"NoArguments", {}},
      {"NoLeaseCommand", {"lease"}},
      {"UnknownCommand", {"lease", "grab", "k"}},
      {"UnknownFlag", {"lease", "acquire", "k", "--owner", "a", "--bogus"}},
      {"MissingKey", {"lease", "acquire", "--owner", "a"}},
      {"MissingOwner", {"lease", "acquire", "k"}},
      {"MissingToken", {"lease", "renew", "k", "--owner", "a"}},
      {"RenewMissingOwner", {"lease", "renew", "k", "--token", kToken}},
      {"ReleaseMissingOwner", {"lease", "release", "k", "--token", kToken}},
      {"ReleaseEmptyOwner", {"lease", "release", "k", "--owner", "", "--token", kToken}},
      {"EmptyKey", {"lease", "acquire", "", "--owner", "a"}},
      {"KeyWithControlChar",
       {"lease", "acquire",
        "a\x01"
        "b",
        "--owner", "a"}},
      {"KeyWithNewline", {"lease", "acquire", "a\nb", "--owner", "a"}},
      {"KeyTooLong", {"lease", "acquire", long_key, "--owner", "a"}},
      {"KeyNotUtf8", {"lease", "acquire", "a\xff", "--owner", "a"}},
      {"KeyOverlongUtf8", {"lease", "acquire", "a\xc0\x80", "--owner", "a"}},
      {"OwnerSurrogateUtf8", {"lease", "acquire", "k", "--owner", "\xed\xa0\x80"}},
      {"EmptyOwner", {"lease", "acquire", "k", "--owner", ""}},
      {"OwnerTooLong", {"lease", "acquire", "k", "--owner", long_owner}},
      {"OwnerWithTab", {"lease", "acquire", "k", "--owner", "a\tb"}},
      {"HolderTooLong", {"lease", "acquire", "k", "--owner", "a", "--holder", long_holder}},
      {"TtlWithoutUnit", {"lease", "acquire", "k", "--owner", "a", "--ttl", "20"}},
      {"TtlNotANumber", {"lease", "acquire", "k", "--owner", "a", "--ttl", "abc"}},
      {"TtlNegative", {"lease", "acquire", "k", "--owner", "a", "--ttl=-5s"}},
      {"TtlZero", {"lease", "acquire", "k", "--owner", "a", "--ttl", "0s"}},
      {"TtlBadUnit", {"lease", "acquire", "k", "--owner", "a", "--ttl", "10x"}},
      {"TtlTooShortForSkew", {"lease", "acquire", "k", "--owner", "a", "--ttl", "100ms"}},
      {"RenewTtlBad", {"lease", "renew", "k", "--owner", "a", "--token", kToken, "--ttl", "abc"}},
      {"TokenNotHex", {"lease", "renew", "k", "--owner", "a", "--token", "xyz"}},
      {"Token31Digits", {"lease", "renew", "k", "--owner", "a", "--token", kToken.substr(1)}},
      {"Token33Digits", {"lease", "release", "k", "--owner", "a", "--token", kToken + "0"}},
      {"TokenUppercase", {"lease", "release", "k", "--owner", "a", "--token", "0123456789ABCDEF0123456789ABCDEF"}},
      {"ModeUnknown", {"lease", "release", "k", "--owner", "a", "--token", kToken, "--mode", "delete"}},
      {"ModeUppercase", {"lease", "release", "k", "--owner", "a", "--token", kToken, "--mode", "EXPIRE"}},
      {"SlotEmpty", {"lease", "show", "k", "--slot", ""}},
      {"SlotUppercase", {"lease", "show", "k", "--slot", "Lease"}},
      {"SlotLeadingDigit", {"lease", "acquire", "k", "--owner", "a", "--slot", "1lease"}},
      {"SlotWithDash", {"lease", "renew", "k", "--owner", "a", "--token", kToken, "--slot", "a-b"}},
      {"SlotTooLong", {"lease", "show", "k", "--slot", std::string(33, 's')}},
      {"ListHeldAndExpired", {"lease", "list", "--held", "--expired"}},
      {"HoldWithoutCommand", {"lease", "hold", "k", "--owner", "a"}},
      {"HoldCommandNotFound", {"lease", "hold", "k", "--owner", "a", "--", "no-such-cmd-xyz"}},
      {"HoldCommandIsDirectory", {"lease", "hold", "k", "--owner", "a", "--", "/tmp"}},
      {"HoldGraceZero", {"lease", "hold", "k", "--owner", "a", "--grace", "0s", "--", "true"}},
      {"HoldGraceBad", {"lease", "hold", "k", "--owner", "a", "--grace", "5", "--", "true"}},
      {"HoldTtlBad", {"lease", "hold", "k", "--owner", "a", "--ttl", "800ms", "--", "true"}},
      {"BenchLeasesZero", {"bench", "leases", "--leases", "0"}},
      {"BenchLeasesTooMany", {"bench", "leases", "--leases", "2000000"}},
      {"BenchThreadsNegative", {"bench", "leases", "--threads=-1"}},
      {"BenchSecondsNotANumber", {"bench", "leases", "--seconds", "abc"}},
      {"BenchSdkBaselineMissingFile", {"bench", "leases", "--sdk-baseline", "/no/such.mjs"}},
      {"BenchSdkBaselineNotDynamoDb",
       {"bench", "leases", "--sdk-baseline", LEASEHOLD_SOURCE_DIR "/bench/sdk_renew_loop.mjs"}},
  };
  return cases;
}

class BadInputTest : public ProcessTest, public ::testing::WithParamInterface<BadCase> {};

TEST_P(BadInputTest, ExitsTwoWithAMessageAndCreatesNothing) {
  const RunResult r = lh(GetParam().args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err, "");
  EXPECT_FALSE(std::filesystem::exists(db_path())) << "bad input created the database";
}

INSTANTIATE_TEST_SUITE_P(Cases, BadInputTest, ::testing::ValuesIn(bad_cases()),
                         [](const auto& info) { return info.param.name; });

// The same bad commands against a database that holds a lease leave both the
// file's bytes and what `list` and `show` print unchanged.
TEST_F(ProcessTest, BadInputLeavesAnExistingDatabaseUnchanged) {
  acquire("k", "owner-a");
  const RunResult list_before = lh({"lease", "list"});
  const RunResult show_before = lh({"lease", "show", "k"});
  ASSERT_EQ(list_before.exit_code, 0) << list_before.err;
  ASSERT_EQ(show_before.exit_code, 0) << show_before.err;
  const std::string bytes_before = read_file(db_path());
  for (const BadCase& c : bad_cases()) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(lh(c.args).exit_code, 2);
  }
  EXPECT_EQ(read_file(db_path()), bytes_before);
  EXPECT_EQ(lh({"lease", "list"}).out, list_before.out);
  EXPECT_EQ(lh({"lease", "show", "k"}).out, show_before.out);
}

TEST_F(ProcessTest, MalformedStoreUrisExitTwo) {
  for (const std::string uri : {"nosuch:x", "sqlite:", "sqlite::memory:", "", "leases.db",
                                "memory:x", "sqlite:x.db?bogus=1"}) {
    SCOPED_TRACE("store '" + uri + "'");
    const RunResult r = run({leasehold_bin(), "--store", uri, "lease", "show", "k"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err, "");
    EXPECT_EQ(r.out, "");
  }
}

TEST_F(ProcessTest, StoreThatCannotBeOpenedExitsOne) {
  const std::filesystem::path file = dir() / "file.txt";
  { std::ofstream(file) << "not a directory\n"; }
  const std::vector<std::string> paths = {(dir() / "no-such-dir" / "leases.db").string(),
                                          (file / "leases.db").string(), "/proc/leasehold.db"};
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    const RunResult r = run(
        {leasehold_bin(), "--store", "sqlite:" + path, "lease", "acquire", "k", "--owner", "a"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("cannot open store"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_FALSE(std::filesystem::exists(path));
  }
  EXPECT_FALSE(std::filesystem::exists(dir() / "no-such-dir"));
}

TEST_F(ProcessTest, HelpExitsZero) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--help"}, {"lease", "--help"}, {"lease", "acquire", "--help"}}) {
    const RunResult r = lh(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << r.out;
  }
  EXPECT_FALSE(std::filesystem::exists(db_path()));
}

}  // namespace
}  // namespace leasehold::process_test
