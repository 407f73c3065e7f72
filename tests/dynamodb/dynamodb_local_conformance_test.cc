// The conformance suites (store, lease layer, renewer, queue) and the
// fleet's liveness on AWS's own DynamoDB Local, beside dynalite
// (dynamodb_conformance_test.cc): the same cases, on the emulator that
// enforces AWS's validation. Where the two differ is said at the cases
// skipped here.
#include <gtest/gtest.h>

#include <map>

#include "tests/conformance/queue_conformance.h"
#include "tests/conformance/store_conformance.h"
#include "tests/dynamodb/dynamodb_local_store.h"
#include "tests/fleet/liveness_fixture.h"

namespace leasehold::conformance {

using fleet::testing::FleetLiveness;

namespace {

// Cases skipped on DynamoDB Local, each with its reason: a limitation of
// the emulator, never a difference in meaning.
const std::map<std::string, std::string>& skipped_on_dynamodb_local() {
  static const std::map<std::string, std::string> kSkipped{
      {"ItemsAtAndOverTheSizeLimit",
       "DynamoDB Local refuses an UpdateItem whose values alone exceed 400 KB, even one that "
       "if_not_exists() leaves out (ValidationException: Item size to update has exceeded the "
       "maximum allowed size); dynalite and the other stores apply it and change nothing"},
  };
  return kSkipped;
}

void skip_on_dynamodb_local_if_listed(const std::string& test_name) {
  for (const auto& [name, reason] : skipped_on_dynamodb_local()) {
    if (test_name.find(name) != std::string::npos) GTEST_SKIP() << reason;
  }
}

Result<std::unique_ptr<ItemStore>> make_dynamodb_local() {
  // Called from SetUp(): a skip recorded here stops the test body.
  skip_on_dynamodb_local_if_listed(::testing::UnitTest::GetInstance()->current_test_info()->name());
  return testing::open_on_dynamodb_local();
}

const StoreFactory kDynamoDbLocal{"dynamodb_local", make_dynamodb_local};

}  // namespace

namespace {

CapacityUse use_of(const ItemStore& store, const std::string& table, const std::string& index) {
  for (const CapacityUse& u : store.consumed_capacity()) {
    if (u.table == table && u.index == index) return u;
  }
  return {table, index};
}

// What DynamoDB bills, as DynamoDB Local reports it: a write of a 1.5 KB
// item costs 2 write units on the table and 2 on an index that projects it
// (ALL), whether or not the write moves the index's key; a query of the
// index, half a read unit per 4 KB read; a consistent read of the table, 1.
TEST(DynamoDbLocalCapacity, WritesAndReadsAreCountedOnTheTableAndEachIndex) {
  auto store = make_dynamodb_local();
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  ItemStore& s = **store;
  const TableSpec spec{
      "cap_items", "id", "", {IndexSpec{"by_state", "state", "n", AttrType::kInt}}};
  ASSERT_TRUE(s.ensure_table(spec).ok());
  const std::string big(1500, 'x');
  ASSERT_TRUE(s.update("cap_items", {"a", ""},
                       Update().set("state", "S").set("n", int64_t{1}).set("v", big), {})
                  .ok());
  ASSERT_TRUE(s.update("cap_items", {"a", ""}, Update().set("v", big + "y"), {}).ok());
  EXPECT_EQ(use_of(s, "cap_items", "").write_units, 4);
  EXPECT_EQ(use_of(s, "cap_items", "by_state").write_units, 4);
  QueryOptions q;
  ASSERT_EQ(s.query_index("cap_items", "by_state", "S", KeyRange::all(), q)->items.size(), 1u);
  EXPECT_EQ(use_of(s, "cap_items", "by_state").read_units, 0.5);
  ASSERT_TRUE(s.get("cap_items", {"a", ""}, /*consistent=*/true).ok());
  EXPECT_EQ(use_of(s, "cap_items", "").read_units, 1);
}

// What a projection saves: a write of attributes no index holds writes the
// table alone; one of an attribute an index holds writes that index too.
TEST(DynamoDbLocalCapacity, AWriteOfAttributesNoIndexHoldsWritesOnlyTheTable) {
  auto store = make_dynamodb_local();
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  ItemStore& s = **store;
  IndexSpec index{"by_state", "state", "n", AttrType::kInt};
  index.projects_all = false;
  index.projected = {"owner"};
  ASSERT_TRUE(s.ensure_table(TableSpec{"cap_projected", "id", "", {index}}).ok());
  ASSERT_TRUE(
      s.update("cap_projected", {"a", ""}, Update().set("state", "S").set("n", int64_t{1}), {})
          .ok());
  const double before = use_of(s, "cap_projected", "by_state").write_units;
  EXPECT_GT(before, 0);
  ASSERT_TRUE(s.update("cap_projected", {"a", ""}, Update().set("last_seq", int64_t{7}), {}).ok());
  EXPECT_EQ(use_of(s, "cap_projected", "by_state").write_units, before) << "the index was written";
  ASSERT_TRUE(s.update("cap_projected", {"a", ""}, Update().set("owner", "w1"), {}).ok());
  EXPECT_GT(use_of(s, "cap_projected", "by_state").write_units, before);
}

}  // namespace

INSTANTIATE_TEST_SUITE_P(DynamoDbLocal, StoreConformance, ::testing::Values(kDynamoDbLocal),
                         factory_name);
INSTANTIATE_TEST_SUITE_P(DynamoDbLocal, LeaseConformance, ::testing::Values(kDynamoDbLocal),
                         factory_name);
INSTANTIATE_TEST_SUITE_P(DynamoDbLocal, RenewerConformance, ::testing::Values(kDynamoDbLocal),
                         factory_name);
INSTANTIATE_TEST_SUITE_P(DynamoDbLocal, StoreQueueConformance, ::testing::Values(kDynamoDbLocal),
                         factory_name);
INSTANTIATE_TEST_SUITE_P(DynamoDbLocal, FleetLiveness, ::testing::Values(kDynamoDbLocal),
                         factory_name);
INSTANTIATE_TEST_SUITE_P(DynamoDbLocal, QueueConformance,
                         ::testing::Values(store_queue_backend(kDynamoDbLocal)),
                         queue_backend_name);

}  // namespace leasehold::conformance
