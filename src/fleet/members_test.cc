// Tests for the list of workers the fleet API and balancing read.
#include "fleet/members.h"

#include <gtest/gtest.h>

#include "leasehold/lease.h"
#include "store/memory/memory_store.h"

namespace leasehold::fleet {
namespace {

class MembersTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(store_->ensure_table(workers_table_spec()).ok()); }

  Lease join(const std::string& id, Duration ttl, int64_t owned) {
    AcquireOptions o;
    o.owner = id;
    o.ttl = ttl;
    o.extra_update.set("kind", std::string(kWorkerKind))
        .append(member_figures(owned, 1000, 10 * owned, 2.5, to_unix_ms(clock_.wall_now())));
    auto lease = leases_.acquire(worker_key(id), o);
    EXPECT_TRUE(lease.ok()) << lease.status().to_string();
    return *lease;
  }

  SimulatedClock clock_;
  SeededRandom random_{1};
  std::unique_ptr<ItemStore> store_ = store::make_memory_store();
  LeaseManager leases_{*store_, clock_, random_, [] {
                         LeaseConfig c;
                         c.table = kWorkersTable;
                         return c;
                       }()};
};

TEST_F(MembersTest, ListsWorkersWithTheirFiguresAndWhetherAlive) {
  join("w2", std::chrono::seconds(60), 3);
  join("w1", std::chrono::seconds(5), 7);
  clock_.advance(std::chrono::seconds(10));  // w1's lease has expired

  auto all = list_members(*store_, clock_, /*alive_only=*/false);
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].id, "w1");
  EXPECT_FALSE((*all)[0].alive);
  EXPECT_EQ((*all)[0].owned, 7);
  EXPECT_EQ((*all)[1].id, "w2");
  EXPECT_TRUE((*all)[1].alive);
  EXPECT_EQ((*all)[1].owned, 3);
  EXPECT_EQ((*all)[1].capacity, 1000);
  EXPECT_EQ((*all)[1].messages, 30);
  EXPECT_DOUBLE_EQ((*all)[1].messages_per_s, 2.5);

  auto alive = list_members(*store_, clock_, /*alive_only=*/true);
  ASSERT_TRUE(alive.ok());
  ASSERT_EQ(alive->size(), 1u);
  EXPECT_EQ((*alive)[0].id, "w2");
}

TEST_F(MembersTest, AWorkerThatLeftIsNotAlive) {
  const Lease lease = join("w1", std::chrono::seconds(60), 0);
  ASSERT_TRUE(leases_.release(lease, ReleaseMode::kExpire).ok());
  auto alive = list_members(*store_, clock_, /*alive_only=*/true);
  ASSERT_TRUE(alive.ok());
  EXPECT_TRUE(alive->empty());
}

// A worker that cannot take connections says so; one of an older build
// writes nothing of it and is read as taking.
TEST_F(MembersTest, TakingIsWhatTheWorkerWroteAndTrueWhenAbsent) {
  const Lease w1 = join("w1", std::chrono::seconds(60), 0);
  join("w2", std::chrono::seconds(60), 0);
  ASSERT_TRUE(leases_.fenced_write(w1, member_figures(0, 1000, 0, 0, 1, /*taking=*/false)).ok());
  ASSERT_TRUE(store_->update(kWorkersTable, worker_key("w2"), Update().remove("taking"), {}).ok());
  auto all = list_members(*store_, clock_, /*alive_only=*/true);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_FALSE((*all)[0].taking);
  EXPECT_TRUE((*all)[1].taking);
}

TEST(Troubles, RoundTripAndLinesThatDoNotParseAreSkipped) {
  const std::vector<Trouble> troubles{{"feed-1", "not_streaming", 1796628190079},
                                      {"feed.2", "stalled", 5}};
  EXPECT_EQ(parse_troubles(format_troubles(troubles)), troubles);
  EXPECT_TRUE(parse_troubles("").empty());
  EXPECT_EQ(parse_troubles("a stalled x\nb\nc stalled 7\n d stalled 1\ne stalled 9"),
            (std::vector<Trouble>{{"c", "stalled", 7}, {"e", "stalled", 9}}));
}

}  // namespace
}  // namespace leasehold::fleet
