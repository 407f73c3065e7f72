// `leasehold conn ...` as separate processes see it: add, set, start, stop,
// rm and list, what they print, their exit codes, what a worker's lease
// looks like through them, how rm waits for the worker holding a removed
// connection to let go and how add refuses the ID until it has, with a
// real worker that a connection removed and added again is streamed after
// its old holder and under a higher epoch, and bad input, which exits 2 and
// changes nothing.
#include <signal.h>

#include <ctime>

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

// "2026-12-01T09:30:00.123Z", as the commands write a lease's end.
std::string utc(int64_t unix_ms) {
  const std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[40];
  const size_t n = std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &tm);
  return std::string(text, n) + "." + std::to_string(1000 + unix_ms % 1000).substr(1) + "Z";
}

const boost::json::object kRemovedA{{"id", "a"}, {"removed", true}};

class ConnCommandsTest : public BackendTest {
 protected:
  // A worker's leases on the connections, written through the library in
  // this process as a worker writes them. Opened on first use.
  LeaseManager& worker_leases() {
    if (leases_ == nullptr) {
      auto store = open_store(store_uri());
      EXPECT_TRUE(store.ok()) << store.status().to_string();
      store_ = std::move(store).value();
      LeaseConfig config;
      config.table = "connections";
      leases_ = std::make_unique<LeaseManager>(*store_, clock_, random_, config);
    }
    return *leases_;
  }

  // Connection `id`'s lease, taken for `owner`; it must be free.
  Lease lease_to(const std::string& id, const std::string& owner,
                 Duration ttl = std::chrono::minutes(5)) {
    AcquireOptions options;
    options.owner = owner;
    options.ttl = ttl;
    auto lease = worker_leases().acquire(Key{"CONN#" + id, ""}, options);
    EXPECT_TRUE(lease.ok()) << lease.status().to_string();
    return lease.ok() ? *lease : Lease{};
  }

  // Connection `id`'s item as stored.
  Item stored(const std::string& id) {
    worker_leases();
    auto item = store_->get("connections", Key{"CONN#" + id, ""}, /*consistent=*/true);
    EXPECT_TRUE(item.ok()) << item.status().to_string();
    return item.ok() ? *item : Item{};
  }

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

 private:
  RealClock clock_;
  SystemRandom random_;
  std::unique_ptr<ItemStore> store_;
  std::unique_ptr<LeaseManager> leases_;
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

  // Stopping, and removing, leave the lease to its holder, who releases it.
  b["desired_state"] = "STOPPED";
  EXPECT_EQ(ok({"conn", "stop", "b"}), b);
  EXPECT_TRUE(leases.renew(*lease).ok());
  ASSERT_EQ(lh({"conn", "rm", "b", "--wait", "0"}).exit_code, 0);
  EXPECT_TRUE(leases.renew(*lease).ok());
  EXPECT_TRUE(leases.release(*lease, ReleaseMode::kExpire).ok());
  EXPECT_EQ(lines_of(lh({"conn", "list"}).out).size(), 1u);
}

TEST_P(ConnCommandsTest, SetChangesTheUrlAndTheSeqFieldAndNothingElse) {
  ok({"conn", "add", "a", "--url", kUrl});
  ok({"conn", "add", "b", "--url", kUrl});
  const Lease lease = lease_to("a", "worker-1");
  ASSERT_TRUE(worker_leases().fenced_write(lease, Update().set("last_seq", int64_t{41})).ok());
  Item expected = stored("a");

  const std::string url = "ws://127.0.0.1:9/new/{last_seq}";
  boost::json::object a = connection("a", "STARTED", url);
  a["owner"] = "worker-1";
  a["expires_at_ms"] = lease.expires_at_ms;
  a["epoch"] = 1;
  a["last_seq"] = 41;  // the stream resumes from its checkpoint at the new URL
  EXPECT_EQ(ok({"conn", "set", "a", "--url", url}), a);
  expected["ws_url"] = url;
  EXPECT_EQ(stored("a"), expected);
  EXPECT_EQ(ok({"conn", "set", "a", "--seq-field", "data.seq"}), a);
  expected["seq_field"] = std::string("data.seq");
  EXPECT_EQ(stored("a"), expected);
  a["ws_url"] = kUrl;
  EXPECT_EQ(ok({"conn", "set", "a", "--url", kUrl, "--seq-field", "n"}), a);
  expected["ws_url"] = kUrl;
  expected["seq_field"] = std::string("n");
  EXPECT_EQ(stored("a"), expected);

  // Bad input and unknown IDs exit 2 and change nothing.
  const Item b = stored("b");
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"conn", "set", "a"},
           {"conn", "set", "a", "--url", "http://h/s"},
           {"conn", "set", "a", "--url", "ws://h/ok", "--seq-field", "a..b"},
           {"conn", "set", "c", "--url", "ws://h/ok"}}) {
    const RunResult r = lh(args);
    EXPECT_EQ(r.exit_code, 2) << args.back();
    EXPECT_EQ(r.out, "");
  }
  const RunResult unknown = lh({"conn", "set", "c", "--url", "ws://h/ok"});
  EXPECT_NE(unknown.err.find("no connection named 'c'"), std::string::npos) << unknown.err;
  const RunResult nothing = lh({"conn", "set", "a"});
  EXPECT_NE(nothing.err.find("nothing to change; give --url, --seq-field or both"),
            std::string::npos)
      << nothing.err;
  EXPECT_EQ(stored("a"), expected);
  EXPECT_EQ(stored("b"), b);
  EXPECT_TRUE(worker_leases().renew(lease).ok()) << "the lease stays its holder's";
}

TEST_P(ConnCommandsTest, RmWithoutWaitingRefusesTheIdUntilTheWorkerLetsGo) {
  ok({"conn", "add", "a", "--url", kUrl});
  const Lease old = lease_to("a", "worker-1");
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(ok({"conn", "rm", "a", "--wait", "0"}), kRemovedA);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(15))
      << "--wait 0 waited";
  EXPECT_TRUE(list().empty());
  EXPECT_EQ(lh({"conn", "rm", "a"}).exit_code, 2) << "removed already";
  EXPECT_EQ(lh({"conn", "start", "a"}).exit_code, 2);

  const RunResult refused = lh({"conn", "add", "a", "--url", kUrl});
  EXPECT_EQ(refused.exit_code, 3) << refused.err;
  EXPECT_EQ(refused.out, "");
  EXPECT_EQ(refused.err,
            "leasehold: connection 'a' was removed and worker worker-1 still holds "
            "it (its lease ends by " +
                utc(old.expires_at_ms) + "); add it again once it has let go\n");

  // The worker reads REMOVED and lets go; then the ID is free, and its next
  // holder's epoch is above the old one's.
  ASSERT_TRUE(worker_leases().release(old, ReleaseMode::kExpire).ok());
  boost::json::object added = connection("a", "STARTED", kUrl);
  added["epoch"] = 1;  // kept from the removed connection
  EXPECT_EQ(ok({"conn", "add", "a", "--url", kUrl}), added);
  EXPECT_EQ(list(), std::vector<boost::json::object>{added});
  EXPECT_FALSE(worker_leases().fenced_write(old, Update().set("last_seq", int64_t{9})).ok())
      << "a late write of the old holder landed on the new connection";
  EXPECT_EQ(lease_to("a", "worker-2").epoch, old.epoch + 1);
}

TEST_P(ConnCommandsTest, RmWaitsForTheWorkerToLetGo) {
  ok({"conn", "add", "a", "--url", kUrl});
  const Lease lease = lease_to("a", "worker-1");
  const std::unique_ptr<Process> rm = start_lh({"conn", "rm", "a"});
  const std::string waiting =
      "leasehold: connection 'a' is removed; waiting up to 30s for worker worker-1 to let go\n";
  ASSERT_TRUE(eventually([&] { return rm->err_so_far() == waiting; }, milliseconds(20'000)))
      << rm->err_so_far();
  EXPECT_FALSE(rm->exited());
  EXPECT_EQ(rm->out_so_far(), "");
  ASSERT_TRUE(worker_leases().release(lease, ReleaseMode::kExpire).ok());
  ASSERT_TRUE(rm->wait_for(milliseconds(20'000)));
  const RunResult r = rm->result();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, waiting);
  EXPECT_EQ(parse_object(r.out), kRemovedA);
  ok({"conn", "add", "a", "--url", kUrl});
}

TEST_P(ConnCommandsTest, RmGivesUpAtItsDeadlineWhileTheWorkerHoldsOn) {
  ok({"conn", "add", "a", "--url", kUrl});
  const Lease lease = lease_to("a", "worker-1");
  const RunResult r = lh({"conn", "rm", "a", "--wait", "1s"});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err,
            "leasehold: connection 'a' is removed; waiting up to 1s for worker worker-1 to let "
            "go\nleasehold: connection 'a' is removed, but worker worker-1 still holds it after "
            "1s; 'conn add a' is refused until it lets go (at the latest when its lease ends at " +
                utc(lease.expires_at_ms) + ")\n");
  // The removal stays.
  EXPECT_TRUE(list().empty());
  EXPECT_EQ(lh({"conn", "add", "a", "--url", kUrl}).exit_code, 3);
  EXPECT_EQ(lh({"conn", "rm", "a"}).exit_code, 2);
  EXPECT_TRUE(worker_leases().renew(lease).ok());
}

// The issue this fixes, with a real worker: a connection removed while it
// streams and added again at once used to get a second owner at once, under
// epoch 1 again. Now rm waits for the worker to let go, and the connection
// added again is streamed from seq 1 under epoch 2, after the old stream.
TEST_P(ConnCommandsTest, ARemovedConnectionAddedAgainStreamsAfterItsOldHolderUnderAHigherEpoch) {
  using namespace std::chrono_literals;
  const std::unique_ptr<Process> sim =
      start_lh({"upstream-sim", "--listen", "127.0.0.1:0", "--rate-per-conn", "50"});
  ASSERT_TRUE(eventually([&] { return sim->out_so_far().find('\n') != std::string::npos; }, 20s))
      << sim->err_so_far();
  const std::string listening(
      parse_object(lines_of(sim->out_so_far()).at(0)).at("listening").as_string());
  const std::string url = "ws://" + listening + "/s/a?from={next_seq}";
  ok({"conn", "add", "a", "--url", url});
  const std::filesystem::path sink = dir() / "w1.jsonl";
  const std::unique_ptr<Process> worker = start_lh(
      {"worker", "--id", "w1", "--lease-ttl", "4s", "--renew-every", "1s", "--reconcile-every",
       "500ms", "--checkpoint-every", "500ms", "--sink", "jsonl:" + sink.string()});
  // The sink's whole lines: epoch and seq of each, and when it was written.
  struct Line {
    int64_t epoch, seq, written_at_ms;
  };
  const auto lines = [&] {
    std::string whole = read_file(sink);
    whole.resize(whole.rfind('\n') + 1);  // npos + 1 == 0: no whole line yet
    std::vector<Line> out;
    for (const std::string& text : lines_of(whole)) {
      const auto o = parse_object(text);
      out.push_back(
          {o.at("epoch").as_int64(), o.at("seq").as_int64(), o.at("written_at_ms").as_int64()});
    }
    return out;
  };
  const auto has_epoch = [&](int64_t epoch) {
    const std::vector<Line> all = lines();
    return std::any_of(all.begin(), all.end(), [&](const Line& l) { return l.epoch == epoch; });
  };
  ASSERT_TRUE(eventually([&] { return has_epoch(1); }, 20s)) << worker->err_so_far();

  const RunResult rm = lh({"conn", "rm", "a"});
  ASSERT_EQ(rm.exit_code, 0) << rm.err;
  EXPECT_EQ(parse_object(rm.out), kRemovedA);
  boost::json::object added = connection("a", "STARTED", url);
  added["epoch"] = 1;
  EXPECT_EQ(ok({"conn", "add", "a", "--url", url}), added);
  ASSERT_TRUE(eventually([&] { return has_epoch(2); }, 20s)) << worker->err_so_far();

  ASSERT_EQ(::kill(worker->pid(), SIGTERM), 0);
  ASSERT_TRUE(worker->wait_for(20'000ms));
  int64_t epoch_1_last_ms = 0, epoch_2_first_ms = INT64_MAX, epoch_2_first_seq = 0;
  for (const Line& l : lines()) {
    ASSERT_TRUE(l.epoch == 1 || l.epoch == 2) << l.epoch;
    if (l.epoch == 1) epoch_1_last_ms = std::max(epoch_1_last_ms, l.written_at_ms);
    if (l.epoch == 2 && l.written_at_ms < epoch_2_first_ms) {
      epoch_2_first_ms = l.written_at_ms;
      epoch_2_first_seq = l.seq;
    }
  }
  EXPECT_LE(epoch_1_last_ms, epoch_2_first_ms) << "the two streams overlapped";
  EXPECT_EQ(epoch_2_first_seq, 1) << "the connection added again did not start afresh";
  ASSERT_EQ(::kill(sim->pid(), SIGTERM), 0);
  EXPECT_TRUE(sim->wait_for(10'000ms));
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
      {"SetNothing", {"conn", "set", "a"}, "nothing to change; give --url, --seq-field or both"},
      {"SetNoId", {"conn", "set", "--url", ok_url}, "ID"},
      {"SetBadId", {"conn", "set", "a/b", "--url", ok_url}, "'a/b'"},
      {"SetStopped", {"conn", "set", "a", "--stopped"}, "--stopped"},
      {"SetUrlHttp",
       {"conn", "set", "a", "--url", "https://h/s?key=" + kSecret},
       "--url: WebSocket URL must start"},
      {"SetUrlUnknownPlaceholder",
       {"conn", "set", "a", "--url", "wss://h/s?key=" + kSecret + "&from={next}"},
       "unknown placeholder {next}"},
      {"SetSeqFieldEmpty", {"conn", "set", "a", "--seq-field", ""}, "--seq-field"},
      {"SetGoodUrlBadSeqField",
       {"conn", "set", "a", "--url", ok_url, "--seq-field", "a[0]"},
       "'a[0]'"},
      {"RmEmptyId", {"conn", "rm", ""}, "connection ID is empty"},
      {"RmDot", {"conn", "rm", "."}, "'.'"},
      {"RmWaitBareNumber", {"conn", "rm", "a", "--wait", "30"}, "--wait: invalid duration '30'"},
      {"RmWaitWord", {"conn", "rm", "a", "--wait", "soon"}, "--wait"},
      {"RmWaitNegative", {"conn", "rm", "a", "--wait", "-1s"}, "--wait"},
      {"RmWaitTooLong", {"conn", "rm", "a", "--wait", "61m"}, "--wait 61m: at most 1h"},
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
  const RunResult set = lh({"conn", "set", "x", "--url", "ws://h/s"});
  EXPECT_EQ(set.exit_code, 2);
  EXPECT_NE(set.err.find("no connection named 'x'"), std::string::npos) << set.err;
}

}  // namespace
}  // namespace leasehold::process_test
