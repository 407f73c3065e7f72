// The fleet summary on the memory store: the counts by desired state kept
// by Connections' writes and put right by a recount that no change
// overtook, the live members' stream counts, and the free connections,
// longest free first.
#include "fleet/summary.h"

#include <gtest/gtest.h>

#include "fleet/connections.h"
#include "fleet/schema.h"
#include "leasehold/lease.h"
#include "store/memory/memory_store.h"

namespace leasehold::fleet {
namespace {

using std::chrono::seconds;

class SummaryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(store_->ensure_table(connections_table_spec()).ok());
    ASSERT_TRUE(store_->ensure_table(workers_table_spec()).ok());
  }

  void add(const std::string& id, bool stopped = false) {
    ASSERT_TRUE(connections_.add(NewConnection{id, "ws://h/" + id, "seq", stopped}).ok()) << id;
  }

  ConnectionCounts counts() {
    Result<ConnectionCounts> c = read_counts(*store_, /*consistent=*/true);
    EXPECT_TRUE(c.ok()) << c.status().to_string();
    return c.ok() ? *c : ConnectionCounts{};
  }

  // Worker `id` joined with a session of `ttl`, its figures saying `streams`.
  Lease join(const std::string& id, Duration ttl, int64_t owned, const StreamCounts& streams) {
    AcquireOptions o;
    o.owner = id;
    o.ttl = ttl;
    o.extra_update.set("kind", std::string(kWorkerKind))
        .append(member_figures(owned, 1000, 0, 0, to_unix_ms(clock_.wall_now())))
        .append(stream_figures(streams));
    Result<Lease> lease = members_.acquire(worker_key(id), o);
    EXPECT_TRUE(lease.ok()) << lease.status().to_string();
    return lease.ok() ? *lease : Lease{};
  }

  // Connection `id` taken by `owner` in session `session` for `ttl`.
  void take(const std::string& id, const Lease& session, Duration ttl) {
    AcquireOptions o;
    o.owner = session.owner;
    o.ttl = ttl;
    o.session = session.token;
    ASSERT_TRUE(conns_.acquire(connection_key(id), o).ok()) << id;
  }

  SimulatedClock clock_;
  SeededRandom random_{7};
  std::unique_ptr<ItemStore> store_ = store::make_memory_store();
  Connections connections_{*store_, clock_};
  LeaseManager members_{*store_, clock_, random_, [] {
                          LeaseConfig c;
                          c.table = kWorkersTable;
                          return c;
                        }()};
  LeaseManager conns_{*store_, clock_, random_, [] {
                        LeaseConfig c;
                        c.table = kConnectionsTable;
                        return c;
                      }()};
};

TEST_F(SummaryTest, CountsFollowAddStartStopAndRemove) {
  EXPECT_EQ(counts().started, 0);
  EXPECT_EQ(counts().counted_at_ms, 0) << "never counted";
  add("a");
  add("b");
  add("c", /*stopped=*/true);
  EXPECT_EQ(counts().started, 2);
  EXPECT_EQ(counts().stopped, 1);
  ASSERT_TRUE(connections_.set_desired("a", DesiredState::kStopped).ok());
  ASSERT_TRUE(connections_.set_desired("a", DesiredState::kStopped).ok());  // no change
  EXPECT_EQ(counts().started, 1);
  EXPECT_EQ(counts().stopped, 2);
  ASSERT_TRUE(connections_.set_desired("c", DesiredState::kStarted).ok());
  ASSERT_TRUE(connections_.remove("b").ok());
  EXPECT_EQ(counts().started, 1);
  EXPECT_EQ(counts().stopped, 1);
  // Refused calls change nothing.
  EXPECT_EQ(connections_.remove("b").status().code(), Code::kNotFound);
  EXPECT_EQ(connections_.set_desired("b", DesiredState::kStarted).status().code(), Code::kNotFound);
  EXPECT_EQ(connections_.add(NewConnection{"a", "ws://h/a"}).status().code(), Code::kAlreadyExists);
  EXPECT_EQ(counts().started, 1);
  EXPECT_EQ(counts().stopped, 1);
}

TEST_F(SummaryTest, ARecountPutsRightWhatOtherWritersLeftOff) {
  add("a");
  add("b", /*stopped=*/true);
  // Another tool writes an item itself, and another stops one: the counts
  // miss both.
  Update other;
  other.set(kDesiredStateAttr, std::string("STARTED"))
      .set(kWsUrlAttr, std::string("ws://h/x"))
      .set("lease_expires_at_ms", int64_t{0});
  ASSERT_TRUE(store_->update(kConnectionsTable, connection_key("x"), other, Condition()).ok());
  ASSERT_TRUE(store_
                  ->update(kConnectionsTable, connection_key("a"),
                           Update().set(kDesiredStateAttr, std::string("STOPPED")), Condition())
                  .ok());
  EXPECT_EQ(counts().started, 1);
  clock_.advance(seconds(5));
  ASSERT_TRUE(recount_connections(*store_, clock_).ok());
  const ConnectionCounts now = counts();
  EXPECT_EQ(now.started, 1);  // x
  EXPECT_EQ(now.stopped, 2);  // a, b
  EXPECT_EQ(now.counted_at_ms, to_unix_ms(clock_.wall_now()));
}

TEST_F(SummaryTest, ARecountThatAChangeOvertookIsNotWritten) {
  add("a");
  const ConnectionCounts before = counts();
  Result<ConnectionCounts> counted = count_connections(*store_);
  ASSERT_TRUE(counted.ok());
  add("b");  // while it counted
  EXPECT_EQ(write_recount(*store_, before, *counted, 1).code(), Code::kFailedPrecondition);
  EXPECT_EQ(counts().started, 2) << "the change stays";
  EXPECT_EQ(counts().counted_at_ms, 0);
  // Before any counts were written at all, too.
  ASSERT_TRUE(store_->remove(kWorkersTable, Key{kCountsPk, ""}, Condition()).ok());
  const ConnectionCounts none = counts();
  add("c");
  EXPECT_EQ(write_recount(*store_, none, *counted, 1).code(), Code::kFailedPrecondition);
}

TEST_F(SummaryTest, SumsTheLiveMembersStreamsAndListsFreeConnectionsLongestFreeFirst) {
  for (const char* id : {"a", "b", "c", "d", "e"}) add(id);
  add("s", /*stopped=*/true);
  const Lease w1 = join("w1", seconds(60), 2, {1, 1, 1, 1});
  take("a", w1, seconds(600));
  take("b", w1, seconds(600));
  const Lease w2 = join("w2", seconds(5), 1, {1, 0, 0, 0});
  take("c", w2, seconds(600));  // its session ends first: held by a dead member
  clock_.advance(seconds(10));  // w2 is dead, d and e were never taken
  join("w3", seconds(60), 0, {});

  Result<FleetSummary> s = read_summary(*store_, clock_, 10);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  EXPECT_EQ(s->counts.started, 5);
  EXPECT_EQ(s->counts.stopped, 1);
  ASSERT_EQ(s->members.size(), 3u);
  EXPECT_EQ(s->owned, 2) << "the live members' only";
  EXPECT_EQ(s->streams, (StreamCounts{1, 1, 1, 1}));
  EXPECT_TRUE(s->streams_known);
  std::vector<std::string> free;
  for (const FreeConnection& f : s->free) free.push_back(f.id);
  // d and e since they were added; c since w2's session ended.
  EXPECT_EQ(free, (std::vector<std::string>{"d", "e", "c"}));
  EXPECT_FALSE(s->more_free);

  Result<FleetSummary> first = read_summary(*store_, clock_, 2);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->free.size(), 2u);
  EXPECT_TRUE(first->more_free);
}

TEST_F(SummaryTest, AMemberOfAnOlderBuildLeavesTheStreamsUnknown) {
  AcquireOptions o;
  o.owner = "old";
  o.ttl = seconds(60);
  o.extra_update.set("kind", std::string(kWorkerKind))
      .append(member_figures(3, 1000, 0, 0, to_unix_ms(clock_.wall_now())));
  ASSERT_TRUE(members_.acquire(worker_key("old"), o).ok());
  Result<FleetSummary> s = read_summary(*store_, clock_, 0);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->streams_known);
  EXPECT_FALSE(s->members[0].streams.has_value());
  EXPECT_EQ(s->owned, 3);
}

}  // namespace
}  // namespace leasehold::fleet
