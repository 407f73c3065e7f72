// The conformance cases at the edges: keys, items and names at and over their
// limits, invalid UTF-8, writers on several threads, and change stamps
// (store_conformance.h).
#include "tests/conformance/store_conformance.h"

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "tests/conformance/store_conformance_cases.h"

namespace leasehold::conformance {

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
