// The stream fleet's liveness as processes, with the defaults of `leasehold
// worker` (a 3 s session renewed every 800 ms, a 2 s reconcile, 30-minute
// connection leases): whatever fails, a STARTED connection that nobody
// streams is streaming again within seconds, never its own lease's ttl.
// A crash loop of the only worker; a connection stopped, its holder killed,
// and started again; a store outage for every worker; and many workers
// that come and go under new IDs, which must not make each reconcile read
// more.
#include <iostream>
#include <regex>
#include <thread>

#include "fleet_fixture.h"
#include "tests/dynamodb/fault_proxy.h"

namespace leasehold::process_test {
namespace {

// A session ttl, two reconcile periods with their jitter, and the clock-skew
// allowance: what a connection nobody streams may wait, at the defaults.
constexpr auto kLivenessBound = kSessionTtl + 2 * 2400ms + 500ms;

class FleetLivenessProcessTest : public FleetFixture {
 protected:
  // A worker with the defaults: only its ID and its sink (one file per run)
  // are given, and the store (the test's, unless `store` says).
  std::unique_ptr<Process> start_default(const std::string& id, std::vector<std::string> more = {},
                                         const std::string& store = "") {
    const std::string sink = (dir() / (id + "-" + std::to_string(++runs_) + ".jsonl")).string();
    std::vector<std::string> argv = {
        leasehold_bin(), "--store",      store.empty() ? store_uri() : store, "worker", "--id", id,
        "--sink",        "jsonl:" + sink};
    argv.insert(argv.end(), more.begin(), more.end());
    return std::make_unique<Process>(argv, dir());
  }

  // Waits until the worker says it has joined the fleet.
  static bool joined(const Process& w, milliseconds limit = 20s) {
    return eventually([&] { return w.err_so_far().find("worker started") != std::string::npos; },
                      limit);
  }

  static void kill9(Process& w) {
    ASSERT_EQ(::kill(w.pid(), SIGKILL), 0);
    ASSERT_TRUE(w.wait_for(10s));
  }

  // For each of `conns`, when it was first written after `after_ms`;
  // waits until all have been, up to `limit`.
  std::map<std::string, int64_t> first_written_after(const std::vector<std::string>& conns,
                                                     int64_t after_ms, milliseconds limit) {
    std::map<std::string, int64_t> first;
    (void)eventually(
        [&] {
          for (const auto& [conn, lines] : sinks()) {
            for (const Line& l : lines) {
              if (l.written_at_ms <= after_ms) continue;
              auto [it, added] = first.try_emplace(conn, l.written_at_ms);
              it->second = std::min(it->second, l.written_at_ms);
            }
          }
          return std::all_of(conns.begin(), conns.end(),
                             [&](const std::string& c) { return first.contains(c); });
        },
        limit);
    return first;
  }

  std::vector<std::string> connection_ids(int n) {
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) ids.push_back("c" + std::to_string(i));
    return ids;
  }

  int runs_ = 0;
};

// The only worker crashes, is restarted, and dies again as soon as it has
// joined, four times over; then it stays up. Each run names every earlier
// session that may still hold connections, and the last takes them all back
// in its first reconcile: no connection waits for its 30-minute lease.
TEST_P(FleetLivenessProcessTest, ACrashLoopOfTheOnlyWorkerEndsWithEveryConnectionBack) {
  add_connections(10);
  const std::vector<std::string> ids = connection_ids(10);
  std::unique_ptr<Process> w = start_default("w1");
  ASSERT_TRUE(all_streaming_past(10, 3, 60s)) << w->err_so_far();
  for (int run = 0; run < 4; ++run) {
    kill9(*w);
    w = start_default("w1");
    ASSERT_TRUE(joined(*w)) << w->err_so_far();  // it waits out its last run's session
  }
  kill9(*w);
  const int64_t killed_at = now_ms();
  w = start_default("w1");
  ASSERT_TRUE(joined(*w)) << w->err_so_far();
  const int64_t joined_at = now_ms();
  const auto first = first_written_after(ids, killed_at, 30s);
  ASSERT_EQ(first.size(), ids.size()) << w->err_so_far();
  int64_t latest = 0;
  for (const auto& [conn, at] : first) latest = std::max(latest, at);
  // The last run waits for its predecessor's session (3 s), then takes
  // everything back at once: within two reconcile periods of joining,
  // not four (stranded), nor thirty minutes.
  EXPECT_LE(latest - joined_at, 2000)
      << "the last connection came back " << latest - joined_at << " ms after the worker joined";
  EXPECT_LE(latest - killed_at, std::chrono::milliseconds(kLivenessBound).count());
  std::vector<std::unique_ptr<Process>> workers;
  workers.push_back(std::move(w));
  stop_gracefully(workers);
  check_sinks({ids.begin(), ids.end()}, /*writes_max=*/6);  // five crashes
}

// The operator's case: `conn stop C`, C's holder killed at once (before it
// read that), a peer alive, and `conn start C` ten seconds later. The peer
// ended the dead session and released C on its behalf, so C is free the
// moment it is started.
TEST_P(FleetLivenessProcessTest, StopThenKillThenStartWithAPeerAliveStreamsAgain) {
  add_connections(1);
  std::vector<std::unique_ptr<Process>> workers;
  workers.push_back(start_default("w1"));
  ASSERT_TRUE(all_streaming_past(1, 3, 30s)) << workers[0]->err_so_far();
  workers.push_back(start_default("w2"));
  ASSERT_TRUE(joined(*workers[1]));
  ASSERT_EQ(held_by("w1"), std::set<std::string>{"c0"});
  ASSERT_EQ(lh({"conn", "stop", "c0"}).exit_code, 0);
  kill9(*workers[0]);
  // The operator comes back ten seconds later (scenario time, not a wait
  // for something to happen).
  std::this_thread::sleep_for(10s);
  const int64_t started_at = now_ms();
  ASSERT_EQ(lh({"conn", "start", "c0"}).exit_code, 0);
  const auto first = first_written_after({"c0"}, started_at, 30s);
  ASSERT_TRUE(first.contains("c0")) << "c0 never streamed again: " << workers[1]->err_so_far();
  EXPECT_LE(first.at("c0") - started_at, std::chrono::milliseconds(kLivenessBound).count());
  std::cout << "c0 streamed again " << first.at("c0") - started_at << " ms after conn start\n";
  workers.erase(workers.begin());
  stop_gracefully(workers);
  check_sinks({"c0"});
}

// Every worker loses the store for ten seconds (SQLite: another process
// holds its write lock; DynamoDB: every request answered 500): each stream
// stops before its session's deadline, and all are back within two seconds
// of the store's return.
TEST_P(FleetLivenessProcessTest, AfterATenSecondStoreOutageAllStreamAgainWithinTwoSeconds) {
  add_connections(6);
  const std::vector<std::string> ids = connection_ids(6);
  std::unique_ptr<testing::FaultProxy> proxy;
  std::string worker_store;
  if (GetParam() != Backend::kSqlite) {
    std::smatch port;
    const std::string uri = store_uri();
    ASSERT_TRUE(std::regex_search(uri, port, std::regex("127\\.0\\.0\\.1:([0-9]+)")));
    auto started = testing::FaultProxy::start(static_cast<uint16_t>(std::stoi(port[1])));
    ASSERT_TRUE(started.ok()) << started.status().to_string();
    proxy = std::move(*started);
    worker_store = std::regex_replace(uri, std::regex("127\\.0\\.0\\.1:[0-9]+"),
                                      "127.0.0.1:" + std::to_string(proxy->port()));
  }
  std::vector<std::unique_ptr<Process>> workers;
  for (const char* id : {"w1", "w2"}) workers.push_back(start_default(id, {}, worker_store));
  ASSERT_TRUE(all_streaming_past(6, 3, 30s)) << workers[0]->err_so_far();

  int64_t down_at = 0, back_at = 0;
  if (proxy) {
    down_at = now_ms();
    proxy->add_rule({"", 0ms, testing::FaultAction::kReply, -1, 500, "InternalServerError"});
    std::this_thread::sleep_for(10s);  // the outage itself
    proxy->clear_rules();
    back_at = now_ms();
  } else {
    // Another process takes SQLite's write lock and keeps it ten seconds.
    Process locker({PYTHON3, "-c",
                    "import sqlite3, sys, time\n"
                    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                    "c.execute('BEGIN EXCLUSIVE')\n"
                    "print(int(time.time() * 1000), flush=True)\n"
                    "time.sleep(10)\n"
                    "c.execute('COMMIT')\n"
                    "print(int(time.time() * 1000), flush=True)\n",
                    db_path().string()},
                   dir());
    ASSERT_TRUE(locker.wait_for(30s));
    const std::vector<std::string> times = lines_of(locker.result().out);
    ASSERT_EQ(times.size(), 2u) << locker.result().err;
    down_at = std::stoll(times[0]);
    back_at = std::stoll(times[1]);
  }
  // Nothing was written from a session ttl after the outage began: each
  // session's last renewal came before it.
  for (const auto& [conn, lines] : sinks()) {
    for (const Line& l : lines) {
      EXPECT_FALSE(l.written_at_ms > down_at + std::chrono::milliseconds(kSessionTtl).count() &&
                   l.written_at_ms < back_at)
          << conn << " written " << l.written_at_ms - down_at << " ms into the outage";
    }
  }
  const auto first = first_written_after(ids, back_at, 30s);
  ASSERT_EQ(first.size(), ids.size()) << workers[0]->err_so_far();
  int64_t latest = 0;
  for (const auto& [conn, at] : first) latest = std::max(latest, at);
  EXPECT_LE(latest - back_at, 2000)
      << "the last stream came back " << latest - back_at << " ms after the store did";
  std::cout << "every stream back " << latest - back_at << " ms after the store\n";
  stop_gracefully(workers);
  check_sinks({ids.begin(), ids.end()});
}

// Items a worker's store reads have returned so far (its /metrics).
int64_t items_read(const std::string& metrics) {
  int64_t total = 0;
  const std::regex line("leasehold_store_items_read_total\\{[^}]*\\} ([0-9.e+]+)");
  for (std::sregex_iterator it(metrics.begin(), metrics.end(), line), end; it != end; ++it) {
    total += static_cast<int64_t>(std::stod((*it)[1]));
  }
  return total;
}

// Two hundred workers come and go under new IDs (as autoscaled tasks do),
// half killed, half stopped, next to one that stays. A dead one's item is
// removed after five reconcile periods, so what the one that stays reads
// each reconcile is the members alive and those dead since then, not every
// ID that ever joined: once the churn stops, it is back to what it was
// (before, it grew by one item per ID for good).
TEST_P(FleetLivenessProcessTest, TwoHundredRestartsUnderNewIdsLeaveTheReadsFlat) {
  if (GetParam() != Backend::kSqlite) GTEST_SKIP() << "the same code on every store: SQLite only";
  std::unique_ptr<Process> stays = start_default("a", {"--metrics-listen", "127.0.0.1:0"});
  ASSERT_TRUE(joined(*stays)) << stays->err_so_far();
  const std::string port = metrics_port(*stays);
  ASSERT_FALSE(port.empty());
  const auto read_so_far = [&] {
    const RunResult r = run({"curl", "-s", "http://127.0.0.1:" + port + "/metrics"});
    EXPECT_EQ(r.exit_code, 0);
    return items_read(r.out);
  };
  // Items read per reconcile period (2 s), over five.
  const auto per_reconcile = [&] {
    const int64_t before = read_so_far();
    std::this_thread::sleep_for(10s);  // the window measured
    return static_cast<double>(read_so_far() - before) / 5;
  };
  const double baseline = per_reconcile();
  int64_t last_window_start = 0;
  double during = 0;
  for (int i = 0; i < 200; ++i) {
    std::unique_ptr<Process> t = start_default("t" + std::to_string(i));
    ASSERT_TRUE(joined(*t)) << t->err_so_far();
    if (i % 2 == 0) {
      kill9(*t);
    } else {
      ASSERT_EQ(::kill(t->pid(), SIGTERM), 0);
      ASSERT_TRUE(t->wait_for(20s));
    }
    // Over the last reconcile periods of the churn, what it read.
    if (i == 159) {
      last_window_start = now_ms();
      during = static_cast<double>(read_so_far());
    }
  }
  during = (static_cast<double>(read_so_far()) - during) * 2000 /
           static_cast<double>(now_ms() - last_window_start);
  // Once the churn is over, back to what it read before.
  EXPECT_TRUE(eventually([&] { return per_reconcile() <= baseline + 2; }, 60s))
      << "items read per reconcile: " << baseline << " before, " << during
      << " over the last of the restarts";
  std::cout << "items read per reconcile period: " << baseline << " before, " << during
            << " over the last 40 of 200 restarts, back to the baseline since\n";
  std::vector<std::unique_ptr<Process>> workers;
  workers.push_back(std::move(stays));
  stop_gracefully(workers);
}

INSTANTIATE_TEST_SUITE_P(Backends, FleetLivenessProcessTest,
                         ::testing::Values(Backend::kSqlite, Backend::kDynamoDb,
                                           Backend::kDynamoDbLocal),
                         backend_name);

}  // namespace
}  // namespace leasehold::process_test
