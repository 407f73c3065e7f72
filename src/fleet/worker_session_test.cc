// The worker with a session (fleet/worker.h): one heartbeat keeps every
// connection, a dead session's connections move about a session ttl after
// its last heartbeat whatever their own ttl, and a worker paused past its
// session writes nothing more under it.
#include <gtest/gtest.h>

#include <map>

#include "base/mutex.h"
#include "fleet/positions.h"
#include "fleet/summary.h"
#include "fleet/worker.h"
#include "fleet/worker_test_fixture.h"
#include "store/store_wrapper.h"

namespace leasehold::fleet::testing {
namespace {

class WorkerSessionTest : public WorkerTest {
 protected:
  void SetUp() override {
    WorkerTest::SetUp();
    ASSERT_TRUE(store_->ensure_table(workers_table_spec()).ok());
    session_ttl_ = seconds(1);
  }

  // Worker "dead" joined with a 1 s session, took `ids` in it with a 60 s
  // lease each (adding them first), and crashed. Its session's lease.
  Lease dead_session(const std::vector<std::string>& ids) {
    LeaseManager members = leases_on(kWorkersTable);
    LeaseManager conns = leases_on(kConnectionsTable);
    AcquireOptions s;
    s.owner = "dead";
    s.ttl = seconds(1);
    s.extra_update.set("kind", std::string(kWorkerKind))
        .set("session_ttl_ms", int64_t{1000})
        .append(member_figures(3, 1000, 0, 0, to_unix_ms(clock_.wall_now())));
    Result<Lease> session = members.acquire(worker_key("dead"), s);
    EXPECT_TRUE(session.ok()) << session.status().to_string();
    if (!session.ok()) return {};
    AcquireOptions c;
    c.owner = "dead";
    c.ttl = seconds(60);
    c.session = session->token;
    for (const auto& id : ids) {
      add(id);
      EXPECT_TRUE(conns.acquire(connection_key(id), c).ok()) << id;
    }
    return *session;
  }

  // A worker started on `store` with `o`.
  std::unique_ptr<Worker> start_with(ItemStore& store, Sink& sink, const WorkerOptions& o) {
    auto started = Worker::start(store, clock_, random_, upstream_, sink, o);
    EXPECT_TRUE(started.ok()) << started.status().to_string();
    return started.ok() ? std::move(started).value() : nullptr;
  }

  Item member(const std::string& id) {
    auto item = store_->get(kWorkersTable, worker_key(id), true);
    EXPECT_TRUE(item.ok()) << item.status().to_string();
    return item.ok() ? *item : Item{};
  }
};

TEST_F(WorkerSessionTest, OneHeartbeatKeepsEveryConnection) {
  const std::vector<std::string> ids = {"a", "b", "c"};
  for (const auto& id : ids) add(id);
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return upstream_.open_streams() == ids.size(); }, kWaitMax));
  const std::string session = get_string_or(member("w1"), "lease_token");
  EXPECT_EQ(get_int_or(member("w1"), "session_ttl_ms"), 1000);
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  for (const auto& id : ids) {
    EXPECT_EQ(stored(id).session, session) << id;
    EXPECT_GT(stored(id).expires_at_ms, now_ms + 50'000) << id << ": its own lease is long";
  }
  // Several session heartbeats (every 283 ms: a third of 1 s less skew and
  // margin) while the streams run and checkpoint; not one connection renewal.
  int64_t seq = 0;
  ASSERT_TRUE(eventually(
      [&] {
        ++seq;
        for (const auto& id : ids) upstream_.send(prefix(id), msg(seq));
        return w->stats().membership_renewals >= 6;
      },
      kWaitMax));
  ASSERT_TRUE(eventually(
      [&] {
        return std::all_of(ids.begin(), ids.end(),
                           [&](const auto& id) { return stored(id).last_seq == seq; });
      },
      kWaitMax));
  EXPECT_EQ(w->stats().connection_renewals, 0u);
  EXPECT_EQ(w->stats().sessions_started, 1u);
  EXPECT_EQ(w->stats().losses, 0u);
}

TEST_F(WorkerSessionTest, ADeadSessionIsEndedAndItsConnectionsTakenWhateverTheirOwnTtl) {
  const std::vector<std::string> ids = {"a", "b", "c"};
  const Lease session = dead_session(ids);
  ASSERT_FALSE(HasFailure());
  LeaseManager members = leases_on(kWorkersTable);

  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return w->owned().size() == ids.size(); }, kWaitMax));
  const int64_t taken_ms = to_unix_ms(clock_.wall_now());
  // About a session ttl after its last heartbeat (the reconcile period is
  // 100 ms), not the connections' 60 s.
  EXPECT_LT(taken_ms, session.expires_at_ms + 1000);
  EXPECT_EQ(get_int_or(member("dead"), "lease_expires_at_ms"), 0) << "the session was ended";
  EXPECT_EQ(w->stats().sessions_ended, 1u);
  const std::string mine = get_string_or(member("w1"), "lease_token");
  for (const auto& id : ids) {
    EXPECT_EQ(stored(id).owner, "w1");
    EXPECT_EQ(stored(id).epoch, 2);
    EXPECT_EQ(stored(id).session, mine);
  }
  // Ended: the dead worker's session can never be renewed.
  EXPECT_EQ(members.renew(LeaseRef{worker_key("dead"), "lease", "dead", session.token}, seconds(1))
                .status()
                .code(),
            Code::kFailedPrecondition);
}

// Checkpoints with a session go to its positions: the connections' own
// items are not written while they stream (on DynamoDB, a write of a 30-byte
// line each instead of a 1.6 KB item and an index each).
TEST_F(WorkerSessionTest, CheckpointsGoToTheSessionsPositionsNotToEachItem) {
  const std::vector<std::string> ids = {"a", "b", "c"};
  for (const auto& id : ids) add(id);
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return upstream_.open_streams() == ids.size(); }, kWaitMax));
  for (int64_t seq = 1; seq <= 5; ++seq) {
    for (const auto& id : ids) ASSERT_TRUE(upstream_.send(prefix(id), msg(seq)));
  }
  ASSERT_TRUE(eventually(
      [&] {
        return std::all_of(ids.begin(), ids.end(),
                           [&](const auto& id) { return stored(id).last_seq == 5; });
      },
      kWaitMax));
  const std::string session = get_string_or(member("w1"), "lease_token");
  Result<Positions> positions = read_positions(*store_, session, true);
  ASSERT_TRUE(positions.ok()) << positions.status().to_string();
  for (const auto& id : ids) {
    Result<Item> item = store_->get(kConnectionsTable, connection_key(id), true);
    ASSERT_TRUE(item.ok());
    EXPECT_EQ(get_int_or(*item, "last_seq"), 0) << id << ": its item was not written";
    EXPECT_FALSE(item->contains("messages")) << id;
    const Position* p = find_position(*positions, id, 1);
    ASSERT_NE(p, nullptr) << id;
    EXPECT_EQ(p->seq, 5);
    EXPECT_EQ(p->messages, 5);
  }
  // Stopped, it hands each over with its last checkpoint on its item, and
  // its positions are removed.
  w->stop();
  for (const auto& id : ids) {
    Result<Item> item = store_->get(kConnectionsTable, connection_key(id), true);
    ASSERT_TRUE(item.ok());
    EXPECT_EQ(get_int_or(*item, "last_seq"), 5) << id;
  }
  positions = read_positions(*store_, session, true);
  ASSERT_TRUE(positions.ok());
  EXPECT_TRUE(positions->empty());
}

// A dead session's connections resume where its positions say (for the
// lease they name), and their items are told so before anything is
// streamed; a position of another holding of a connection is not taken.
TEST_F(WorkerSessionTest, ADeadSessionsConnectionsResumeFromItsPositions) {
  const Lease session = dead_session({"a", "b", "c", "d"});
  ASSERT_FALSE(HasFailure());
  // d was stopped while the dead worker held it: nobody takes it, and it is
  // released on the dead holder's behalf, with where it had got to.
  ASSERT_TRUE(Connections(*store_, clock_).set_desired("d", DesiredState::kStopped).ok());
  // c's item says 3 (an earlier handover); its position is of epoch 7,
  // another holding.
  ASSERT_TRUE(store_
                  ->update(kConnectionsTable, connection_key("c"),
                           Update().set("last_seq", int64_t{3}), Condition())
                  .ok());
  const std::vector<Position> left{
      {"a", 1, 40, 40, 0, 0}, {"b", 1, 7, 7, 0, 0}, {"c", 7, 90, 90, 0, 0}, {"d", 1, 12, 12, 0, 0}};
  ASSERT_TRUE(store_
                  ->update_each(kWorkersTable, std::vector<UpdateRequest>{positions_write(
                                                   session.token, 0, 1, 1,
                                                   to_unix_ms(clock_.wall_now()), left)})[0]
                  .ok());

  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return upstream_.open_streams() == 3; }, kWaitMax));
  std::vector<std::string> urls = upstream_.urls();
  std::sort(urls.begin(), urls.end());
  EXPECT_EQ(urls, (std::vector<std::string>{"ws://upstream.test/s/a?from=41",
                                            "ws://upstream.test/s/b?from=8",
                                            "ws://upstream.test/s/c?from=4"}));
  for (const auto& [id, seq] :
       std::vector<std::pair<std::string, int64_t>>{{"a", 40}, {"b", 7}, {"c", 3}}) {
    Result<Item> item = store_->get(kConnectionsTable, connection_key(id), true);
    ASSERT_TRUE(item.ok());
    EXPECT_EQ(get_int_or(*item, "last_seq"), seq) << id;
  }
  ASSERT_TRUE(eventually([&] { return stored("d").expires_at_ms == 0; }, kWaitMax));
  EXPECT_EQ(stored("d").last_seq, 12);
  EXPECT_TRUE(stored("d").session.empty());
}

// With a long poll period, a change of desired state that no command
// nudged waits for the poll, reconciles go by; `conn stop` nudges the
// holder, which reads its connections' desired state in its next reconcile.
TEST_F(WorkerSessionTest, ANudgeIsActedOnAtOnceAndAChangeNotNudgedWaitsForThePoll) {
  add("a");
  add("b");
  CapturingSink sink;
  WorkerOptions o = options("w1");
  o.poll_every = std::chrono::hours(1);
  o.audit_every = std::chrono::hours(1);
  std::unique_ptr<Worker> w = start_with(*store_, sink, o);
  ASSERT_NE(w, nullptr);
  const auto owns = [&](const std::string& id) {
    const std::vector<OwnedConnection> owned = w->owned();
    return std::any_of(owned.begin(), owned.end(),
                       [&](const OwnedConnection& c) { return c.id == id; });
  };
  ASSERT_TRUE(eventually([&] { return owns("a") && owns("b"); }, kWaitMax));
  // Another tool stops b, writing its item alone.
  ASSERT_TRUE(store_
                  ->update(kConnectionsTable, connection_key("b"),
                           Update().set("desired_state", std::string("STOPPED")), Condition())
                  .ok());
  // Two reconciles at least go by (each takes a connection added after the
  // write), and b is still streamed: its change waits for the poll.
  add("c");
  ASSERT_TRUE(eventually([&] { return owns("c"); }, kWaitMax));
  add("d");
  ASSERT_TRUE(eventually([&] { return owns("d"); }, kWaitMax));
  EXPECT_TRUE(owns("b"));
  // conn stop a: the holder is nudged, and hands a over, b with it.
  ASSERT_TRUE(Connections(*store_, clock_).set_desired("a", DesiredState::kStopped).ok());
  ASSERT_TRUE(eventually([&] { return !owns("a") && stored("a").expires_at_ms == 0; }, kWaitMax));
  EXPECT_FALSE(owns("b"));
  EXPECT_EQ(stored("b").expires_at_ms, 0);
  EXPECT_TRUE(owns("c") && owns("d"));
}

// On a store that says when it changed and whose reads cost nothing (SQLite,
// memory), what is for a worker is acted on moments after it is written, not
// at the end of its reconcile period: a connection added, one stopped (the
// nudge), one started again.
TEST_F(WorkerSessionTest, OnALocalStoreChangesAreActedOnWithoutWaitingForTheReconcile) {
  reconcile_every_ = seconds(30);
  add("a");
  CapturingSink sink;
  auto w = start("w1", sink);
  const auto owns = [&](const std::string& id) {
    const std::vector<OwnedConnection> owned = w->owned();
    return std::any_of(owned.begin(), owned.end(),
                       [&](const OwnedConnection& c) { return c.id == id; });
  };
  ASSERT_TRUE(eventually([&] { return owns("a"); }, kWaitMax));  // the first reconcile
  add("b");
  EXPECT_TRUE(eventually([&] { return owns("b"); }, seconds(3)));
  ASSERT_TRUE(Connections(*store_, clock_).set_desired("a", DesiredState::kStopped).ok());
  EXPECT_TRUE(eventually([&] { return !owns("a"); }, seconds(3)));
  ASSERT_TRUE(Connections(*store_, clock_).set_desired("a", DesiredState::kStarted).ok());
  EXPECT_TRUE(eventually([&] { return owns("a"); }, seconds(3)));
}

// A store that reads over the network (DynamoDB): it does not say when it
// changed, and reads cost. It counts the eventually consistent reads of
// member items, and, made stale, answers them with a member's item as it
// was then (DynamoDB's may show an older item than the last write).
class RemoteLikeStore final : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  std::optional<ChangeStamp> change_stamp() const override { return std::nullopt; }
  bool reads_are_local() const override { return false; }

  Result<Item> get(std::string_view table, const Key& key, bool consistent) override {
    Result<Item> item = StoreWrapper::get(table, key, consistent);
    if (table != kWorkersTable || consistent) return item;
    MutexLock lock(mu_);
    ++member_reads_;
    const auto stale = stale_.find(key.pk);
    return stale != stale_.end() ? stale->second : item;
  }

  void make_stale(const std::string& member) {
    Result<Item> now = StoreWrapper::get(kWorkersTable, worker_key(member), /*consistent=*/true);
    ASSERT_TRUE(now.ok()) << now.status().to_string();
    MutexLock lock(mu_);
    stale_.insert_or_assign(worker_key(member).pk, *now);
  }
  int member_reads() {
    MutexLock lock(mu_);
    return member_reads_;
  }

 private:
  Mutex mu_;
  int member_reads_ GUARDED_BY(mu_) = 0;
  std::map<std::string, Item> stale_ GUARDED_BY(mu_);  // by pk
};

// On a store whose reads cost, the worker does not look for changes between
// reconciles. Told to read its member item only with its heartbeats
// (nudge_read_every at or above their period), it hears a nudge (here
// `conn stop`'s) with its session's next heartbeat, and acts on it then,
// with no read of its own.
TEST_F(WorkerSessionTest, ANudgeIsHeardWithTheSessionsHeartbeatAndActedOnAtOnce) {
  reconcile_every_ = seconds(30);
  RemoteLikeStore remote(*store_);
  add("a");
  CapturingSink sink;
  WorkerOptions o = options("w1");
  o.nudge_read_every = std::chrono::hours(1);
  std::unique_ptr<Worker> w = start_with(remote, sink, o);
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(eventually([&] { return w->owned().size() == 1; }, kWaitMax));
  ASSERT_TRUE(Connections(remote, clock_).set_desired("a", DesiredState::kStopped).ok());
  EXPECT_TRUE(eventually([&] { return w->owned().empty(); }, seconds(3)))
      << "not before the next reconcile, 30 s on";
  EXPECT_EQ(w->stats().nudges_heard, 1u);
  EXPECT_EQ(remote.member_reads(), 0);
}

// Between heartbeats far apart (10 s), the worker reads its member item for
// nudges (every 100 ms here): `conn stop` is acted on long before the next
// heartbeat or reconcile.
TEST_F(WorkerSessionTest, BetweenHeartbeatsANudgeIsReadFromTheMemberItem) {
  session_ttl_ = seconds(30);
  reconcile_every_ = seconds(30);
  RemoteLikeStore remote(*store_);
  add("a");
  CapturingSink sink;
  WorkerOptions o = options("w1");
  o.nudge_read_every = milliseconds(100);
  std::unique_ptr<Worker> w = start_with(remote, sink, o);
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(eventually([&] { return w->owned().size() == 1; }, kWaitMax));
  ASSERT_TRUE(Connections(remote, clock_).set_desired("a", DesiredState::kStopped).ok());
  EXPECT_TRUE(eventually([&] { return w->owned().empty(); }, seconds(3)))
      << "not before the next heartbeat, 10 s on";
  EXPECT_EQ(w->stats().membership_renewals, 0u) << "heard with a heartbeat, not a read";
  EXPECT_GE(remote.member_reads(), 1);
  EXPECT_EQ(w->stats().nudges_heard, 1u);
}

// A read between heartbeats that shows fewer nudges than a heartbeat did
// (an eventually consistent read of an older item) is not a nudge, nor is
// the heartbeat after it: one nudge is heard once.
TEST_F(WorkerSessionTest, AReadShowingAnOlderMemberItemIsNotANudge) {
  reconcile_every_ = seconds(30);
  RemoteLikeStore remote(*store_);
  add("a");
  CapturingSink sink;
  WorkerOptions o = options("w1");
  o.nudge_read_every = milliseconds(50);
  std::unique_ptr<Worker> w = start_with(remote, sink, o);
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(eventually([&] { return w->owned().size() == 1; }, kWaitMax));
  remote.make_stale("w1");  // every read from here on shows the member item as now
  ASSERT_TRUE(Connections(remote, clock_).set_desired("a", DesiredState::kStopped).ok());
  ASSERT_TRUE(eventually([&] { return w->owned().empty(); }, seconds(3)));
  // Heartbeats (the nudge) and stale reads (none) alternate a while.
  const uint64_t renewals = w->stats().membership_renewals;
  const int reads = remote.member_reads();
  ASSERT_TRUE(eventually(
      [&] {
        return w->stats().membership_renewals >= renewals + 4 && remote.member_reads() >= reads + 4;
      },
      kWaitMax));
  EXPECT_EQ(w->stats().nudges_heard, 1u);
}

// What needs attention: a connection stalled (open, no message) and one
// that cannot stay connected are named in the worker's attention item, and
// through it in the fleet summary with their owner; once both stream
// again, the item is removed.
TEST_F(WorkerSessionTest, ConnectionsInTroubleAreNamedForTheSummaryUntilTheyStreamAgain) {
  add("a");
  CapturingSink sink;
  WorkerOptions o = options("w1");
  o.stall_after = milliseconds(300);
  o.attention_after = milliseconds(200);
  o.reconcile_every = milliseconds(100);
  std::unique_ptr<Worker> w = start_with(*store_, sink, o);
  ASSERT_NE(w, nullptr);
  ASSERT_TRUE(eventually([&] { return upstream_.open_streams() == 1; }, kWaitMax));
  upstream_.set_flapping(true);  // b opens and closes at once, every time
  add("b");
  const auto troubles = [&] {
    Result<Item> item = store_->get(kWorkersTable, attention_key("w1"), true);
    return item.ok() ? parse_troubles(get_string_or(*item, "attention")) : std::vector<Trouble>{};
  };
  const auto reasons = [&] {
    std::map<std::string, std::string> out;
    for (const Trouble& t : troubles()) out[t.id] = t.reason;
    return out;
  };
  const std::map<std::string, std::string> both{{"a", "stalled"}, {"b", "not_streaming"}};
  ASSERT_TRUE(eventually([&] { return reasons() == both; }, kWaitMax));
  const std::vector<Trouble> first = troubles();
  std::vector<HeldTrouble> troubled;
  ASSERT_TRUE(eventually(
      [&] {
        Result<FleetSummary> s = read_summary(*store_, clock_, 10);
        if (s.ok()) troubled = s->troubled;
        return troubled.size() == 2;
      },
      kWaitMax));
  for (const HeldTrouble& t : troubled) EXPECT_EQ(t.owner, "w1") << t.trouble.id;
  EXPECT_EQ(troubles(), first) << "unchanged while the trouble lasts: since when stays";

  upstream_.set_flapping(false);
  int64_t seq = 0;
  ASSERT_TRUE(eventually(
      [&] {
        ++seq;  // both have messages
        upstream_.send(prefix("a"), msg(seq));
        upstream_.send(prefix("b"), msg(seq));
        return !store_->get(kWorkersTable, attention_key("w1"), true).ok();
      },
      kWaitMax))
      << "b streams again, both have messages: nothing needs attention; still: "
      << format_troubles(troubles());
}

TEST_F(WorkerSessionTest, APausePastTheSessionWritesNothingMoreUnderItAndANewOneTakesOver) {
  add("a");
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return upstream_.open_streams() == 1; }, kWaitMax));
  ASSERT_TRUE(upstream_.send(prefix("a"), msg(1)));
  ASSERT_EQ(sink.seqs("a"), std::vector<int64_t>{1});
  const std::string first = get_string_or(member("w1"), "lease_token");

  clock_.jump(seconds(5));  // a pause: every local deadline passes at once
  // What comes now is not written: the session is past its deadline, though
  // the connection's own lease is not.
  (void)upstream_.send(prefix("a"), msg(2));
  EXPECT_EQ(sink.seqs("a"), std::vector<int64_t>{1});
  ASSERT_TRUE(eventually([&] { return upstream_.open_streams() == 0; }, kWaitMax));

  // A new session, which names the old one, and the connection taken back
  // from the old one under a new epoch.
  ASSERT_TRUE(eventually([&] { return stored("a").epoch == 2 && upstream_.open_streams() == 1; },
                         kWaitMax));
  const Item now = member("w1");
  EXPECT_NE(get_string_or(now, "lease_token"), first);
  EXPECT_EQ(stored("a").session, get_string_or(now, "lease_token"));
  EXPECT_EQ(w->stats().sessions_started, 2u);
  ASSERT_TRUE(upstream_.send(prefix("a"), msg(2)));
  EXPECT_EQ(sink.seqs("a"), (std::vector<int64_t>{1, 2}));
  EXPECT_NE(sink.lines().back().find("\"epoch\":2"), std::string::npos) << sink.lines().back();
}

// A store outage past the session's ttl: every stream stops before the
// session's local deadline, though the connections' own leases have most of
// a minute left; once the store answers, a new session takes them back under
// new epochs.
TEST_F(WorkerSessionTest, AStoreOutageStopsEveryStreamBeforeTheSessionsDeadline) {
  OutageStore store(*store_);
  const std::vector<std::string> ids = {"a", "b"};
  for (const auto& id : ids) add(id);
  CapturingSink sink;
  auto w = start("w1", sink, &store);
  ASSERT_TRUE(eventually([&] { return upstream_.open_streams() == ids.size(); }, kWaitMax));
  for (const auto& id : ids) ASSERT_TRUE(upstream_.send(prefix(id), msg(1)));

  const auto down_at = std::chrono::steady_clock::now();
  store.set_down(true);
  int64_t seq = 1;
  ASSERT_TRUE(eventually(
      [&] {
        ++seq;
        for (const auto& id : ids) upstream_.send(prefix(id), msg(seq));
        return upstream_.open_streams() == 0;
      },
      kWaitMax));
  // The last session renewal was sent before the outage: nothing is written
  // a session ttl after it.
  EXPECT_LT(sink.last_write_at(), down_at + session_ttl_);
  EXPECT_EQ(w->stats().losses, ids.size());

  store.set_down(false);
  ASSERT_TRUE(eventually([&] { return upstream_.open_streams() == ids.size(); }, kWaitMax));
  for (const auto& id : ids) {
    EXPECT_EQ(stored(id).owner, "w1");
    EXPECT_EQ(stored(id).epoch, 2) << id;
    ASSERT_TRUE(upstream_.send(prefix(id), msg(seq + 1)));
  }
  EXPECT_EQ(w->stats().sessions_started, 2u);
  EXPECT_EQ(sink.seqs("a").back(), seq + 1);
}

// A worker stopped after its session was lost (the store did not answer its
// renewals, then SIGTERM) hands nothing over: its streams went with the session, and their
// items still name it. So the session's positions stay, and the worker that
// takes the connections resumes where they say, not from the items' older
// checkpoints (the nemesis found a takeover 230 messages back, replayed for
// a minute).
TEST_F(WorkerSessionTest, AWorkerStoppedAfterItsSessionWasLostLeavesItsPositions) {
  OutageStore store(*store_);
  const std::vector<std::string> ids = {"a", "b"};
  for (const auto& id : ids) add(id);
  CapturingSink sink;
  auto w = start("w1", sink, &store);
  ASSERT_TRUE(eventually([&] { return upstream_.open_streams() == ids.size(); }, kWaitMax));
  for (int64_t seq = 1; seq <= 5; ++seq) {
    for (const auto& id : ids) ASSERT_TRUE(upstream_.send(prefix(id), msg(seq)));
  }
  const std::string session = get_string_or(member("w1"), "lease_token");
  const auto position = [&](const std::string& id) -> int64_t {
    Result<Positions> positions = read_positions(*store_, session, true);
    const Position* p = positions.ok() ? find_position(*positions, id, 1) : nullptr;
    return p != nullptr ? p->seq : 0;
  };
  ASSERT_TRUE(eventually([&] { return position("a") == 5 && position("b") == 5; }, kWaitMax));

  store.set_down(true, /*spare_positions=*/true);
  ASSERT_TRUE(eventually([&] { return upstream_.open_streams() == 0; }, kWaitMax));
  w->stop();
  store.set_down(false);
  EXPECT_EQ(position("a"), 5);
  EXPECT_EQ(position("b"), 5);
  const auto item_seq = [&](const std::string& id) {
    Result<Item> item = store_->get(kConnectionsTable, connection_key(id), true);
    EXPECT_TRUE(item.ok()) << item.status().to_string();
    return item.ok() ? get_int_or(*item, "last_seq") : -1;
  };
  for (const auto& id : ids) EXPECT_EQ(item_seq(id), 0) << id << ": nothing handed over";

  // The next holder tells each item where it resumes before it streams.
  CapturingSink next;
  auto w2 = start("w2", next);
  ASSERT_TRUE(eventually([&] { return upstream_.open_streams() == ids.size(); }, kWaitMax));
  for (const auto& id : ids) {
    EXPECT_EQ(stored(id).owner, "w2");
    EXPECT_EQ(item_seq(id), 5) << id << ": resumed where the positions say";
  }
}

}  // namespace
}  // namespace leasehold::fleet::testing
