// The conformance cases (see store_conformance.h). Each case states DynamoDB's
// meaning of one operation so that a backend that differs fails here, not in
// a lease test three layers up.
#include "tests/conformance/store_conformance.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <limits>
#include <optional>
#include <set>
#include <thread>

namespace leasehold::conformance {
namespace {

Status status_of(const Status& s) { return s; }
template <typename T>
Status status_of(const Result<T>& r) {
  return r.status();
}

// Compares codes, printing names and the message of an unexpected status;
// `expr` is evaluated once and the macros accept `<< context`.
::testing::AssertionResult has_code(Code expected, const Status& actual) {
  if (actual.code() == expected) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "expected " << code_name(expected) << ", got " << actual.to_string();
}
#define EXPECT_CODE(expected, expr) EXPECT_TRUE(has_code((expected), status_of(expr)))
#define ASSERT_OK(expr) ASSERT_TRUE(has_code(Code::kOk, status_of(expr))) << #expr
#define EXPECT_OK(expr) EXPECT_TRUE(has_code(Code::kOk, status_of(expr))) << #expr

template <typename T>
T value_or_fail(Result<T> r, const char* what) {
  if (!r.ok()) {
    ADD_FAILURE() << what << ": " << r.status().to_string();
    return T{};
  }
  return std::move(r).value();
}
#define MUST(expr) value_or_fail((expr), #expr)

Key key(std::string pk, std::string sk = "") { return {std::move(pk), std::move(sk)}; }

std::vector<std::string> strings(const std::vector<Item>& items, std::string_view attr) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    const std::string* s = get_string(item, attr);
    out.push_back(s ? *s : "<missing " + std::string(attr) + ">");
  }
  return out;
}

// Every item of a paged query, following cursors; checks each page's size.
template <typename Fetch>
std::vector<Item> drain(Fetch fetch, int limit, int* pages = nullptr) {
  std::vector<Item> all;
  QueryOptions options;
  options.limit = limit;
  for (int n = 1; n <= 10'000; ++n) {
    Result<Page> page = fetch(options);
    if (!page.ok()) {
      ADD_FAILURE() << "page " << n << ": " << page.status().to_string();
      break;
    }
    EXPECT_LE(static_cast<int>(page->items.size()), limit);
    for (auto& item : page->items) all.push_back(std::move(item));
    if (pages) *pages = n;
    if (page->next_cursor.empty()) break;
    options.cursor = page->next_cursor;
  }
  return all;
}

}  // namespace

TableSpec StoreConformance::items_spec() {
  return {
      kItems,
      "id",
      "",
      {{kByState, "state", "n", AttrType::kInt}, {kByName, "state", "name", AttrType::kString}}};
}

TableSpec StoreConformance::sorted_spec() { return {kSorted, "p", "s", {}}; }

void StoreConformance::SetUp() {
  Result<std::unique_ptr<ItemStore>> made = GetParam().make();
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  store_ = std::move(made).value();
  ASSERT_OK(store_->ensure_table(items_spec()));
  ASSERT_OK(store_->ensure_table(sorted_spec()));
}

// ---------------------------------------------------------------- tables

TEST_P(StoreConformance, EnsureTableIsIdempotentAndKeepsItems) {
  const TableSpec spec{"conf_fresh", "k", "", {}};
  EXPECT_CODE(Code::kNotFound, store().get("conf_fresh", key("a"), true));
  ASSERT_OK(store().ensure_table(spec));
  ASSERT_OK(store().ensure_table(spec));
  ASSERT_OK(store().put("conf_fresh", {{"k", "a"}, {"v", int64_t{1}}}, {}));
  ASSERT_OK(store().ensure_table(spec));
  ASSERT_OK(store().ensure_table(items_spec()));  // the setup's table, again
  EXPECT_EQ(MUST(store().get("conf_fresh", key("a"), true)), (Item{{"k", "a"}, {"v", int64_t{1}}}));
}

TEST_P(StoreConformance, EnsureTableAddsAnIndexCoveringExistingItems) {
  TableSpec spec{"conf_grow", "k", "", {}};
  ASSERT_OK(store().ensure_table(spec));
  ASSERT_OK(store().put("conf_grow", {{"k", "a"}, {"g", "G"}, {"r", int64_t{2}}}, {}));
  ASSERT_OK(store().put("conf_grow", {{"k", "b"}, {"g", "G"}, {"r", int64_t{1}}}, {}));
  EXPECT_CODE(Code::kNotFound, store().query_index("conf_grow", "g-r", "G", KeyRange::all(), {}));
  spec.indexes.push_back({"g-r", "g", "r", AttrType::kInt});
  ASSERT_OK(store().ensure_table(spec));
  ASSERT_OK(store().ensure_table(spec));
  ASSERT_OK(store().put("conf_grow", {{"k", "c"}, {"g", "G"}, {"r", int64_t{3}}}, {}));
  const Page page = MUST(store().query_index("conf_grow", "g-r", "G", KeyRange::all(), {}));
  EXPECT_EQ(strings(page.items, "k"), (std::vector<std::string>{"b", "a", "c"}));
  // A spec without the index does not drop it.
  ASSERT_OK(store().ensure_table(TableSpec{"conf_grow", "k", "", {}}));
  EXPECT_OK(store().query_index("conf_grow", "g-r", "G", KeyRange::all(), {}));
}

TEST_P(StoreConformance, EnsureTableRefusesAnotherKeySchema) {
  ASSERT_OK(store().put(kSorted, {{"p", "a"}, {"s", "1"}}, {}));
  EXPECT_CODE(Code::kInvalidArgument, store().ensure_table({kSorted, "p", "", {}}));
  EXPECT_CODE(Code::kInvalidArgument, store().ensure_table({kSorted, "p", "other", {}}));
  EXPECT_CODE(Code::kInvalidArgument, store().ensure_table({kSorted, "q", "s", {}}));
  EXPECT_CODE(Code::kInvalidArgument, store().ensure_table({kItems, "id", "s", {}}));
  // The table is as it was.
  EXPECT_OK(store().get(kSorted, key("a", "1"), true));
  EXPECT_CODE(Code::kInvalidArgument, store().get(kSorted, key("a"), true));
}

TEST_P(StoreConformance, EnsureTableRefusesRedefiningAnIndex) {
  TableSpec spec = items_spec();
  for (auto& index : spec.indexes) {
    if (index.name == kByState) index.range_attr = "other";
  }
  spec.indexes.push_back({"brand-new-index", "state", "n", AttrType::kInt});
  EXPECT_CODE(Code::kInvalidArgument, store().ensure_table(spec));
  // Nothing changed: not even the new index of the refused call was added.
  EXPECT_CODE(Code::kNotFound,
              store().query_index(kItems, "brand-new-index", "s", KeyRange::all(), {}));
  ASSERT_OK(store().put(kItems, {{"id", "a"}, {"state", "s"}, {"n", int64_t{1}}}, {}));
  EXPECT_EQ(MUST(store().query_index(kItems, kByState, "s", KeyRange::all(), {})).items.size(), 1u);
}

TEST_P(StoreConformance, EnsureTableRefusesMalformedSpecs) {
  for (const char* name : {"", "has space", "quo\"te", "semi;colon", "slash/"}) {
    EXPECT_CODE(Code::kInvalidArgument, store().ensure_table({name, "k", "", {}})) << name;
  }
  EXPECT_CODE(Code::kInvalidArgument, store().ensure_table({"conf_bad", "", "", {}}));
  EXPECT_CODE(Code::kInvalidArgument,
              store().ensure_table({"conf_bad", "k", "", {{"i", "h", "r", AttrType::kBool}}}));
  EXPECT_CODE(
      Code::kInvalidArgument,
      store().ensure_table({"conf_bad",
                            "k",
                            "",
                            {{"i", "h", "r", AttrType::kInt}, {"i", "h", "q", AttrType::kInt}}}));
  EXPECT_CODE(Code::kInvalidArgument,
              store().ensure_table({"conf_bad", "k", "", {{"", "h", "r", AttrType::kInt}}}));
  // None of them created the table.
  EXPECT_CODE(Code::kNotFound, store().get("conf_bad", key("a"), true));
}

TEST_P(StoreConformance, UnknownTableIsNotFoundEverywhere) {
  const std::string_view t = "conf_nope";
  const Key k = key("a");
  EXPECT_CODE(Code::kNotFound, store().get(t, k, true));
  EXPECT_CODE(Code::kNotFound, store().batch_get(t, std::vector<Key>{k}));
  EXPECT_CODE(Code::kNotFound, store().put(t, {{"id", "a"}}, {}));
  EXPECT_CODE(Code::kNotFound, store().update(t, k, Update().set("x", int64_t{1}), {}));
  EXPECT_CODE(Code::kNotFound, store().remove(t, k, {}));
  EXPECT_CODE(Code::kNotFound, store().query(t, "a", KeyRange::all(), {}));
  EXPECT_CODE(Code::kNotFound, store().query_index(t, kByState, "S", KeyRange::all(), {}));
  const std::vector<UpdateRequest> requests{{k, Update().set("x", true), {}}};
  const auto results = store().update_each(t, requests);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_CODE(Code::kNotFound, results[0]);
  EXPECT_CODE(Code::kNotFound, store().get(t, k, true));  // still no such table
}

// ---------------------------------------------------------------- get / put

TEST_P(StoreConformance, GetOfMissingItemIsNotFound) {
  EXPECT_CODE(Code::kNotFound, store().get(kItems, key("missing"), true));
  EXPECT_CODE(Code::kNotFound, store().get(kItems, key("missing"), false));
  EXPECT_CODE(Code::kNotFound, store().get(kSorted, key("missing", "x"), true));
}

TEST_P(StoreConformance, PutGetRoundTripsEveryType) {
  const Item item{
      {"id", "round-trip"},
      {"empty", ""},
      {"unicode", "ünïcødé ✓ 🚀 日本"},
      {"escapes", "quote\" backslash\\ slash/ newline\n tab\t"},
      {"nul", std::string("a\0b", 3)},
      {"control", "\x01\x1f"},
      {"json_like", "{\"not\":\"parsed\"}"},
      {"max", std::numeric_limits<int64_t>::max()},
      {"min", std::numeric_limits<int64_t>::min()},
      {"zero", int64_t{0}},
      {"minus_one", int64_t{-1}},
      {"big_safe", int64_t{9007199254740993}},  // not representable as a double
      {"yes", true},
      {"no", false},
      {"name with space", "v"},
      {"ключ", "значение"},
      {"$.path[0]", "v"},
  };
  ASSERT_OK(store().put(kItems, item, {}));
  EXPECT_EQ(MUST(store().get(kItems, key("round-trip"), true)), item);
  EXPECT_EQ(MUST(store().get(kItems, key("round-trip"), false)), item);
  const Item sorted{{"p", "ü"}, {"s", "🚀"}, {"v", int64_t{-7}}};
  ASSERT_OK(store().put(kSorted, sorted, {}));
  EXPECT_EQ(MUST(store().get(kSorted, key("ü", "🚀"), true)), sorted);
}

TEST_P(StoreConformance, PutReplacesTheWholeItem) {
  ASSERT_OK(store().put(kItems, {{"id", "a"}, {"x", int64_t{1}}, {"y", "keep?"}}, {}));
  ASSERT_OK(store().put(kItems, {{"id", "a"}, {"x", "now a string"}}, {}));
  EXPECT_EQ(MUST(store().get(kItems, key("a"), true)), (Item{{"id", "a"}, {"x", "now a string"}}));
}

TEST_P(StoreConformance, PutWithNotExistsConflictsWithExistingItem) {
  ASSERT_OK(store().put(kItems, {{"id", "a"}, {"v", int64_t{1}}}, cond::not_exists("id")));
  EXPECT_CODE(Code::kConditionFailed,
              store().put(kItems, {{"id", "a"}, {"v", int64_t{2}}}, cond::not_exists("id")));
  EXPECT_EQ(MUST(store().get(kItems, key("a"), true)), (Item{{"id", "a"}, {"v", int64_t{1}}}));
  // The same on a table with a sort key: another sort key is another item.
  ASSERT_OK(store().put(kSorted, {{"p", "a"}, {"s", "1"}}, cond::not_exists("p")));
  ASSERT_OK(store().put(kSorted, {{"p", "a"}, {"s", "2"}}, cond::not_exists("p")));
  EXPECT_CODE(Code::kConditionFailed,
              store().put(kSorted, {{"p", "a"}, {"s", "1"}, {"x", true}}, cond::not_exists("p")));
  EXPECT_EQ(MUST(store().get(kSorted, key("a", "1"), true)), (Item{{"p", "a"}, {"s", "1"}}));
}

// ---------------------------------------------------------------- conditions

namespace {

struct ConditionCase {
  Condition condition;
  bool on_item;     // expected on kConditionItem
  bool on_missing;  // expected when there is no item
};

const Item kConditionItem{{"id", "c"}, {"s", "m"}, {"i", int64_t{5}},
                          {"b", true}, {"e", ""},  {"u", "é"}};

std::vector<ConditionCase> comparison_cases() {
  using namespace cond;
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  return {
      {exists("s"), true, false},     {exists("e"), true, false},
      {exists("id"), true, false},    {exists("zz"), false, false},
      {not_exists("zz"), true, true}, {not_exists("s"), false, true},
      {eq("s", "m"), true, false},    {eq("s", "n"), false, false},
      {ne("s", "n"), true, true},     {ne("s", "m"), false, true},
      {lt("s", "n"), true, false},    {lt("s", "m"), false, false},
      {lt("s", "mm"), true, false},   {le("s", "m"), true, false},
      {le("s", "l"), false, false},   {gt("s", "l"), true, false},
      {gt("s", "m"), false, false},   {ge("s", "m"), true, false},
      {ge("s", "n"), false, false},   {eq("e", ""), true, false},
      {lt("e", "a"), true, false},    {gt("u", "z"), true, false},  // UTF-8 bytes
      {eq("i", 5), true, false},      {eq("i", 6), false, false},
      {ne("i", 5), false, true},      {ne("i", 6), true, true},
      {lt("i", 6), true, false},      {lt("i", 5), false, false},
      {le("i", 5), true, false},      {le("i", 4), false, false},
      {gt("i", 4), true, false},      {gt("i", 5), false, false},
      {ge("i", 5), true, false},      {ge("i", 6), false, false},
      {lt("i", 10), true, false},     {gt("i", -10), true, false},  // numeric order
      {gt("i", kMin), true, false},   {lt("i", kMax), true, false},
      {eq("b", true), true, false},   {eq("b", false), false, false},
      {ne("b", false), true, true},   {ne("b", true), false, true},
      {lt("b", true), false, false},  {le("b", true), false, false},  // bools: no order
      {gt("b", false), false, false}, {ge("b", true), false, false},
  };
}

std::vector<ConditionCase> absent_and_mismatch_cases() {
  using namespace cond;
  return {
      {eq("zz", 1), false, false},    {ne("zz", 1), true, true},     {lt("zz", 1), false, false},
      {ge("zz", 1), false, false},    {eq("zz", "x"), false, false}, {ne("zz", "x"), true, true},
      {le("zz", true), false, false}, {eq("s", 5), false, false},    {ne("s", 5), true, true},
      {lt("s", 5), false, false},     {gt("s", 5), false, false},    {eq("i", "5"), false, false},
      {ne("i", "5"), true, true},     {gt("i", "0"), false, false},  {lt("i", "9"), false, false},
      {eq("b", 1), false, false},     {ne("b", 1), true, true},      {eq("i", true), false, false},
      {eq("s", true), false, false},  {ne("s", false), true, true},  {eq("e", 0), false, false},
      {lt("e", 1), false, false},
  };
}

std::vector<ConditionCase> logic_cases() {
  using namespace cond;
  return {
      {eq("s", "m") && eq("i", 5), true, false},
      {eq("s", "m") && eq("i", 6), false, false},
      {eq("s", "m") && eq("i", 5) && eq("b", true), true, false},
      {eq("s", "n") || eq("i", 5), true, false},
      {eq("s", "n") || eq("i", 6), false, false},
      {ne("zz", 1) || exists("zz"), true, true},
      {!eq("s", "m"), false, true},
      {!eq("s", "n"), true, true},
      {!exists("zz"), true, true},
      {!(eq("s", "m") && eq("i", 6)), true, true},
      {(eq("s", "n") && eq("i", 5)) || !eq("b", false), true, true},
      {(eq("s", "n") || eq("i", 5)) && !(eq("b", false) || eq("zz", 1)), true, false},
      {!!exists("s"), true, false},
      {not_exists("id") || lt("i", 0), false, true},  // acquire-like
  };
}

}  // namespace

// Each case runs through every write that takes a condition, on the item and
// on no item, because backends may implement each write differently.
TEST_P(StoreConformance, ConditionsMeanWhatDynamoDbMeans) {
  std::vector<ConditionCase> cases = comparison_cases();
  for (auto& c : absent_and_mismatch_cases()) cases.push_back(std::move(c));
  for (auto& c : logic_cases()) cases.push_back(std::move(c));
  const Key k = key("c");
  Item marked = kConditionItem;
  marked["hit"] = true;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.condition.to_string());
    const Code on_item = c.on_item ? Code::kOk : Code::kConditionFailed;
    const Code on_missing = c.on_missing ? Code::kOk : Code::kConditionFailed;
    ASSERT_OK(store().put(kItems, kConditionItem, {}));
    EXPECT_CODE(on_item, store().update(kItems, k, Update().set("hit", true), c.condition));
    EXPECT_EQ(MUST(store().get(kItems, k, true)), c.on_item ? marked : kConditionItem) << "update";
    ASSERT_OK(store().put(kItems, kConditionItem, {}));
    EXPECT_CODE(on_item, store().put(kItems, marked, c.condition));
    EXPECT_EQ(MUST(store().get(kItems, k, true)), c.on_item ? marked : kConditionItem) << "put";
    ASSERT_OK(store().put(kItems, kConditionItem, {}));
    EXPECT_CODE(on_item, store().remove(kItems, k, c.condition));
    EXPECT_CODE(c.on_item ? Code::kNotFound : Code::kOk, store().get(kItems, k, true)) << "remove";

    ASSERT_OK(store().remove(kItems, k, {}));
    EXPECT_CODE(on_missing, store().update(kItems, k, Update().set("hit", true), c.condition));
    EXPECT_CODE(c.on_missing ? Code::kOk : Code::kNotFound, store().get(kItems, k, true));
    ASSERT_OK(store().remove(kItems, k, {}));
    EXPECT_CODE(on_missing, store().put(kItems, kConditionItem, c.condition));
    EXPECT_CODE(c.on_missing ? Code::kOk : Code::kNotFound, store().get(kItems, k, true));
    ASSERT_OK(store().remove(kItems, k, {}));
    EXPECT_CODE(on_missing, store().remove(kItems, k, c.condition));
  }
}

TEST_P(StoreConformance, MalformedConditionsAreRefused) {
  ASSERT_OK(store().put(kItems, kConditionItem, {}));
  Condition deep = cond::exists("s");
  for (int i = 0; i < 40; ++i) deep = !deep;
  Condition wide = cond::eq("i", 0);
  for (int i = 1; i < 200; ++i) wide = wide || cond::eq("i", i);
  Condition lonely_and;
  lonely_and.kind = Condition::Kind::kAnd;
  lonely_and.children.push_back(cond::exists("s"));
  Condition empty_not;
  empty_not.kind = Condition::Kind::kNot;
  for (const Condition* c : {&deep, &wide, &lonely_and, &empty_not}) {
    EXPECT_CODE(Code::kInvalidArgument, store().update(kItems, key("c"), Update().set("x", 1), *c));
    EXPECT_CODE(Code::kInvalidArgument, store().put(kItems, {{"id", "c"}}, *c));
    EXPECT_CODE(Code::kInvalidArgument, store().remove(kItems, key("c"), *c));
  }
  for (const std::string& name : {std::string(), std::string("a\nb"), std::string(256, 'a')}) {
    EXPECT_CODE(Code::kInvalidArgument, store().remove(kItems, key("c"), cond::exists(name)));
    EXPECT_CODE(Code::kInvalidArgument, store().remove(kItems, key("c"), cond::eq(name, 1)));
  }
  EXPECT_EQ(MUST(store().get(kItems, key("c"), true)), kConditionItem);
}

// ---------------------------------------------------------------- update

TEST_P(StoreConformance, UpdateCreatesAMissingItemOnlyIfTheConditionHoldsOnNone) {
  const Item created = MUST(store().update(kItems, key("new"), Update().set("v", "x"), {}));
  EXPECT_EQ(created, (Item{{"id", "new"}, {"v", "x"}}));
  EXPECT_EQ(MUST(store().get(kItems, key("new"), true)), created);
  EXPECT_OK(store().update(kItems, key("new2"), Update().add("n", 3), cond::not_exists("id")));
  EXPECT_EQ(MUST(store().get(kItems, key("new2"), true)),
            (Item{{"id", "new2"}, {"n", int64_t{3}}}));
  EXPECT_CODE(Code::kConditionFailed,
              store().update(kItems, key("new3"), Update().set("v", 1), cond::exists("id")));
  EXPECT_CODE(Code::kConditionFailed,
              store().update(kItems, key("new3"), Update().set("v", 1), cond::eq("v", 0)));
  EXPECT_CODE(Code::kNotFound, store().get(kItems, key("new3"), true));
  // With a sort key, both key attributes are filled in.
  EXPECT_EQ(MUST(store().update(kSorted, key("p", "s"), Update().set("v", true), {})),
            (Item{{"p", "p"}, {"s", "s"}, {"v", true}}));
  // An empty update creates an item of key attributes only.
  EXPECT_EQ(MUST(store().update(kItems, key("bare"), Update(), {})), (Item{{"id", "bare"}}));
}

TEST_P(StoreConformance, UpdateReturnsTheItemAfterTheWrite) {
  ASSERT_OK(
      store().put(kItems, {{"id", "a"}, {"keep", "k"}, {"n", int64_t{1}}, {"gone", true}}, {}));
  const Item after = MUST(
      store().update(kItems, key("a"),
                     Update().set("s", "x").add("n", 41).remove("gone").set_if_absent("keep", "no"),
                     cond::eq("n", 1)));
  const Item expected{{"id", "a"}, {"keep", "k"}, {"n", int64_t{42}}, {"s", "x"}};
  EXPECT_EQ(after, expected);
  EXPECT_EQ(MUST(store().get(kItems, key("a"), true)), expected);
  // Twice in a row: the second sees the first.
  EXPECT_EQ(MUST(store().update(kItems, key("a"), Update().add("n", 1), {})).at("n"),
            Value(int64_t{43}));
  EXPECT_EQ(MUST(store().update(kItems, key("a"), Update().add("n", 1), {})).at("n"),
            Value(int64_t{44}));
}

// Returning the updated attributes only: at least the key and what the
// update set or added, with their new values; the write itself is whole.
TEST_P(StoreConformance, UpdateReturningUpdatedOnlyStillWritesEverything) {
  ASSERT_OK(store().put(kItems, {{"id", "a"}, {"keep", "k"}, {"n", int64_t{1}}}, {}));
  const Item after = MUST(store().update(
      kItems, key("a"), Update().set("s", "x").add("n", 41).returning_updated_only(),
      cond::eq("n", 1)));
  EXPECT_EQ(after.at("id"), Value("a"));
  EXPECT_EQ(after.at("s"), Value("x"));
  EXPECT_EQ(after.at("n"), Value(int64_t{42}));
  if (after.contains("keep")) {
    EXPECT_EQ(after.at("keep"), Value("k"));  // allowed, not required
  }
  EXPECT_EQ(MUST(store().get(kItems, key("a"), true)),
            (Item{{"id", "a"}, {"keep", "k"}, {"n", int64_t{42}}, {"s", "x"}}));
  // On the sorted table the returned key has both parts.
  const Item sorted = MUST(store().update(kSorted, {"p1", "s1"},
                                          Update().set("v", int64_t{7}).returning_updated_only(),
                                          {}));
  EXPECT_EQ(sorted.at("p"), Value("p1"));
  EXPECT_EQ(sorted.at("s"), Value("s1"));
  EXPECT_EQ(sorted.at("v"), Value(int64_t{7}));
}

TEST_P(StoreConformance, SetAndSetIfAbsent) {
  ASSERT_OK(store().put(kItems, {{"id", "a"}, {"x", int64_t{1}}, {"y", "old"}}, {}));
  const Item after = MUST(store().update(
      kItems, key("a"),
      Update().set("x", "now string").set_if_absent("y", int64_t{9}).set_if_absent("z", false),
      {}));
  EXPECT_EQ(after, (Item{{"id", "a"}, {"x", "now string"}, {"y", "old"}, {"z", false}}));
  EXPECT_EQ(MUST(store().get(kItems, key("a"), true)), after);
}

TEST_P(StoreConformance, AddTreatsAbsentAsZeroAndRefusesNonInts) {
  ASSERT_OK(store().put(kItems, {{"id", "a"}, {"s", "text"}, {"b", true}, {"n", int64_t{10}}}, {}));
  EXPECT_EQ(
      MUST(store().update(kItems, key("a"), Update().add("fresh", -5).add("n", -15), {})),
      (Item{{"id", "a"}, {"s", "text"}, {"b", true}, {"n", int64_t{-5}}, {"fresh", int64_t{-5}}}));
  const Item before = MUST(store().get(kItems, key("a"), true));
  EXPECT_CODE(Code::kInvalidArgument,
              store().update(kItems, key("a"), Update().set("x", 1).add("s", 1), {}));
  EXPECT_CODE(Code::kInvalidArgument, store().update(kItems, key("a"), Update().add("b", 1), {}));
  ASSERT_OK(store().update(kItems, key("a"),
                           Update().set("big", std::numeric_limits<int64_t>::max()), {}));
  const Item with_big = MUST(store().get(kItems, key("a"), true));
  EXPECT_CODE(Code::kInvalidArgument, store().update(kItems, key("a"), Update().add("big", 1), {}));
  EXPECT_EQ(MUST(store().get(kItems, key("a"), true)), with_big);
  Item expected = before;
  expected["big"] = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(with_big, expected);
}

TEST_P(StoreConformance, RemoveActionDropsAttributes) {
  ASSERT_OK(store().put(kItems, {{"id", "a"}, {"x", int64_t{1}}, {"y", "y"}}, {}));
  EXPECT_EQ(MUST(store().update(kItems, key("a"), Update().remove("x").remove("never"), {})),
            (Item{{"id", "a"}, {"y", "y"}}));
}

TEST_P(StoreConformance, UpdateOfKeyAttributesOrRepeatedNamesIsRefused) {
  ASSERT_OK(store().put(kItems, {{"id", "a"}, {"x", int64_t{1}}}, {}));
  ASSERT_OK(store().put(kSorted, {{"p", "a"}, {"s", "1"}}, {}));
  const std::vector<Update> bad_items{Update().set("id", "b"),
                                      Update().remove("id"),
                                      Update().set_if_absent("id", "b"),
                                      Update().add("id", 1),
                                      Update().set("x", 2).add("x", 1),
                                      Update().remove("x").remove("x"),
                                      Update().set("", 1),
                                      Update().set("bad\x01name", 1),
                                      Update().set(std::string(256, 'n'), 1)};
  for (const auto& u : bad_items) {
    EXPECT_CODE(Code::kInvalidArgument, store().update(kItems, key("a"), u, {})) << u.to_string();
    EXPECT_CODE(Code::kInvalidArgument, store().update(kItems, key("new"), u, {})) << u.to_string();
  }
  EXPECT_CODE(Code::kInvalidArgument,
              store().update(kSorted, key("a", "1"), Update().set("s", "2"), {}));
  EXPECT_CODE(Code::kInvalidArgument,
              store().update(kSorted, key("a", "1"), Update().set("p", "b"), {}));
  Update too_many;
  for (int i = 0; i < 100; ++i) too_many.set("a" + std::to_string(i), i);
  EXPECT_CODE(Code::kInvalidArgument, store().update(kItems, key("a"), too_many, {}));
  EXPECT_EQ(MUST(store().get(kItems, key("a"), true)), (Item{{"id", "a"}, {"x", int64_t{1}}}));
  EXPECT_EQ(MUST(store().get(kSorted, key("a", "1"), true)), (Item{{"p", "a"}, {"s", "1"}}));
  EXPECT_CODE(Code::kNotFound, store().get(kItems, key("new"), true));
}

// ---------------------------------------------------------------- remove

TEST_P(StoreConformance, RemoveHonoursItsCondition) {
  ASSERT_OK(store().put(kItems, {{"id", "a"}, {"v", int64_t{1}}}, {}));
  EXPECT_CODE(Code::kConditionFailed, store().remove(kItems, key("a"), cond::eq("v", 2)));
  // False on the item though true on none: the item is there, so it fails.
  EXPECT_CODE(Code::kConditionFailed, store().remove(kItems, key("a"), cond::ne("v", 1)));
  EXPECT_CODE(Code::kConditionFailed, store().remove(kItems, key("a"), cond::not_exists("id")));
  EXPECT_OK(store().get(kItems, key("a"), true));
  EXPECT_OK(store().remove(kItems, key("a"), cond::eq("v", 1)));
  EXPECT_CODE(Code::kNotFound, store().get(kItems, key("a"), true));
  // A missing item: fine unconditionally or when the condition holds on none.
  EXPECT_OK(store().remove(kItems, key("a"), {}));
  EXPECT_OK(store().remove(kItems, key("a"), cond::not_exists("id")));
  EXPECT_CODE(Code::kConditionFailed, store().remove(kItems, key("a"), cond::exists("id")));
  EXPECT_CODE(Code::kConditionFailed, store().remove(kItems, key("a"), cond::eq("v", 1)));
  // Only the addressed item goes.
  ASSERT_OK(store().put(kSorted, {{"p", "a"}, {"s", "1"}}, {}));
  ASSERT_OK(store().put(kSorted, {{"p", "a"}, {"s", "2"}}, {}));
  EXPECT_OK(store().remove(kSorted, key("a", "1"), cond::exists("p")));
  EXPECT_EQ(strings(MUST(store().query(kSorted, "a", KeyRange::all(), {})).items, "s"),
            (std::vector<std::string>{"2"}));
}

// ---------------------------------------------------------------- batch_get

TEST_P(StoreConformance, BatchGetKeepsRequestOrderAndSkipsMissing) {
  for (const char* id : {"a", "b", "c"})
    ASSERT_OK(store().put(kItems, {{"id", id}, {"v", id}}, {}));
  const std::vector<Key> keys{key("c"), key("zz"), key("a"), key("b"), key("yy")};
  EXPECT_EQ(strings(MUST(store().batch_get(kItems, keys)), "v"),
            (std::vector<std::string>{"c", "a", "b"}));
  EXPECT_TRUE(MUST(store().batch_get(kItems, std::vector<Key>{})).empty());
  EXPECT_TRUE(MUST(store().batch_get(kItems, std::vector<Key>{key("zz")})).empty());
  // Two keys (a backend may read them otherwise than more).
  EXPECT_EQ(strings(MUST(store().batch_get(kItems, std::vector<Key>{key("b"), key("a")})), "v"),
            (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(strings(MUST(store().batch_get(kItems, std::vector<Key>{key("zz"), key("a")})), "v"),
            (std::vector<std::string>{"a"}));
  EXPECT_EQ(strings(MUST(store().batch_get(kItems, std::vector<Key>{key("c"), key("zz")})), "v"),
            (std::vector<std::string>{"c"}));
  EXPECT_TRUE(MUST(store().batch_get(kItems, std::vector<Key>{key("zz"), key("yy")})).empty());
  ASSERT_OK(store().put(kSorted, {{"p", "a"}, {"s", "2"}}, {}));
  ASSERT_OK(store().put(kSorted, {{"p", "a"}, {"s", "1"}}, {}));
  EXPECT_EQ(
      strings(MUST(store().batch_get(kSorted, std::vector<Key>{key("a", "2"), key("a", "1")})),
              "s"),
      (std::vector<std::string>{"2", "1"}));
  EXPECT_CODE(Code::kInvalidArgument,
              store().batch_get(kItems, std::vector<Key>{key("a"), key("")}));
  EXPECT_CODE(Code::kInvalidArgument, store().batch_get(kSorted, std::vector<Key>{key("a")}));
}

TEST_P(StoreConformance, BatchGetOfManyKeys) {
  std::vector<Key> keys;
  std::vector<std::string> expected;
  for (int i = 0; i < 250; ++i) {
    const std::string id = "k" + std::to_string(i);
    if (i % 3 != 0) {
      ASSERT_OK(store().put(kItems, {{"id", id}}, {}));
    }
  }
  for (int i = 249; i >= 0; --i) {  // reverse order: nothing may come back sorted
    keys.push_back(key("k" + std::to_string(i)));
    if (i % 3 != 0) expected.push_back("k" + std::to_string(i));
  }
  EXPECT_EQ(strings(MUST(store().batch_get(kItems, keys)), "id"), expected);
}

// ---------------------------------------------------------------- query

namespace {

const std::vector<std::string> kSortKeys{"Z", "a", "ab", "abc", "b", "ba", "c", "f", "é1", "é2"};

std::vector<std::string> sks_of(ItemStore& store, const KeyRange& range) {
  Result<Page> page = store.query(StoreConformance::kSorted, "P", range, {});
  if (!page.ok()) return {"<" + page.status().to_string() + ">"};
  EXPECT_TRUE(page->next_cursor.empty());
  return strings(page->items, "s");
}

}  // namespace

TEST_P(StoreConformance, QueryEachKeyRangeKind) {
  for (auto it = kSortKeys.rbegin(); it != kSortKeys.rend(); ++it) {
    ASSERT_OK(store().put(kSorted, {{"p", "P"}, {"s", *it}}, {}));
  }
  ASSERT_OK(store().put(kSorted, {{"p", "Q"}, {"s", "a"}}, {}));
  ASSERT_OK(store().put(kSorted, {{"p", "PP"}, {"s", "a"}}, {}));
  using V = std::vector<std::string>;
  EXPECT_EQ(sks_of(store(), KeyRange::all()), kSortKeys);  // by UTF-8 bytes
  EXPECT_EQ(sks_of(store(), KeyRange::eq("ab")), (V{"ab"}));
  EXPECT_EQ(sks_of(store(), KeyRange::eq("zz")), (V{}));
  EXPECT_EQ(sks_of(store(), KeyRange::lt("b")), (V{"Z", "a", "ab", "abc"}));
  EXPECT_EQ(sks_of(store(), KeyRange::le("b")), (V{"Z", "a", "ab", "abc", "b"}));
  EXPECT_EQ(sks_of(store(), KeyRange::gt("c")), (V{"f", "é1", "é2"}));
  EXPECT_EQ(sks_of(store(), KeyRange::ge("c")), (V{"c", "f", "é1", "é2"}));
  EXPECT_EQ(sks_of(store(), KeyRange::between("ab", "b")), (V{"ab", "abc", "b"}));
  EXPECT_EQ(sks_of(store(), KeyRange::between("b", "b")), (V{"b"}));
  EXPECT_EQ(sks_of(store(), KeyRange::begins_with("ab")), (V{"ab", "abc"}));
  EXPECT_EQ(sks_of(store(), KeyRange::begins_with("a")), (V{"a", "ab", "abc"}));
  EXPECT_EQ(sks_of(store(), KeyRange::begins_with("é")), (V{"é1", "é2"}));
  EXPECT_EQ(sks_of(store(), KeyRange::begins_with("abcd")), (V{}));
  EXPECT_EQ(sks_of(store(), KeyRange::begins_with("")), kSortKeys);
  const Page empty = MUST(store().query(kSorted, "nobody", KeyRange::all(), {}));
  EXPECT_TRUE(empty.items.empty());
  EXPECT_TRUE(empty.next_cursor.empty());
}

TEST_P(StoreConformance, QueryBeginsWithAtTheTopOfTheByteRange) {
  for (const std::string s :
       {"\x7f", "\xc3\xbf", "\xc3\xbf\xc3\xbf", "\xc4\x80", "\xef\xbf\xbf", "\xf4\x8f\xbf\xbf"}) {
    ASSERT_OK(store().put(kSorted, {{"p", "P"}, {"s", s}}, {}));
  }
  using V = std::vector<std::string>;
  EXPECT_EQ(sks_of(store(), KeyRange::begins_with("\xc3\xbf")),
            (V{"\xc3\xbf", "\xc3\xbf\xc3\xbf"}));
  EXPECT_EQ(sks_of(store(), KeyRange::begins_with("\xf4\x8f\xbf\xbf")), (V{"\xf4\x8f\xbf\xbf"}));
  EXPECT_EQ(sks_of(store(), KeyRange::begins_with("\x7f")), (V{"\x7f"}));
}

TEST_P(StoreConformance, QueryPaginatesOverEveryItemOnce) {
  std::vector<std::string> expected;
  for (int i = 0; i < 23; ++i) {
    char s[16];
    std::snprintf(s, sizeof s, "s%02d", i);
    expected.push_back(s);
    ASSERT_OK(store().put(kSorted, {{"p", "P"}, {"s", s}, {"i", int64_t{i}}}, {}));
  }
  ASSERT_OK(store().put(kSorted, {{"p", "Q"}, {"s", "s05"}}, {}));
  int pages = 0;
  const auto all =
      drain([&](const QueryOptions& o) { return store().query(kSorted, "P", KeyRange::all(), o); },
            5, &pages);
  EXPECT_EQ(strings(all, "s"), expected);
  EXPECT_GE(pages, 5);
  EXPECT_LE(pages, 6);  // a backend may end with one empty page
  const auto ranged = drain(
      [&](const QueryOptions& o) {
        return store().query(kSorted, "P", KeyRange::between("s03", "s09"), o);
      },
      2);
  EXPECT_EQ(strings(ranged, "s"),
            (std::vector<std::string>(expected.begin() + 3, expected.begin() + 10)));
  const auto one_by_one = drain(
      [&](const QueryOptions& o) {
        return store().query(kSorted, "P", KeyRange::begins_with("s1"), o);
      },
      1);
  EXPECT_EQ(strings(one_by_one, "s"),
            (std::vector<std::string>(expected.begin() + 10, expected.begin() + 20)));
}

TEST_P(StoreConformance, QueryCursorIsAPositionNotAnOffset) {
  for (const char* s : {"b", "d", "f", "h"})
    ASSERT_OK(store().put(kSorted, {{"p", "P"}, {"s", s}}, {}));
  QueryOptions options;
  options.limit = 2;
  const Page first = MUST(store().query(kSorted, "P", KeyRange::all(), options));
  ASSERT_EQ(strings(first.items, "s"), (std::vector<std::string>{"b", "d"}));
  ASSERT_FALSE(first.next_cursor.empty());
  // Writes between pages: before the cursor (not seen), after it (seen), and
  // the removal of the item the cursor names.
  ASSERT_OK(store().put(kSorted, {{"p", "P"}, {"s", "a"}}, {}));
  ASSERT_OK(store().put(kSorted, {{"p", "P"}, {"s", "e"}}, {}));
  ASSERT_OK(store().remove(kSorted, key("P", "d"), {}));
  const auto rest = drain(
      [&](QueryOptions o) {
        if (o.cursor.empty()) o.cursor = first.next_cursor;
        return store().query(kSorted, "P", KeyRange::all(), o);
      },
      2);
  EXPECT_EQ(strings(rest, "s"), (std::vector<std::string>{"e", "f", "h"}));
}

TEST_P(StoreConformance, QueryRefusesBadArguments) {
  ASSERT_OK(store().put(kSorted, {{"p", "P"}, {"s", "a"}}, {}));
  for (int limit : {0, -1, kQueryLimitMax + 1, INT_MIN}) {
    QueryOptions o;
    o.limit = limit;
    EXPECT_CODE(Code::kInvalidArgument, store().query(kSorted, "P", KeyRange::all(), o)) << limit;
    EXPECT_CODE(Code::kInvalidArgument,
                store().query_index(kItems, kByState, "S", KeyRange::all(), o));
  }
  QueryOptions max;
  max.limit = kQueryLimitMax;
  EXPECT_OK(store().query(kSorted, "P", KeyRange::all(), max));
  for (const char* cursor : {"garbage", "{}", "[1]", "{\"pk\":1,\"sk\":\"a\"}", "{\"pk\":\"P\"}"}) {
    QueryOptions o;
    o.cursor = cursor;
    EXPECT_CODE(Code::kInvalidArgument, store().query(kSorted, "P", KeyRange::all(), o)) << cursor;
    EXPECT_CODE(Code::kInvalidArgument,
                store().query_index(kItems, kByState, "S", KeyRange::all(), o))
        << cursor;
  }
  EXPECT_CODE(Code::kInvalidArgument, store().query(kSorted, "", KeyRange::all(), {}));
  EXPECT_CODE(Code::kInvalidArgument,
              store().query(kSorted, std::string(2049, 'p'), KeyRange::all(), {}));
  EXPECT_CODE(Code::kInvalidArgument, store().query(kSorted, "P", KeyRange::eq(int64_t{1}), {}));
  EXPECT_CODE(Code::kInvalidArgument, store().query(kSorted, "P", KeyRange::between("b", "a"), {}));
  EXPECT_CODE(Code::kInvalidArgument,
              store().query(kSorted, "P", KeyRange::between("a", int64_t{1}), {}));
  EXPECT_CODE(Code::kInvalidArgument, store().query(kItems, "a", KeyRange::eq("x"), {}));
  EXPECT_OK(store().query(kItems, "a", KeyRange::all(), {}));
}

TEST_P(StoreConformance, QueryOfTableWithoutSortKeyFindsTheItem) {
  ASSERT_OK(store().put(kItems, {{"id", "a"}, {"v", int64_t{1}}}, {}));
  ASSERT_OK(store().put(kItems, {{"id", "ab"}}, {}));
  const Page page = MUST(store().query(kItems, "a", KeyRange::all(), {}));
  EXPECT_EQ(page.items, (std::vector<Item>{{{"id", "a"}, {"v", int64_t{1}}}}));
  EXPECT_TRUE(page.next_cursor.empty());
}

// ---------------------------------------------------------------- query_index

namespace {

std::vector<std::string> index_ids(ItemStore& store, std::string_view index, std::string_view hash,
                                   const KeyRange& range) {
  Result<Page> page = store.query_index(StoreConformance::kItems, index, hash, range, {});
  if (!page.ok()) return {"<" + page.status().to_string() + ">"};
  EXPECT_TRUE(page->next_cursor.empty());
  return strings(page->items, "id");
}

std::vector<Item> index_rows(ItemStore& store, std::string_view index, std::string_view hash,
                             const KeyRange& range) {
  Result<Page> page = store.query_index(StoreConformance::kItems, index, hash, range, {});
  EXPECT_TRUE(page.ok()) << page.status().to_string();
  if (!page.ok()) return {};
  EXPECT_TRUE(page->next_cursor.empty());
  return page->items;
}

// The ids of `items`, after checking that they come in non-decreasing order
// of `range_attr`. Items with equal range values may come in any order (the
// backend's choice, as on DynamoDB), so ties are sorted by id to compare.
std::vector<std::string> sorted_ties(const std::vector<Item>& items,
                                     const std::string& range_attr) {
  std::vector<std::pair<Value, std::string>> rows;
  for (const Item& item : items) {
    const auto r = item.find(range_attr);
    rows.emplace_back(r == item.end() ? Value() : r->second, strings({item}, "id").front());
  }
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_FALSE(rows[i].first < rows[i - 1].first) << rows[i].second << " is out of range order";
  }
  std::stable_sort(rows.begin(), rows.end());
  std::vector<std::string> ids;
  for (const auto& row : rows) ids.push_back(row.second);
  return ids;
}

}  // namespace

TEST_P(StoreConformance, QueryIndexOrdersByRangeValueThenKey) {
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  const std::vector<std::pair<std::string, int64_t>> rows{
      {"a", 5}, {"b", -3}, {"c", 100}, {"d", 5}, {"e", kMin}, {"f", kMax}, {"g", 0}, {"aa", 5}};
  for (const auto& [id, n] : rows)
    ASSERT_OK(store().put(kItems, {{"id", id}, {"state", "S"}, {"n", n}}, {}));
  ASSERT_OK(store().put(kItems, {{"id", "t"}, {"state", "T"}, {"n", int64_t{1}}}, {}));
  ASSERT_OK(store().put(kItems, {{"id", "s"}, {"state", "SS"}, {"n", int64_t{1}}}, {}));
  using V = std::vector<std::string>;
  // Ties (a, aa, d all have n = 5) may come in any order: compare them sorted.
  EXPECT_EQ(sorted_ties(index_rows(store(), kByState, "S", KeyRange::all()), "n"),
            (V{"e", "b", "g", "a", "aa", "d", "c", "f"}));
  EXPECT_EQ(index_ids(store(), kByState, "T", KeyRange::all()), (V{"t"}));
  EXPECT_EQ(index_ids(store(), kByState, "nobody", KeyRange::all()), (V{}));
  const Page page =
      MUST(store().query_index(kItems, kByState, "S", KeyRange::eq(int64_t{100}), {}));
  ASSERT_EQ(page.items.size(), 1u);
  EXPECT_EQ(page.items[0], (Item{{"id", "c"}, {"state", "S"}, {"n", int64_t{100}}}));  // whole item

  for (const auto& [id, name] : std::vector<std::pair<std::string, std::string>>{
           {"n1", "b"}, {"n2", "a"}, {"n3", "B"}, {"n4", "é"}, {"n5", "ab"}, {"n6", "a"}}) {
    ASSERT_OK(store().put(kItems, {{"id", id}, {"state", "N"}, {"name", name}}, {}));
  }
  EXPECT_EQ(sorted_ties(index_rows(store(), kByName, "N", KeyRange::all()), "name"),
            (V{"n3", "n2", "n6", "n5", "n1", "n4"}));
}

TEST_P(StoreConformance, QueryIndexRangeConditions) {
  for (int i = 1; i <= 10; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "r%02d", i);
    ASSERT_OK(store().put(
        kItems, {{"id", id}, {"state", "S"}, {"n", int64_t{i}}, {"name", "x" + std::string(id)}},
        {}));
  }
  using V = std::vector<std::string>;
  const auto ids = [&](const KeyRange& r) { return index_ids(store(), kByState, "S", r); };
  EXPECT_EQ(ids(KeyRange::eq(int64_t{5})), (V{"r05"}));
  EXPECT_EQ(ids(KeyRange::eq(int64_t{11})), (V{}));
  EXPECT_EQ(ids(KeyRange::lt(int64_t{3})), (V{"r01", "r02"}));
  EXPECT_EQ(ids(KeyRange::le(int64_t{3})), (V{"r01", "r02", "r03"}));
  EXPECT_EQ(ids(KeyRange::gt(int64_t{8})), (V{"r09", "r10"}));
  EXPECT_EQ(ids(KeyRange::ge(int64_t{8})), (V{"r08", "r09", "r10"}));
  EXPECT_EQ(ids(KeyRange::between(int64_t{4}, int64_t{6})), (V{"r04", "r05", "r06"}));
  EXPECT_EQ(ids(KeyRange::between(int64_t{5}, int64_t{5})), (V{"r05"}));
  EXPECT_EQ(ids(KeyRange::lt(std::numeric_limits<int64_t>::min())), (V{}));
  const auto names = [&](const KeyRange& r) { return index_ids(store(), kByName, "S", r); };
  EXPECT_EQ(names(KeyRange::begins_with("xr1")), (V{"r10"}));
  EXPECT_EQ(names(KeyRange::begins_with("xr0")).size(), 9u);
  EXPECT_EQ(names(KeyRange::gt("xr08")), (V{"r09", "r10"}));
  EXPECT_EQ(names(KeyRange::between("xr02", "xr04")), (V{"r02", "r03", "r04"}));
  // Type mismatches and unknown indexes.
  EXPECT_CODE(Code::kInvalidArgument,
              store().query_index(kItems, kByState, "S", KeyRange::eq("5"), {}));
  EXPECT_CODE(Code::kInvalidArgument,
              store().query_index(kItems, kByState, "S", KeyRange::begins_with("5"), {}));
  EXPECT_CODE(Code::kInvalidArgument,
              store().query_index(kItems, kByName, "S", KeyRange::eq(int64_t{5}), {}));
  EXPECT_CODE(
      Code::kInvalidArgument,
      store().query_index(kItems, kByState, "S", KeyRange::between(int64_t{6}, int64_t{4}), {}));
  EXPECT_CODE(Code::kNotFound,
              store().query_index(kItems, "no-such-index", "S", KeyRange::all(), {}));
  EXPECT_CODE(Code::kNotFound, store().query_index(kSorted, kByState, "S", KeyRange::all(), {}));
}

TEST_P(StoreConformance, QueryIndexIsSparse) {
  const std::vector<Item> items{
      {{"id", "in"}, {"state", "S"}, {"n", int64_t{1}}},
      {{"id", "no_range"}, {"state", "S"}},
      {{"id", "no_hash"}, {"n", int64_t{2}}},
      {{"id", "other_hash"}, {"state", "T"}, {"n", int64_t{5}}},
      {{"id", "named"}, {"state", "S"}, {"name", "x"}},
  };
  for (const auto& item : items) ASSERT_OK(store().put(kItems, item, {}));
  // Index attributes of the wrong type, or empty strings, are refused (as
  // DynamoDB refuses them), by put and by update alike.
  const std::vector<Item> mistyped{
      {{"id", "string_range"}, {"state", "S"}, {"n", "3"}},
      {{"id", "bool_range"}, {"state", "S"}, {"n", true}},
      {{"id", "int_hash"}, {"state", int64_t{7}}, {"n", int64_t{4}}},
      {{"id", "bool_hash"}, {"state", true}, {"n", int64_t{4}}},
      {{"id", "empty_hash"}, {"state", ""}, {"n", int64_t{4}}},
      {{"id", "int_name"}, {"state", "S"}, {"name", int64_t{9}}},
      {{"id", "empty_name"}, {"state", "S"}, {"name", ""}},
  };
  for (const auto& item : mistyped) {
    EXPECT_CODE(Code::kInvalidArgument, store().put(kItems, item, {}));
    EXPECT_CODE(Code::kNotFound,
                store().get(kItems, key(std::get<std::string>(item.at("id"))), true));
  }
  EXPECT_CODE(Code::kInvalidArgument,
              store().update(kItems, key("in"), Update().set("n", true), {}));
  EXPECT_CODE(Code::kInvalidArgument,
              store().update(kItems, key("new"), Update().set("state", int64_t{1}), {}));
  EXPECT_CODE(Code::kNotFound, store().get(kItems, key("new"), true));
  using V = std::vector<std::string>;
  EXPECT_EQ(index_ids(store(), kByState, "S", KeyRange::all()), (V{"in"}));
  EXPECT_EQ(index_ids(store(), kByState, "S", KeyRange::ge(std::numeric_limits<int64_t>::min())),
            (V{"in"}));
  EXPECT_EQ(index_ids(store(), kByState, "7", KeyRange::all()), (V{}));
  EXPECT_EQ(index_ids(store(), kByName, "S", KeyRange::all()), (V{"named"}));
  EXPECT_EQ(index_ids(store(), kByName, "S", KeyRange::begins_with("")), (V{"named"}));
}

TEST_P(StoreConformance, QueryIndexFollowsUpdates) {
  for (const char* id : {"a", "b", "c"}) {
    ASSERT_OK(
        store().put(kItems, {{"id", id}, {"state", "S"}, {"n", int64_t{id[0] - 'a' + 1}}}, {}));
  }
  using V = std::vector<std::string>;
  const auto s = [&] { return index_ids(store(), kByState, "S", KeyRange::all()); };
  EXPECT_EQ(s(), (V{"a", "b", "c"}));
  ASSERT_OK(store().update(kItems, key("a"), Update().set("n", int64_t{10}), {}));
  EXPECT_EQ(s(), (V{"b", "c", "a"}));
  ASSERT_OK(store().update(kItems, key("b"), Update().remove("n"), {}));
  EXPECT_EQ(s(), (V{"c", "a"}));
  ASSERT_OK(store().update(kItems, key("c"), Update().set("state", "T"), {}));
  EXPECT_EQ(s(), (V{"a"}));
  EXPECT_EQ(index_ids(store(), kByState, "T", KeyRange::all()), (V{"c"}));
  EXPECT_CODE(Code::kInvalidArgument,
              store().update(kItems, key("a"), Update().set("n", "ten"), {}));
  EXPECT_EQ(s(), (V{"a"}));  // the refused update changed nothing
  ASSERT_OK(store().update(kItems, key("b"), Update().add("n", -1), {}));
  ASSERT_OK(store().update(kItems, key("a"), Update().set("n", int64_t{-2}), {}));
  EXPECT_EQ(s(), (V{"a", "b"}));
  ASSERT_OK(store().put(kItems, {{"id", "b"}, {"state", "S"}}, {}));  // a put replaces the item
  EXPECT_EQ(s(), (V{"a"}));
  ASSERT_OK(store().remove(kItems, key("a"), {}));
  EXPECT_EQ(s(), (V{}));
  EXPECT_EQ(index_ids(store(), kByState, "T", KeyRange::all()), (V{"c"}));
}

TEST_P(StoreConformance, QueryIndexPaginatesOverEveryItemOnce) {
  std::vector<std::pair<int64_t, std::string>> expected;
  for (int i = 0; i < 37; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "p%02d", i);
    const int64_t n = (i * 5) % 7;  // many ties
    expected.emplace_back(n, id);
    ASSERT_OK(store().put(kItems, {{"id", id}, {"state", "S"}, {"n", n}, {"name", "same"}}, {}));
  }
  ASSERT_OK(store().put(kItems, {{"id", "other"}, {"state", "T"}, {"n", int64_t{3}}}, {}));
  std::sort(expected.begin(), expected.end());
  std::vector<std::string> expected_ids;
  for (const auto& [n, id] : expected) expected_ids.push_back(id);
  int pages = 0;
  const auto all = drain(
      [&](const QueryOptions& o) {
        return store().query_index(kItems, kByState, "S", KeyRange::all(), o);
      },
      4, &pages);
  EXPECT_EQ(sorted_ties(all, "n"), expected_ids);  // in range order, each item once
  EXPECT_GE(pages, 10);
  EXPECT_LE(pages, 11);
  const auto by_name = drain(
      [&](const QueryOptions& o) {
        return store().query_index(kItems, kByName, "S", KeyRange::eq("same"), o);
      },
      3);
  std::vector<std::string> sorted_ids = expected_ids;
  std::sort(sorted_ids.begin(), sorted_ids.end());
  EXPECT_EQ(sorted_ties(by_name, "name"), sorted_ids);  // all tied: each exactly once
  const auto ranged = drain(
      [&](const QueryOptions& o) {
        return store().query_index(kItems, kByState, "S", KeyRange::between(int64_t{2}, int64_t{3}),
                                   o);
      },
      2);
  std::vector<std::string> mid;
  for (const auto& [n, id] : expected) {
    if (n >= 2 && n <= 3) mid.push_back(id);
  }
  EXPECT_EQ(sorted_ties(ranged, "n"), mid);
}

// ---------------------------------------------------------------- update_each

TEST_P(StoreConformance, UpdateEachJudgesEveryRequestOnItsOwn) {
  ASSERT_OK(store().put(kItems, {{"id", "a"}, {"v", int64_t{1}}}, {}));
  ASSERT_OK(store().put(kItems, {{"id", "b"}, {"v", int64_t{1}}, {"s", "str"}}, {}));
  const std::vector<UpdateRequest> requests{
      {key("a"), Update().set("x", int64_t{1}), cond::eq("v", 1)},
      {key("b"), Update().set("x", int64_t{1}), cond::eq("v", 2)},
      {key("c"), Update().set("x", int64_t{1}), cond::not_exists("id")},
      {key("e"), Update().set("id", "zz"), {}},
      {key("b"), Update().set("y", int64_t{1}).add("s", 1), {}},
      {key(""), Update().set("x", int64_t{1}), {}},
      {key("d"), Update().set("x", int64_t{1}), cond::exists("id")},
      {key("f"), Update().add("n", 2), {}},
  };
  const auto results = store().update_each(kItems, requests);
  ASSERT_EQ(results.size(), requests.size());
  ASSERT_OK(results[0]);
  EXPECT_EQ(*results[0], (Item{{"id", "a"}, {"v", int64_t{1}}, {"x", int64_t{1}}}));
  EXPECT_CODE(Code::kConditionFailed, results[1]);
  ASSERT_OK(results[2]);
  EXPECT_EQ(*results[2], (Item{{"id", "c"}, {"x", int64_t{1}}}));
  EXPECT_CODE(Code::kInvalidArgument, results[3]);
  EXPECT_CODE(Code::kInvalidArgument, results[4]);
  EXPECT_CODE(Code::kInvalidArgument, results[5]);
  EXPECT_CODE(Code::kConditionFailed, results[6]);
  ASSERT_OK(results[7]);
  EXPECT_EQ(*results[7], (Item{{"id", "f"}, {"n", int64_t{2}}}));
  // The store agrees with the results.
  EXPECT_EQ(MUST(store().get(kItems, key("a"), true)), *results[0]);
  EXPECT_EQ(MUST(store().get(kItems, key("b"), true)),
            (Item{{"id", "b"}, {"v", int64_t{1}}, {"s", "str"}}));
  EXPECT_EQ(MUST(store().get(kItems, key("c"), true)), *results[2]);
  EXPECT_CODE(Code::kNotFound, store().get(kItems, key("d"), true));
  EXPECT_CODE(Code::kNotFound, store().get(kItems, key("e"), true));
  EXPECT_EQ(MUST(store().get(kItems, key("f"), true)), *results[7]);
  EXPECT_TRUE(store().update_each(kItems, std::span<const UpdateRequest>()).empty());
}

TEST_P(StoreConformance, UpdateEachOfManyRequests) {
  std::vector<UpdateRequest> requests;
  std::vector<Key> keys;
  for (int i = 0; i < 2500; ++i) {
    const std::string id = "h" + std::to_string(i);
    keys.push_back(key(id));
    if (i % 10 != 0) {
      ASSERT_OK(store().put(kItems, {{"id", id}, {"beats", int64_t{i}}}, {}));
    }
    requests.push_back({key(id), Update().add("beats", 1), cond::exists("id")});
  }
  const auto results = store().update_each(kItems, requests);
  ASSERT_EQ(results.size(), requests.size());
  for (int i = 0; i < 2500; ++i) {
    if (i % 10 == 0) {
      EXPECT_CODE(Code::kConditionFailed, results[i]) << i;
    } else {
      ASSERT_OK(results[i]);
      EXPECT_EQ(results[i]->at("beats"), Value(int64_t{i + 1})) << i;
    }
  }
  const auto items = MUST(store().batch_get(kItems, keys));
  ASSERT_EQ(items.size(), 2250u);
  for (const auto& item : items) {
    const int i = std::stoi(std::get<std::string>(item.at("id")).substr(1));
    EXPECT_EQ(item.at("beats"), Value(int64_t{i + 1}));
  }
}

// ---------------------------------------------------------------- bad input

TEST_P(StoreConformance, KeysAtAndOverTheirLimits) {
  const std::string pk_max(kPartitionKeyBytesMax, 'p'), sk_max(kSortKeyBytesMax, 's');
  ASSERT_OK(store().put(kItems, {{"id", pk_max}}, {}));
  EXPECT_OK(store().get(kItems, key(pk_max), true));
  ASSERT_OK(store().put(kSorted, {{"p", pk_max}, {"s", sk_max}}, {}));
  EXPECT_OK(store().get(kSorted, key(pk_max, sk_max), true));
  const std::string pk_over = pk_max + "p", sk_over = sk_max + "s";
  EXPECT_CODE(Code::kInvalidArgument, store().put(kItems, {{"id", pk_over}}, {}));
  EXPECT_CODE(Code::kInvalidArgument,
              store().update(kItems, key(pk_over), Update().set("x", 1), {}));
  EXPECT_CODE(Code::kInvalidArgument, store().get(kItems, key(pk_over), true));
  EXPECT_CODE(Code::kInvalidArgument, store().remove(kItems, key(pk_over), {}));
  EXPECT_CODE(Code::kInvalidArgument, store().put(kSorted, {{"p", "a"}, {"s", sk_over}}, {}));
  EXPECT_CODE(Code::kInvalidArgument, store().update(kSorted, key("a", sk_over), Update(), {}));
  // Empty keys, a sort key where there is none, none where there is one.
  EXPECT_CODE(Code::kInvalidArgument, store().put(kItems, {{"id", ""}}, {}));
  EXPECT_CODE(Code::kInvalidArgument, store().update(kItems, key(""), Update().set("x", 1), {}));
  EXPECT_CODE(Code::kInvalidArgument, store().get(kItems, key(""), true));
  EXPECT_CODE(Code::kInvalidArgument, store().remove(kItems, key(""), {}));
  EXPECT_CODE(Code::kInvalidArgument,
              store().update(kItems, key("a", "s"), Update().set("x", 1), {}));
  EXPECT_CODE(Code::kInvalidArgument, store().update(kSorted, key("a"), Update().set("x", 1), {}));
  EXPECT_CODE(Code::kInvalidArgument, store().put(kSorted, {{"p", "a"}, {"s", ""}}, {}));
  EXPECT_CODE(Code::kInvalidArgument, store().put(kSorted, {{"p", "a"}}, {}));
  EXPECT_CODE(Code::kInvalidArgument, store().put(kItems, {{"id", int64_t{1}}}, {}));
  EXPECT_CODE(Code::kInvalidArgument, store().put(kItems, {{"other", "a"}}, {}));
  // Nothing was written by any of them.
  EXPECT_EQ(MUST(store().query(kSorted, "a", KeyRange::all(), {})).items.size(), 0u);
  EXPECT_CODE(Code::kNotFound, store().get(kItems, key("a"), true));
}

TEST_P(StoreConformance, ItemsAtAndOverTheSizeLimit) {
  // item_bytes counts names and values: "id" + "big1" + "big" + the string.
  const size_t room = kItemBytesMax - 2 - 4 - 3;
  ASSERT_OK(store().put(kItems, {{"id", "big1"}, {"big", std::string(room, 'x')}}, {}));
  EXPECT_EQ(std::get<std::string>(MUST(store().get(kItems, key("big1"), true)).at("big")).size(),
            room);
  EXPECT_CODE(Code::kInvalidArgument,
              store().put(kItems, {{"id", "big2"}, {"big", std::string(room + 5, 'x')}}, {}));
  EXPECT_CODE(Code::kNotFound, store().get(kItems, key("big2"), true));
  // An update that would outgrow the limit changes nothing, on an existing
  // item and on a missing one.
  EXPECT_CODE(Code::kInvalidArgument,
              store().update(kItems, key("big1"), Update().set("more", "yy"), {}));
  EXPECT_EQ(MUST(store().get(kItems, key("big1"), true)),
            (Item{{"id", "big1"}, {"big", std::string(room, 'x')}}));
  EXPECT_CODE(Code::kInvalidArgument,
              store().update(kItems, key("big3"),
                             Update().set("big", std::string(kItemBytesMax, 'x')), {}));
  EXPECT_CODE(Code::kNotFound, store().get(kItems, key("big3"), true));
  // ... unless set_if_absent leaves the big value out.
  ASSERT_OK(store().put(kItems, {{"id", "small"}, {"big", "tiny"}}, {}));
  EXPECT_OK(store().update(kItems, key("small"),
                           Update().set_if_absent("big", std::string(kItemBytesMax, 'x')), {}));
  EXPECT_EQ(MUST(store().get(kItems, key("small"), true)),
            (Item{{"id", "small"}, {"big", "tiny"}}));
}

TEST_P(StoreConformance, BadAttributeNamesInItemsAreRefused) {
  for (const std::string& name : {std::string(), std::string("a\tb"), std::string("del\x7f"),
                                  std::string(kAttrNameBytesMax + 1, 'n')}) {
    EXPECT_CODE(Code::kInvalidArgument, store().put(kItems, {{"id", "a"}, {name, 1}}, {}));
    EXPECT_CODE(Code::kInvalidArgument,
                store().update(kItems, key("a"), Update().set(name, 1), {}));
  }
  ASSERT_OK(store().put(kItems, {{"id", "a"}, {std::string(kAttrNameBytesMax, 'n'), 1}}, {}));
  EXPECT_EQ(MUST(store().get(kItems, key("a"), true)).size(), 2u);
}

// The shapes of the lease layer's writes: an OR, an AND of an OR, a NOT,
// each together with add() in the same update (an acquisition).
TEST_P(StoreConformance, CompoundConditionsWithAddsInOneUpdate) {
  using namespace cond;
  const Key k = key("lease");
  const Update acquire = Update().set("owner", "a").set("expires", int64_t{100}).add("epoch", 1);
  ASSERT_OK(store().update(kItems, k, acquire, not_exists("owner") || lt("expires", int64_t{50})));
  EXPECT_CODE(
      Code::kConditionFailed,
      store().update(kItems, k, acquire, not_exists("owner") || lt("expires", int64_t{50})));
  ASSERT_OK(
      store().update(kItems, k, acquire,
                     (not_exists("owner") || lt("expires", int64_t{150})) && eq("owner", "a")));
  ASSERT_OK(store().update(kItems, k, acquire, !(eq("owner", "b") || not_exists("epoch"))));
  ASSERT_OK(store().update(kItems, k, Update().add("epoch", 1), eq("owner", "a")));
  EXPECT_EQ(*get_int(MUST(store().get(kItems, k, true)), "epoch"), 4);
}

// Strings must come back exactly, and SQLite's JSON and DynamoDB only carry
// UTF-8: every backend refuses anything else, and changes nothing.
TEST_P(StoreConformance, InvalidUtf8IsRefusedEverywhere) {
  ASSERT_OK(store().put(kItems, {{"id", "a"}, {"v", "ok"}}, {}));
  const Item before = MUST(store().get(kItems, key("a"), true));
  for (const std::string& bad : {std::string("\xff\xfe"), std::string("\xc0\xaf"),
                                 std::string("\xed\xa0\x80"), std::string("abc\xe2\x82")}) {
    EXPECT_CODE(Code::kInvalidArgument, store().put(kItems, {{"id", "a"}, {"v", bad}}, {}));
    EXPECT_CODE(Code::kInvalidArgument, store().put(kItems, {{"id", bad}}, {}));
    EXPECT_CODE(Code::kInvalidArgument,
                store().update(kItems, key("a"), Update().set("v", bad), {}));
    EXPECT_CODE(Code::kInvalidArgument, store().update(kItems, key("a"), Update().set(bad, 1), {}));
    EXPECT_CODE(Code::kInvalidArgument,
                store().update(kItems, key("a"), Update().set("w", 1), cond::eq("v", bad)));
  }
  EXPECT_EQ(MUST(store().get(kItems, key("a"), true)), before);
  // Four-byte characters, and the largest code point, are fine.
  ASSERT_OK(store().put(kItems, {{"id", "a"}, {"v", "\xf0\x9f\x94\x92 \xf4\x8f\xbf\xbf"}}, {}));
  EXPECT_EQ(MUST(store().get(kItems, key("a"), true)).at("v"),
            Value(std::string("\xf0\x9f\x94\x92 \xf4\x8f\xbf\xbf")));
}

// ---------------------------------------------------------------- threads

// Read-modify-write loops from several threads, each write conditional on
// the version it read: no increment may be lost or applied twice.
TEST_P(StoreConformance, ConcurrentConditionalIncrementsLoseNothing) {
  ASSERT_OK(
      store().put(kItems, {{"id", "counter"}, {"version", int64_t{0}}, {"count", int64_t{0}}}, {}));
  constexpr int kThreads = 4, kIncrements = 40;
  std::atomic<int> conflicts{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int done = 0; done < kIncrements;) {
        Result<Item> read = store().get(kItems, key("counter"), true);
        if (!read.ok()) {
          ++errors;
          return;
        }
        const int64_t v = *get_int(*read, "version");
        Result<Item> wrote =
            store().update(kItems, key("counter"), Update().add("count", 1).set("version", v + 1),
                           cond::eq("version", v));
        if (wrote.ok())
          ++done;
        else if (wrote.status().code() == Code::kConditionFailed)
          ++conflicts;
        else {
          ++errors;
          return;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  const Item counter = MUST(store().get(kItems, key("counter"), true));
  EXPECT_EQ(counter.at("count"), Value(int64_t{kThreads * kIncrements}));
  EXPECT_EQ(counter.at("version"), Value(int64_t{kThreads * kIncrements}));
}

// ---------------------------------------------------------------- change stamps

// A backend that has stamps keeps its stamp through reads and moves it with
// every write; one that has none says so every time.
TEST_P(StoreConformance, ChangeStampStaysWithReadsAndMovesWithEveryWrite) {
  std::optional<ChangeStamp> stamp = store().change_stamp();
  if (!stamp) {
    ASSERT_OK(store().put(kItems, {{"id", "a"}}, {}));
    EXPECT_FALSE(store().change_stamp().has_value()) << "a store has stamps or has none";
    GTEST_SKIP() << GetParam().name << " has no change stamps: its callers always read";
  }
  const auto moved = [&](const char* what) {
    const std::optional<ChangeStamp> now = store().change_stamp();
    EXPECT_TRUE(now.has_value()) << what;
    EXPECT_NE(now, stamp) << what << " did not move the stamp";
    stamp = now;
  };
  ASSERT_OK(store().put(kItems, {{"id", "a"}, {"state", "s"}, {"n", int64_t{1}}}, {}));
  moved("put");
  ASSERT_OK(store().update(kItems, key("a"), Update().add("n", 1), {}));
  moved("update");
  const UpdateRequest requests[] = {{key("b"), Update().set("x", "y"), {}}};
  ASSERT_OK(store().update_each(kItems, requests)[0]);
  moved("update_each");
  ASSERT_OK(store().remove(kItems, key("b"), {}));
  moved("remove");

  ASSERT_OK(store().get(kItems, key("a"), true));
  const Key keys[] = {key("a"), key("missing")};
  ASSERT_OK(store().batch_get(kItems, keys));
  ASSERT_OK(store().query(kSorted, "p", KeyRange::all(), {}));
  ASSERT_OK(store().query_index(kItems, kByState, "s", KeyRange::all(), {}));
  EXPECT_EQ(store().change_stamp(), stamp) << "a read moved the stamp";
}

// What a cache of reads relies on: while the stamp stays the same, a read
// finds what the read before it found, however fast another thread writes.
// The writer writes for as long as the reader reads, so that they overlap.
TEST_P(StoreConformance, AnUnmovedChangeStampMeansAnUnchangedStore) {
  if (!store().change_stamp()) GTEST_SKIP() << GetParam().name << " has no change stamps";
  ASSERT_OK(store().put(kItems, {{"id", "counter"}, {"n", int64_t{0}}}, {}));
  std::atomic<bool> reading{true};
  std::atomic<int64_t> written{0};
  std::thread writer([&] {
    while (reading && store().update(kItems, key("counter"), Update().add("n", 1), {}).ok()) {
      ++written;
    }
  });
  // At least 2,000 rounds, and more until one has overlapped a write (a
  // writer that starts late, or is descheduled, would leave none).
  int moved = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (int i = 0; i < 2000 || (moved == 0 && std::chrono::steady_clock::now() < deadline); ++i) {
    const std::optional<ChangeStamp> before = store().change_stamp();
    const Item first = MUST(store().get(kItems, key("counter"), true));
    const Item second = MUST(store().get(kItems, key("counter"), true));
    if (!before || store().change_stamp() != before) {
      ++moved;
      continue;
    }
    EXPECT_EQ(first.at("n"), second.at("n")) << "a write went by an unmoved stamp";
    if (first.at("n") != second.at("n")) break;
  }
  reading = false;
  writer.join();
  const Item last = MUST(store().get(kItems, key("counter"), true));
  EXPECT_EQ(last.at("n"), Value(written.load())) << "a write failed";
  EXPECT_GT(moved, 0) << "the reads never overlapped a write: the test proved nothing";
}

}  // namespace leasehold::conformance
