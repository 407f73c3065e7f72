// Tests for the fair shares of balancing.
#include "fleet/balance.h"

#include <gtest/gtest.h>

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
