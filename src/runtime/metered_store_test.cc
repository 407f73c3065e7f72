// MeteredStore: every call reaches the wrapped store and is timed, errors are
// counted by code, and a failed condition is counted apart from them. Read
// through the registry's text, as Prometheus reads it.
#include "runtime/metered_store.h"

#include <gtest/gtest.h>

#include "testing/faulty_store.h"

namespace leasehold::runtime {
namespace {

constexpr std::string_view kErrors = "leasehold_store_errors_total";
constexpr std::string_view kConditionFailures = "leasehold_store_condition_failures_total";

// The value of the series `name{labels}` in `text`, or "" if it is absent.
std::string value_of(const std::string& text, std::string_view name, std::string_view labels) {
  const std::string line = "\n" + std::string(name) + "{" + std::string(labels) + "} ";
  const size_t at = text.find(line);
  if (at == std::string::npos) return "";
  const size_t begin = at + line.size();
  return text.substr(begin, text.find('\n', begin) - begin);
}

std::string op(std::string_view operation) {
  return "backend=\"memory\",operation=\"" + std::string(operation) + "\"";
}

std::string error(std::string_view operation, std::string_view code) {
  return op(operation) + ",code=\"" + std::string(code) + "\"";
}

Item item(std::string pk) { return Item{{"pk", std::move(pk)}}; }

class MeteredStoreTest : public ::testing::Test {
 protected:
  MeteredStoreTest()
      : memory_(std::move(open_store("memory:")).value()),
        faulty_(*memory_, random_, {}, [this](Duration d) { clock_.advance(d); }),
        store_(faulty_, registry_, clock_) {
    EXPECT_TRUE(store_.ensure_table({"t", "pk", "", {}}).ok());
  }

  std::string text() const { return registry_.render(); }

  SimulatedClock clock_;
  SeededRandom random_{1};
  std::unique_ptr<ItemStore> memory_;
  store::FaultyStore faulty_;
  metrics::Registry registry_;
  MeteredStore store_;
};

TEST_F(MeteredStoreTest, ObservesHowLongEachCallTook) {
  ASSERT_TRUE(store_.put("t", item("a"), {}).ok());
  faulty_.delay_next(std::chrono::milliseconds(30));
  ASSERT_TRUE(store_.get("t", {"a", ""}, true).ok());
  const std::string t = text();
  EXPECT_EQ(value_of(t, "leasehold_store_operation_seconds_count", op("get")), "1") << t;
  EXPECT_EQ(value_of(t, "leasehold_store_operation_seconds_sum", op("get")), "0.03") << t;
  EXPECT_EQ(value_of(t, "leasehold_store_operation_seconds_bucket", op("get") + ",le=\"0.025\""),
            "0");
  EXPECT_EQ(value_of(t, "leasehold_store_operation_seconds_bucket", op("get") + ",le=\"0.05\""),
            "1");
  EXPECT_EQ(value_of(t, "leasehold_store_operation_seconds_count", op("put")), "1");
  EXPECT_EQ(value_of(t, "leasehold_store_operation_seconds_sum", op("put")), "0")
      << "no time passed on the simulated clock";
  EXPECT_EQ(value_of(t, "leasehold_store_operation_seconds_count", op("ensure_table")), "1");
}

TEST_F(MeteredStoreTest, CountsTheItemsReadsReturn) {
  for (const char* pk : {"a", "b", "c"}) ASSERT_TRUE(store_.put("t", item(pk), {}).ok());
  ASSERT_TRUE(store_.get("t", {"a", ""}, true).ok());
  EXPECT_EQ(store_.get("t", {"missing", ""}, true).status().code(), Code::kNotFound);
  const Key keys[] = {{"a", ""}, {"b", ""}, {"missing", ""}};
  ASSERT_EQ(store_.batch_get("t", keys)->size(), 2u);
  const std::string t = text();
  EXPECT_EQ(value_of(t, "leasehold_store_items_read_total", op("get")), "1") << t;
  EXPECT_EQ(value_of(t, "leasehold_store_items_read_total", op("batch_get")), "2") << t;
  EXPECT_EQ(value_of(t, "leasehold_store_items_read_total", op("query_index")), "0") << t;
}

// A store that reports the capacity its calls consumed, as DynamoDB does.
class BillingStore final : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  std::vector<CapacityUse> consumed_capacity() const override {
    return {{"t", "", 2.5, 8}, {"t", "by_state", 0.5, 4}};
  }
};

TEST(MeteredStoreCapacity, ReportsTheUnitsTheStoreSaysItConsumedByTableAndIndex) {
  std::unique_ptr<ItemStore> memory = std::move(open_store("memory:")).value();
  BillingStore billing(*memory);
  metrics::Registry registry;
  SimulatedClock clock;
  {
    MeteredStore store(billing, registry, clock);
    const std::string t = registry.render();
    const std::string labels = "backend=\"memory\",table=\"t\",index=\"";
    EXPECT_EQ(value_of(t, "leasehold_store_capacity_units_total", labels + "\",kind=\"write\""),
              "8")
        << t;
    EXPECT_EQ(value_of(t, "leasehold_store_capacity_units_total", labels + "\",kind=\"read\""),
              "2.5");
    EXPECT_EQ(
        value_of(t, "leasehold_store_capacity_units_total", labels + "by_state\",kind=\"write\""),
        "4");
  }
  EXPECT_EQ(registry.render().find("table=\"t\""), std::string::npos)
      << "gone with the store";
}

TEST_F(MeteredStoreTest, CountsErrorsByCode) {
  EXPECT_EQ(store_.get("t", {"missing", ""}, true).status().code(), Code::kNotFound);
  faulty_.inject_next(store::Fault::kUnavailable);
  faulty_.inject_next(store::Fault::kUnavailable);
  faulty_.inject_next(store::Fault::kDropReply);
  const Update touch = Update().set("n", int64_t{1});
  EXPECT_EQ(store_.update("t", {"a", ""}, touch, {}).status().code(), Code::kUnavailable);
  EXPECT_EQ(store_.update("t", {"a", ""}, touch, {}).status().code(), Code::kUnavailable);
  EXPECT_EQ(store_.update("t", {"a", ""}, touch, {}).status().code(), Code::kUnknownOutcome);
  EXPECT_TRUE(store_.update("t", {"a", ""}, touch, {}).ok());
  const std::string t = text();
  EXPECT_EQ(value_of(t, kErrors, error("get", "NotFound")), "1") << t;
  EXPECT_EQ(value_of(t, kErrors, error("update", "Unavailable")), "2") << t;
  EXPECT_EQ(value_of(t, kErrors, error("update", "UnknownOutcome")), "1") << t;
  EXPECT_EQ(value_of(t, "leasehold_store_operation_seconds_count", op("update")), "4")
      << "failed calls are timed too";
  EXPECT_EQ(value_of(t, kErrors, error("put", "NotFound")), "") << "no series before an error";
}

TEST_F(MeteredStoreTest, AFailedConditionIsCountedApartFromErrors) {
  ASSERT_TRUE(store_.put("t", item("a"), {}).ok());
  EXPECT_EQ(store_.put("t", item("a"), cond::not_exists("pk")).code(), Code::kConditionFailed);
  EXPECT_EQ(store_.update("t", {"a", ""}, Update().set("n", int64_t{1}), cond::not_exists("pk"))
                .status()
                .code(),
            Code::kConditionFailed);
  EXPECT_EQ(store_.remove("t", {"a", ""}, cond::eq("n", int64_t{2})).code(),
            Code::kConditionFailed);
  const std::string t = text();
  EXPECT_EQ(value_of(t, kConditionFailures, op("put")), "1") << t;
  EXPECT_EQ(value_of(t, kConditionFailures, op("update")), "1") << t;
  EXPECT_EQ(value_of(t, kConditionFailures, op("remove")), "1") << t;
  EXPECT_EQ(value_of(t, kConditionFailures, op("update_each")), "0") << t;
  EXPECT_EQ(value_of(t, kConditionFailures, op("get")), "") << "reads have no condition";
  EXPECT_EQ(t.find("ConditionFailed"), std::string::npos) << t;
}

TEST_F(MeteredStoreTest, UpdateEachIsOneCallAndCountsEachFailedWrite) {
  ASSERT_TRUE(store_.put("t", item("a"), {}).ok());
  const std::vector<UpdateRequest> requests = {
      {{"a", ""}, Update().set("n", int64_t{1}), cond::not_exists("pk")},
      {{"b", ""}, Update().set("n", int64_t{1}), {}},
      {{"c", ""}, Update().set("n", int64_t{1}), cond::exists("pk")},
  };
  const auto results = store_.update_each("t", requests);
  ASSERT_EQ(results.size(), 3u);
  EXPECT_TRUE(results[1].ok());
  const std::string t = text();
  EXPECT_EQ(value_of(t, "leasehold_store_operation_seconds_count", op("update_each")), "1") << t;
  EXPECT_EQ(value_of(t, kConditionFailures, op("update_each")), "2") << t;
}

// Each operation reaches the wrapped store, returns its answer, and is
// timed under its own name.
TEST_F(MeteredStoreTest, ForwardsEveryOperation) {
  const TableSpec spec{"q", "pk", "sk", {{"by_s", "s", "r", AttrType::kInt}}};
  ASSERT_TRUE(store_.require_table(spec).ok());
  const Item a = {{"pk", std::string("p")},
                  {"sk", std::string("1")},
                  {"s", std::string("x")},
                  {"r", int64_t{5}}};
  ASSERT_TRUE(store_.put("q", a, {}).ok());
  auto updated = store_.update("q", {"p", "2"}, Update().set("s", std::string("x")), {});
  ASSERT_TRUE(updated.ok());
  EXPECT_EQ(*get_string(*updated, "s"), "x");
  EXPECT_EQ(store_.get("q", {"p", "1"}, false)->at("r"), Value(int64_t{5}));
  const std::vector<Key> keys = {{"p", "1"}, {"p", "2"}, {"p", "3"}};
  EXPECT_EQ(store_.batch_get("q", keys)->size(), 2u);
  EXPECT_EQ(store_.query("q", "p", KeyRange::all(), {})->items.size(), 2u);
  EXPECT_EQ(store_.query_index("q", "by_s", "x", KeyRange::ge(int64_t{0}), {})->items.size(), 1u);
  ASSERT_TRUE(store_.remove("q", {"p", "1"}, {}).ok());
  EXPECT_EQ(memory_->get("q", {"p", "1"}, true).status().code(), Code::kNotFound);
  EXPECT_EQ(store_.backend_name(), "memory");
  const std::string t = text();
  for (std::string_view name :
       {"require_table", "put", "update", "get", "batch_get", "query", "query_index", "remove"}) {
    EXPECT_EQ(value_of(t, "leasehold_store_operation_seconds_count", op(name)), "1") << name;
  }
  EXPECT_EQ(t.find(kErrors), std::string::npos) << "no errors: " << t;
}

TEST_F(MeteredStoreTest, StoresOnOneRegistryShareItsFamilies) {
  MeteredStore second(*memory_, registry_, clock_);
  ASSERT_TRUE(second.put("t", item("z"), {}).ok());
  EXPECT_EQ(value_of(text(), "leasehold_store_operation_seconds_count", op("put")), "1");
  EXPECT_EQ(value_of(text(), "leasehold_store_operation_seconds_count", op("ensure_table")), "1");
}

}  // namespace
}  // namespace leasehold::runtime
