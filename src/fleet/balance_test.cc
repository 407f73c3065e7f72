// Tests for the fair shares of balancing.
#include "fleet/balance.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace leasehold::fleet {
namespace {

int64_t share(int64_t total, std::vector<int64_t> caps, size_t me) {
  return fair_share(total, caps, me);
}

TEST(FairShareTest, EvenSharesRoundedUp) {
  EXPECT_EQ(share(30, {1000, 1000, 1000}, 0), 10);
  EXPECT_EQ(share(31, {1000, 1000, 1000}, 2), 11);
  EXPECT_EQ(share(1, {1000, 1000}, 1), 1);
  EXPECT_EQ(share(0, {1000}, 0), 0);
  EXPECT_EQ(share(30, {1000}, 0), 30);
}

TEST(FairShareTest, ASmallCapacityLeavesMoreForTheOthers) {
  EXPECT_EQ(share(30, {5, 1000, 1000}, 0), 5);
  EXPECT_EQ(share(30, {5, 1000, 1000}, 1), 13);  // 25 between two, rounded up
  EXPECT_EQ(share(30, {5, 5, 1000}, 2), 20);
}

TEST(FairShareTest, MoreThanTheFleetHoldsFillsEveryone) {
  EXPECT_EQ(share(100, {10, 20}, 0), 10);
  EXPECT_EQ(share(100, {10, 20}, 1), 20);
}

// The failing case of an over-capacity fleet: one worker, or every worker,
// full. The share must be the capacity, or the worker takes nothing more.
TEST(FairShareTest, OverCapacityEveryShareIsTheCapacity) {
  EXPECT_EQ(share(6, {5}, 0), 5);
  EXPECT_EQ(share(12, {5, 5}, 0), 5);
  EXPECT_EQ(share(12, {5, 5}, 1), 5);
  EXPECT_EQ(share(1000, {3, 4, 5}, 1), 4);
}

// The least level L (by trying every one) at which sum(min(cap, L)) covers
// the total; each share is min(cap, L), or the capacity if no level does.
int64_t brute_force_share(int64_t total, const std::vector<int64_t>& caps, size_t me) {
  const int64_t top = *std::max_element(caps.begin(), caps.end());
  for (int64_t level = 0; level <= top; ++level) {
    int64_t covered = 0;
    for (const int64_t c : caps) covered += std::min(c, level);
    if (covered >= total) return std::min(caps[me], level);
  }
  return caps[me];
}

TEST(FairShareTest, MatchesABruteForceShareForRandomFleets) {
  std::mt19937_64 rng(20261203);  // fixed, so that a failure replays
  for (int round = 0; round < 20000; ++round) {
    const size_t workers = 1 + rng() % 6;
    std::vector<int64_t> caps(workers);
    int64_t capacity = 0;
    for (int64_t& c : caps) {
      c = 1 + static_cast<int64_t>(rng() % 40);
      capacity += c;
    }
    // Totals from empty to twice what the fleet holds.
    const int64_t total = static_cast<int64_t>(rng() % static_cast<uint64_t>(2 * capacity + 1));
    int64_t sum = 0;
    for (size_t me = 0; me < workers; ++me) {
      const int64_t s = fair_share(total, caps, me);
      ASSERT_EQ(s, brute_force_share(total, caps, me))
          << "total " << total << ", worker " << me << " of " << ::testing::PrintToString(caps);
      sum += s;
    }
    ASSERT_GE(sum, std::min(total, capacity));
  }
}

TEST(FairShareTest, SharesCoverTheTotal) {
  for (int64_t total = 0; total < 200; ++total) {
    const std::vector<int64_t> caps = {3, 50, 50, 7, 1000};
    int64_t sum = 0;
    for (size_t i = 0; i < caps.size(); ++i) {
      const int64_t s = fair_share(total, caps, i);
      EXPECT_LE(s, caps[i]);
      sum += s;
    }
    EXPECT_GE(sum, std::min<int64_t>(total, 1110)) << total;
  }
}

}  // namespace
}  // namespace leasehold::fleet
