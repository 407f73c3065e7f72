// Deterministic simulation of the stream fleet: real fleet::Workers, run by
// hand (WorkerOptions::manual) on one thread, each on a machine of its own
// (a skewed wall clock, its own monotonic origin) and through a store that
// fails requests, loses replies after committing them, answers 500 after
// applying them, delays them and holds some to deliver after newer writes.
// The fleet's indexes lag, as DynamoDB's do, by up to seconds. Workers crash
// (their process gone, in-flight writes still arriving), crash again before
// they have recovered (crash loops, under the same ID or a new one), pause
// for longer than their session, and stop gracefully; connections are
// stopped and started. The upstream sends each open stream a message every
// step, from the sequence number its URL asks for.
//
// Then the faults stop: the store answers, the index lag falls to a
// fraction of a second, every connection is started, and every dead worker
// is restarted. The checks:
//   safety, at every line written:
//     1. a connection's lines come in epoch order (two holders never
//        overlap), and one epoch is written by one process only;
//   liveness, after the faults stop:
//     2. every connection is written again within the bound (a session ttl,
//        the clock-skew bound and two reconcile periods, with their jitter)
//        after the faults stopped, and never goes longer than that without
//        a line until the end;
//   at the end:
//     3. no message was skipped: every connection's lines hold every
//        sequence number from 1 to the last one written.
// Every choice comes from one seeded generator: a failing run prints its
// seed, and LEASEHOLD_SIM_SEED=<seed> replays exactly that run.
#include <gtest/gtest.h>

#include <boost/json/parse.hpp>
#include <cstdlib>
#include <deque>
#include <iostream>
#include <map>
#include <optional>
#include <set>

#include "fleet/connections.h"
#include "fleet/members.h"
#include "fleet/schema.h"
#include "fleet/worker.h"
#include "net/websocket.h"
#include "store/memory/memory_store.h"
#include "testing/faulty_store.h"
#include "testing/index_lag_store.h"
#include "testing/machine_clock.h"

namespace leasehold {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::MachineClock;

struct FleetSimOptions {
  int slots = 4;  // machines, each running one worker process at a time
  int connections = 12;
  int fault_steps = 1500;  // about 75 s of simulated time
  int calm_steps = 600;    // about 30 s
  Duration step_max = milliseconds(100);
  Duration clock_spread = milliseconds(400);  // within the 500 ms bound
  store::FaultOptions faults{.unavailable_probability = 0.02,
                             .drop_reply_probability = 0.02,
                             .delay_probability = 0.1,
                             .delay_max = milliseconds(200),
                             .lose_request_probability = 0.02,
                             .applied_then_failed_probability = 0.01,
                             .deliver_late_probability = 0.01};
  // Per step, during the faults.
  double crash_probability = 0.006;
  double restart_under_new_id_probability = 0.3;  // of restarts
  double crash_loop_probability = 0.5;            // of restarts: it crashes again soon
  double pause_probability = 0.003;
  double stop_probability = 0.001;   // a graceful stop (SIGTERM)
  double toggle_probability = 0.02;  // a connection stopped or started
  double lag_change_probability = 0.02;
  Duration lag_max = seconds(5);
  Duration calm_lag = milliseconds(200);
  // The backstops, often enough to run in a simulated minute.
  Duration audit_every = seconds(20);
  Duration reap_every = seconds(20);
  // A planted liveness bug for the checker to catch: after the faults, the
  // session index never shows anything written during them, and nobody
  // reaps, so that a dead session's connections are never found.
  bool blind_sweeps = false;
};

// The upstream: every open stream gets one message per step, numbered on
// from the sequence number its URL asks for.
class SimUpstream final : public net::WsClient {
 public:
  struct Stream final : net::WsStream {
    std::string conn;
    std::string process;  // the worker process that opened it
    int64_t next_seq = 1;
    net::WsHandlers handlers;
    bool closed = false;
    void close() override {
      if (closed) return;
      closed = true;
      handlers.on_closed(Status::ok_status());
    }
  };

  Result<std::shared_ptr<net::WsStream>> connect(std::string_view url,
                                                 net::WsHandlers handlers) override {
    // ws://sim/s/<conn>?from=<seq>
    const size_t s = url.find("/s/"), q = url.find("?from=");
    auto stream = std::make_shared<Stream>();
    stream->conn = std::string(url.substr(s + 3, q - s - 3));
    stream->next_seq = std::stoll(std::string(url.substr(q + 6)));
    stream->process = connecting_;
    stream->handlers = std::move(handlers);
    streams_.push_back(stream);
    if (stream->handlers.on_open) stream->handlers.on_open();
    return std::shared_ptr<net::WsStream>(stream);
  }
  size_t open_streams() const override {
    return std::count_if(streams_.begin(), streams_.end(),
                         [](const auto& s) { return !s->closed; });
  }

  // Whose connect() calls come next.
  void connecting(std::string process) { connecting_ = std::move(process); }
  // One message to each open stream of a process that runs.
  void send(const std::function<bool(const std::string& process)>& runs) {
    std::erase_if(streams_, [](const auto& s) { return s->closed; });
    const auto open = streams_;  // handlers may open or close streams
    for (const auto& s : open) {
      if (s->closed || !runs(s->process)) continue;
      const std::string text = "{\"seq\":" + std::to_string(s->next_seq++) + "}";
      const net::WsMessage m{text, true};
      s->handlers.on_messages(std::span<const net::WsMessage>(&m, 1));
    }
  }

 private:
  std::vector<std::shared_ptr<Stream>> streams_;
  std::string connecting_;
};

// What the sinks took, checked line by line.
class Checker {
 public:
  explicit Checker(SimulatedClock& truth) : truth_(truth) {}

  void line(std::string_view text, const std::string& process) {
    const auto v = boost::json::parse(text).as_object();
    const std::string conn(v.at("conn").as_string());
    const int64_t epoch = v.at("epoch").as_int64();
    const int64_t seq = v.at("seq").as_int64();
    Conn& c = conns_[conn];
    if (epoch < c.epoch) {
      fail(conn + ": " + process + " wrote epoch " + std::to_string(epoch) + " after epoch " +
           std::to_string(c.epoch) + " of " + c.writer);
    } else if (epoch == c.epoch && process != c.writer) {
      fail(conn + ": epoch " + std::to_string(epoch) + " written by " + c.writer + " and " +
           process);
    }
    if (epoch >= c.epoch) {
      c.epoch = epoch;
      c.writer = process;
    }
    c.seqs.insert(seq);
    c.written_at.push_back(truth_.mono_now());
  }

  // Check 2: from `calm_at` to now, no STARTED connection went longer than
  // `bound` without a line.
  void check_liveness(const std::vector<std::string>& conns, MonoTime calm_at, Duration bound) {
    const MonoTime end = truth_.mono_now();
    for (const std::string& id : conns) {
      MonoTime last = calm_at;
      for (const MonoTime t : conns_[id].written_at) {
        if (t < calm_at) continue;
        note_gap(id, t - last, bound, "since the faults stopped");
        last = t;
      }
      note_gap(id, end - last, bound, "at the end");
    }
  }

  // Check 3.
  void check_nothing_skipped() {
    for (const auto& [id, c] : conns_) {
      if (c.seqs.empty()) continue;
      const int64_t last = *c.seqs.rbegin();
      if (static_cast<int64_t>(c.seqs.size()) != last) {
        int64_t missing = 1;
        while (c.seqs.contains(missing)) ++missing;
        fail(id + ": sequence number " + std::to_string(missing) + " was never written (last " +
             std::to_string(last) + ")");
      }
    }
  }

  const std::optional<std::string>& violation() const { return violation_; }
  Duration longest_gap() const { return longest_gap_; }

 private:
  struct Conn {
    int64_t epoch = 0;
    std::string writer;
    std::set<int64_t> seqs;
    std::vector<MonoTime> written_at;
  };

  void note_gap(const std::string& id, Duration gap, Duration bound, const char* when) {
    longest_gap_ = std::max(longest_gap_, gap);
    if (gap > bound) {
      fail(id + " went " + std::to_string(to_ms(gap)) + " ms without a line " + when + " (bound " +
           std::to_string(to_ms(bound)) + " ms)");
    }
  }
  void fail(std::string what) {
    if (!violation_) violation_ = std::move(what);
  }

  SimulatedClock& truth_;
  std::map<std::string, Conn> conns_;
  std::optional<std::string> violation_;
  Duration longest_gap_{};
};

class SimSink final : public fleet::Sink {
 public:
  SimSink(Checker& checker, std::string process)
      : checker_(checker), process_(std::move(process)) {}
  Status write(fleet::BeforeWrite& before, size_t* written_bytes) override {
    *written_bytes = 0;
    Result<std::string_view> lines = before.lines();
    if (!lines.ok()) return lines.status();
    for (size_t at = 0; at < lines->size();) {
      const size_t end = lines->find('\n', at);
      checker_.line(lines->substr(at, end - at), process_);
      at = end + 1;
    }
    *written_bytes = lines->size();
    return {};
  }
  Status flush() override { return {}; }
  std::string describe() const override { return "sim"; }

 private:
  Checker& checker_;
  const std::string process_;
};

// With LEASEHOLD_SIM_LOG set, each process's log goes to stderr, stamped
// with the true time and the process: to follow a failing seed.
class SimLog final : public Logger {
 public:
  SimLog(SimulatedClock& truth, std::string process)
      : truth_(truth), process_(std::move(process)) {}
  bool enabled(LogLevel level) const override { return level >= LogLevel::kInfo; }
  void log(LogLevel, std::string_view message) override {
    std::cerr << to_ms(truth_.mono_now().time_since_epoch()) << " " << process_ << ": " << message
              << "\n";
  }

 private:
  SimulatedClock& truth_;
  const std::string process_;
};

// One run of a worker process on a machine.
struct Process {
  std::string name;  // worker ID and run, for the checker: "w1#3"
  std::string id;
  std::unique_ptr<store::FaultyStore> store;
  std::unique_ptr<SimSink> sink;
  std::unique_ptr<SimLog> log;            // with LEASEHOLD_SIM_LOG
  std::unique_ptr<fleet::Worker> worker;  // none until it has joined
  bool dead = false;
  MonoTime paused_until{};  // true time
};

struct Machine {
  std::unique_ptr<MachineClock> clock;
  std::unique_ptr<Process> process;
  int runs = 0;
  int fresh_ids = 0;
  // A crash loop: the process that replaced a crashed one crashes too, at
  // this true time.
  std::optional<MonoTime> crash_again_at;
};

class FleetSimulation {
 public:
  FleetSimulation(uint64_t seed, FleetSimOptions o)
      : seed_(seed), o_(std::move(o)), random_(seed), checker_(truth_) {
    memory_ = store::make_memory_store();
    lagging_ = std::make_unique<testing::IndexLagStore>(*memory_, truth_);
    EXPECT_TRUE(lagging_->ensure_table(fleet::connections_table_spec()).ok());
    EXPECT_TRUE(lagging_->ensure_table(fleet::workers_table_spec()).ok());
    fleet::Connections connections(*lagging_, truth_);
    for (int i = 0; i < o_.connections; ++i) {
      conns_.push_back("c" + std::to_string(i));
      EXPECT_TRUE(
          connections.add({conns_.back(), "ws://sim/s/" + conns_.back() + "?from={next_seq}"})
              .ok());
    }
    for (int i = 0; i < o_.slots; ++i) {
      Machine m;
      const int64_t half = o_.clock_spread.count() / 2;
      m.clock = std::make_unique<MachineClock>(truth_, Duration(random_.uniform(-half, half)),
                                               Duration(random_.uniform(0, int64_t{1} << 40)));
      machines_.push_back(std::move(m));
      launch(i, "w" + std::to_string(i));
    }
  }

  ~FleetSimulation() {
    // Dead processes are stopped with their stores cut: nothing reaches the
    // store, and their upstream streams close.
    for (auto& p : graveyard_) p->worker.reset();
    for (auto& m : machines_) m.process.reset();
  }

  std::optional<std::string> run() {
    for (step_ = 0; step_ < o_.fault_steps && !checker_.violation(); ++step_) {
      fault();
      step();
    }
    calm_down();
    const MonoTime calm_at = truth_.mono_now();
    for (int i = 0; i < o_.calm_steps && !checker_.violation(); ++i) step();
    const fleet::WorkerOptions d = options("any");
    const Duration bound = d.session_ttl + d.lease.max_clock_skew +
                           2 * d.reconcile_every * 12 / 10 + milliseconds(500);
    if (!checker_.violation()) checker_.check_liveness(conns_, calm_at, bound);
    if (!checker_.violation()) checker_.check_nothing_skipped();
    return checker_.violation();
  }

  Duration longest_gap() const { return checker_.longest_gap(); }
  int crashes() const { return crashes_; }
  uint64_t stat(uint64_t fleet::WorkerStats::*field) const {
    uint64_t n = totals_.*field;
    for (const auto& m : machines_) {
      if (m.process && m.process->worker) n += (m.process->worker->stats()).*field;
    }
    return n;
  }

 private:
  fleet::WorkerOptions options(const std::string& id) const {
    fleet::WorkerOptions w;
    w.id = id;
    w.session_ttl = seconds(3);  // the defaults of `leasehold worker`
    w.lease_ttl = std::chrono::minutes(30);
    w.renew_every = std::chrono::minutes(10);
    w.reconcile_every = seconds(2);
    w.audit_every = o_.audit_every;
    w.reap_every = o_.blind_sweeps ? std::chrono::hours(1) : o_.reap_every;
    w.manual = true;
    return w;
  }

  void launch(int slot, const std::string& id) {
    Machine& m = machines_[slot];
    auto p = std::make_unique<Process>();
    p->id = id;
    p->name = id + "#" + std::to_string(++m.runs);
    p->store = std::make_unique<store::FaultyStore>(*lagging_, random_, o_.faults,
                                                    [this](Duration d) { truth_.advance(d); });
    p->sink = std::make_unique<SimSink>(checker_, p->name);
    if (std::getenv("LEASEHOLD_SIM_LOG") != nullptr) {
      p->log = std::make_unique<SimLog>(truth_, p->name);
    }
    if (m.process) retire(std::move(m.process));
    m.process = std::move(p);
  }

  // A dead process is kept, never polled again, until the end.
  void retire(std::unique_ptr<Process> p) {
    if (p->worker) {
      const fleet::WorkerStats s = p->worker->stats();
      totals_.audit_finds += s.audit_finds;
      totals_.reaper_finds += s.reaper_finds;
      totals_.releases_retried += s.releases_retried;
      totals_.takeovers += s.takeovers;
    }
    graveyard_.push_back(std::move(p));
  }

  bool runs(const Process& p) const { return !p.dead && truth_now() >= p.paused_until; }
  MonoTime truth_now() const { return const_cast<SimulatedClock&>(truth_).mono_now(); }

  void step() {
    truth_.advance(Duration(random_.uniform(0, o_.step_max.count())));
    for (size_t i = 0; i < machines_.size(); ++i) {
      Process& p = *machines_[i].process;
      if (!runs(p)) continue;
      upstream_.connecting(p.name);
      if (!p.worker) {
        fleet::WorkerOptions o = options(p.id);
        o.logger = p.log.get();
        auto w =
            fleet::Worker::start(*p.store, *machines_[i].clock, random_, upstream_, *p.sink, o);
        if (w.ok()) p.worker = std::move(*w);  // else tried again next step, as a supervisor would
        continue;
      }
      (void)p.worker->poll();
    }
    upstream_.send([&](const std::string& process) {
      for (const auto& m : machines_) {
        if (m.process->name == process) return runs(*m.process);
      }
      return false;  // a process that is gone
    });
    for (auto& p : graveyard_) {
      if (random_.chance(0.05)) p->store->deliver_late(1);  // its writes still arriving
    }
    for (auto& m : machines_) {
      if (random_.chance(0.05)) m.process->store->deliver_late(1);
    }
  }

  void fault() {
    for (size_t i = 0; i < machines_.size(); ++i) {
      Machine& m = machines_[i];
      if (m.crash_again_at && truth_now() >= *m.crash_again_at)
        crash_and_restart(static_cast<int>(i));
    }
    const int slot = static_cast<int>(random_.uniform(0, o_.slots - 1));
    Machine& m = machines_[slot];
    if (random_.chance(o_.crash_probability)) {
      crash_and_restart(slot);
    } else if (random_.chance(o_.pause_probability)) {
      m.process->paused_until =
          truth_now() + Duration(random_.uniform(0, Duration(seconds(8)).count()));
    } else if (random_.chance(o_.stop_probability) && m.process->worker) {
      m.process->worker->stop();
      launch(slot, m.process->id);
    }
    if (random_.chance(o_.toggle_probability))
      toggle(conns_[random_.uniform(0, o_.connections - 1)]);
    if (random_.chance(o_.lag_change_probability)) {
      lagging_->set_lag(Duration(random_.uniform(0, o_.lag_max.count())));
    }
  }

  // Restarted at once, under its ID or a new one; now and then it crashes
  // again before long, in a loop.
  void crash_and_restart(int slot) {
    Machine& m = machines_[slot];
    ++crashes_;
    crash(*m.process);
    const bool fresh = random_.chance(o_.restart_under_new_id_probability);
    launch(slot, fresh ? "w" + std::to_string(slot) + "-" + std::to_string(++m.fresh_ids)
                       : m.process->id);
    m.crash_again_at.reset();
    if (random_.chance(o_.crash_loop_probability)) {
      m.crash_again_at = truth_now() + Duration(random_.uniform(Duration(milliseconds(300)).count(),
                                                                Duration(seconds(6)).count()));
    }
  }

  void crash(Process& p) {
    p.dead = true;
    store::FaultOptions down;
    down.unavailable_probability = 1;
    p.store->set_options(down);
  }

  void toggle(const std::string& id) {
    fleet::Connections connections(*lagging_, truth_);
    auto c = connections.get(id);
    if (!c.ok()) return;
    const bool started = c->desired_state == fleet::DesiredState::kStarted;
    (void)connections.set_desired(
        id, started ? fleet::DesiredState::kStopped : fleet::DesiredState::kStarted);
  }

  // The faults stop: the store answers, held writes arrive, the lag falls,
  // every connection is started and every dead process restarted.
  void calm_down() {
    for (auto& m : machines_) {
      m.process->store->set_options({});
      m.process->store->deliver_late();
      m.process->paused_until = {};
      m.crash_again_at.reset();
      if (m.process->dead) launch(static_cast<int>(&m - machines_.data()), m.process->id);
    }
    for (auto& p : graveyard_) p->store->deliver_late();
    lagging_->set_lag(o_.blind_sweeps ? std::chrono::hours(1) : o_.calm_lag);
    fleet::Connections connections(*lagging_, truth_);
    for (const std::string& id : conns_) {
      (void)connections.set_desired(id, fleet::DesiredState::kStarted);
    }
  }

  const uint64_t seed_;
  const FleetSimOptions o_;
  SeededRandom random_;
  SimulatedClock truth_;
  Checker checker_;
  std::unique_ptr<ItemStore> memory_;
  std::unique_ptr<testing::IndexLagStore> lagging_;
  SimUpstream upstream_;
  std::vector<std::string> conns_;
  std::vector<Machine> machines_;
  std::vector<std::unique_ptr<Process>> graveyard_;
  fleet::WorkerStats totals_;
  int step_ = 0;
  int crashes_ = 0;
};

std::vector<uint64_t> fleet_seeds(int default_count) {
  if (const char* s = std::getenv("LEASEHOLD_SIM_SEED")) return {std::strtoull(s, nullptr, 10)};
  std::vector<uint64_t> out;
  for (int i = 0; i < default_count; ++i) out.push_back(7000 + static_cast<uint64_t>(i));
  return out;
}

TEST(FleetSimulation, EveryStartedConnectionStreamsAgainWithinTheBoundAfterFaults) {
  Duration longest{};
  int crashes = 0;
  uint64_t audit = 0, reaper = 0, retried = 0, takeovers = 0;
  for (const uint64_t seed : fleet_seeds(12)) {
    FleetSimulation sim(seed, {});
    const std::optional<std::string> violation = sim.run();
    ASSERT_FALSE(violation) << "seed " << seed << ": " << *violation
                            << "\nreplay: LEASEHOLD_SIM_SEED=" << seed;
    longest = std::max(longest, sim.longest_gap());
    crashes += sim.crashes();
    audit += sim.stat(&fleet::WorkerStats::audit_finds);
    reaper += sim.stat(&fleet::WorkerStats::reaper_finds);
    retried += sim.stat(&fleet::WorkerStats::releases_retried);
    takeovers += sim.stat(&fleet::WorkerStats::takeovers);
  }
  // The faults happened: the runs were not calm all along.
  EXPECT_GT(crashes, 0);
  EXPECT_GT(takeovers, 0u);
  EXPECT_GT(retried, 0u);
  std::cout << "longest gap after the faults: " << to_ms(longest) << " ms; crashes " << crashes
            << ", takeovers " << takeovers << ", releases retried " << retried << ", audit finds "
            << audit << ", reaper finds " << reaper << "\n";
}

TEST(FleetSimulation, SameSeedSameRun) {
  FleetSimOptions o;
  o.fault_steps = 400;
  o.calm_steps = 200;
  FleetSimulation a(42, o), b(42, o);
  EXPECT_EQ(a.run(), b.run());
  EXPECT_EQ(a.longest_gap(), b.longest_gap());
  EXPECT_EQ(a.crashes(), b.crashes());
}

// The liveness check can fail: with the dead sessions' connections never
// found (the session index blind to them, no reaper), some run leaves a
// connection unstreamed past the bound.
TEST(FleetSimulation, CheckerCatchesConnectionsNobodyFinds) {
  FleetSimOptions o;
  o.blind_sweeps = true;
  bool caught = false;
  for (const uint64_t seed : fleet_seeds(6)) {
    FleetSimulation sim(seed, o);
    const std::optional<std::string> violation = sim.run();
    if (violation && violation->find("without a line") != std::string::npos) caught = true;
  }
  EXPECT_TRUE(caught);
}

}  // namespace
}  // namespace leasehold
