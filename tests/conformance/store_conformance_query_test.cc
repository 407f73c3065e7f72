// The conformance cases of query and query_index: key ranges, index order,
// sparse indexes and pagination (store_conformance.h).
#include <algorithm>
#include <climits>
#include <cstdio>
#include <limits>

#include "tests/conformance/store_conformance.h"
#include "tests/conformance/store_conformance_cases.h"

namespace leasehold::conformance {

// ---------------------------------------------------------------- query

namespace {

const std::vector<std::string> kSortKeys{"Z", "a", "ab", "abc", "b", "ba", "c", "f", "é1", "é2"};

std::vector<std::string> sks_of(ItemStore& store, const KeyRange& range, bool descending = false) {
  QueryOptions options;
  options.descending = descending;
  Result<Page> page = store.query(StoreConformance::kSorted, "P", range, options);
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

// Pages up (in partition "P") and down (in "R"), with writes between pages:
// beyond the cursor, where the pages have been (not seen), ahead of it
// (seen), and the removal of the item the cursor names.
TEST_P(StoreConformance, QueryCursorIsAPositionNotAnOffset) {
  using V = std::vector<std::string>;
  struct Case {
    bool descending;
    std::string pk;
    V first;
    std::string behind, ahead, removed;
    V rest;
  };
  for (const Case& c : {Case{false, "P", {"b", "d"}, "a", "e", "d", {"e", "f", "h"}},
                        Case{true, "R", {"h", "f"}, "g", "c", "f", {"d", "c", "b"}}}) {
    SCOPED_TRACE(c.descending ? "descending" : "ascending");
    for (const char* s : {"b", "d", "f", "h"})
      ASSERT_OK(store().put(kSorted, {{"p", c.pk}, {"s", s}}, {}));
    QueryOptions options;
    options.limit = 2;
    options.descending = c.descending;
    const Page first = MUST(store().query(kSorted, c.pk, KeyRange::all(), options));
    ASSERT_EQ(strings(first.items, "s"), c.first);
    ASSERT_FALSE(first.next_cursor.empty());
    ASSERT_OK(store().put(kSorted, {{"p", c.pk}, {"s", c.behind}}, {}));
    ASSERT_OK(store().put(kSorted, {{"p", c.pk}, {"s", c.ahead}}, {}));
    ASSERT_OK(store().remove(kSorted, key(c.pk, c.removed), {}));
    const auto rest = drain(
        [&](QueryOptions o) {
          if (o.cursor.empty()) o.cursor = first.next_cursor;
          o.descending = c.descending;
          return store().query(kSorted, c.pk, KeyRange::all(), o);
        },
        2);
    EXPECT_EQ(strings(rest, "s"), c.rest);
  }
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
                                   const KeyRange& range, bool descending = false) {
  QueryOptions options;
  options.descending = descending;
  Result<Page> page = store.query_index(StoreConformance::kItems, index, hash, range, options);
  if (!page.ok()) return {"<" + page.status().to_string() + ">"};
  EXPECT_TRUE(page->next_cursor.empty());
  return strings(page->items, "id");
}

std::vector<Item> index_rows(ItemStore& store, std::string_view index, std::string_view hash,
                             const KeyRange& range, bool descending = false) {
  QueryOptions options;
  options.descending = descending;
  Result<Page> page = store.query_index(StoreConformance::kItems, index, hash, range, options);
  EXPECT_TRUE(page.ok()) << page.status().to_string();
  if (!page.ok()) return {};
  EXPECT_TRUE(page->next_cursor.empty());
  return page->items;
}

// The ids of `items`, after checking that they come in non-decreasing order
// of `range_attr` (non-increasing if `descending`). Items with equal range
// values may come in any order (the backend's choice, as on DynamoDB), so
// ties are sorted by id to compare.
std::vector<std::string> sorted_ties(const std::vector<Item>& items, const std::string& range_attr,
                                     bool descending = false) {
  std::vector<std::pair<Value, std::string>> rows;
  for (const Item& item : items) {
    const auto r = item.find(range_attr);
    rows.emplace_back(r == item.end() ? Value() : r->second, strings({item}, "id").front());
  }
  const auto out_of_order = [&](const Value& earlier, const Value& later) {
    return descending ? earlier < later : later < earlier;
  };
  for (size_t i = 1; i < rows.size(); ++i) {
    EXPECT_FALSE(out_of_order(rows[i - 1].first, rows[i].first))
        << rows[i].second << " is out of range order";
  }
  std::stable_sort(rows.begin(), rows.end(), [&](const auto& a, const auto& b) {
    if (a.first != b.first) return out_of_order(b.first, a.first);
    return a.second < b.second;
  });
  std::vector<std::string> ids;
  for (const auto& row : rows) ids.push_back(row.second);
  return ids;
}

// Puts 37 items of hash "S" whose range values, 0 to 6, are mostly ties, all
// named "same", and one of hash "T": the (n, id) of those of "S".
std::vector<std::pair<int64_t, std::string>> put_ties(ItemStore& store) {
  std::vector<std::pair<int64_t, std::string>> out;
  for (int i = 0; i < 37; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "p%02d", i);
    const int64_t n = (i * 5) % 7;
    out.emplace_back(n, id);
    EXPECT_OK(store.put(StoreConformance::kItems,
                        {{"id", id}, {"state", "S"}, {"n", n}, {"name", "same"}}, {}));
  }
  EXPECT_OK(store.put(StoreConformance::kItems,
                      {{"id", "other"}, {"state", "T"}, {"n", int64_t{3}}}, {}));
  return out;
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

// An index returns the table's key, its own key and what it projects: all
// of the item, some attributes (INCLUDE), or none (KEYS_ONLY). Asking again
// with another projection keeps the index as it was made.
TEST_P(StoreConformance, QueryIndexReturnsWhatTheIndexProjects) {
  IndexSpec keys_only{"by_state_keys", "state", "n", AttrType::kInt};
  keys_only.projects_all = false;
  IndexSpec some{"by_state_some", "state", "n", AttrType::kInt};
  some.projects_all = false;
  some.projected = {"owner", "gone"};
  const IndexSpec all{"by_state_all", "state", "n", AttrType::kInt};
  const TableSpec spec{"conf_projected", "id", "", {keys_only, some, all}};
  ASSERT_OK(store().ensure_table(spec));
  ASSERT_OK(store().put(
      "conf_projected",
      {{"id", "a"}, {"state", "S"}, {"n", int64_t{1}}, {"owner", "w1"}, {"last_seq", int64_t{7}}},
      {}));
  const Item keys{{"id", "a"}, {"state", "S"}, {"n", int64_t{1}}};
  const auto only = [&](const char* index) {
    const Page page = MUST(store().query_index("conf_projected", index, "S", KeyRange::all(), {}));
    EXPECT_EQ(page.items.size(), 1u) << index;
    return page.items.empty() ? Item{} : page.items.front();
  };
  EXPECT_EQ(only("by_state_keys"), keys);
  Item with_owner = keys;
  with_owner["owner"] = "w1";
  EXPECT_EQ(only("by_state_some"), with_owner);
  Item whole = with_owner;
  whole["last_seq"] = int64_t{7};
  EXPECT_EQ(only("by_state_all"), whole);

  TableSpec asked_again = spec;
  asked_again.indexes[0].projects_all = true;
  ASSERT_OK(store().ensure_table(asked_again));
  EXPECT_EQ(only("by_state_keys"), keys) << "an index keeps the projection it was made with";

  IndexSpec bad = some;
  bad.projected = {"n"};
  EXPECT_CODE(Code::kInvalidArgument,
              store().ensure_table(TableSpec{"conf_projected2", "id", "", {bad}}));
  bad.projected = {"owner", "owner"};
  EXPECT_CODE(Code::kInvalidArgument,
              store().ensure_table(TableSpec{"conf_projected2", "id", "", {bad}}));
  bad.projects_all = true;
  bad.projected = {"owner"};
  EXPECT_CODE(Code::kInvalidArgument,
              store().ensure_table(TableSpec{"conf_projected2", "id", "", {bad}}));
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
  std::vector<std::pair<int64_t, std::string>> expected = put_ties(store());
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

// ---------------------------------------------------------------- descending

namespace {

std::vector<std::string> reversed(std::vector<std::string> v) {
  std::reverse(v.begin(), v.end());
  return v;
}

}  // namespace

TEST_P(StoreConformance, QueryDescendingEachKeyRangeKind) {
  for (const std::string& s : kSortKeys)
    ASSERT_OK(store().put(kSorted, {{"p", "P"}, {"s", s}}, {}));
  ASSERT_OK(store().put(kSorted, {{"p", "Q"}, {"s", "a"}}, {}));
  ASSERT_OK(store().put(kSorted, {{"p", "PP"}, {"s", "a"}}, {}));
  ASSERT_OK(store().put(kSorted, {{"p", "O"}, {"s", "zz"}}, {}));
  using V = std::vector<std::string>;
  const auto down = [&](const KeyRange& r) { return sks_of(store(), r, /*descending=*/true); };
  EXPECT_EQ(down(KeyRange::all()), reversed(kSortKeys));  // by UTF-8 bytes, highest first
  EXPECT_EQ(down(KeyRange::eq("ab")), (V{"ab"}));
  EXPECT_EQ(down(KeyRange::eq("zz")), (V{}));
  EXPECT_EQ(down(KeyRange::lt("b")), (V{"abc", "ab", "a", "Z"}));
  EXPECT_EQ(down(KeyRange::le("b")), (V{"b", "abc", "ab", "a", "Z"}));
  EXPECT_EQ(down(KeyRange::gt("c")), (V{"é2", "é1", "f"}));
  EXPECT_EQ(down(KeyRange::ge("c")), (V{"é2", "é1", "f", "c"}));
  EXPECT_EQ(down(KeyRange::between("ab", "b")), (V{"b", "abc", "ab"}));
  EXPECT_EQ(down(KeyRange::begins_with("a")), (V{"abc", "ab", "a"}));
  EXPECT_EQ(down(KeyRange::begins_with("é")), (V{"é2", "é1"}));
  EXPECT_EQ(down(KeyRange::begins_with("")), reversed(kSortKeys));
  QueryOptions options;
  options.descending = true;
  const Page empty = MUST(store().query(kSorted, "nobody", KeyRange::all(), options));
  EXPECT_TRUE(empty.items.empty());
  EXPECT_TRUE(empty.next_cursor.empty());
}

TEST_P(StoreConformance, QueryDescendingPaginatesDownwardsOverEveryItemOnce) {
  std::vector<std::string> expected;
  for (int i = 0; i < 23; ++i) {
    char s[16];
    std::snprintf(s, sizeof s, "s%02d", i);
    expected.push_back(s);
    ASSERT_OK(store().put(kSorted, {{"p", "P"}, {"s", s}}, {}));
  }
  ASSERT_OK(store().put(kSorted, {{"p", "Q"}, {"s", "s05"}}, {}));
  ASSERT_OK(store().put(kSorted, {{"p", "O"}, {"s", "s30"}}, {}));
  const auto descending = [&](const KeyRange& range) {
    return [&store = store(), range](QueryOptions o) {
      o.descending = true;
      return store.query(kSorted, "P", range, o);
    };
  };
  int pages = 0;
  EXPECT_EQ(strings(drain(descending(KeyRange::all()), 5, &pages), "s"), reversed(expected));
  EXPECT_GE(pages, 5);
  EXPECT_LE(pages, 6);  // a backend may end with one empty page
  EXPECT_EQ(strings(drain(descending(KeyRange::between("s03", "s09")), 2), "s"),
            reversed(std::vector<std::string>(expected.begin() + 3, expected.begin() + 10)));
  EXPECT_EQ(strings(drain(descending(KeyRange::begins_with("s1")), 1), "s"),
            reversed(std::vector<std::string>(expected.begin() + 10, expected.begin() + 20)));
  EXPECT_EQ(strings(drain(descending(KeyRange::lt("s04")), 3), "s"),
            (std::vector<std::string>{"s03", "s02", "s01", "s00"}));
}

TEST_P(StoreConformance, QueryIndexDescendingOrdersByRangeValueHighestFirst) {
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  const std::vector<std::pair<std::string, int64_t>> rows{
      {"a", 5}, {"b", -3}, {"c", 100}, {"d", 5}, {"e", kMin}, {"f", kMax}, {"g", 0}, {"aa", 5}};
  for (const auto& [id, n] : rows)
    ASSERT_OK(store().put(kItems, {{"id", id}, {"state", "S"}, {"n", n}, {"name", "x" + id}}, {}));
  ASSERT_OK(store().put(kItems, {{"id", "t"}, {"state", "T"}, {"n", int64_t{1}}}, {}));
  using V = std::vector<std::string>;
  // Ties (a, aa, d all have n = 5) may come in any order: compare them sorted.
  EXPECT_EQ(sorted_ties(index_rows(store(), kByState, "S", KeyRange::all(), true), "n", true),
            (V{"f", "c", "a", "aa", "d", "g", "b", "e"}));
  const auto down = [&](const KeyRange& r) {
    return sorted_ties(index_rows(store(), kByState, "S", r, true), "n", true);
  };
  EXPECT_EQ(down(KeyRange::eq(int64_t{5})), (V{"a", "aa", "d"}));
  EXPECT_EQ(down(KeyRange::lt(int64_t{5})), (V{"g", "b", "e"}));
  EXPECT_EQ(down(KeyRange::le(int64_t{5})), (V{"a", "aa", "d", "g", "b", "e"}));
  EXPECT_EQ(down(KeyRange::gt(int64_t{5})), (V{"f", "c"}));
  EXPECT_EQ(down(KeyRange::ge(int64_t{0})), (V{"f", "c", "a", "aa", "d", "g"}));
  EXPECT_EQ(down(KeyRange::between(int64_t{-3}, int64_t{5})), (V{"a", "aa", "d", "g", "b"}));
  EXPECT_EQ(index_ids(store(), kByName, "S", KeyRange::begins_with("xa"), true), (V{"aa", "a"}));
  EXPECT_EQ(index_ids(store(), kByName, "S", KeyRange::gt("xc"), true), (V{"g", "f", "e", "d"}));
  EXPECT_EQ(index_ids(store(), kByState, "T", KeyRange::all(), true), (V{"t"}));
  EXPECT_EQ(index_ids(store(), kByState, "nobody", KeyRange::all(), true), (V{}));
}

// Many items share a range value: whatever the page size, each comes once,
// the pages going down through the ties.
TEST_P(StoreConformance, QueryIndexDescendingPaginatesOverEveryItemOnceThroughTies) {
  std::vector<std::pair<int64_t, std::string>> expected = put_ties(store());
  // Highest range value first; ties by id, as sorted_ties() puts them.
  std::sort(expected.begin(), expected.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<std::string> expected_ids;
  for (const auto& [n, id] : expected) expected_ids.push_back(id);
  const auto descending = [&](std::string_view index, const KeyRange& range) {
    return [&store = store(), index, range](QueryOptions o) {
      o.descending = true;
      return store.query_index(kItems, index, "S", range, o);
    };
  };
  for (int limit : {1, 4, 36, 37, 100}) {
    SCOPED_TRACE(limit);
    EXPECT_EQ(sorted_ties(drain(descending(kByState, KeyRange::all()), limit), "n", true),
              expected_ids);
  }
  std::vector<std::string> sorted_ids = expected_ids;
  std::sort(sorted_ids.begin(), sorted_ids.end());
  EXPECT_EQ(sorted_ties(drain(descending(kByName, KeyRange::eq("same")), 3), "name", true),
            sorted_ids);  // all tied: each exactly once
  std::vector<std::string> mid;
  for (const auto& [n, id] : expected) {
    if (n >= 2 && n <= 3) mid.push_back(id);
  }
  EXPECT_EQ(sorted_ties(drain(descending(kByState, KeyRange::between(int64_t{2}, int64_t{3})), 2),
                        "n", true),
            mid);
  std::vector<std::string> up_to_one;
  for (const auto& [n, id] : expected) {
    if (n <= 1) up_to_one.push_back(id);
  }
  EXPECT_EQ(sorted_ties(drain(descending(kByState, KeyRange::le(int64_t{1})), 2), "n", true),
            up_to_one);
}

TEST_P(StoreConformance, QueryIndexDescendingCursorIsAPositionNotAnOffset) {
  for (int i = 1; i <= 4; ++i) {
    ASSERT_OK(store().put(
        kItems, {{"id", "r" + std::to_string(2 * i)}, {"state", "S"}, {"n", int64_t{2 * i}}}, {}));
  }
  QueryOptions options;
  options.limit = 2;
  options.descending = true;
  const Page first = MUST(store().query_index(kItems, kByState, "S", KeyRange::all(), options));
  ASSERT_EQ(strings(first.items, "id"), (std::vector<std::string>{"r8", "r6"}));
  ASSERT_FALSE(first.next_cursor.empty());
  // Above the cursor (not seen), below it (seen), and the cursor's item
  // gone.
  ASSERT_OK(store().put(kItems, {{"id", "r7"}, {"state", "S"}, {"n", int64_t{7}}}, {}));
  ASSERT_OK(store().put(kItems, {{"id", "r3"}, {"state", "S"}, {"n", int64_t{3}}}, {}));
  ASSERT_OK(store().remove(kItems, key("r6"), {}));
  const auto rest = drain(
      [&](QueryOptions o) {
        if (o.cursor.empty()) o.cursor = first.next_cursor;
        o.descending = true;
        return store().query_index(kItems, kByState, "S", KeyRange::all(), o);
      },
      2);
  EXPECT_EQ(strings(rest, "id"), (std::vector<std::string>{"r4", "r3", "r2"}));
}

}  // namespace leasehold::conformance
