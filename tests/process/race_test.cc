// Mutual exclusion across real processes: many `lease acquire` at once on
// one store (an SQLite file, or DynamoDB); exactly one wins each round, and
// epochs only go up.
#include <cstdlib>
#include <memory>

#include "process_util.h"

namespace leasehold::process_test {
namespace {

constexpr int kRounds = 30;
constexpr int kRacers = 8;

class RaceTest : public BackendTest {
 protected:
  void race();
};

TEST_P(RaceTest, ExactlyOneProcessWinsEachRoundAndEpochsRise) { race(); }

INSTANTIATE_TEST_SUITE_P(Backends, RaceTest,
                         ::testing::Values(Backend::kSqlite, Backend::kDynamoDb), backend_name);

void RaceTest::race() {
  int64_t previous_epoch = 0;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::vector<std::unique_ptr<Process>> racers;
    for (int i = 0; i < kRacers; ++i) {
      racers.push_back(start_lh(
          {"lease", "acquire", "race", "--owner", "p" + std::to_string(i), "--ttl", "20s"}));
    }
    std::vector<RunResult> results;
    for (auto& p : racers) {
      ASSERT_TRUE(p->wait_for(kRunTimeout)) << "pid " << p->pid() << " hung";
      results.push_back(p->result());
    }
    int winners = 0;
    boost::json::object won;
    for (const RunResult& r : results) {
      if (r.exit_code == 0) {
        ++winners;
        won = parse_object(r.out);
      } else {
        EXPECT_EQ(r.exit_code, 3) << r.err;
      }
    }
    ASSERT_EQ(winners, 1);
    const int64_t epoch = won.at("epoch").as_int64();
    EXPECT_GT(epoch, previous_epoch);
    previous_epoch = epoch;
    for (const RunResult& r : results) {
      if (r.exit_code != 3) continue;
      // Each loser names the winner as the holder.
      const boost::json::object holder = parse_object(r.out);
      EXPECT_EQ(holder.at("owner"), won.at("owner"));
      EXPECT_EQ(holder.at("epoch").as_int64(), epoch);
      EXPECT_EQ(holder.at("held"), true);
    }
    const std::string mode = round % 2 == 0 ? "expire" : "clear";
    const RunResult released =
        lh({"lease", "release", "race", "--owner", std::string(won.at("owner").as_string()),
            "--token", std::string(won.at("token").as_string()), "--mode", mode});
    ASSERT_EQ(released.exit_code, 0) << released.err;
  }
}

}  // namespace
}  // namespace leasehold::process_test
