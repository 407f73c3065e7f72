// Liveness of the stream fleet (docs/fleet.md, Liveness): a STARTED
// connection that nobody streams is streaming again within a few seconds
// (a session ttl and two reconcile periods), whatever failed, never its own
// lease's ttl (a minute here, half an hour by default). One case per way a
// lease can be forgotten, on each backend.
#include "fleet/feed_reader.h"
#include "tests/fleet/liveness_fixture.h"

namespace leasehold::fleet::testing {

using leasehold::testing::IndexLagStore;
using std::chrono::milliseconds;
using std::chrono::seconds;

namespace {

// What a test waits for a connection to stream again, at most: the bound
// (a 1 s session ttl and two 100 ms reconcile periods) with room for a slow
// machine and a store over HTTP. Each case's fault would otherwise cost the
// connection's own ttl, a minute.
constexpr auto kBoundWait = seconds(6);

}  // namespace

void FleetLiveness::SetUp() {
  auto made = GetParam().make();
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  backend_ = std::move(*made);
  lagging_ = std::make_unique<IndexLagStore>(*backend_, clock_);
  ASSERT_TRUE(lagging_->ensure_table(connections_table_spec()).ok());
  ASSERT_TRUE(lagging_->ensure_table(workers_table_spec()).ok());
}

void FleetLiveness::TearDown() {
  for (auto& r : running_) r->worker.reset();  // stopped before their stores go
}

WorkerOptions FleetLiveness::options(const std::string& id) const {
  WorkerOptions o;
  o.id = id;
  o.session_ttl = session_ttl_;
  o.lease_ttl = seconds(60);  // what a forgotten lease would cost
  o.renew_every = seconds(20);
  o.reconcile_every = reconcile_every_;
  o.checkpoint_every = milliseconds(100);
  o.lease.max_clock_skew = milliseconds(100);
  o.lease.safety_margin = milliseconds(50);
  o.upstream_stable_after = milliseconds(300);
  return o;
}

FleetLiveness::Running& FleetLiveness::start(const std::string& id,
                                             std::function<void(ScriptedStore&)> script,
                                             std::optional<WorkerOptions> o) {
  auto r = std::make_unique<Running>();
  r->id = id;
  r->store = std::make_unique<ScriptedStore>(*lagging_);
  r->sink = std::make_unique<CapturingSink>();
  r->log = std::make_unique<leasehold::CapturingLogger>(LogLevel::kInfo);
  if (script) script(*r->store);
  WorkerOptions options_given = o.value_or(options(id));
  options_given.logger = r->log.get();
  // As a supervisor would, it is started again while its ID is in use (by
  // its own last run, whose session has yet to expire).
  Result<std::unique_ptr<Worker>> w = already_exists("not started");
  (void)eventually(
      [&] {
        w = Worker::start(*r->store, clock_, random_, upstream_, *r->sink, options_given);
        return w.status().code() != Code::kAlreadyExists;
      },
      milliseconds(kBoundWait));
  EXPECT_TRUE(w.ok()) << id << ": " << w.status().to_string();
  if (w.ok()) r->worker = std::move(*w);
  running_.push_back(std::move(r));
  return *running_.back();
}

void FleetLiveness::add(const std::string& id) {
  Connections connections(*lagging_, clock_);
  NewConnection c;
  c.id = id;
  c.url = "ws://upstream.test/s/" + id + "?from={next_seq}";
  ASSERT_TRUE(connections.add(c).ok());
}

void FleetLiveness::set_state(const std::string& id, DesiredState state) {
  Connections connections(*lagging_, clock_);
  ASSERT_TRUE(connections.set_desired(id, state).ok());
}

Connection FleetLiveness::stored(const std::string& id) {
  auto item = backend_->get(kConnectionsTable, connection_key(id), true);
  EXPECT_TRUE(item.ok()) << item.status().to_string();
  if (!item.ok()) return {};
  auto c = parse_connection(*item);
  EXPECT_TRUE(c.ok());
  if (!c.ok()) return {};
  // Where a taker would resume: with a session, its positions say.
  EXPECT_TRUE(show_positions(*backend_, std::span<Connection>(&*c, 1), true).ok());
  return *c;
}

// The token of the worker's live session; "" if it has none.
std::string FleetLiveness::session_of(const std::string& worker) {
  auto item = backend_->get(kWorkersTable, worker_key(worker), true);
  if (!item.ok() || get_int_or(*item, "lease_expires_at_ms") <= to_unix_ms(clock_.wall_now())) {
    return "";
  }
  return get_string_or(*item, "lease_token");
}

std::string FleetLiveness::streamer(const std::string& id) {
  const Connection c = stored(id);
  if (c.owner.empty() || c.expires_at_ms < to_unix_ms(clock_.wall_now())) return "";
  for (const auto& r : running_) {
    if (r->worker == nullptr || r->id != c.owner || c.session.empty() ||
        c.session != session_of(r->id)) {
      continue;
    }
    for (const OwnedConnection& o : r->worker->owned()) {
      if (o.id == id && o.streaming && o.epoch == c.epoch) return r->id;
    }
  }
  return "";
}

std::string FleetLiveness::streamed_within(const std::string& id, Duration within) {
  std::string by;
  (void)eventually(
      [&] {
        by = streamer(id);
        return !by.empty();
      },
      std::chrono::duration_cast<milliseconds>(within));
  return by;
}

// ---------------------------------------------------------------- the cases

// The operator's case: `conn stop C`, its holder dies before it reads that,
// a peer is alive, and `conn start C` comes after the peer has swept the
// dead session. The sweep released C's lease (nobody would take a stopped
// connection): once started, it is free at once.
TEST_P(FleetLiveness, StopThenCrashThenStartWithAPeerAlive) {
  add("c");
  Running& w1 = start("w1");
  ASSERT_EQ(streamed_within("c", kBoundWait), "w1");
  Running& w2 = start("w2");
  crash(w1);
  set_state("c", DesiredState::kStopped);
  ASSERT_TRUE(eventually([&] { return w2.worker->stats().sessions_ended == 1; }, kBoundWait));
  // Its sweep found nothing STARTED, and released the stopped one.
  EXPECT_TRUE(eventually([&] { return stored("c").expires_at_ms == 0; }, kBoundWait));
  EXPECT_TRUE(stored("c").session.empty()) << "out of the dead session";
  EXPECT_EQ(stored("c").owner, "w1") << "its last owner stays, for history";
  set_state("c", DesiredState::kStarted);
  EXPECT_EQ(streamed_within("c", kBoundWait), "w2");
}

// A crashed worker's connections resume where its session's positions say,
// not where their items do (a checkpoint with a session writes the items
// not at all): what it streamed before its last checkpoint is not read
// again.
TEST_P(FleetLiveness, ACrashedWorkersConnectionsResumeFromItsPositions) {
  add("c");
  Running& w1 = start("w1");
  ASSERT_EQ(streamed_within("c", kBoundWait), "w1");
  for (int64_t seq = 1; seq <= 30; ++seq) {
    ASSERT_TRUE(upstream_.send("ws://upstream.test/s/c?", msg(seq)));
  }
  ASSERT_TRUE(eventually([&] { return stored("c").last_seq == 30; }, kBoundWait));
  Result<Item> item = backend_->get(kConnectionsTable, connection_key("c"), true);
  ASSERT_TRUE(item.ok());
  EXPECT_EQ(get_int_or(*item, "last_seq"), 0) << "the item was not written";
  start("w2");
  crash(w1);
  ASSERT_TRUE(eventually([&] { return streamer("c") == "w2"; }, kBoundWait));
  const std::vector<std::string> urls = upstream_.urls();
  EXPECT_EQ(urls.back(), "ws://upstream.test/s/c?from=31");
  // And the item was told, before w2 streamed.
  item = backend_->get(kConnectionsTable, connection_key("c"), true);
  ASSERT_TRUE(item.ok());
  EXPECT_EQ(get_int_or(*item, "last_seq"), 30);
}

// A worker that dies again before it has taken its last run's connections
// back names, when it restarts, every earlier session that may still hold
// some, not just the last.
TEST_P(FleetLiveness, ACrashLoopOfTheOnlyWorkerLosesNoConnection) {
  add("c");
  Running& first = start("w1");
  ASSERT_EQ(streamed_within("c", kBoundWait), "w1");
  crash(first);
  // The second run can take nothing (every write to a connection fails),
  // and dies too.
  Running& second = start("w1", [](ScriptedStore& s) {
    s.add({ScriptedStore::Op::kWrite, kConnectionsTable, nullptr, store::Fault::kUnavailable, -1});
  });
  ASSERT_NE(second.worker, nullptr);
  ASSERT_TRUE(eventually([&] { return second.store->faults() > 0; }, kBoundWait));
  crash(second);
  start("w1");
  EXPECT_EQ(streamed_within("c", kBoundWait), "w1");
}

// A restart under the same ID takes its connections back in its first
// reconcile: it knows its last session is dead (it replaced it), so it need
// not wait until they count as stranded (four reconcile periods).
TEST_P(FleetLiveness, ARestartUnderTheSameIdTakesItsConnectionsBackAtOnce) {
  reconcile_every_ = seconds(1);
  add("c");
  Running& first = start("w1");
  ASSERT_EQ(streamed_within("c", kBoundWait), "w1");
  crash(first);
  const Running& again = start("w1");  // waits for the crashed run's session to expire
  ASSERT_NE(again.worker, nullptr);
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(streamed_within("c", kBoundWait), "w1");
  EXPECT_LT(std::chrono::steady_clock::now() - started, reconcile_every_)
      << "taken back only after " << to_ms(std::chrono::steady_clock::now() - started) << " ms";
}

// A handover whose release fails (throttled, three times running): the
// release is retried until it goes through, and the connection, started
// again, streams.
TEST_P(FleetLiveness, AHandoverWhoseReleaseFailsIsRetried) {
  add("c");
  Running& w1 = start("w1");
  ASSERT_EQ(streamed_within("c", kBoundWait), "w1");
  w1.store->add({ScriptedStore::Op::kWrite, kConnectionsTable, release_of("c"),
                 store::Fault::kUnavailable, 3});
  set_state("c", DesiredState::kStopped);
  ASSERT_TRUE(eventually([&] { return upstream_.open_streams() == 0; }, kBoundWait));
  // Started again only once the release has failed: a start seen before the
  // worker gave the connection up leaves it nothing to release.
  ASSERT_TRUE(eventually([&] { return w1.store->faults() >= 1; }, kBoundWait));
  set_state("c", DesiredState::kStarted);
  EXPECT_EQ(streamed_within("c", kBoundWait), "w1");
  EXPECT_EQ(w1.store->faults(), 3);
  EXPECT_GE(w1.worker->stats().releases_retried, 1u);
}

// The same, when the release gets no answer and reading it back fails too.
TEST_P(FleetLiveness, AHandoverWhoseReleaseOutcomeStaysUnknownIsRetried) {
  add("c");
  Running& w1 = start("w1");
  ASSERT_EQ(streamed_within("c", kBoundWait), "w1");
  w1.store->add({ScriptedStore::Op::kWrite, kConnectionsTable, release_of("c"),
                 store::Fault::kLoseRequest, 1});
  w1.store->add(
      {ScriptedStore::Op::kGet, kConnectionsTable, key_is("c"), store::Fault::kUnavailable, 3});
  set_state("c", DesiredState::kStopped);
  ASSERT_TRUE(eventually([&] { return upstream_.open_streams() == 0; }, kBoundWait));
  ASSERT_TRUE(eventually([&] { return w1.store->faults() >= 1; }, kBoundWait));  // as above
  set_state("c", DesiredState::kStarted);
  EXPECT_EQ(streamed_within("c", kBoundWait), "w1");
}

// An acquisition that applied, whose answer was lost, and whose read-back
// failed: the worker does not know it holds the lease, so it gives it back
// by its token, and takes it again.
TEST_P(FleetLiveness, AnAcquisitionThatAppliedUnbeknownIsGivenBack) {
  add("c");
  start("w1", [](ScriptedStore& s) {
    s.add({ScriptedStore::Op::kWrite, kConnectionsTable, acquire_of("c"), store::Fault::kDropReply,
           1});
    s.add({ScriptedStore::Op::kGet, kConnectionsTable, key_is("c"), store::Fault::kUnavailable, 3});
  });
  EXPECT_EQ(streamed_within("c", kBoundWait), "w1");
  EXPECT_GE(stored("c").epoch, 2) << "taken twice: once unbeknown, once to stream";
}

// The consistent read after an acquisition fails, and so does the release
// that follows it.
TEST_P(FleetLiveness, AFailedReadAfterAcquiringAndAFailedReleaseAreRetried) {
  add("c");
  start("w1", [](ScriptedStore& s) {
    s.add({ScriptedStore::Op::kGet, kConnectionsTable, key_is("c"), store::Fault::kUnavailable, 1});
    s.add({ScriptedStore::Op::kWrite, kConnectionsTable, release_of("c"),
           store::Fault::kUnavailable, 1});
  });
  EXPECT_EQ(streamed_within("c", kBoundWait), "w1");
}

// The session index (eventually consistent on DynamoDB) shows a lease taken
// just before its session died only seconds later, long after the first
// sweeps of the dead session found nothing: sweeping goes on, less often,
// and finds it.
TEST_P(FleetLiveness, ALeaseTheSessionIndexShowsLateIsStillFound) {
  Running& w1 = start("w1");
  Running& w2 = start("w2");
  // w1 takes c; the index shows the lease only 3 s later (after w1's
  // session has ended and been swept several times).
  lagging_->set_lag(seconds(3), kConnectionsTable);
  add("c");
  std::string by = streamed_within("c", kBoundWait);
  ASSERT_FALSE(by.empty());
  Running& holder = by == "w1" ? w1 : w2;
  Running& peer = by == "w1" ? w2 : w1;
  crash(holder);
  ASSERT_TRUE(eventually([&] { return peer.worker->stats().sessions_ended == 1; }, kBoundWait));
  EXPECT_EQ(streamed_within("c", kBoundWait), peer.id);
}

// The session is lost while a connection is being acquired, just after the
// loss has closed every stream it knew: the new stream must be lost too,
// and the connection taken again in the next session. No message comes
// meanwhile (a quiet upstream), so nothing but the worker's own check can
// notice.
TEST_P(FleetLiveness, ASessionLostWhileAcquiringLosesThatStreamToo) {
  add("c");
  bool once = true;
  WorkerOptions o = options("w1");
  leasehold::CapturingLogger* log = nullptr;
  o.sync_point = [&](std::string_view point) {
    if (point != "acquire:before_insert" || !once) return;
    once = false;
    clock_.jump(2 * session_ttl_);  // a pause: the session's deadline passes
    // Its loss is reported (and every stream it knew closed) before the
    // stream is added.
    ASSERT_TRUE(eventually([&] { return !log->find("session lost").empty(); }, kBoundWait));
  };
  auto r = std::make_unique<Running>();
  r->id = "w1";
  r->store = std::make_unique<ScriptedStore>(*lagging_);
  r->sink = std::make_unique<CapturingSink>();
  r->log = std::make_unique<leasehold::CapturingLogger>(LogLevel::kInfo);
  log = r->log.get();
  o.logger = log;
  auto w = Worker::start(*r->store, clock_, random_, upstream_, *r->sink, o);
  ASSERT_TRUE(w.ok()) << w.status().to_string();
  r->worker = std::move(*w);
  running_.push_back(std::move(r));
  ASSERT_TRUE(eventually([&] { return !once; }, kBoundWait));
  const std::string lost = stored("c").session;
  ASSERT_TRUE(eventually(
      [&] {
        const std::string now = session_of("w1");
        return !now.empty() && now != lost;
      },
      kBoundWait))
      << "no new session";
  EXPECT_EQ(streamed_within("c", kBoundWait), "w1");
  EXPECT_EQ(stored("c").epoch, 2) << "taken again in the new session";
}

// A store outage longer than the session: every stream stops, and all are
// back within moments of the store's return, with the default reconcile
// period (a worker takes its own connections back at once, and tries to
// rejoin often while it has no session).
TEST_P(FleetLiveness, AfterAStoreOutageEveryStreamIsBackWithinMoments) {
  reconcile_every_ = seconds(2);
  session_ttl_ = seconds(3);
  const std::vector<std::string> ids = {"a", "b", "c"};
  for (const auto& id : ids) add(id);
  Running& w1 = start("w1");
  for (const auto& id : ids) ASSERT_EQ(streamed_within(id, kBoundWait), "w1") << id;
  w1.store->cut();
  ASSERT_TRUE(eventually([&] { return upstream_.open_streams() == 0; }, seconds(10)));
  // Well past the session's expiry.
  const int64_t expired_at_ms = [&] {
    auto item = backend_->get(kWorkersTable, worker_key("w1"), true);
    return item.ok() ? get_int_or(*item, "lease_expires_at_ms") : 0;
  }();
  ASSERT_TRUE(eventually([&] { return to_unix_ms(clock_.wall_now()) > expired_at_ms + 1000; },
                         seconds(10)));
  w1.store->cut(false);
  const auto back = std::chrono::steady_clock::now();
  for (const auto& id : ids) EXPECT_EQ(streamed_within(id, seconds(10)), "w1") << id;
  EXPECT_LT(std::chrono::steady_clock::now() - back, seconds(2))
      << "back only after " << to_ms(std::chrono::steady_clock::now() - back) << " ms";
}

// Workers that come and go under new IDs (autoscaled tasks) leave dead
// members behind; they are removed after a while, so that what each
// reconcile reads stays the live members and those just dead.
TEST_P(FleetLiveness, DeadMembersAreRemovedSoThatReadsStayFlat) {
  session_ttl_ = milliseconds(500);
  std::vector<Running*> all = {&start("w1")};
  for (int i = 0; i < 12; ++i) {
    Running& r = start("t" + std::to_string(i));
    all.push_back(&r);
    if (i % 2 == 0) {
      crash(r);
    } else {
      r.worker->stop();
    }
  }
  const auto members = [&] {
    auto all = list_members(*backend_, clock_, /*alive_only=*/false);
    EXPECT_TRUE(all.ok());
    return all.ok() ? all->size() : 0;
  };
  EXPECT_GT(members(), 2u);
  // member_keep(): five reconcile periods, or two session ttls.
  EXPECT_TRUE(eventually([&] { return members() == 1; }, seconds(10)))
      << members() << " members left";
  // Each removed by someone: mostly w1, but a worker alive for a moment may
  // remove those that died before it. A removal whose reply was lost (a
  // loaded store answering after the client's timeout) may have applied
  // uncounted: it is logged as a failure, and the next reconcile finds the
  // member gone.
  uint64_t pruned = 0, unknown = 0;
  for (const Running* r : all) {
    pruned += r->worker->stats().members_pruned;
    for (const auto& line : r->log->lines()) {
      if (line.message.find("removing worker") != std::string::npos) ++unknown;
    }
  }
  EXPECT_GE(pruned + unknown, 12u) << unknown << " removals without an answer";
}

// What is written to the fleet is acted on within moments though nobody
// reconciles for 30 s: on SQLite each worker sees the store's change stamp
// move; on DynamoDB the change feed's reader nudges the worker that must
// act. A connection added, stopped, started, and handed over by a worker
// that stops.
TEST_P(FleetLiveness, WhatIsWrittenIsActedOnWithinMomentsThoughNobodyReconciles) {
  if (backend_->change_feed(kConnectionsTable) == nullptr && !backend_->change_stamp()) {
    GTEST_SKIP() << "this backend keeps no change feed (dynalite): the poll finds changes";
  }
  reconcile_every_ = seconds(30);
  const auto logs = [&] {
    std::string out;
    for (const auto& r : running_) {
      for (const auto& line : r->log->lines()) out += "\n" + r->id + ": " + line.message;
    }
    return out;
  };
  const auto rarely = [&](const std::string& id) {
    WorkerOptions o = options(id);
    o.poll_every = seconds(60);
    return o;
  };
  start("w1", {}, rarely("w1"));
  start("w2", {}, rarely("w2"));
  constexpr auto kMoments = seconds(3);
  if (backend_->change_feed(kConnectionsTable) != nullptr) {
    // The first reader ever reads from the newest record on: what was
    // written before it began is the poll's to find.
    ASSERT_TRUE(eventually(
        [&] {
          Result<Item> feed = backend_->get(kWorkersTable, Key{kFeedLeasePk, ""}, true);
          return feed.ok() && feed->contains(kFeedShardsAttr);
        },
        kBoundWait));
  }
  add("c");
  const std::string first = streamed_within("c", kMoments);
  ASSERT_FALSE(first.empty()) << "conn add" << logs();
  set_state("c", DesiredState::kStopped);
  EXPECT_TRUE(eventually([&] { return streamer("c").empty(); }, kMoments)) << "conn stop";
  set_state("c", DesiredState::kStarted);
  const std::string holder = streamed_within("c", kMoments);
  ASSERT_FALSE(holder.empty()) << "conn start" << logs();
  for (auto& r : running_) {
    if (r->id == holder) r->worker->stop();
  }
  EXPECT_EQ(streamed_within("c", kMoments), holder == "w1" ? "w2" : "w1")
      << "a worker's stop" << logs();
}

}  // namespace leasehold::fleet::testing
