// Tests for the change feed's reader: what it tells whom, one reader at a
// time, shards in order, expired positions, and a reader that dies mid-shard.
#include "fleet/feed_reader.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>

#include "fleet/connections.h"
#include "fleet/members.h"
#include "fleet/placement.h"
#include "fleet/schema.h"
#include "leasehold/lease.h"
#include "store/memory/memory_store.h"
#include "store/store_wrapper.h"

namespace leasehold::fleet {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// A change feed the test writes: shards of records, closed and split at
// will, whose positions the test can make expire. Positions are
// "<shard>#<next record>#<generation>".
class FakeFeed final : public ChangeFeed {
 public:
  void add_shard(const std::string& id, const std::string& parent = "") {
    std::lock_guard lock(mu_);
    shards_[id].parent = parent;
    order_.push_back(id);
  }
  void close(const std::string& id) {
    std::lock_guard lock(mu_);
    shards_.at(id).closed = true;
  }
  // Appends a write of a connection to `shard`: its item before and after.
  void append(const std::string& shard, std::optional<Item> before, std::optional<Item> after) {
    std::lock_guard lock(mu_);
    Shard& s = shards_.at(shard);
    FeedRecord r;
    r.sequence = std::to_string(100000 + s.records.size());
    r.key = Key{get_string_or(after ? *after : *before, kConnectionsKeyAttr), ""};
    r.old_image = std::move(before);
    r.new_image = std::move(after);
    s.records.push_back(std::move(r));
  }
  // Every position handed out so far fails from now on, as expired.
  void expire_positions() {
    std::lock_guard lock(mu_);
    ++generation_;
  }
  // The shards read, in the order of the reads.
  std::vector<std::string> reads() const {
    std::lock_guard lock(mu_);
    return reads_;
  }

  Result<std::vector<FeedShard>> shards() override {
    std::lock_guard lock(mu_);
    std::vector<FeedShard> out;
    for (const std::string& id : order_) {
      const Shard& s = shards_.at(id);
      out.push_back({id, s.parent, s.closed});
    }
    return out;
  }

  Result<std::string> position(std::string_view shard, FeedStart start,
                               std::string_view sequence) override {
    std::lock_guard lock(mu_);
    const auto it = shards_.find(std::string(shard));
    if (it == shards_.end()) return not_found("no shard " + std::string(shard));
    size_t next = 0;
    if (start == FeedStart::kLatest) next = it->second.records.size();
    if (start == FeedStart::kAfter) {
      next = it->second.records.size() + 1;
      for (size_t i = 0; i < it->second.records.size(); ++i) {
        if (it->second.records[i].sequence == sequence) next = i + 1;
      }
      if (next > it->second.records.size()) return not_found("no record " + std::string(sequence));
    }
    return std::string(shard) + "#" + std::to_string(next) + "#" + std::to_string(generation_);
  }

  Result<FeedPage> read(std::string_view position, int limit) override {
    std::lock_guard lock(mu_);
    const size_t a = position.find('#'), b = position.rfind('#');
    const std::string id(position.substr(0, a));
    size_t next = std::stoul(std::string(position.substr(a + 1, b - a - 1)));
    if (std::stoul(std::string(position.substr(b + 1))) != generation_) {
      return failed_precondition("the position has expired");
    }
    reads_.push_back(id);
    const Shard& s = shards_.at(id);
    FeedPage page;
    while (next < s.records.size() && page.records.size() < static_cast<size_t>(limit)) {
      page.records.push_back(s.records[next++]);
    }
    if (!(s.closed && next == s.records.size())) {
      page.next = id + "#" + std::to_string(next) + "#" + std::to_string(generation_);
    }
    return page;
  }

 private:
  struct Shard {
    std::string parent;
    bool closed = false;
    std::vector<FeedRecord> records;
  };
  mutable std::mutex mu_;
  std::map<std::string, Shard> shards_;
  std::vector<std::string> order_;
  std::vector<std::string> reads_;
  size_t generation_ = 0;
};

class FeedReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(store_->ensure_table(workers_table_spec()).ok());
    ASSERT_TRUE(store_->ensure_table(connections_table_spec()).ok());
    feed_.add_shard("s1");
  }

  std::unique_ptr<FeedReader> reader(const std::string& id,
                                     std::function<void(const std::string&)> nudge_self = {},
                                     std::function<int64_t()> owned_now = {}) {
    FeedReaderOptions o;
    o.nudge_self = std::move(nudge_self);
    o.owned_now = std::move(owned_now);
    o.id = id;
    o.lease_ttl = seconds(3);
    o.list_every = seconds(5);
    o.lease.max_clock_skew = milliseconds(100);
    o.lease.safety_margin = milliseconds(50);
    return std::make_unique<FeedReader>(*store_, feed_, clock_, random_, o);
  }

  // Member `id` joins, saying it owns `owned` of at most `capacity`.
  void join(const std::string& id, int64_t owned, int64_t capacity = 1000) {
    AcquireOptions o;
    o.owner = id;
    o.ttl = seconds(600);
    o.extra_update.set("kind", std::string(kWorkerKind))
        .append(member_figures(owned, capacity, 0, 0, to_unix_ms(clock_.wall_now())));
    ASSERT_TRUE(members_.acquire(worker_key(id), o).ok());
  }

  int64_t nudges(const std::string& id) {
    Result<Item> item = store_->get(kWorkersTable, worker_key(id), true);
    return item.ok() ? get_int_or(*item, kNudgesAttr) : -1;
  }

  // A connection's item: free and STARTED unless an owner is given.
  Item connection(const std::string& id, const std::string& owner = "",
                  DesiredState state = DesiredState::kStarted, int64_t expires_at_ms = 0) {
    Item item;
    item[kConnectionsKeyAttr] = connection_key(id).pk;
    item[kDesiredStateAttr] = std::string(desired_state_name(state));
    item[kWsUrlAttr] = "ws://upstream.test/" + id;
    if (!owner.empty()) {
      item["lease_owner"] = owner;
      item["lease_token"] = std::string(32, 'a');
      item["lease_epoch"] = int64_t{1};
      item["lease_expires_at_ms"] =
          expires_at_ms != 0 ? expires_at_ms : to_unix_ms(clock_.wall_now()) + 60'000;
    }
    return item;
  }

  SimulatedClock clock_;
  SeededRandom random_{3};
  std::unique_ptr<ItemStore> store_ = store::make_memory_store();
  LeaseManager members_{*store_, clock_, random_, [] {
                          LeaseConfig c;
                          c.table = kWorkersTable;
                          return c;
                        }()};
  FakeFeed feed_;
};

TEST_F(FeedReaderTest, AFreeConnectionNudgesItsTakerAndAChangeOfAHeldOneItsHolder) {
  join("w1", 0);
  join("w2", 0);
  auto r = reader("w1");
  r->step();  // takes the feed, and reads from its newest record on
  ASSERT_TRUE(r->reading());

  // Added: the member placement ranks first for it is told.
  feed_.append("s1", std::nullopt, connection("c1"));
  r->step();
  const std::string first =
      rendezvous_weight("w1", "c1") > rendezvous_weight("w2", "c1") ? "w1" : "w2";
  const std::string second = first == "w1" ? "w2" : "w1";
  EXPECT_EQ(nudges(first), 1);
  EXPECT_EQ(nudges(second), 0);
  Result<Item> told = store_->get(kWorkersTable, worker_key(first), true);
  ASSERT_TRUE(told.ok());
  EXPECT_EQ(get_string_or(*told, kTakeHintAttr), "c1") << "named, to be tried out of turn";

  // Taken by w2, then renewed: nobody is told.
  feed_.append("s1", connection("c1"), connection("c1", "w2"));
  feed_.append(
      "s1", connection("c1", "w2"),
      connection("c1", "w2", DesiredState::kStarted, to_unix_ms(clock_.wall_now()) + 120'000));
  r->step();
  EXPECT_EQ(nudges("w1") + nudges("w2"), 1);

  // Stopped while w2 holds it: w2 is told.
  feed_.append("s1", connection("c1", "w2"), connection("c1", "w2", DesiredState::kStopped));
  r->step();
  EXPECT_EQ(nudges("w2"), second == "w2" ? 1 : 2);
  EXPECT_EQ(r->stats().records, 4u);
}

// Three free at once go to members below their share first: a full member
// is never told, and one with room gets its share, not all.
TEST_F(FeedReaderTest, FreeConnectionsAreSpreadOverTheMembersBelowTheirShare) {
  join("full", 2, 2);
  join("w1", 0);
  join("w2", 0);
  auto r = reader("w1");
  r->step();
  for (const char* id : {"a", "b", "c", "d"}) feed_.append("s1", std::nullopt, connection(id));
  r->step();
  EXPECT_EQ(nudges("full"), 0);
  EXPECT_EQ(nudges("w1") + nudges("w2"), 4);
  EXPECT_EQ(nudges("w1"), 2) << "6 between 2 + 2 workers with room: 2 each to the two";
}

// Figures lag: "held1" has just handed its one connection over, and its
// figures still count it, so by them it is at its share. The member below
// its share is told, and so is the one that ranks first (which may read
// the figures as they now are, and wait for nobody else).
TEST_F(FeedReaderTest, TheMemberThatRanksFirstIsToldTooWhenTheFiguresSayAnother) {
  join("held1", 1);
  join("w2", 0);
  const auto ranked_first_by = [](const std::string& member) {
    const std::string other = member == "w2" ? "held1" : "w2";
    std::string c = "c";
    while (rendezvous_weight(member, c) < rendezvous_weight(other, c)) c += "x";
    return c;
  };
  auto r = reader("w2");
  r->step();
  feed_.append("s1", std::nullopt, connection(ranked_first_by("held1")));
  r->step();
  EXPECT_EQ(nudges("w2"), 1) << "below its share";
  EXPECT_EQ(nudges("held1"), 1) << "first by rank";
  // Where the two agree, one nudge.
  feed_.append("s1", std::nullopt, connection(ranked_first_by("w2")));
  r->step();
  EXPECT_EQ(nudges("w2"), 2);
  EXPECT_EQ(nudges("held1"), 1);
}

// The reader's own worker is told in-process, with no write to its item,
// and takes every free connection while it is below its share (until it
// stops); above it, the others are nudged through the store as before.
TEST_F(FeedReaderTest, ItsOwnWorkerIsToldAtOnceAndTakesWhatIsFreeWhileBelowItsShare) {
  join("w1", 0);
  join("w2", 0);
  std::vector<std::string> told;  // what w1 was told, in order ("" for a holder's nudge)
  auto r = reader("w1", [&](const std::string& take) { told.push_back(take); });
  r->step();
  // Ranked first for w2 by rendezvous, and free: w1 takes it anyway.
  std::string c = "c";
  while (rendezvous_weight("w2", c) < rendezvous_weight("w1", c)) c += "x";
  feed_.append("s1", std::nullopt, connection(c));
  r->step();
  ASSERT_EQ(told, std::vector<std::string>{c});
  EXPECT_EQ(nudges("w1"), 0) << "told in-process, not through the store";
  EXPECT_EQ(nudges("w2"), 1) << "first by rank, told too";

  // Held by w1 and stopped: w1 is told in-process; w2 nothing more.
  feed_.append("s1", connection(c, "w1"), connection(c, "w1", DesiredState::kStopped));
  r->step();
  EXPECT_EQ(told, (std::vector<std::string>{c, ""}));
  EXPECT_EQ(nudges("w1"), 0);
  EXPECT_EQ(nudges("w2"), 1);

  // Two free: w1 takes the first; then at its share (1 of 2, as placed),
  // the second goes to w2 through the store.
  for (const char* id : {"d", "e"}) feed_.append("s1", std::nullopt, connection(id));
  r->step();
  EXPECT_EQ(told, (std::vector<std::string>{c, "", "d"}));
  EXPECT_EQ(nudges("w1"), 0);
  EXPECT_GE(nudges("w2"), 2);
  Result<Item> w2 = store_->get(kWorkersTable, worker_key("w2"), true);
  ASSERT_TRUE(w2.ok());
  EXPECT_EQ(get_string_or(*w2, kTakeHintAttr), "e");

  // Stopping, with one freed meanwhile (its own handover, say): w1 takes
  // nothing more, though its figures say it has room; w2 is told.
  feed_.append("s1", std::nullopt, connection("f"));
  r->stop();
  EXPECT_EQ(told.size(), 3u);
  w2 = store_->get(kWorkersTable, worker_key("w2"), true);
  ASSERT_TRUE(w2.ok());
  EXPECT_EQ(get_string_or(*w2, kTakeHintAttr), "f");
}

// Its own worker's figures lag what it owns: it has just taken one that
// its figures do not count. Counted as it is, it is at its share, and the
// other member is told instead of it (it would not take the connection,
// and nobody else would have been told).
TEST_F(FeedReaderTest, ItsOwnWorkerIsCountedAsItIsNotAsItsFiguresSay) {
  join("w1", 0);
  join("w2", 0);
  std::vector<std::string> told;
  auto r = reader(
      "w1", [&](const std::string& take) { told.push_back(take); }, [] { return int64_t{1}; });
  r->step();
  std::string c = "c";  // ranked first for w1: without the count, w1 alone would be told
  while (rendezvous_weight("w1", c) < rendezvous_weight("w2", c)) c += "x";
  feed_.append("s1", std::nullopt, connection(c));
  r->step();
  EXPECT_TRUE(told.empty()) << "1 of 2, at its share";
  EXPECT_EQ(nudges("w2"), 1);
  Result<Item> w2 = store_->get(kWorkersTable, worker_key("w2"), true);
  ASSERT_TRUE(w2.ok());
  EXPECT_EQ(get_string_or(*w2, kTakeHintAttr), c);
}

TEST_F(FeedReaderTest, OneReaderAtATimeAndAStoppedOneHandsTheFeedOverAtOnce) {
  join("w1", 0);
  auto a = reader("a");
  auto b = reader("b");
  a->step();
  b->step();
  ASSERT_TRUE(a->reading());
  EXPECT_FALSE(b->reading());
  feed_.append("s1", std::nullopt, connection("c1"));
  a->step();
  b->step();
  EXPECT_EQ(nudges("w1"), 1) << "acted on once, by the one reader";

  a->stop();
  EXPECT_FALSE(a->reading());
  feed_.append("s1", std::nullopt, connection("c2"));
  clock_.advance(seconds(2));  // b's next look, well within the lease's ttl
  b->step();
  ASSERT_TRUE(b->reading()) << "released, not left to expire";
  b->step();
  EXPECT_EQ(nudges("w1"), 2) << "c2, written after a's last checkpoint";
  EXPECT_EQ(b->stats().records, 1u) << "what a acted on is not acted on again";
}

// A reader that dies mid-shard: its successor takes the lease once it has
// expired, and acts on every record after the last checkpoint.
TEST_F(FeedReaderTest, AReaderKilledMidShardIsFollowedFromItsCheckpoint) {
  join("w1", 0);
  auto a = reader("a");
  a->step();
  for (const char* id : {"c1", "c2", "c3"}) feed_.append("s1", std::nullopt, connection(id));
  a->step();
  ASSERT_EQ(a->stats().records, 3u);
  for (const char* id : {"c4", "c5"}) feed_.append("s1", std::nullopt, connection(id));
  a.reset();  // killed: no stop, the lease left to expire

  auto b = reader("b");
  b->step();
  EXPECT_FALSE(b->reading()) << "the dead reader's lease has not expired";
  EXPECT_EQ(b->stats().records, 0u);
  clock_.advance(seconds(4));
  b->step();
  ASSERT_TRUE(b->reading());
  EXPECT_EQ(b->stats().records, 2u) << "c4 and c5, and nothing before the checkpoint";
  EXPECT_EQ(nudges("w1"), 5);
}

// A split: the parent is read to its end before either child, whose records
// are read from their first.
TEST_F(FeedReaderTest, AShardIsReadToItsEndBeforeItsChildren) {
  join("w1", 0);
  auto r = reader("w1");
  r->step();
  feed_.append("s1", std::nullopt, connection("c1"));
  feed_.close("s1");
  feed_.add_shard("s2", "s1");
  feed_.add_shard("s3", "s1");
  feed_.append("s2", std::nullopt, connection("c2"));
  feed_.append("s3", std::nullopt, connection("c3"));
  for (int i = 0; i < 6; ++i) {  // until the shards are listed again
    clock_.advance(seconds(1));
    r->step();
  }
  EXPECT_EQ(r->stats().records, 3u);
  EXPECT_EQ(nudges("w1"), 3);
  const std::vector<std::string> reads = feed_.reads();
  const auto last_of_s1 = std::find(reads.rbegin(), reads.rend(), "s1");
  const auto first_of_s2 = std::find(reads.begin(), reads.end(), "s2");
  ASSERT_NE(first_of_s2, reads.end());
  EXPECT_LT(reads.rend() - last_of_s1 - 1, first_of_s2 - reads.begin())
      << "a child was read before its parent ended";
  // The ended parent is read no more.
  const size_t s1_reads = std::count(reads.begin(), reads.end(), "s1");
  r->step();
  const std::vector<std::string> after = feed_.reads();
  EXPECT_EQ(std::count(after.begin(), after.end(), "s1"), static_cast<long>(s1_reads));
}

// A store whose consistent reads fail while `failing` is set.
class FailingReads final : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Result<Item> get(std::string_view t, const Key& k, bool consistent) override {
    if (failing && consistent) return unavailable("the store is down (test)");
    return StoreWrapper::get(t, k, consistent);
  }
  bool failing = false;
};

// A reader that takes the feed over but cannot read the checkpoints reads
// nothing (from the newest records it would skip what came after them) and
// gives the lease back; once it can read them, it reads on from them.
TEST_F(FeedReaderTest, AReaderThatCannotReadTheCheckpointsReadsNothingAndLetsGo) {
  join("w1", 0);
  auto a = reader("a");
  a->step();
  feed_.append("s1", std::nullopt, connection("c1"));
  a->step();
  a.reset();  // killed
  feed_.append("s1", std::nullopt, connection("c2"));
  clock_.advance(seconds(4));

  FailingReads failing(*store_);
  failing.failing = true;
  FeedReaderOptions o;
  o.id = "b";
  o.lease_ttl = seconds(3);
  o.lease.max_clock_skew = milliseconds(100);
  o.lease.safety_margin = milliseconds(50);
  FeedReader b(failing, feed_, clock_, random_, o);
  b.step();
  EXPECT_FALSE(b.reading());
  EXPECT_EQ(b.stats().records, 0u);
  failing.failing = false;
  clock_.advance(seconds(2));  // its next look; the lease was given back
  b.step();
  ASSERT_TRUE(b.reading());
  EXPECT_EQ(b.stats().records, 1u) << "c2, after the checkpoint";
  EXPECT_EQ(nudges("w1"), 2);
}

TEST_F(FeedReaderTest, AnExpiredPositionIsTakenAgainAfterTheLastRecordActedOn) {
  join("w1", 0);
  auto r = reader("w1");
  r->step();
  for (const char* id : {"c1", "c2", "c3"}) feed_.append("s1", std::nullopt, connection(id));
  r->step();
  feed_.expire_positions();
  for (const char* id : {"c4", "c5"}) feed_.append("s1", std::nullopt, connection(id));
  r->step();
  EXPECT_EQ(r->stats().repositions, 1u);
  r->step();
  EXPECT_EQ(r->stats().records, 5u) << "none lost, none repeated";
  EXPECT_EQ(nudges("w1"), 5);
}

}  // namespace
}  // namespace leasehold::fleet
