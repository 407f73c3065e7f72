// The stream fleet as processes, on SQLite and on DynamoDB (dynalite, and
// AWS's DynamoDB Local, which has the change feed):
// `leasehold worker`s streaming from an independent upstream (python3-
// websockets, tests/fleet/upstream.py) into JSONL sinks, while workers are
// killed, stopped, paused and added. What the sinks hold afterwards is the
// proof: for every connection no sequence number is missing; a number is
// written twice only after a crash or a pause, never after a handover; and
// the time spans of different epochs never overlap.
#include <signal.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "fleet_fixture.h"

namespace leasehold::process_test {
namespace {

class FleetTest : public FleetFixture {
 protected:
  void kill_and_check_resumed_within(const std::vector<std::string>& more, milliseconds bound);
};

// Kills w1 of three workers started with `more` flags, once it holds
// connections; each of them must stream again on another worker within
// `bound` of the kill.
void FleetTest::kill_and_check_resumed_within(const std::vector<std::string>& more,
                                              milliseconds bound) {
  add_connections(9);
  std::vector<std::unique_ptr<Process>> workers;
  for (const char* id : {"w1", "w2", "w3"}) workers.push_back(start_worker(id, "1000", more));
  ASSERT_TRUE(all_streaming_past(9, 3)) << workers[0]->err_so_far();
  ASSERT_TRUE(eventually(
      [&] {
        auto c = owned_counts();
        return c["w1"] > 0 && c[""] == 0;
      },
      20s));
  const int64_t killed_at = now_ms();
  ASSERT_EQ(::kill(workers[0]->pid(), SIGKILL), 0);
  ASSERT_TRUE(workers[0]->wait_for(10s));
  // What w1 held as it died: read after the kill, since balancing may move
  // connections up to that moment, and its leases stay live for a while yet.
  const std::set<std::string> lost = held_by("w1");
  ASSERT_FALSE(lost.empty());

  std::map<std::string, int64_t> resumed_at;
  ASSERT_TRUE(eventually(
      [&] {
        for (const auto& [conn, lines] : sinks()) {
          if (!lost.contains(conn) || resumed_at.contains(conn)) continue;
          for (const Line& l : lines) {
            if (l.worker != "w1" && l.written_at_ms > killed_at) {
              resumed_at[conn] = l.written_at_ms;
              break;
            }
          }
        }
        return resumed_at.size() == lost.size();
      },
      30s));
  for (const auto& [conn, at] : resumed_at) {
    EXPECT_LE(at - killed_at, bound.count()) << conn;
  }
  workers.erase(workers.begin());
  stop_gracefully(workers);
  check_sinks(lost);
}

// Without sessions: each connection's own lease (4 s) decides.
TEST_P(FleetTest, AKilledWorkersConnectionsStreamAgainWithinTheTtl) {
  kill_and_check_resumed_within({"--session-ttl", "0"}, kTtl + 1s);
}

// With sessions (3 s, the default) and connection leases of a minute: the
// session decides, within its ttl + the clock-skew allowance (500 ms) + 1 s.
TEST_P(FleetTest, AKilledWorkersConnectionsStreamAgainWithinTheSessionTtlWhateverTheirOwn) {
  kill_and_check_resumed_within({"--lease-ttl", "60s", "--renew-every", "20s"},
                                kSessionTtl + 500ms + 1s);
}

// A worker paused past its session's ttl: the others end its session and
// take its connections, though their own leases have most of a minute left;
// it writes nothing after its session's local deadline, which is before the
// session's ttl has run from the pause.
TEST_P(FleetTest, AWorkerPausedPastItsSessionWritesNothingAfterItsDeadline) {
  add_connections(4);
  const std::vector<std::string> long_leases = {"--lease-ttl", "60s", "--renew-every", "20s"};
  std::vector<std::unique_ptr<Process>> workers;
  for (const char* id : {"w1", "w2"}) workers.push_back(start_worker(id, "1000", long_leases));
  ASSERT_TRUE(all_streaming_past(4, 3));
  ASSERT_TRUE(
      eventually([&] { return held_by("w1").size() == 2 && held_by("w2").size() == 2; }, 20s));
  const int64_t paused_at = now_ms();
  ASSERT_EQ(::kill(workers[0]->pid(), SIGSTOP), 0);
  ASSERT_TRUE(eventually([&] { return held_by("w2").size() == 4; }, 30s)) << counts_text();
  const int64_t taken_at = now_ms();
  EXPECT_LE(taken_at - paused_at, std::chrono::milliseconds(kSessionTtl + 500ms + 1s).count());
  // Paused for twice the session ttl.
  std::this_thread::sleep_for(2 * kSessionTtl);
  ASSERT_EQ(::kill(workers[0]->pid(), SIGCONT), 0);
  ASSERT_TRUE(eventually(
      [&] { return workers[0]->err_so_far().find("session lost") != std::string::npos; }, 20s))
      << workers[0]->err_so_far();
  ASSERT_TRUE(all_progress());
  int64_t w1_last = 0;
  for (const auto& [conn, lines] : sinks()) {
    for (const Line& l : lines) {
      if (l.worker == "w1" && l.written_at_ms >= paused_at - 5'000 && l.written_at_ms < taken_at) {
        w1_last = std::max(w1_last, l.written_at_ms);
      }
      // Nothing of w1's in the window between its deadline and its wake-up.
      if (l.worker == "w1") {
        EXPECT_FALSE(l.written_at_ms >=
                         paused_at + std::chrono::milliseconds(kSessionTtl).count() &&
                     l.written_at_ms < taken_at)
            << conn << " seq " << l.seq << " written at +" << l.written_at_ms - paused_at << " ms";
      }
    }
  }
  EXPECT_GT(w1_last, 0) << "w1 was streaming when it was paused";
  stop_gracefully(workers);
  check_sinks({"c0", "c1", "c2", "c3"});
}

TEST_P(FleetTest, ASigtermHandsEveryConnectionOverWithoutARepeat) {
  add_connections(6);
  std::vector<std::unique_ptr<Process>> workers;
  for (const char* id : {"w1", "w2"}) workers.push_back(start_worker(id));
  ASSERT_TRUE(all_streaming_past(6, 3));
  ASSERT_TRUE(eventually([&] { return owned_counts()["w1"] == 3; }, 20s));
  std::set<std::string> handed;
  for (const auto& [conn, owner] : owners()) {
    if (owner == "w1") handed.insert(conn);
  }
  const int64_t stopped_at = now_ms();
  ASSERT_EQ(::kill(workers[0]->pid(), SIGTERM), 0);
  ASSERT_TRUE(workers[0]->wait_for(10s));
  EXPECT_EQ(workers[0]->result().exit_code, 0) << workers[0]->result().err;

  std::map<std::string, int64_t> resumed_at;
  ASSERT_TRUE(eventually(
      [&] {
        for (const auto& [conn, lines] : sinks()) {
          if (!handed.contains(conn) || resumed_at.contains(conn)) continue;
          for (const Line& l : lines) {
            if (l.worker == "w2" && l.written_at_ms > stopped_at) {
              resumed_at[conn] = l.written_at_ms;
              break;
            }
          }
        }
        return resumed_at.size() == handed.size();
      },
      20s));
  for (const auto& [conn, at] : resumed_at) {
    EXPECT_LE(at - stopped_at, std::chrono::milliseconds(kReconcileEvery + 1s).count()) << conn;
  }
  workers.erase(workers.begin());
  stop_gracefully(workers);
  check_sinks({});
}

TEST_P(FleetTest, AWorkerPausedPastItsTtlWritesNothingMoreForWhatItLost) {
  add_connections(4);
  std::vector<std::unique_ptr<Process>> workers;
  for (const char* id : {"w1", "w2"}) workers.push_back(start_worker(id));
  ASSERT_TRUE(all_streaming_past(4, 3));
  // What w1 holds as it is paused, once the fleet is balanced: connection → epoch.
  std::map<std::string, int64_t> held;
  ASSERT_TRUE(eventually(
      [&] {
        held.clear();
        int live = 0;
        for (const std::string& line : lines_of(lh({"conn", "list"}).out)) {
          const auto o = parse_object(line);
          if (o.at("expires_at_ms").as_int64() <= now_ms()) continue;
          ++live;
          if (o.at("owner") == "w1") {
            held[std::string(o.at("id").as_string())] = o.at("epoch").as_int64();
          }
        }
        return live == 4 && held.size() == 2;
      },
      20s));
  const auto paused_at = std::chrono::steady_clock::now();
  ASSERT_EQ(::kill(workers[0]->pid(), SIGSTOP), 0);
  ASSERT_TRUE(eventually([&] { return owned_counts()["w2"] == 4; }, 30s));
  // The scenario: w1 stays paused for twice the ttl.
  std::this_thread::sleep_until(paused_at + 2 * kTtl);
  const int64_t resumed_at = now_ms();
  ASSERT_EQ(::kill(workers[0]->pid(), SIGCONT), 0);
  // Once w1 has noticed (it says so for each), nothing it wrote under the
  // leases it lost is later than its wake-up. (It may take connections anew,
  // under new epochs, as its share.)
  ASSERT_TRUE(eventually(
      [&] {
        const std::string err = workers[0]->err_so_far();
        size_t losses = 0;
        for (size_t at = err.find("lost c"); at != std::string::npos;
             at = err.find("lost c", at + 1)) {
          ++losses;
        }
        return losses >= 2;
      },
      20s))
      << workers[0]->err_so_far();
  ASSERT_TRUE(all_progress());
  for (const auto& [conn, lines] : sinks()) {
    for (const Line& l : lines) {
      if (l.worker == "w1" && held.contains(conn) && l.epoch == held[conn]) {
        EXPECT_LT(l.written_at_ms, resumed_at) << conn << " seq " << l.seq;
      }
    }
  }
  stop_gracefully(workers);
  check_sinks({"c0", "c1", "c2", "c3"});
}

TEST_P(FleetTest, ConnStopClosesWithinARenewPeriodAndStartResumes) {
  add_connections(2);
  std::vector<std::unique_ptr<Process>> workers;
  workers.push_back(start_worker("w1"));
  ASSERT_TRUE(all_streaming_past(2, 3));
  const int64_t stopped_at = now_ms();
  ASSERT_EQ(lh({"conn", "stop", "c0"}).exit_code, 0);
  ASSERT_TRUE(eventually([&] { return owners()["c0"].empty(); }, 10s));
  const int64_t last = last_seq("c0");
  int64_t last_written = 0;
  const auto all = sinks();
  for (const Line& l : all.at("c0")) last_written = std::max(last_written, l.written_at_ms);
  EXPECT_LE(last_written - stopped_at, std::chrono::milliseconds(kRenewEvery).count());
  ASSERT_TRUE(all_streaming_past(1, 0));
  ASSERT_EQ(lh({"conn", "start", "c0"}).exit_code, 0);
  ASSERT_TRUE(eventually([&] { return last_seq("c0") > last + 2; }, 20s));
  stop_gracefully(workers);
  check_sinks({});
}

TEST_P(FleetTest, ThirtyConnectionsSpreadTenTenTenWhenTwoWorkersJoin) {
  add_connections(30);
  std::vector<std::unique_ptr<Process>> workers;
  workers.push_back(start_worker("w1"));
  ASSERT_TRUE(eventually([&] { return owned_counts()["w1"] == 30; }, 30s));
  workers.push_back(start_worker("w2"));
  workers.push_back(start_worker("w3"));
  ASSERT_TRUE(eventually(
      [&] {
        auto c = owned_counts();
        return c[""] == 0 && std::abs(c["w1"] - 10) <= 1 && std::abs(c["w2"] - 10) <= 1 &&
               std::abs(c["w3"] - 10) <= 1;
      },
      30s))
      << "owners: " << [&] {
           std::string s;
           for (const auto& [w, n] : owned_counts()) s += w + "=" + std::to_string(n) + " ";
           return s;
         }();
  ASSERT_TRUE(all_streaming_past(30, 3));
  stop_gracefully(workers);
  check_sinks({});
}

// Workers of the reference pattern's own code share the table: they take
// expired leases by setting only the owner and the expiry. The guarantees
// hold for the mixed fleet through a crash.
TEST_P(FleetTest, AMixedFleetWithAForeignWorkerKeepsTheGuarantees) {
  add_connections(9);
  std::vector<std::unique_ptr<Process>> workers;
  workers.push_back(start_worker("w1"));
  workers.push_back(start_worker("w2", "6"));  // leaves room for the foreign worker later
  ASSERT_TRUE(all_streaming_past(9, 3));
  ASSERT_TRUE(eventually(
      [&] {
        auto c = owned_counts();
        return c["w1"] >= 3 && c["w2"] >= 3 && c[""] == 0;
      },
      20s));
  // The foreign worker takes up to 3 connections whose leases have expired.
  workers.push_back(
      std::make_unique<Process>(std::vector<std::string>{FOREIGN_WORKER_BIN, store_uri(), "F",
                                                         (dir() / "F.jsonl").string(), "4000"},
                                dir()));
  ASSERT_EQ(::kill(workers[0]->pid(), SIGKILL), 0);
  ASSERT_TRUE(workers[0]->wait_for(10s));
  const std::set<std::string> lost = held_by("w1");  // as it died (see above)
  // w1's connections go to w2 (up to its 6) and to F, which takes them over
  // w1's token, left in place.
  ASSERT_TRUE(eventually(
      [&] {
        auto c = owned_counts();
        return c["w1"] == 0 && c[""] == 0 && c["F"] == 3;
      },
      30s))
      << "F: " << workers[2]->err_so_far();
  ASSERT_TRUE(all_progress());
  // F stops, releasing as that code does (expiry 0, its owner left in place),
  // and a new worker takes what F had; the balance then evens them out (9
  // between two workers: 5 and 4, either way round).
  ASSERT_EQ(::kill(workers[2]->pid(), SIGTERM), 0);
  ASSERT_TRUE(workers[2]->wait_for(10s));
  workers.push_back(start_worker("w3"));
  ASSERT_TRUE(eventually(
      [&] {
        auto c = owned_counts();
        return c["w2"] + c["w3"] == 9 && std::abs(c["w2"] - c["w3"]) == 1;
      },
      20s))
      << counts_text();
  ASSERT_TRUE(all_progress());
  workers.erase(workers.begin());
  stop_gracefully(workers);
  check_sinks(lost);
}

// An upstream that sends garbage among its messages, one that sends a frame
// over the limit, and one that drops the connection every 20 messages: the
// worker keeps streaming what is good, says what is wrong in last_error, and
// loses nothing.
TEST_P(FleetTest, BadUpstreamsAreSurvivedAndReportedAndNothingIsLost) {
  const std::string base = "ws://127.0.0.1:" + port_;
  ASSERT_EQ(lh({"conn", "add", "garbage", "--url", base + "/garbage/g?from={next_seq}"}).exit_code,
            0);
  ASSERT_EQ(lh({"conn", "add", "huge", "--url", base + "/huge/h?from={next_seq}"}).exit_code, 0);
  ASSERT_EQ(
      lh({"conn", "add", "drops", "--url", base + "/drop/d?from={next_seq}&after=20"}).exit_code,
      0);
  std::vector<std::unique_ptr<Process>> workers;
  workers.push_back(start_worker("w1"));
  ASSERT_TRUE(eventually([&] { return last_seq("garbage") > 30 && last_seq("drops") > 50; }, 30s))
      << workers[0]->err_so_far();
  std::map<std::string, std::string> errors;
  ASSERT_TRUE(eventually(
      [&] {
        for (const std::string& line : lines_of(lh({"conn", "list"}).out)) {
          const auto o = parse_object(line);
          errors[std::string(o.at("id").as_string())] = std::string(o.at("last_error").as_string());
        }
        return !errors["huge"].empty();
      },
      20s));
  EXPECT_NE(errors["huge"].find("a message exceeded 1048576 bytes"), std::string::npos)
      << errors["huge"];
  EXPECT_EQ(last_seq("huge"), 0) << "the stream never gets past its oversized first frame";
  EXPECT_NE(workers[0]->err_so_far().find("message refused"), std::string::npos);
  stop_gracefully(workers);
  check_sinks({});
}

// More connections than the fleet holds: every slot is used. One worker of
// 5 with 6 connections streams 5 (it streamed 1, forever); two of 5 with 8
// stream all 8, and when one stops (scale-in), the other fills its 5 at once
// (it stayed at its share of what was left).
TEST_P(FleetTest, OverCapacityEverySlotIsUsed) {
  add_connections(6);
  std::vector<std::unique_ptr<Process>> workers;
  workers.push_back(start_worker("w1", "5"));
  ASSERT_TRUE(eventually([&] { return owned_counts()["w1"] == 5; }, 20s)) << counts_text();
  ASSERT_TRUE(eventually([&] { return streaming_past(3) == 5; }, 20s)) << counts_text();
  add_connections(2, "d");
  workers.push_back(start_worker("w2", "5"));
  ASSERT_TRUE(eventually([&] { return streaming_past(3) == 8; }, 20s)) << counts_text();
  // Eight between two of five: both full or 4 and 4, as the balance goes.
  ASSERT_TRUE(eventually([&] { return owned_counts()["w1"] + owned_counts()["w2"] == 8; }, 10s))
      << counts_text();
  ASSERT_EQ(::kill(workers[0]->pid(), SIGTERM), 0);
  ASSERT_TRUE(workers[0]->wait_for(10s));
  const int64_t exited_at = now_ms();
  ASSERT_TRUE(eventually([&] { return owned_counts()["w2"] == 5; }, 10s)) << counts_text();
  // Taken because w1 gave its leases back, not because they ran out: a
  // lease w1 still held ends at least ttl - renew period (3 s) after its
  // exit, plus the clock-skew bound. (Measured from the exit, not the
  // signal, so that a slow exit on a loaded machine does not count.)
  EXPECT_LT(now_ms() - exited_at, std::chrono::milliseconds(3s).count());
  // Five of the eight stream on (the fleet holds five now).
  std::map<std::string, int64_t> before;
  for (const auto& [conn, lines] : sinks()) before[conn] = last_seq(conn);
  ASSERT_TRUE(eventually(
      [&] {
        int moving = 0;
        for (const auto& [conn, seq] : before) moving += last_seq(conn) >= seq + 2 ? 1 : 0;
        return moving == 5;
      },
      20s));
  workers.erase(workers.begin());
  stop_gracefully(workers);
  for (auto& [conn, lines] : sinks()) {
    std::set<int64_t> seqs;
    for (const Line& l : lines) {
      EXPECT_TRUE(seqs.insert(l.seq).second) << conn << " seq " << l.seq << " written twice";
    }
  }
}

// A peer that accepts and closes at once is retried after waits that double
// (each drawn between half and all of 200 ms, 400 ms, ... up to 10 s), not
// every 200 ms; the worker says what is wrong, and /healthz says its streams
// make no progress.
TEST_P(FleetTest, AFlappingUpstreamIsRetriedWithCappedBackoffAndReported) {
  ASSERT_EQ(lh({"conn", "add", "f", "--url", "ws://127.0.0.1:" + port_ + "/flap/f?from={next_seq}"})
                .exit_code,
            0);
  std::vector<std::unique_ptr<Process>> workers;
  workers.push_back(
      start_worker("w1", "1000", {"--metrics-listen", "127.0.0.1:0", "--stall-after", "2s"}));
  // The tries, by the upstream's clock.
  const auto tries = [&] {
    std::vector<int64_t> at;
    for (const std::string& line : lines_of(upstream_->err_so_far())) {
      if (line.starts_with("flap f ")) at.push_back(std::stoll(line.substr(7)));
    }
    return at;
  };
  ASSERT_TRUE(eventually([&] { return !tries().empty(); }, 20s)) << workers[0]->err_so_far();
  const int64_t first = tries().front();
  // The scenario: eight seconds of a flapping peer. Waits of at least 100,
  // 200, 400, 800, 1600 and 3200 ms: at most 7 tries (every 200 ms: 40).
  std::this_thread::sleep_for(std::chrono::milliseconds(first + 8000 - now_ms()));
  const std::vector<int64_t> at = tries();
  EXPECT_GE(at.size(), 4u) << "it keeps trying";
  EXPECT_LE(at.size(), 7u) << "it retried without backing off";
  for (size_t i = 1; i < at.size(); ++i) {
    // Each wait at least half its step (100 ms, then twice the one before),
    // less the clocks' resolution. What the worker does between a failure
    // and its wait (writing the error, on a store that may be slow) only
    // lengthens the time between tries, so that one gap may well be longer
    // than the next: the floor is what backing off guarantees.
    EXPECT_GE(at[i] - at[i - 1] + 5, int64_t{100} << (i - 1)) << "try " << i;
  }
  std::string error;
  ASSERT_TRUE(eventually(
      [&] {
        for (const std::string& line : lines_of(lh({"conn", "list"}).out)) {
          error = std::string(parse_object(line).at("last_error").as_string());
        }
        return !error.empty();
      },
      10s));
  // Its stream has made no progress for longer than --stall-after.
  const std::string port = metrics_port(*workers[0]);
  ASSERT_FALSE(port.empty());
  const RunResult health =
      run({"curl", "-s", "-w", "\n%{http_code}", "http://127.0.0.1:" + port + "/healthz"});
  ASSERT_EQ(health.exit_code, 0) << health.err;
  EXPECT_TRUE(health.out.ends_with("\n503")) << health.out;
  EXPECT_NE(health.out.find("\"status\":\"failing\""), std::string::npos) << health.out;
  EXPECT_NE(health.out.find("no connection it owns has had a message"), std::string::npos)
      << health.out;
  stop_gracefully(workers);
}

// `conn set --url` of a streaming connection: its worker hands it over, and
// the new URL is streamed under a higher epoch after the old stream closed,
// from the checkpoint, with no gap and no repeat.
TEST_P(FleetTest, ConnSetUrlMovesTheStreamUnderANewEpochWithoutOverlap) {
  add_connections(2);
  std::vector<std::unique_ptr<Process>> workers;
  workers.push_back(start_worker("w1"));
  ASSERT_TRUE(all_streaming_past(2, 3));
  const RunResult set =
      lh({"conn", "set", "c0", "--url", "ws://127.0.0.1:" + port_ + "/s/c0-moved?from={next_seq}"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  // The upstream names the connection in each message: the moved stream's say so.
  ASSERT_TRUE(eventually(
      [&] {
        const std::string all = read_file(dir() / "w1.jsonl");
        return all.find("\"conn\":\"c0-moved\"") != std::string::npos;
      },
      20s))
      << workers[0]->err_so_far();
  ASSERT_TRUE(all_progress());
  std::set<int64_t> epochs;
  for (const Line& l : sinks().at("c0")) epochs.insert(l.epoch);
  EXPECT_EQ(epochs.size(), 2u) << "a new epoch for the new URL";
  stop_gracefully(workers);
  check_sinks({});  // no overlap, no gap, no repeat
}

TEST_P(FleetTest, BadWorkerFlagsAreRefusedBeforeAnythingStarts) {
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"worker", "--id", ""},
           {"worker", "--id", "a b"},
           {"worker", "--id", "w", "--lease-ttl", "1s", "--renew-every", "1s"},
           {"worker", "--id", "w", "--sink", "file:/tmp/x"},
           {"worker", "--id", "w", "--max-connections", "0"},
           {"worker", "--id", "w", "--max-clock-skew", "-1s"},
           {"worker", "--id", "w", "--lease-ttl", "4s", "--renew-every", "1s", "--max-clock-skew",
            "3s"},
           {"worker", "--id", "w", "--metrics-listen", "0.0.0.0:0"},
           {"worker", "--id", "w", "--session-ttl", "500ms"},
           {"worker", "--id", "w", "--session-ttl", "3s", "--session-renew-every", "2s"},
           {"worker", "--id", "w", "--session-ttl", "0", "--session-renew-every", "1s"},
           {"worker", "--id", "w", "--session-ttl", "-1s"},
           {"worker", "--id", "w", "--nudge-read-every", "-1s"},
           {"worker", "--id", "w", "--session-ttl", "0", "--nudge-read-every", "200ms"}}) {
    const RunResult r = lh(bad);
    EXPECT_EQ(r.exit_code, 2) << bad.back() << ": " << r.err;
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, FleetTest,
                         ::testing::Values(Backend::kSqlite, Backend::kDynamoDb,
                                           Backend::kDynamoDbLocal),
                         backend_name);

// What the command line does alike on every store: on SQLite only.
class FleetNamingTest : public FleetTest {};

// A worker given no --id (as tasks of one ECS task definition are) names
// itself after its host and 8 random hex digits, and owns connections under
// that name; a second one started alike gets another name.
TEST_P(FleetNamingTest, WorkersWithoutAnIdNameThemselvesApart) {
  add_connections(2);
  std::vector<std::unique_ptr<Process>> workers;
  for (const char* sink : {"a.jsonl", "b.jsonl"}) {
    workers.push_back(start_lh({"worker", "--reconcile-every", "500ms", "--sink",
                                "jsonl:" + (dir() / sink).string()}));
  }
  const std::regex named(R"re("msg":"worker started".*"worker":"([A-Za-z0-9._~-]+-[0-9a-f]{8})")re");
  std::vector<std::string> names;
  for (const auto& w : workers) {
    std::smatch name;
    ASSERT_TRUE(eventually(
        [&] {
          const std::string err = w->err_so_far();
          return std::regex_search(err, name, named);
        },
        20s))
        << w->err_so_far();
    names.push_back(name[1].str());
  }
  EXPECT_NE(names[0], names[1]);
  ASSERT_TRUE(eventually(
      [&] {
        auto c = owned_counts();
        return c[""] == 0 && c[names[0]] + c[names[1]] == 2;
      },
      20s))
      << counts_text();
}

INSTANTIATE_TEST_SUITE_P(Sqlite, FleetNamingTest, ::testing::Values(Backend::kSqlite),
                         backend_name);

}  // namespace
}  // namespace leasehold::process_test
