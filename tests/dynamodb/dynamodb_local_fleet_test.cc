// The fleet's reads that the API makes at any size, on AWS's DynamoDB Local:
// a page of the list from desired_state-Pk-index (a string range key, an
// INCLUDE projection, a query from an ID on and by prefix) and the counts
// by desired state with their recount, as the memory store's tests
// (connections_test.cc, summary_test.cc) have them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "fleet/connections.h"
#include "fleet/members.h"
#include "fleet/schema.h"
#include "fleet/summary.h"
#include "leasehold/clock.h"
#include "tests/dynamodb/dynamodb_local_store.h"

namespace leasehold {
namespace {

class DynamoDbLocalFleetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto store = testing::open_on_dynamodb_local();
    ASSERT_TRUE(store.ok()) << store.status().to_string();
    store_ = std::move(store).value();
    ASSERT_TRUE(store_->ensure_table(fleet::connections_table_spec()).ok());
    ASSERT_TRUE(store_->ensure_table(fleet::workers_table_spec()).ok());
  }

  std::vector<std::string> ids(const fleet::ListQuery& q, std::string* next = nullptr) {
    Result<fleet::ConnectionPage> page = connections_->list_page(q);
    EXPECT_TRUE(page.ok()) << page.status().to_string();
    std::vector<std::string> out;
    if (!page.ok()) return out;
    for (const fleet::Connection& c : page->items) out.push_back(c.id);
    if (next != nullptr) *next = page->next_after;
    return out;
  }

  RealClock clock_;
  std::unique_ptr<ItemStore> store_;
  std::unique_ptr<fleet::Connections> connections_;
};

TEST_F(DynamoDbLocalFleetTest, PagesByIdAndPrefixAndTheCountsWithTheirRecount) {
  connections_ = std::make_unique<fleet::Connections>(*store_, clock_);
  for (const char* id : {"b2", "a1", "b1", "c1", "b3"}) {
    ASSERT_TRUE(connections_->add({id, "ws://h/" + std::string(id)}).ok()) << id;
  }
  ASSERT_TRUE(connections_->add({"a2", "ws://h/a2", "seq", /*stopped=*/true}).ok());
  fleet::ListQuery q;
  q.limit = 4;
  std::string next;
  EXPECT_EQ(ids(q, &next), (std::vector<std::string>{"a1", "a2", "b1", "b2"}));
  ASSERT_EQ(next, "b2");
  q.after = next;
  EXPECT_EQ(ids(q, &next), (std::vector<std::string>{"b3", "c1"}));
  EXPECT_EQ(next, "");
  q = fleet::ListQuery{};
  q.prefix = "b";
  q.after = "b1";
  EXPECT_EQ(ids(q), (std::vector<std::string>{"b2", "b3"}));
  q = fleet::ListQuery{};
  q.state = fleet::DesiredState::kStopped;
  Result<fleet::ConnectionPage> stopped = connections_->list_page(q);
  ASSERT_TRUE(stopped.ok());
  ASSERT_EQ(stopped->items.size(), 1u);
  EXPECT_EQ(stopped->items[0].ws_url, "ws://h/a2") << "what the index projects";

  Result<fleet::ConnectionCounts> counts = fleet::read_counts(*store_, /*consistent=*/true);
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->started, 5);
  EXPECT_EQ(counts->stopped, 1);
  ASSERT_TRUE(connections_->remove("c1").ok());
  ASSERT_TRUE(fleet::recount_connections(*store_, clock_).ok());
  counts = fleet::read_counts(*store_, /*consistent=*/true);
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->started, 4);
  EXPECT_GT(counts->counted_at_ms, 0);
}

// The bulk add on DynamoDB's parallel writes: each connection written under
// add()'s condition, one already there reported and left as it was, a
// tombstone taken over, and the counts changed once by the number added.
TEST_F(DynamoDbLocalFleetTest, ABulkAddWritesEachAsAddDoesAndTheCountsOnce) {
  connections_ = std::make_unique<fleet::Connections>(*store_, clock_);
  ASSERT_TRUE(connections_->add({"m0001", "ws://h/first"}).ok());
  ASSERT_TRUE(connections_->add({"m0002", "ws://h/removed"}).ok());
  ASSERT_TRUE(connections_->remove("m0002").ok());
  std::vector<fleet::NewConnection> wanted;
  for (int i = 0; i < 250; ++i) {
    std::string id = std::to_string(i);
    id = "m" + std::string(4 - id.size(), '0') + id;
    wanted.push_back({id, "ws://h/" + id, "seq", /*stopped=*/i % 10 == 9});
  }
  Result<fleet::ConnectionCounts> before = fleet::read_counts(*store_, /*consistent=*/true);
  ASSERT_TRUE(before.ok());

  Result<fleet::AddedConnections> added = connections_->add_many(wanted);
  ASSERT_TRUE(added.ok()) << added.status().to_string();
  EXPECT_EQ(added->added, 249u);
  EXPECT_EQ(added->existing, 1u);
  EXPECT_EQ(added->results[1].code(), Code::kAlreadyExists);
  EXPECT_EQ(connections_->get("m0001")->ws_url, "ws://h/first") << "not overwritten";
  EXPECT_EQ(connections_->get("m0002")->ws_url, "ws://h/m0002") << "the tombstone taken over";
  EXPECT_EQ(connections_->get("m0249")->desired_state, fleet::DesiredState::kStopped);
  Result<fleet::ConnectionCounts> after = fleet::read_counts(*store_, /*consistent=*/true);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->started - before->started, 249 - 25);
  EXPECT_EQ(after->stopped - before->stopped, 25);
  EXPECT_EQ(after->gen, before->gen + 1);

  added = connections_->add_many(wanted);
  ASSERT_TRUE(added.ok()) << added.status().to_string();
  EXPECT_EQ(added->existing, 250u);
}

}  // namespace
}  // namespace leasehold
