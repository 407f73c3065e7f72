// What the stream fleet's process tests share (fleet_test.cc,
// fleet_liveness_test.cc): `leasehold worker`s streaming from an
// independent upstream (python3-websockets, tests/fleet/upstream.py) into
// JSONL sinks in the test's directory, on SQLite and on DynamoDB
// (dynalite), and what the sinks hold afterwards read back and checked.
#pragma once

#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "process_util.h"

namespace leasehold::process_test {

using namespace std::chrono_literals;

constexpr auto kTtl = 4s;
constexpr auto kSessionTtl = 3s;  // the worker's default
constexpr auto kRenewEvery = 1s;
constexpr auto kReconcileEvery = 500ms;

inline int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The port a worker started with --metrics-listen serves on, from its log
// ("" before it says).
inline std::string metrics_port(const Process& worker) {
  for (const std::string& line : lines_of(worker.err_so_far())) {
    const auto o = parse_object(line);
    if (o.contains("metrics_port")) return std::to_string(o.at("metrics_port").as_int64());
  }
  return std::string();
}

struct Line {
  int64_t seq = 0;
  std::string worker;
  int64_t epoch = 0;
  int64_t written_at_ms = 0;
};

class FleetFixture : public BackendTest {
 protected:
  void SetUp() override {
    BackendTest::SetUp();
    const auto port_file = dir() / "upstream.port";
    upstream_ = std::make_unique<Process>(
        std::vector<std::string>{PYTHON3,
                                 std::string(LEASEHOLD_SOURCE_DIR) + "/tests/fleet/upstream.py",
                                 "--port-file", port_file.string(), "--rate", "40"},
        dir());
    ASSERT_TRUE(eventually([&] { return !read_file(port_file).empty(); }, 20s))
        << upstream_->err_so_far();
    port_ = read_file(port_file);
    while (!port_.empty() && (port_.back() == '\n' || port_.back() == ' ')) port_.pop_back();
  }

  void add_connections(int n, const std::string& prefix = "c") {
    for (int i = 0; i < n; ++i) {
      const std::string id = prefix + std::to_string(i);
      const RunResult r = lh({"conn", "add", id, "--url",
                              "ws://127.0.0.1:" + port_ + "/s/" + id + "?from={next_seq}"});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
  }

  std::unique_ptr<Process> start_worker(const std::string& id,
                                        const std::string& max_connections = "1000",
                                        std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"worker",
                                     "--id",
                                     id,
                                     "--reconcile-every",
                                     "500ms",
                                     "--checkpoint-every",
                                     "500ms",
                                     "--max-connections",
                                     max_connections,
                                     "--sink",
                                     "jsonl:" + (dir() / (id + ".jsonl")).string()};
    // The connections' own leases: 4 s, renewed every second, unless `more` says.
    if (std::find(more.begin(), more.end(), "--lease-ttl") == more.end()) {
      args.insert(args.end(), {"--lease-ttl", "4s", "--renew-every", "1s"});
    }
    args.insert(args.end(), more.begin(), more.end());
    return start_lh(args);
  }

  // The connections that have streamed past `seq`.
  int streaming_past(int64_t seq) {
    int n = 0;
    for (const auto& [conn, lines] : sinks()) {
      for (const Line& l : lines) {
        if (l.seq > seq) {
          ++n;
          break;
        }
      }
    }
    return n;
  }

  // conn list: id → owner ("" when the lease has expired or was released).
  std::map<std::string, std::string> owners() {
    std::map<std::string, std::string> out;
    const RunResult r = lh({"conn", "list"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const int64_t now = now_ms();
    for (const std::string& line : lines_of(r.out)) {
      const auto o = parse_object(line);
      const bool live = o.at("expires_at_ms").as_int64() > now;
      out[std::string(o.at("id").as_string())] = live ? std::string(o.at("owner").as_string()) : "";
    }
    return out;
  }

  // The connections whose live lease names `worker`.
  std::set<std::string> held_by(const std::string& worker) {
    std::set<std::string> out;
    for (const auto& [conn, owner] : owners()) {
      if (owner == worker) out.insert(conn);
    }
    return out;
  }

  std::map<std::string, int> owned_counts() {
    std::map<std::string, int> counts;
    for (const auto& [id, owner] : owners()) ++counts[owner];
    return counts;
  }

  // "owner=N ..." of owned_counts(), for a failure's message.
  std::string counts_text() {
    std::string out;
    for (const auto& [owner, n] : owned_counts()) {
      out += (owner.empty() ? "(none)" : owner) + "=" + std::to_string(n) + " ";
    }
    return out;
  }

  // Every line of every sink, by connection, in file order per worker. A
  // sink read while its worker writes may end in part of a line: only whole
  // lines count.
  std::map<std::string, std::vector<Line>> sinks() {
    std::map<std::string, std::vector<Line>> out;
    for (const auto& entry : std::filesystem::directory_iterator(dir())) {
      if (entry.path().extension() != ".jsonl") continue;
      std::string whole = read_file(entry.path());
      whole.resize(whole.rfind('\n') + 1);  // npos + 1 == 0: no whole line yet
      for (const std::string& text : lines_of(whole)) {
        const auto o = parse_object(text);
        out[std::string(o.at("conn").as_string())].push_back(
            {o.at("seq").as_int64(), std::string(o.at("worker").as_string()),
             o.at("epoch").as_int64(), o.at("written_at_ms").as_int64()});
      }
    }
    return out;
  }

  // The last sequence number written for `conn`, 0 if none.
  int64_t last_seq(const std::string& conn) {
    const auto all = sinks();
    const auto it = all.find(conn);
    int64_t last = 0;
    if (it != all.end()) {
      for (const Line& l : it->second) last = std::max(last, l.seq);
    }
    return last;
  }

  // The fleet's guarantees over what the sinks hold. Repeats are allowed
  // only for the connections in `may_repeat`, each number written at most
  // `writes_max` times (once more per crash).
  void check_sinks(const std::set<std::string>& may_repeat, int writes_max = 2) {
    for (auto& [conn, lines] : sinks()) {
      std::map<int64_t, int> count;
      std::map<int64_t, std::string> writers;  // seq → "worker/epoch ..."
      for (const Line& l : lines) {
        ++count[l.seq];
        writers[l.seq] += l.worker + "/" + std::to_string(l.epoch) + " ";
      }
      ASSERT_FALSE(count.empty());
      EXPECT_EQ(count.begin()->first, 1) << conn << " does not start at 1";
      EXPECT_EQ(static_cast<int64_t>(count.size()), count.rbegin()->first)
          << conn << " has a gap: " << count.size() << " numbers up to " << count.rbegin()->first;
      for (const auto& [seq, n] : count) {
        if (n > 1 && !may_repeat.contains(conn)) {
          ADD_FAILURE() << conn << " seq " << seq << " written " << n << " times, by "
                        << writers[seq];
        }
        EXPECT_LE(n, writes_max) << conn << " seq " << seq;
      }
      // Each owner's time: a (worker, epoch) pair, since a worker of the
      // reference pattern writes no epoch of its own.
      std::map<std::pair<std::string, int64_t>, std::pair<int64_t, int64_t>> spans;
      for (const Line& l : lines) {
        auto [it, added] = spans.try_emplace({l.worker, l.epoch}, l.written_at_ms, l.written_at_ms);
        it->second.first = std::min(it->second.first, l.written_at_ms);
        it->second.second = std::max(it->second.second, l.written_at_ms);
      }
      std::vector<std::pair<std::pair<int64_t, int64_t>, std::string>> by_start;
      for (const auto& [owner, span] : spans) {
        by_start.push_back({span, owner.first + "/" + std::to_string(owner.second)});
      }
      std::sort(by_start.begin(), by_start.end());
      for (size_t i = 0; i + 1 < by_start.size(); ++i) {
        EXPECT_LE(by_start[i].first.second, by_start[i + 1].first.first)
            << conn << ": " << by_start[i].second << " wrote after " << by_start[i + 1].second
            << " began";
      }
    }
  }

  // Waits until every connection is owned and has streamed past `seq`.
  bool all_streaming_past(int connections, int64_t seq, milliseconds limit = 30s) {
    return eventually(
        [&] {
          const auto s = sinks();
          if (static_cast<int>(s.size()) < connections) return false;
          for (const auto& [conn, lines] : s) {
            int64_t last = 0;
            for (const Line& l : lines) last = std::max(last, l.seq);
            if (last <= seq) return false;
          }
          return true;
        },
        limit);
  }

  // Waits until every connection has streamed two more messages than now.
  bool all_progress(milliseconds limit = 30s) {
    std::map<std::string, int64_t> before;
    for (const auto& [conn, lines] : sinks()) before[conn] = last_seq(conn);
    return eventually(
        [&] {
          for (const auto& [conn, seq] : before) {
            if (last_seq(conn) < seq + 2) return false;
          }
          return true;
        },
        limit);
  }

  void stop_gracefully(std::vector<std::unique_ptr<Process>>& workers) {
    for (auto& w : workers) {
      if (!w->exited()) ::kill(w->pid(), SIGTERM);
    }
    for (auto& w : workers) {
      // Its log's end says what it was waiting on.
      ASSERT_TRUE(w->wait_for(20s)) << "still running 20 s after SIGTERM:\n"
                                    << tail_of(w->err_so_far(), 40);
    }
  }

  std::unique_ptr<Process> upstream_;
  std::string port_;
};

}  // namespace leasehold::process_test
