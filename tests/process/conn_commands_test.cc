// `leasehold conn ...` as separate processes see it: add, start, stop, rm and
// list, what they print, their exit codes, what a worker's lease looks like
// through them, and bad input, which exits 2 and changes nothing.
#include "leasehold/lease.h"
#include "leasehold/store.h"
#include "process_util.h"

namespace leasehold::process_test {
namespace {

namespace fs = std::filesystem;

const std::string kUrl = "wss://feed.example.com/s?from={next_seq}";
// Put in URLs that are refused, and looked for in what is printed.
const std::string kSecret = "s3cr3t-key-do-not-echo";

boost::json::object connection(const std::string& id, const std::string& state,
                               const std::string& url) {
  return boost::json::object{{"id", id},    {"desired_state", state}, {"ws_url", url},
                             {"owner", ""}, {"expires_at_ms", 0},     {"last_seq", 0},
                             {"epoch", 0},  {"last_error", ""}};
}

class ConnCommandsTest : public BackendTest {
 protected:
  // A command that must succeed and print one JSON object.
  boost::json::object ok(const std::vector<std::string>& args) {
    const RunResult r = lh(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_EQ(lines_of(r.out).size(), 1u) << r.out;
    return parse_object(r.out);
  }

  // `conn list`, which must succeed: one object per line.
  std::vector<boost::json::object> list() {
    const RunResult r = lh({"conn", "list"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<boost::json::object> out;
    for (const std::string& line : lines_of(r.out)) out.push_back(parse_object(line));
    return out;
  }
};

TEST_P(ConnCommandsTest, AddListStartStopRmRoundTrip) {
  EXPECT_EQ(ok({"conn", "add", "feed-b", "--url", kUrl}), connection("feed-b", "STARTED", kUrl));
  EXPECT_EQ(ok({"conn", "add", "feed-a", "--url", "ws://127.0.0.1:9/x/{last_seq}", "--seq-field",
                "data.seq", "--stopped"}),
            connection("feed-a", "STOPPED", "ws://127.0.0.1:9/x/{last_seq}"));
  std::vector<boost::json::object> all = list();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0], connection("feed-a", "STOPPED", "ws://127.0.0.1:9/x/{last_seq}"));
  EXPECT_EQ(all[1], connection("feed-b", "STARTED", kUrl));

  EXPECT_EQ(ok({"conn", "stop", "feed-b"}), connection("feed-b", "STOPPED", kUrl));
  EXPECT_EQ(ok({"conn", "stop", "feed-b"}), connection("feed-b", "STOPPED", kUrl));  // idempotent
  EXPECT_EQ(ok({"conn", "start", "feed-a"}),
            connection("feed-a", "STARTED", "ws://127.0.0.1:9/x/{last_seq}"));
  all = list();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].at("desired_state"), "STARTED");
  EXPECT_EQ(all[1].at("desired_state"), "STOPPED");

  EXPECT_EQ(ok({"conn", "rm", "feed-b"}),
            (boost::json::object{{"id", "feed-b"}, {"removed", true}}));
  all = list();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].at("id"), "feed-a");
}

TEST_P(ConnCommandsTest, ATakenIdExitsThreeAndChangesNothing) {
  ok({"conn", "add", "a", "--url", kUrl});
  const RunResult again = lh({"conn", "add", "a", "--url", "ws://other/", "--stopped"});
  EXPECT_EQ(again.exit_code, 3);
  EXPECT_EQ(again.out, "");
  EXPECT_NE(again.err.find("a connection named 'a' already exists"), std::string::npos)
      << again.err;
  EXPECT_EQ(list(), std::vector<boost::json::object>{connection("a", "STARTED", kUrl)});
}

TEST_P(ConnCommandsTest, AnUnknownIdExitsTwoAndChangesNothing) {
  ok({"conn", "add", "a", "--url", kUrl});
  for (const char* command : {"start", "stop", "rm"}) {
    const RunResult r = lh({"conn", command, "b"});
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("no connection named 'b'"), std::string::npos) << r.err;
  }
  ASSERT_EQ(lh({"conn", "rm", "a"}).exit_code, 0);
  EXPECT_EQ(lh({"conn", "rm", "a"}).exit_code, 2);
  EXPECT_TRUE(list().empty());
}

// A worker's lease and checkpoint, written through the library as a worker
// writes them, as the commands show them.
TEST_P(ConnCommandsTest, ListShowsTheWorkersLeaseButNeverItsToken) {
  ok({"conn", "add", "a", "--url", kUrl});
  ok({"conn", "add", "b", "--url", kUrl});
  auto store = open_store(store_uri());
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  RealClock clock;
  SystemRandom random;
  LeaseConfig config;
  config.table = "connections";
  LeaseManager leases(**store, clock, random, config);
  AcquireOptions options;
  options.owner = "worker-1";
  options.ttl = std::chrono::minutes(5);
  auto lease = leases.acquire(Key{"CONN#b", ""}, options);
  ASSERT_TRUE(lease.ok()) << lease.status().to_string();
  ASSERT_TRUE(leases
                  .fenced_write(*lease, Update()
                                            .set("last_seq", int64_t{41})
                                            .set("last_error", std::string("upstream closed"))
                                            .set("last_error_at_ms", int64_t{1}))
                  .ok());

  boost::json::object b = connection("b", "STARTED", kUrl);
  b["owner"] = "worker-1";
  b["expires_at_ms"] = lease->expires_at_ms;
  b["epoch"] = 1;
  b["last_seq"] = 41;
  b["last_error"] = "upstream closed";
  const RunResult listed = lh({"conn", "list"});
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(listed.out.find(lease->token), std::string::npos) << "the token was printed";
  const std::vector<std::string> lines = lines_of(listed.out);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(parse_object(lines[1]), b);

  // Stopping leaves the lease to its holder, who releases it.
  b["desired_state"] = "STOPPED";
  EXPECT_EQ(ok({"conn", "stop", "b"}), b);
  EXPECT_TRUE(leases.renew(*lease).ok());
  ASSERT_EQ(lh({"conn", "rm", "b"}).exit_code, 0);
  EXPECT_FALSE(leases.renew(*lease).ok());
}

INSTANTIATE_TEST_SUITE_P(Backends, ConnCommandsTest,
                         ::testing::Values(Backend::kSqlite, Backend::kDynamoDb), backend_name);

// ---------------------------------------------------------------- SQLite only

struct BadConnCase {
  std::string name;
  std::vector<std::string> args;  // after `leasehold --store sqlite:DIR/leases.db`
  std::string expected;           // in the message
};

void PrintTo(const BadConnCase& c, std::ostream* os) { *os << c.name; }

std::vector<BadConnCase> bad_conn_cases() {
  const auto add = [](const std::string& id, const std::string& url,
                      std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"conn", "add", id, "--url", url};
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  const std::string ok_url = "ws://127.0.0.1:9/s";
  return {
      {"NoConnCommand", {"conn"}, "subcommand is required"},
      {"UnknownConnCommand", {"conn", "pause", "a"}, "subcommand is required"},
      {"AddNoId", {"conn", "add", "--url", ok_url}, "ID"},
      {"AddNoUrl", {"conn", "add", "a"}, "--url"},
      {"AddTwoIds", {"conn", "add", "a", "b", "--url", ok_url}, "b"},
      {"AddUnknownFlag", add("a", ok_url, {"--seq", "x"}), "--seq"},
      {"AddEmptyId", add("", ok_url), "connection ID is empty"},
      {"AddIdWithSlash", add("a/b", ok_url), "'a/b'"},
      {"AddIdWithSpace", add("a b", ok_url), "'a b'"},
      {"AddIdWithHash", add("a#b", ok_url), "'a#b'"},
      {"AddIdDotDot", add("..", ok_url), "'..'"},
      {"AddIdNotAscii", add("caf\xc3\xa9", ok_url), "connection ID of 5 bytes"},
      {"AddIdTooLong", add(std::string(129, 'x'), ok_url), "129 bytes"},
      {"AddUrlEmpty", add("a", ""), "--url: URL template is empty"},
      {"AddUrlHttp", add("a", "https://h/s?key=" + kSecret), "--url: WebSocket URL must start"},
      {"AddUrlUserInfo", add("a", "wss://user:" + kSecret + "@h/s"), "user info"},
      {"AddUrlUnknownPlaceholder", add("a", "wss://h/s?key=" + kSecret + "&from={next}"),
       "unknown placeholder {next}"},
      {"AddUrlSecretInBraces", add("a", "wss://h/s?key={" + kSecret + "}"),
       "unknown placeholder at byte"},
      {"AddUrlStrayBrace", add("a", "wss://h/s?key=" + kSecret + "}"), "'}'"},
      {"AddUrlOpenBrace", add("a", "wss://h/s?from={next_seq"), "'{'"},
      {"AddUrlFragment", add("a", "wss://h/s#" + kSecret), "fragment"},
      {"AddUrlSpace", add("a", "wss://h/s?q=a " + kSecret), "space"},
      {"AddUrlBadPort", add("a", "ws://h:99999/s"), "port"},
      {"AddUrlTooLong", add("a", "ws://h/" + std::string(2040, 'a') + "{next_seq}"), "2048"},
      {"AddSeqFieldEmpty", add("a", ok_url, {"--seq-field", ""}), "--seq-field"},
      {"AddSeqFieldDoubleDot", add("a", ok_url, {"--seq-field", "a..b"}), "'a..b'"},
      {"AddSeqFieldBracket", add("a", ok_url, {"--seq-field", "a[0]"}), "'a[0]'"},
      {"AddSeqFieldTooDeep", add("a", ok_url, {"--seq-field", "a.b.c.d.e.f.g.h.i"}), "9 names"},
      {"AddSeqFieldTooLong", add("a", ok_url, {"--seq-field", std::string(257, 's')}), "too long"},
      {"StartNoId", {"conn", "start"}, "ID"},
      {"StartBadId", {"conn", "start", "a/b"}, "'a/b'"},
      {"StopBadId", {"conn", "stop", "a?b"}, "'a?b'"},
      {"StopTwoIds", {"conn", "stop", "a", "b"}, "b"},
      {"RmEmptyId", {"conn", "rm", ""}, "connection ID is empty"},
      {"RmDot", {"conn", "rm", "."}, "'.'"},
      {"ListWithArgument", {"conn", "list", "a"}, "a"},
      {"ListUnknownFlag", {"conn", "list", "--held"}, "--held"},
  };
}

class BadConnInputTest : public ProcessTest, public ::testing::WithParamInterface<BadConnCase> {};

TEST_P(BadConnInputTest, ExitsTwoOpensNothingAndEchoesNoSecret) {
  const BadConnCase& c = GetParam();
  const RunResult r = lh(c.args);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find(c.expected), std::string::npos) << r.err;
  EXPECT_TRUE(r.err.starts_with("leasehold: ") || r.err.find("--help") != std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find(kSecret), std::string::npos) << "a secret was echoed: " << r.err;
  EXPECT_FALSE(fs::exists(db_path())) << "the store was opened";
}

INSTANTIATE_TEST_SUITE_P(Cases, BadConnInputTest, ::testing::ValuesIn(bad_conn_cases()),
                         [](const auto& info) { return info.param.name; });

TEST_F(ProcessTest, BadConnInputLeavesExistingConnectionsAsTheyWere) {
  ASSERT_EQ(lh({"conn", "add", "a", "--url", kUrl}).exit_code, 0);
  ASSERT_EQ(lh({"conn", "add", "b", "--url", kUrl, "--stopped"}).exit_code, 0);
  const RunResult before = lh({"conn", "list"});
  ASSERT_EQ(before.exit_code, 0);
  for (const BadConnCase& c : bad_conn_cases()) {
    std::vector<std::string> args = c.args;
    // The same mistakes made about the connections that exist.
    for (std::string& arg : args) {
      if (arg == "a/b" || arg == "a?b") arg = "a/";
    }
    EXPECT_EQ(lh(args).exit_code, 2) << c.name;
  }
  const RunResult after = lh({"conn", "list"});
  EXPECT_EQ(after.out, before.out);
  EXPECT_EQ(lines_of(after.out).size(), 2u);
}

TEST_F(ProcessTest, ConnCommandsOnAFreshSqliteFileFindNoConnections) {
  const RunResult listed = lh({"conn", "list"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_EQ(listed.out, "");
  EXPECT_EQ(listed.err, "");
  for (const char* command : {"start", "stop", "rm"}) {
    const RunResult r = lh({"conn", command, "x"});
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_NE(r.err.find("no connection named 'x'"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace leasehold::process_test
