// The conformance cases (see store_conformance.h). Each case states DynamoDB's
// meaning of one operation so that a backend that differs fails here, not in
// a lease test three layers up.
#include "tests/conformance/store_conformance.h"

#include <limits>

#include "tests/conformance/store_conformance_cases.h"

namespace leasehold::conformance {

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

}  // namespace leasehold::conformance
