// Tests for the worker's membership, balancing and hand-overs on the memory
// store: a stop that hands over with a final checkpoint, fair shares between
// workers, the waits that keep balancing from handing over twice, and
// takeovers after a crash.
#include <gtest/gtest.h>

#include "fleet/worker.h"
#include "fleet/worker_test_fixture.h"
#include "metrics/registry.h"

namespace leasehold::fleet::testing {
namespace {

// Waits until member `id` has written its figures `times` more times (its
// reconciles); false if it did not within kWaitMax each.
bool figures_written(ItemStore& store, const std::string& id, int times) {
  const auto updated = [&] {
    Result<Item> item = store.get(kWorkersTable, worker_key(id), true);
    const int64_t* at = item.ok() ? get_int(*item, "updated_at_ms") : nullptr;
    return at != nullptr ? *at : int64_t{0};
  };
  for (int i = 0; i < times; ++i) {
    const int64_t before = updated();
    if (!eventually([&] { return updated() > before; }, kWaitMax)) return false;
  }
  return true;
}

TEST_F(WorkerTest, StopHandsOverWithTheFinalCheckpointAndTheNextOwnerResumesAfterIt) {
  add("a");
  CapturingSink sink1, sink2;
  auto w1 = start("w1", sink1);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }, kWaitMax));
  for (int64_t seq = 1; seq <= 5; ++seq) ASSERT_TRUE(upstream_.send(prefix("a"), msg(seq)));
  w1->stop();
  EXPECT_EQ(upstream_.open_streams(), 0u);
  const Connection after = stored("a");
  EXPECT_EQ(after.last_seq, 5) << "the release carries the final checkpoint";
  EXPECT_EQ(after.expires_at_ms, 0) << "handed over: the orphan index shows it at once";

  auto w2 = start("w2", sink2);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }, kWaitMax));
  EXPECT_EQ(upstream_.urls().back(), "ws://upstream.test/s/a?from=6");
  ASSERT_TRUE(upstream_.send(prefix("a"), msg(5)));  // a repeat of what w1 wrote
  ASSERT_TRUE(upstream_.send(prefix("a"), msg(6)));
  EXPECT_EQ(sink2.seqs("a"), std::vector<int64_t>{6});
  EXPECT_EQ(boost::json::parse(sink2.lines().front()).at("epoch").as_int64(), 2);
}

TEST_F(WorkerTest, ASecondWorkerSharesTheConnectionsByHandover) {
  for (int i = 0; i < 6; ++i) add("c" + std::to_string(i));
  CapturingSink sink1, sink2;
  auto w1 = start("w1", sink1);
  ASSERT_TRUE(eventually([&] { return w1->owned().size() == 6; }, kWaitMax));
  auto w2 = start("w2", sink2);
  ASSERT_TRUE(
      eventually([&] { return w1->owned().size() == 3 && w2->owned().size() == 3; }, kWaitMax));
  EXPECT_EQ(w2->stats().takeovers, 0u) << "handed over, not taken";
  EXPECT_EQ(w1->stats().handovers, 3u);
}

// A worker that has just handed connections over waits for the others'
// figures to count them: a member's count written before it took them
// would give a share one too small and a second, needless handover.
TEST_F(WorkerTest, AfterAHandoverTheWorkerWaitsForTheOthersFiguresBeforeBalancingAgain) {
  ASSERT_TRUE(store_->ensure_table(workers_table_spec()).ok());
  const std::vector<std::string> ids = {"c0", "c1", "c2", "c3", "c4", "c5"};
  for (const auto& id : ids) add(id);
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return w->owned().size() == ids.size(); }, kWaitMax));

  // Another member joins with nothing (and room for its share of 3).
  LeaseManager members = leases_on(kWorkersTable);
  ASSERT_TRUE(join(members, "slow", 0, to_unix_ms(clock_.wall_now())).ok());
  ASSERT_TRUE(eventually([&] { return w->stats().handovers == 3; }, kWaitMax));

  // It takes what was handed over, but has not yet written its figures.
  LeaseManager conns = leases_on(kConnectionsTable);
  ASSERT_TRUE(take(conns, ids, "slow", 3));
  // Several reconciles of w1 later (each writes its figures), nothing more
  // was handed over: slow's count is older than the handover.
  ASSERT_TRUE(figures_written(*store_, "w1", 3));
  EXPECT_EQ(w->stats().handovers, 3u);
  EXPECT_EQ(w->owned().size(), 3u);
}

// Free connections taken by a member whose figures do not count them yet
// (here: released by a worker of other code) do not make this worker's share
// look too small: it waits for the member's figures before balancing.
TEST_F(WorkerTest, FreeConnectionsTakenByAMemberWithOlderFiguresAreNotBalancedAway) {
  ASSERT_TRUE(store_->ensure_table(workers_table_spec()).ok());
  const std::vector<std::string> ids = {"c0", "c1", "c2", "c3", "c4", "c5"};
  for (const auto& id : ids) add(id);
  CapturingSink sink;
  WorkerOptions o = options("w1");
  o.max_connections = 3;  // the other three stay free
  auto w = Worker::start(*store_, clock_, random_, upstream_, sink, o);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(eventually([&] { return (*w)->owned().size() == 3; }, kWaitMax));

  // A member joins with nothing and takes the three free ones, its figures
  // still saying 0: 3 of 3 would look like twice its share to w1.
  LeaseManager members = leases_on(kWorkersTable);
  Result<Lease> slow = join(members, "slow", 0, to_unix_ms(clock_.wall_now()));
  ASSERT_TRUE(slow.ok());
  std::set<std::string> owned;
  for (const OwnedConnection& c : (*w)->owned()) owned.insert(c.id);
  std::vector<std::string> free;
  for (const auto& id : ids) {
    if (!owned.contains(id)) free.push_back(id);
  }
  LeaseManager conns = leases_on(kConnectionsTable);
  ASSERT_TRUE(take(conns, free, "slow", 3));
  ASSERT_TRUE(figures_written(*store_, "w1", 3));
  EXPECT_EQ((*w)->stats().handovers, 0u);
  EXPECT_EQ((*w)->owned().size(), 3u);
  // Once its figures say 3, the fleet is balanced as it stands.
  ASSERT_TRUE(
      members.fenced_write(*slow, member_figures(3, 1000, 0, 0, to_unix_ms(clock_.wall_now()) + 1))
          .ok());
  ASSERT_TRUE(figures_written(*store_, "w1", 2));
  EXPECT_EQ((*w)->stats().handovers, 0u);
}

// "Written its figures since the handover" does not read the other
// member's clock: one whose clock is an hour behind writes figures that look
// older than the handover, and balancing must still go on once it has
// written them.
TEST_F(WorkerTest, AMemberWhoseClockIsBehindDoesNotHoldBalancingBack) {
  ASSERT_TRUE(store_->ensure_table(workers_table_spec()).ok());
  const std::vector<std::string> ids = {"c0", "c1", "c2", "c3", "c4", "c5"};
  for (const auto& id : ids) add(id);
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return w->owned().size() == ids.size(); }, kWaitMax));

  LeaseManager members = leases_on(kWorkersTable);
  const int64_t hour_behind = to_unix_ms(clock_.wall_now()) - 3'600'000;
  Result<Lease> behind = join(members, "behind", 0, hour_behind);
  ASSERT_TRUE(behind.ok());
  ASSERT_TRUE(eventually([&] { return w->stats().handovers == 3; }, kWaitMax));

  // It takes its three and writes its figures, by its own clock.
  LeaseManager conns = leases_on(kConnectionsTable);
  ASSERT_TRUE(take(conns, ids, "behind", 3));
  ASSERT_TRUE(members.fenced_write(*behind, member_figures(3, 1000, 0, 0, hour_behind + 1)).ok());

  // A third member joins: w1's share is now 2, and it hands one more over.
  ASSERT_TRUE(join(members, "third", 0, to_unix_ms(clock_.wall_now())).ok());
  ASSERT_TRUE(eventually([&] { return w->stats().handovers == 4; }, kWaitMax));
  EXPECT_EQ(w->owned().size(), 2u);
}

// A worker that died still counts as a member until its membership lease
// expires; its connections must not wait for that.
TEST_F(WorkerTest, ACrashedOwnersConnectionsAreTakenBeyondTheShareAtOnce) {
  ASSERT_TRUE(store_->ensure_table(workers_table_spec()).ok());
  for (int i = 0; i < 4; ++i) add("c" + std::to_string(i));
  LeaseManager conns = leases_on(kConnectionsTable);
  LeaseManager members = leases_on(kWorkersTable);
  ASSERT_TRUE(join(members, "dead", 2, to_unix_ms(clock_.wall_now())).ok());
  AcquireOptions dead;
  dead.owner = "dead";
  dead.ttl = milliseconds(1500);
  for (const char* id : {"c0", "c1"}) ASSERT_TRUE(conns.acquire(connection_key(id), dead).ok());

  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return w->owned().size() == 2; }, kWaitMax));  // its share of 4
  ASSERT_TRUE(eventually([&] { return w->owned().size() == 4; }, seconds(5)))
      << "the dead worker's connections were not taken while its membership lives";
  EXPECT_EQ(w->stats().takeovers, 2u);
}

// The takeover gap (docs/fleet.md): from the dead holder's last message, as
// it recorded it, to the taker's first; nothing for a connection whose
// holder recorded none.
TEST_F(WorkerTest, ATakeoverObservesTheGapSinceTheDeadHoldersLastMessage) {
  add("c0");
  add("c1");
  LeaseManager conns = leases_on(kConnectionsTable);
  AcquireOptions dead;
  dead.owner = "dead";
  dead.ttl = milliseconds(1000);
  const int64_t last_message_at_ms = to_unix_ms(clock_.wall_now()) - 2000;
  Result<Lease> c0 = conns.acquire(connection_key("c0"), dead);
  ASSERT_TRUE(c0.ok());
  ASSERT_TRUE(conns.fenced_write(*c0, Update().set(kLastMessageAtMsAttr, last_message_at_ms)).ok());
  ASSERT_TRUE(conns.acquire(connection_key("c1"), dead).ok());  // no message recorded

  metrics::Registry registry;
  const auto gap = [&registry] {
    for (const metrics::FamilyTotal& t : registry.totals()) {
      if (t.name == "leasehold_fleet_takeover_gap_seconds") return t;
    }
    return metrics::FamilyTotal{};
  };
  CapturingSink sink;
  WorkerOptions o = options("w1");
  o.metrics = &registry;
  auto w = Worker::start(*store_, clock_, random_, upstream_, sink, std::move(o));
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(eventually([&] { return (*w)->stats().takeovers == 2; }, seconds(5)));
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("c0")) != nullptr; }, kWaitMax));
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("c1")) != nullptr; }, kWaitMax));
  EXPECT_EQ(gap().sum, 0) << "nothing observed before the taker's first message";

  ASSERT_TRUE(upstream_.send(prefix("c0"), msg(1)));
  ASSERT_TRUE(upstream_.send(prefix("c1"), msg(1)));
  ASSERT_TRUE(upstream_.send(prefix("c0"), msg(2)));
  ASSERT_TRUE(eventually([&] { return sink.seqs("c0").size() == 2 && sink.seqs("c1").size() == 1; },
                         kWaitMax));
  const metrics::FamilyTotal observed = gap();
  uint64_t count = 0;
  for (uint64_t n : observed.counts) count += n;
  EXPECT_EQ(count, 1u) << "one takeover with a record, measured at its first message only";
  const double waited = static_cast<double>(to_unix_ms(clock_.wall_now()) - last_message_at_ms);
  EXPECT_GE(observed.sum, 2.0) << "at least the 2 s since the recorded message";
  EXPECT_LE(observed.sum, waited / 1000) << "no more than the time since it";
  (*w)->stop();
}

// One worker of 5 with 6 connections streams 5, not 1; a second of 5 takes
// the sixth; when the first stops, the second fills its 5 at once.
TEST_F(WorkerTest, OverCapacityEverySlotIsUsed) {
  ASSERT_TRUE(store_->ensure_table(workers_table_spec()).ok());
  for (int i = 0; i < 8; ++i) add("c" + std::to_string(i));
  CapturingSink sink1, sink2;
  WorkerOptions o1 = options("w1");
  o1.max_connections = 5;
  auto w1 = Worker::start(*store_, clock_, random_, upstream_, sink1, o1);
  ASSERT_TRUE(w1.ok());
  ASSERT_TRUE(eventually([&] { return (*w1)->owned().size() == 5; }, kWaitMax))
      << (*w1)->owned().size();
  WorkerOptions o2 = options("w2");
  o2.max_connections = 5;
  auto w2 = Worker::start(*store_, clock_, random_, upstream_, sink2, o2);
  ASSERT_TRUE(w2.ok());
  ASSERT_TRUE(eventually([&] { return (*w2)->owned().size() == 3; }, kWaitMax));
  EXPECT_EQ((*w1)->owned().size(), 5u);
  (*w1)->stop();  // scale-in: what it releases fills w2
  ASSERT_TRUE(eventually([&] { return (*w2)->owned().size() == 5; }, seconds(5)))
      << (*w2)->owned().size();
}

// A member that was handed connections and never takes them (its figures
// are fresh, it just does not take) holds nothing up for long: they are
// taken back once stranded, and balancing then waits before trying it again.
TEST_F(WorkerTest, ConnectionsHandedToAMemberThatNeverTakesThemAreTakenBack) {
  ASSERT_TRUE(store_->ensure_table(workers_table_spec()).ok());
  const std::vector<std::string> ids = {"c0", "c1", "c2", "c3", "c4", "c5"};
  for (const auto& id : ids) add(id);
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return w->owned().size() == ids.size(); }, kWaitMax));
  LeaseManager members = leases_on(kWorkersTable);
  Result<Lease> lazy = join(members, "lazy", 0, to_unix_ms(clock_.wall_now()));
  ASSERT_TRUE(lazy.ok());
  std::atomic<bool> done{false};
  std::thread figures([&] {  // fresh figures every 50 ms, and it never takes
    while (!done) {
      (void)members.fenced_write(*lazy,
                                 member_figures(0, 1000, 0, 0, to_unix_ms(clock_.wall_now())));
      std::this_thread::sleep_for(milliseconds(50));
    }
  });
  ASSERT_TRUE(eventually([&] { return w->stats().handovers >= 3; }, kWaitMax));
  EXPECT_TRUE(eventually([&] { return w->owned().size() == ids.size(); }, seconds(5)))
      << "stranded with a member that never takes them";
  const uint64_t handovers = w->stats().handovers;
  // Five of w1's reconciles later it has not handed them over again (it
  // waits ten after a handover nobody took, then twenty, ...).
  const uint64_t acquired = w->stats().acquired;
  std::this_thread::sleep_for(5 * options("w1").reconcile_every);
  EXPECT_EQ(w->stats().handovers, handovers);
  EXPECT_EQ(w->stats().acquired, acquired);
  done = true;
  figures.join();
}

// After a crash, each orphan is tried by one worker at first, not by every
// worker in the same order at once: failed acquisitions stay far below one
// per worker per orphan. The workers reconcile every 400 ms, so that the
// stagger between one rank's turn and the next (200 ms) outlasts a thread
// kept waiting on a loaded machine.
TEST_F(WorkerTest, TakeoversAfterACrashAreSpreadWithFewConflicts) {
  reconcile_every_ = milliseconds(400);
  ASSERT_TRUE(store_->ensure_table(workers_table_spec()).ok());
  constexpr int kOrphans = 40;
  LeaseManager conns = leases_on(kConnectionsTable);
  AcquireOptions dead;
  dead.owner = "dead";
  dead.ttl = seconds(4);
  const MonoTime orphaned = clock_.mono_now();
  for (int i = 0; i < kOrphans; ++i) {
    add("c" + std::to_string(i));
    ASSERT_TRUE(conns.acquire(connection_key("c" + std::to_string(i)), dead).ok());
  }
  std::vector<std::unique_ptr<CapturingSink>> sinks;
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < 4; ++i) {
    sinks.push_back(std::make_unique<CapturingSink>());
    workers.push_back(start("w" + std::to_string(i), *sinks.back()));
  }
  // Every worker knows the other three before the orphans expire: each has
  // written its figures twice since all four were members, so its latest
  // reconcile read all four.
  const auto figures_after = [&](int64_t ms) {
    auto members = list_members(*store_, clock_, /*alive_only=*/true);
    if (!members.ok() || members->size() != 4) return false;
    return std::all_of(members->begin(), members->end(),
                       [&](const Member& m) { return m.updated_at_ms > ms; });
  };
  ASSERT_TRUE(eventually([&] { return figures_after(0); }, seconds(10)));
  const int64_t all_in = to_unix_ms(clock_.wall_now());
  ASSERT_TRUE(eventually([&] { return figures_after(all_in); }, seconds(10)));
  ASSERT_LT(clock_.mono_now(), orphaned + seconds(3))
      << "the workers took too long to start to see the takeovers spread";

  const auto owned = [&] {
    size_t n = 0;
    for (const auto& w : workers) n += w->owned().size();
    return n;
  };
  ASSERT_TRUE(eventually([&] { return owned() == kOrphans; }, seconds(10))) << owned();
  uint64_t conflicts = 0;
  for (const auto& w : workers) {
    conflicts += w->stats().conflicts;
    EXPECT_GT(w->owned().size(), 0u) << w->id() << ": the takeovers are spread";
  }
  EXPECT_LE(conflicts, static_cast<uint64_t>(kOrphans) / 4) << "of " << kOrphans << " orphans";
}

}  // namespace
}  // namespace leasehold::fleet::testing
