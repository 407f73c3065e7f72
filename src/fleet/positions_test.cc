// Tests for a session's positions: their text, their parts, and the rule
// that a later write wins.
#include "fleet/positions.h"

#include <gtest/gtest.h>

#include "fleet/members.h"
#include "store/memory/memory_store.h"

namespace leasehold::fleet {
namespace {

constexpr int64_t kNowMs = 1'765'000'000'000;

class PositionsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(store_->ensure_table(workers_table_spec()).ok()); }

  // Writes every position of `all`, each in its part, as the worker does.
  void write(std::string_view session, size_t parts, int64_t gen,
             const std::vector<Position>& all) {
    std::vector<std::vector<Position>> by_part(parts);
    for (const Position& p : all) by_part[position_part(p.id, parts)].push_back(p);
    std::vector<UpdateRequest> requests;
    for (size_t part = 0; part < parts; ++part) {
      requests.push_back(positions_write(session, part, parts, gen, kNowMs, by_part[part]));
    }
    for (const Result<Item>& r : store_->update_each(kWorkersTable, requests)) {
      ASSERT_TRUE(r.ok() || r.status().code() == Code::kConditionFailed) << r.status().to_string();
    }
  }

  std::unique_ptr<ItemStore> store_ = store::make_memory_store();
};

TEST(PositionsText, RoundTripsEveryFieldAndTheTimeOfTheLastMessage) {
  const std::vector<Position> in{{"c1", 3, 1200, 1100, 2, kNowMs - 850}, {"c.2~x", 1, 0, 0, 0, 0}};
  const std::string text = format_positions(in, kNowMs);
  EXPECT_EQ(text, "c.2~x 1 0 0 0 -1\nc1 3 1200 1100 2 850\n");  // by ID
  Positions out;
  parse_positions(text, kNowMs, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out.at("c1"), in[0]);
  EXPECT_EQ(out.at("c.2~x"), in[1]);
}

TEST(PositionsText, LinesThatDoNotParseAreSkippedAndTheRestKept) {
  Positions out;
  parse_positions(
      "c1 1 5 5 0 0\n\nbroken\nc2 1 x 1 0 0\nc3 1 2 2 0 0 9\n c4 1 1 1 0 0\nc5 2 7 7 0 0", kNowMs,
      out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out.at("c1").seq, 5);
  EXPECT_EQ(out.at("c5").seq, 7);  // the last line needs no newline
}

TEST(PositionsParts, AConnectionAlwaysFallsInTheSamePart) {
  EXPECT_EQ(positions_parts(1), 1u);
  EXPECT_EQ(positions_parts(kPositionsPerPart), 1u);
  EXPECT_EQ(positions_parts(kPositionsPerPart + 1), 2u);
  EXPECT_EQ(positions_parts(100'000), 100u);
  // FNV-1a 64 of "c1" is 0x08a27f07b54a6859: the same on every machine.
  EXPECT_EQ(position_part("c1", 7), 0x08a27f07b54a6859ULL % 7);
  std::vector<size_t> seen(10, 0);
  for (int i = 0; i < 1000; ++i) ++seen[position_part("c" + std::to_string(i), 10)];
  for (const size_t n : seen) EXPECT_GT(n, 60u);  // spread over every part
}

TEST_F(PositionsTest, ReadsEveryPartAndOnlyTheLeaseItNames) {
  std::vector<Position> all;
  for (int i = 0; i < 50; ++i) all.push_back({"c" + std::to_string(i), 4, 100 + i, i, 0, 0});
  write("s1", 3, 1, all);
  Result<Positions> read = read_positions(*store_, "s1", /*consistent=*/true);
  ASSERT_TRUE(read.ok()) << read.status().to_string();
  ASSERT_EQ(read->size(), 50u);
  ASSERT_NE(find_position(*read, "c7", 4), nullptr);
  EXPECT_EQ(find_position(*read, "c7", 4)->seq, 107);
  EXPECT_EQ(find_position(*read, "c7", 3), nullptr);  // another holding of it
  EXPECT_EQ(find_position(*read, "c99", 4), nullptr);
  // Another session's are its own; one that wrote none has none.
  Result<Positions> none = read_positions(*store_, "s2", /*consistent=*/true);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(PositionsTest, ALateWriteNeverMovesAPositionBack) {
  write("s1", 1, 2, {{"c1", 1, 200, 200, 0, 0}});
  write("s1", 1, 1, {{"c1", 1, 150, 150, 0, 0}});  // sent before, landed after
  Result<Positions> read = read_positions(*store_, "s1", /*consistent=*/true);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(find_position(*read, "c1", 1)->seq, 200);
  write("s1", 1, 3, {{"c1", 1, 250, 250, 0, 0}});
  read = read_positions(*store_, "s1", /*consistent=*/true);
  EXPECT_EQ(find_position(*read, "c1", 1)->seq, 250);
}

TEST_F(PositionsTest, RemovingTakesEveryPart) {
  std::vector<Position> all;
  for (int i = 0; i < 20; ++i) all.push_back({"c" + std::to_string(i), 1, i + 1, 0, 0, 0});
  write("s1", 4, 1, all);
  ASSERT_TRUE(remove_positions(*store_, "s1").ok());
  for (size_t part = 0; part < 4; ++part) {
    EXPECT_EQ(store_->get(kWorkersTable, positions_key("s1", part), true).status().code(),
              Code::kNotFound)
        << part;
  }
  EXPECT_TRUE(remove_positions(*store_, "s1").ok());  // none left: nothing to do
}

// What a worker of 250 connections writes each checkpoint period, as a
// fleet's connections look: IDs that share a prefix, sequence numbers and
// counts of a few digits.
std::vector<Position> a_workers_positions() {
  std::vector<Position> all;
  for (int i = 0; i < 250; ++i) {
    const int64_t seq = 10'000 + (i * 7919) % 5000;
    all.push_back({"stream-" + std::to_string(100'000 + i * 4), 1 + i % 3, seq,
                   seq - (i * 31) % 900, i % 4, kNowMs - (i * 37) % 1000});
  }
  return all;
}

TEST_F(PositionsTest, AWriteIsBilledForWellUnderItsTextAndReadsBackWhole) {
  const std::vector<Position> all = a_workers_positions();
  write("s1", 1, 1, all);
  Result<Item> item = store_->get(kWorkersTable, positions_key("s1", 0), true);
  ASSERT_TRUE(item.ok());
  EXPECT_EQ(get_string(*item, "positions"), nullptr);
  const std::string* packed = get_string(*item, "positions_z");
  ASSERT_NE(packed, nullptr);
  const size_t text = format_positions(all, kNowMs).size();
  EXPECT_LT(packed->size(), text * 6 / 10) << "packed " << packed->size() << " of " << text;
  Result<Positions> read = read_positions(*store_, "s1", /*consistent=*/true);
  ASSERT_TRUE(read.ok());
  ASSERT_EQ(read->size(), all.size());
  for (const Position& p : all) EXPECT_EQ(read->at(p.id), p) << p.id;
}

TEST_F(PositionsTest, TheTextAnOlderBuildWroteIsReadToo) {
  Item item{{"Pk", positions_key("s1", 0).pk},
            {"parts", int64_t{1}},
            {"gen", int64_t{4}},
            {"written_at_ms", kNowMs},
            {"positions", std::string("c1 2 300 290 1 100\n")}};
  ASSERT_TRUE(store_->put(kWorkersTable, item, Condition()).ok());
  Result<Positions> read = read_positions(*store_, "s1", /*consistent=*/true);
  ASSERT_TRUE(read.ok());
  ASSERT_NE(find_position(*read, "c1", 2), nullptr);
  EXPECT_EQ(find_position(*read, "c1", 2)->seq, 300);
  EXPECT_EQ(find_position(*read, "c1", 2)->last_message_at_ms, kNowMs - 100);
}

TEST_F(PositionsTest, APartThatCannotBeUnpackedIsSkippedAndTheOthersRead) {
  std::vector<Position> all;
  for (int i = 0; i < 40; ++i) all.push_back({"c" + std::to_string(i), 1, i + 1, 0, 0, 0});
  write("s1", 3, 1, all);
  // Part 1 spoilt three ways: not base64, base64 of what zlib cannot
  // inflate, and a deflated text far larger than any part's.
  std::vector<Position> huge;
  for (int i = 0; i < 40'000; ++i) huge.push_back({"c" + std::to_string(i), 1, 1, 1, 0, 0});
  write("s9", 1, 1, huge);
  Result<Item> huge_item = store_->get(kWorkersTable, positions_key("s9", 0), true);
  ASSERT_TRUE(huge_item.ok());
  ASSERT_NE(get_string(*huge_item, "positions_z"), nullptr);
  const std::string bomb = *get_string(*huge_item, "positions_z");
  for (const std::string& spoilt :
       {std::string("not base64!"), std::string("bm90IHpsaWI="), bomb}) {
    Update u;
    u.set("positions_z", spoilt);
    ASSERT_TRUE(store_->update(kWorkersTable, positions_key("s1", 1), u, Condition()).ok());
    Result<Positions> read = read_positions(*store_, "s1", /*consistent=*/true);
    ASSERT_TRUE(read.ok());
    size_t expected = 0;
    for (const Position& p : all) {
      if (position_part(p.id, 3) == 1) {
        EXPECT_EQ(read->count(p.id), 0u) << p.id;
      } else {
        ++expected;
        EXPECT_EQ(read->count(p.id), 1u) << p.id;
      }
    }
    EXPECT_EQ(read->size(), expected);
  }
}

}  // namespace
}  // namespace leasehold::fleet
