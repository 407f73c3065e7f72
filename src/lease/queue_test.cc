// StoreQueue's items as docs/schema.md describes them, and what it does with
// items of the index that are not its own. The delivery contract, for every
// backend, is in tests/conformance/queue_conformance_test.cc.
#include "leasehold/queue.h"

#include <gtest/gtest.h>

#include "store/memory/memory_store.h"

namespace leasehold {
namespace {

using std::chrono::seconds;

class StoreQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(store_->ensure_table(StoreQueue::table_spec()).ok());
    QueueOptions options;
    options.name = "jobs";
    options.max_receives = 1;
    auto opened = StoreQueue::open(*store_, clock_, random_, options);
    ASSERT_TRUE(opened.ok()) << opened.status().to_string();
    queue_ = std::move(opened).value();
  }

  Item stored(const std::string& id) {
    auto item = store_->get(kQueueTable, {"Q#jobs#" + id, ""}, true);
    EXPECT_TRUE(item.ok()) << item.status().to_string();
    return item.ok() ? *item : Item{};
  }

  SimulatedClock clock_;
  SeededRandom random_{7};
  std::unique_ptr<ItemStore> store_ = store::make_memory_store();
  std::unique_ptr<StoreQueue> queue_;
};

TEST_F(StoreQueueTest, TheTableHasOneIndexByStateAndVisibility) {
  const TableSpec spec = StoreQueue::table_spec();
  EXPECT_EQ(spec.name, "queue_messages");
  EXPECT_EQ(spec.pk_attr, "pk");
  EXPECT_EQ(spec.sk_attr, "");
  ASSERT_EQ(spec.indexes.size(), 1u);
  EXPECT_EQ(spec.indexes[0].name, "queue_state-visible_at_ms-index");
  EXPECT_EQ(spec.indexes[0].hash_attr, "queue_state");
  EXPECT_EQ(spec.indexes[0].range_attr, "visible_at_ms");
  EXPECT_EQ(spec.indexes[0].range_type, AttrType::kInt);
  EXPECT_EQ(StoreQueue::table_spec("other").name, "other");
}

TEST_F(StoreQueueTest, ItemsAreAsDocumented) {
  const int64_t sent_ms = to_unix_ms(clock_.wall_now());
  auto id = queue_->send("body");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(stored(*id), (Item{{"pk", "Q#jobs#" + *id},
                               {"queue_state", "jobs#ready"},
                               {"visible_at_ms", sent_ms},
                               {"body", "body"},
                               {"sent_at_ms", sent_ms},
                               {"receive_count", int64_t{0}}}));

  clock_.advance(seconds(1));
  auto got = queue_->receive(1, seconds(10));
  ASSERT_TRUE(got.ok());
  ASSERT_EQ(got->size(), 1u);
  const Message& m = (*got)[0];
  EXPECT_EQ(m.receipt.substr(0, 33), *id + ".") << "a receipt names its message";
  EXPECT_EQ(stored(*id), (Item{{"pk", "Q#jobs#" + *id},
                               {"queue_state", "jobs#ready"},
                               {"visible_at_ms", sent_ms + 11'000},
                               {"body", "body"},
                               {"sent_at_ms", sent_ms},
                               {"receive_count", int64_t{1}},
                               {"receipt", m.receipt.substr(33)},
                               {"received_at_ms", sent_ms + 1000}}));

  clock_.advance(seconds(10));
  got = queue_->receive(1, seconds(10));  // max_receives is 1: it dies here
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->empty());
  EXPECT_EQ(stored(*id), (Item{{"pk", "Q#jobs#" + *id},
                               {"queue_state", "jobs#dead"},
                               {"visible_at_ms", sent_ms + 11'000},
                               {"body", "body"},
                               {"sent_at_ms", sent_ms},
                               {"receive_count", int64_t{1}},
                               {"received_at_ms", sent_ms + 1000},
                               {"dead_at_ms", sent_ms + 11'000}}));

  ASSERT_TRUE(queue_->redrive(*id).ok());
  const Item redriven = stored(*id);
  EXPECT_EQ(*get_string(redriven, "queue_state"), "jobs#ready");
  EXPECT_EQ(*get_int(redriven, "receive_count"), 0);
  EXPECT_EQ(*get_int(redriven, "visible_at_ms"), sent_ms + 11'000);
  EXPECT_FALSE(redriven.contains("dead_at_ms"));
}

// Whatever else is in the index under the queue's state is not a message of
// this queue: a receive leaves it alone and delivers the rest.
TEST_F(StoreQueueTest, AReceiveSkipsItemsThatAreNotMessages) {
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  for (const Item& foreign : std::vector<Item>{{{"pk", "other"},
                                                {"queue_state", "jobs#ready"},
                                                {"visible_at_ms", now_ms},
                                                {"body", "x"}},
                                               {{"pk", "Q#jobs#not-an-id"},
                                                {"queue_state", "jobs#ready"},
                                                {"visible_at_ms", now_ms},
                                                {"body", "x"}},
                                               {{"pk", "Q#jobs#0123456789abcdef0123456789abcdef"},
                                                {"queue_state", "jobs#ready"},
                                                {"visible_at_ms", now_ms}}}) {
    ASSERT_TRUE(store_->put(kQueueTable, foreign, {}).ok());
  }
  auto id = queue_->send("real");
  ASSERT_TRUE(id.ok());
  auto got = queue_->receive(kReceiveBatchMax, seconds(10));
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].id, *id);
  EXPECT_FALSE(stored("0123456789abcdef0123456789abcdef").contains("receipt"));
}

TEST_F(StoreQueueTest, AMissingTableIsReported) {
  QueueOptions options;
  options.name = "jobs";
  options.table = "missing";
  auto queue = StoreQueue::open(*store_, clock_, random_, options);
  ASSERT_TRUE(queue.ok()) << "open() touches no store";
  EXPECT_EQ((*queue)->send("x").status().code(), Code::kNotFound);
  EXPECT_EQ((*queue)->receive(1, seconds(1)).status().code(), Code::kNotFound);
}

}  // namespace
}  // namespace leasehold
