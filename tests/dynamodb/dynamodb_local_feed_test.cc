// The DynamoDB backend's change feed (ItemStore::change_feed(), DynamoDB
// Streams) on AWS's DynamoDB Local, which has Streams, on the binary's one
// server (dynamodb_local_store.h). dynalite has none: it drops CreateTable's
// StreamSpecification and answers the Streams API with
// UnknownOperationException, so there a table that asks for a feed is made
// without one and change_feed() is null (DynamoDbFeed.DynaliteKeepsNoFeed in
// dynamodb_conformance_test.cc, with the error table and the paging of
// shards against a scripted server).
//
// DynamoDB Local has had each write's record readable by the first read
// after the write returned, but Streams promises records only in near real
// time, so reads are polled (eventually()) until the records looked for
// have come. In these tests it has one shard per table, open throughout.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "fleet/connections.h"
#include "fleet/feed_reader.h"
#include "fleet/members.h"
#include "fleet/schema.h"
#include "leasehold/lease.h"
#include "leasehold/store.h"
#include "testing/eventually.h"
#include "tests/dynamodb/dynamodb_local_store.h"
#include "tests/dynamodb/fault_proxy.h"

namespace leasehold {
namespace {

using namespace std::chrono_literals;

constexpr auto kRecordsWait = 10000ms;  // for a record to become readable
constexpr int kReadLimit = 1000;

// A table keyed by two attributes, so that a record's key is checked whole.
TableSpec items_spec(bool change_feed) {
  TableSpec spec{"feed_items", "id", "part", {}};
  spec.change_feed = change_feed;
  return spec;
}

// The store's change feed, read on from positions taken in each shard.
class Follower {
 public:
  // Each shard the feed holds now, at `start`; shards that appear later
  // are read from their oldest record.
  Follower(ChangeFeed& feed, FeedStart start) : feed_(feed) {
    const Result<std::vector<FeedShard>> shards = feed_.shards();
    EXPECT_TRUE(shards.ok()) << shards.status().to_string();
    if (!shards.ok()) return;
    for (const FeedShard& shard : *shards) take(shard.id, start);
  }

  // Reads on until `count` records have come (or kRecordsWait has passed),
  // and returns every record read so far, each shard's in its order.
  std::vector<FeedRecord> read_until(size_t count) {
    testing::eventually([&] { return read_once() >= count; }, kRecordsWait, 20ms);
    return records_;
  }

  // The shard each record read came from, by sequence.
  const std::string& shard_of(const FeedRecord& record) { return shards_[record.sequence]; }

 private:
  void take(const std::string& shard, FeedStart start) {
    const Result<std::string> position = feed_.position(shard, start);
    EXPECT_TRUE(position.ok()) << position.status().to_string();
    positions_[shard] = position.ok() ? *position : "";
  }

  size_t read_once() {
    const Result<std::vector<FeedShard>> shards = feed_.shards();
    EXPECT_TRUE(shards.ok()) << shards.status().to_string();
    if (shards.ok()) {
      for (const FeedShard& shard : *shards) {
        if (!positions_.contains(shard.id)) take(shard.id, FeedStart::kOldest);
      }
    }
    for (auto& [shard, position] : positions_) {
      if (position.empty()) continue;  // read to its end
      const Result<FeedPage> page = feed_.read(position, kReadLimit);
      EXPECT_TRUE(page.ok()) << page.status().to_string();
      if (!page.ok()) continue;
      for (const FeedRecord& record : page->records) {
        shards_[record.sequence] = shard;
        records_.push_back(record);
      }
      position = page->next;
    }
    return records_.size();
  }

  ChangeFeed& feed_;
  std::map<std::string, std::string> positions_;  // by shard; empty once read to its end
  std::map<std::string, std::string> shards_;     // by sequence
  std::vector<FeedRecord> records_;
};

std::unique_ptr<ItemStore> open_store() {
  auto store = testing::open_on_dynamodb_local();
  EXPECT_TRUE(store.ok()) << store.status().to_string();
  return store.ok() ? std::move(store).value() : nullptr;
}

std::unique_ptr<ItemStore> open_store(const store::dynamodb::DynamoDbOptions& options) {
  auto store = store::dynamodb::open_dynamodb_store(options);
  EXPECT_TRUE(store.ok()) << store.status().to_string();
  return store.ok() ? std::move(store).value() : nullptr;
}

// The sequences of `records`, to compare where they are expected to be.
std::vector<std::string> sequences(const std::vector<FeedRecord>& records) {
  std::vector<std::string> out;
  for (const FeedRecord& r : records) out.push_back(r.sequence);
  return out;
}

TEST(DynamoDbLocalFeed, ATableHasAFeedOnlyIfItsSpecAsksForOne) {
  const testing::DynamoDbLocal* server = testing::shared_dynamodb_local();
  ASSERT_NE(server, nullptr);
  const store::dynamodb::DynamoDbOptions options = testing::dynamodb_local_options(*server);
  auto store = open_store(options);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->ensure_table(items_spec(true)).ok());
  ASSERT_TRUE(store->ensure_table(items_spec(true)).ok()) << "made again, as it is";
  ASSERT_TRUE(store->ensure_table({"plain", "id", "", {}}).ok());

  ChangeFeed* feed = store->change_feed("feed_items");
  ASSERT_NE(feed, nullptr);
  EXPECT_EQ(store->change_feed("feed_items"), feed) << "one feed per table, kept by the store";
  EXPECT_EQ(store->change_feed("plain"), nullptr);
  EXPECT_EQ(store->change_feed("no_such_table"), nullptr);
  const Result<std::vector<FeedShard>> shards = feed->shards();
  ASSERT_TRUE(shards.ok()) << shards.status().to_string();

  // Another store learns it from DescribeTable; a spec that does not ask
  // for a feed leaves the table's as it is.
  auto other = open_store(options);
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(other->ensure_table(items_spec(false)).ok());
  EXPECT_NE(other->change_feed("feed_items"), nullptr);
  EXPECT_EQ(other->change_feed("plain"), nullptr);
  auto fresh = open_store(options);
  ASSERT_NE(fresh, nullptr);
  EXPECT_NE(fresh->change_feed("feed_items"), nullptr) << "uncached: read with DescribeTable";
}

// Each write that changed an item is one record, with the key and the item
// before and after it; a write that changed nothing (a false condition, the
// removal of a missing item) is none.
TEST(DynamoDbLocalFeed, WritesComeBackInOrderWithTheirKeysAndImages) {
  auto store = open_store();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->ensure_table(items_spec(true)).ok());
  ChangeFeed* feed = store->change_feed("feed_items");
  ASSERT_NE(feed, nullptr);

  const Item first{{"id", "a"}, {"part", "p1"}, {"n", int64_t{1}}, {"s", "x"}};
  ASSERT_TRUE(store->put("feed_items", first, cond::not_exists("id")).ok());
  ASSERT_TRUE(
      store->update("feed_items", {"a", "p1"}, Update().set("n", int64_t{2}).remove("s"), {}).ok());
  ASSERT_TRUE(store->update("feed_items", {"b", "p2"}, Update().add("n", 5), {}).ok());
  EXPECT_EQ(store->put("feed_items", first, cond::not_exists("id")).code(), Code::kConditionFailed);
  ASSERT_TRUE(store->remove("feed_items", {"a", "p1"}, {}).ok());
  ASSERT_TRUE(store->remove("feed_items", {"a", "p1"}, {}).ok());
  const Item again{{"id", "a"}, {"part", "p1"}, {"flag", true}};
  ASSERT_TRUE(store->put("feed_items", again, {}).ok());

  Follower reader(*feed, FeedStart::kOldest);
  const std::vector<FeedRecord> records = reader.read_until(5);
  ASSERT_EQ(records.size(), 5u);
  std::vector<const FeedRecord*> of_a, of_b;
  for (const FeedRecord& r : records) {
    EXPECT_FALSE(r.sequence.empty());
    ASSERT_TRUE(r.key == (Key{"a", "p1"}) || r.key == (Key{"b", "p2"})) << r.key.pk;
    (r.key.pk == "a" ? of_a : of_b).push_back(&r);
  }
  const std::vector<std::string> all = sequences(records);
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), 5u) << "distinct sequences";

  ASSERT_EQ(of_a.size(), 4u);
  EXPECT_FALSE(of_a[0]->old_image.has_value()) << "created";
  EXPECT_EQ(of_a[0]->new_image, first);
  EXPECT_EQ(of_a[1]->old_image, first);
  EXPECT_EQ(of_a[1]->new_image, (Item{{"id", "a"}, {"part", "p1"}, {"n", int64_t{2}}}));
  EXPECT_EQ(of_a[2]->old_image, (Item{{"id", "a"}, {"part", "p1"}, {"n", int64_t{2}}}));
  EXPECT_FALSE(of_a[2]->new_image.has_value()) << "removed";
  EXPECT_FALSE(of_a[3]->old_image.has_value()) << "created again";
  EXPECT_EQ(of_a[3]->new_image, again);
  ASSERT_EQ(of_b.size(), 1u);
  EXPECT_FALSE(of_b[0]->old_image.has_value()) << "an update that created the item";
  EXPECT_EQ(of_b[0]->new_image, (Item{{"id", "b"}, {"part", "p2"}, {"n", int64_t{5}}}));
}

TEST(DynamoDbLocalFeed, AfterASequenceReadsOnlyTheRecordsAfterIt) {
  auto store = open_store();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->ensure_table(items_spec(true)).ok());
  ChangeFeed* feed = store->change_feed("feed_items");
  ASSERT_NE(feed, nullptr);
  for (int64_t n = 1; n <= 3; ++n) {
    ASSERT_TRUE(store->update("feed_items", {"a", "p"}, Update().set("n", n), {}).ok());
  }
  Follower oldest(*feed, FeedStart::kOldest);
  const std::vector<FeedRecord> records = oldest.read_until(3);
  ASSERT_EQ(records.size(), 3u);

  const std::string shard = oldest.shard_of(records[0]);
  const Result<std::string> after = feed->position(shard, FeedStart::kAfter, records[0].sequence);
  ASSERT_TRUE(after.ok()) << after.status().to_string();
  const Result<FeedPage> page = feed->read(*after, kReadLimit);
  ASSERT_TRUE(page.ok()) << page.status().to_string();
  EXPECT_EQ(sequences(page->records),
            (std::vector<std::string>{records[1].sequence, records[2].sequence}));
  ASSERT_EQ(page->records.size(), 2u);
  EXPECT_EQ(page->records[1].new_image->at("n"), Value(int64_t{3}));
  EXPECT_FALSE(page->next.empty()) << "an open shard reads on";

  const Result<std::string> last = feed->position(shard, FeedStart::kAfter, records[2].sequence);
  ASSERT_TRUE(last.ok()) << last.status().to_string();
  const Result<FeedPage> none = feed->read(*last, kReadLimit);
  ASSERT_TRUE(none.ok()) << none.status().to_string();
  EXPECT_TRUE(none->records.empty());
}

TEST(DynamoDbLocalFeed, LatestReadsOnlyWhatIsWrittenAfterThePositionWasTaken) {
  auto store = open_store();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->ensure_table(items_spec(true)).ok());
  ChangeFeed* feed = store->change_feed("feed_items");
  ASSERT_NE(feed, nullptr);
  ASSERT_TRUE(store->update("feed_items", {"before", "p"}, Update().set("n", int64_t{1}), {}).ok());
  // The write before must be in the feed before the position is taken, or
  // it would not be "before" it.
  ASSERT_EQ(Follower(*feed, FeedStart::kOldest).read_until(1).size(), 1u);

  Follower latest(*feed, FeedStart::kLatest);
  ASSERT_TRUE(store->update("feed_items", {"after", "p"}, Update().set("n", int64_t{2}), {}).ok());
  const std::vector<FeedRecord> records = latest.read_until(1);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].key, (Key{"after", "p"}));
}

// Positions and reads are checked before anything is sent; what only the
// server can tell (a position or sequence that is not one, a shard it does
// not have) is its answer, named by the operation and AWS's error code.
TEST(DynamoDbLocalFeed, BadPositionsFailClearly) {
  auto store = open_store();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->ensure_table(items_spec(true)).ok());
  ChangeFeed* feed = store->change_feed("feed_items");
  ASSERT_NE(feed, nullptr);
  ASSERT_TRUE(store->update("feed_items", {"a", "p"}, Update().set("n", int64_t{1}), {}).ok());
  Follower reader(*feed, FeedStart::kOldest);
  const std::vector<FeedRecord> records = reader.read_until(1);
  ASSERT_EQ(records.size(), 1u);
  const std::string shard = reader.shard_of(records[0]);
  const Result<std::string> position = feed->position(shard, FeedStart::kOldest);
  ASSERT_TRUE(position.ok()) << position.status().to_string();

  EXPECT_EQ(feed->read("", 10).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(feed->read(*position, 0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(feed->read(*position, 1001).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(feed->position("", FeedStart::kOldest).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(feed->position(shard, FeedStart::kAfter).status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(feed->position(shard, FeedStart::kLatest, "ignored").ok()) << "for kAfter only";

  const Status garbage = feed->read("garbage", 10).status();
  EXPECT_EQ(code_name(garbage.code()), code_name(Code::kInvalidArgument)) << garbage.to_string();
  EXPECT_TRUE(garbage.message().starts_with("GetRecords: ValidationException"))
      << garbage.to_string();
  const Status bad_sequence = feed->position(shard, FeedStart::kAfter, "garbage").status();
  EXPECT_EQ(code_name(bad_sequence.code()), code_name(Code::kInvalidArgument))
      << bad_sequence.to_string();
  EXPECT_TRUE(bad_sequence.message().starts_with("GetShardIterator: ValidationException"))
      << bad_sequence.to_string();
  const Status no_shard =
      feed->position("shardId-00000000000000000000-00000000", FeedStart::kOldest).status();
  EXPECT_EQ(code_name(no_shard.code()), code_name(Code::kNotFound)) << no_shard.to_string();
  EXPECT_TRUE(no_shard.message().starts_with("GetShardIterator: ResourceNotFoundException"))
      << no_shard.to_string();
}

// A feed call that gets no answer (a partition, a lost reply) fails within
// moments, not after the store's request timeout three times over: the
// reader's thread, which a stopping worker waits for before it hands its
// connections over, is not held. Through the fault proxy, which also relays
// a reply too large for DynamoDB Local to send but in chunks.
TEST(DynamoDbLocalFeed, ACallThatGetsNoAnswerFailsWithinMoments) {
  const testing::DynamoDbLocal* server = testing::shared_dynamodb_local();
  ASSERT_NE(server, nullptr);
  auto proxy = testing::FaultProxy::start(server->port());
  ASSERT_TRUE(proxy.ok()) << proxy.status().to_string();
  store::dynamodb::DynamoDbOptions options = testing::dynamodb_local_options(*server);
  options.endpoint = "http://127.0.0.1:" + std::to_string((*proxy)->port());
  auto store = open_store(options);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->ensure_table(items_spec(true)).ok());
  ChangeFeed* feed = store->change_feed("feed_items");
  ASSERT_NE(feed, nullptr);
  const std::string filler(400, 'x');
  constexpr int kWrites = 200;
  for (int i = 0; i < kWrites; ++i) {
    ASSERT_TRUE(
        store->update("feed_items", {"k" + std::to_string(i), "p"}, Update().set("v", filler), {})
            .ok());
  }
  Follower reader(*feed, FeedStart::kOldest);
  EXPECT_EQ(reader.read_until(kWrites).size(), static_cast<size_t>(kWrites))
      << "every record, some 200 KB in one reply";
  const Result<std::vector<FeedShard>> shards = feed->shards();
  ASSERT_TRUE(shards.ok() && !shards->empty());
  const Result<std::string> position = feed->position(shards->back().id, FeedStart::kOldest);
  ASSERT_TRUE(position.ok()) << position.status().to_string();

  (*proxy)->add_rule({"DynamoDBStreams_20120810.GetRecords", std::chrono::seconds(60),
                      testing::FaultAction::kForward, -1, 0, ""});
  const auto start = std::chrono::steady_clock::now();
  const Result<FeedPage> page = feed->read(*position, 10);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_FALSE(page.ok());
  EXPECT_LT(took, options.request_timeout) << "within one request timeout";
}

// A table made before it asked for a feed gets one from ensure_table()
// (UpdateTable), which holds the writes made from then on.
TEST(DynamoDbLocalFeed, EnsureTableTurnsTheFeedOnForATableWithout) {
  const testing::DynamoDbLocal* server = testing::shared_dynamodb_local();
  ASSERT_NE(server, nullptr);
  const store::dynamodb::DynamoDbOptions options = testing::dynamodb_local_options(*server);
  auto store = open_store(options);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->ensure_table(items_spec(false)).ok());
  EXPECT_EQ(store->change_feed("feed_items"), nullptr);
  ASSERT_TRUE(store->update("feed_items", {"unfed", "p"}, Update().set("n", int64_t{1}), {}).ok());

  const Status ensured = store->ensure_table(items_spec(true));
  ASSERT_TRUE(ensured.ok()) << ensured.to_string();
  ChangeFeed* feed = store->change_feed("feed_items");
  ASSERT_NE(feed, nullptr);
  ASSERT_TRUE(store->update("feed_items", {"fed", "p"}, Update().set("n", int64_t{2}), {}).ok());
  const std::vector<FeedRecord> records = Follower(*feed, FeedStart::kOldest).read_until(1);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].key, (Key{"fed", "p"}));

  auto other = open_store(options);
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(other->ensure_table(items_spec(true)).ok()) << "the stream is on: nothing to do";
  EXPECT_NE(other->change_feed("feed_items"), nullptr);
}

}  // namespace
}  // namespace leasehold

namespace leasehold::fleet {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using std::chrono::seconds;

// The fleet's feed reader on DynamoDB Streams: a reader killed mid-shard
// (no stop; its lease left to expire) is followed by one that acts on
// every connection written after the first one's last checkpoint, and on
// none before it. Its clock is simulated (DynamoDB compares the lease's
// times as numbers), so the lease expires without waiting for it.
TEST(DynamoDbLocalFeedReader, AReaderKilledMidShardIsFollowedFromItsCheckpoint) {
  auto opened = leasehold::testing::open_on_dynamodb_local();
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  ItemStore& store = **opened;
  ASSERT_TRUE(store.ensure_table(connections_table_spec()).ok());
  ASSERT_TRUE(store.ensure_table(workers_table_spec()).ok());
  ChangeFeed* feed = store.change_feed(kConnectionsTable);
  ASSERT_NE(feed, nullptr);
  SimulatedClock clock;
  SeededRandom random(5);
  LeaseConfig members_config;
  members_config.table = kWorkersTable;
  LeaseManager members(store, clock, random, members_config);
  AcquireOptions join;
  join.owner = "w1";
  join.ttl = seconds(600);
  join.extra_update.set("kind", std::string(kWorkerKind))
      .append(member_figures(0, 1000, 0, 0, to_unix_ms(clock.wall_now())));
  ASSERT_TRUE(members.acquire(worker_key("w1"), join).ok());
  const auto reader = [&](const std::string& id) {
    FeedReaderOptions o;
    o.id = id;
    o.lease_ttl = seconds(3);
    o.lease.max_clock_skew = milliseconds(100);
    o.lease.safety_margin = milliseconds(50);
    return std::make_unique<FeedReader>(store, *feed, clock, random, o);
  };
  const auto nudges = [&] {
    Result<Item> item = store.get(kWorkersTable, worker_key("w1"), true);
    return item.ok() ? get_int_or(*item, kNudgesAttr) : -1;
  };
  Connections connections(store, clock);
  const auto add = [&](const std::string& id) {
    NewConnection c;
    c.id = id;
    c.url = "ws://upstream.test/" + id;
    ASSERT_TRUE(connections.add(c).ok());
  };

  auto a = reader("a");
  a->step();  // takes the feed: the first reader ever reads from the newest on
  ASSERT_TRUE(a->reading());
  for (const char* id : {"c1", "c2", "c3"}) add(id);
  ASSERT_TRUE(leasehold::testing::eventually(
      [&] {
        a->step();
        return a->stats().records == 3;
      },
      kRecordsWait, 20ms));
  EXPECT_EQ(nudges(), 3);
  for (const char* id : {"c4", "c5"}) add(id);
  a.reset();  // killed mid-shard

  auto b = reader("b");
  b->step();
  EXPECT_FALSE(b->reading()) << "a's lease has not expired yet";
  clock.advance(seconds(4));
  ASSERT_TRUE(leasehold::testing::eventually(
      [&] {
        b->step();
        return b->stats().records >= 2;
      },
      kRecordsWait, 20ms));
  EXPECT_EQ(b->stats().records, 2u) << "c4 and c5; nothing before a's checkpoint";
  EXPECT_EQ(nudges(), 5) << "every connection added is told to a taker";
}

}  // namespace
}  // namespace leasehold::fleet
