#include "accounts/sign_in_limiter.h"

#include <gtest/gtest.h>

namespace leasehold::accounts {
namespace {

using std::chrono::seconds;

class SignInLimiterTest : public ::testing::Test {
 protected:
  SignInLimiter make(int per_name, int per_address, size_t keys_max = 100) {
    return SignInLimiter(clock_, SignInLimits{per_name, per_address, seconds(60), keys_max});
  }
  SimulatedClock clock_;
};

TEST_F(SignInLimiterTest, RefusesOnceTheWindowHoldsMaxFailuresAndSaysForHowLong) {
  SignInLimiter limiter = make(3, 100);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(limiter.admit("ann", "a").admitted);
    clock_.advance(seconds(10));
  }
  const auto refused = limiter.admit("ann", "b");
  EXPECT_FALSE(refused.admitted);
  EXPECT_EQ(refused.retry_after, seconds(30));  // the first failure, 30 s on, ages out
  clock_.advance(seconds(30));
  EXPECT_TRUE(limiter.admit("ann", "b").admitted);
  EXPECT_FALSE(limiter.admit("ann", "b").admitted);
  EXPECT_TRUE(limiter.admit("bob", "b").admitted);
}

TEST_F(SignInLimiterTest, RefusedAttemptsDoNotCount) {
  SignInLimiter limiter = make(1, 100);
  ASSERT_TRUE(limiter.admit("ann", "a").admitted);
  for (int i = 0; i < 50; ++i) {
    clock_.advance(seconds(1));
    EXPECT_FALSE(limiter.admit("ann", "a").admitted);
  }
  clock_.advance(seconds(10));
  EXPECT_TRUE(limiter.admit("ann", "a").admitted);
}

TEST_F(SignInLimiterTest, AttemptsInFlightCountUntilTheySucceed) {
  SignInLimiter limiter = make(2, 100);
  const auto first = limiter.admit("ann", "a");
  const auto second = limiter.admit("ann", "a");
  ASSERT_TRUE(first.admitted && second.admitted);
  EXPECT_FALSE(limiter.admit("ann", "a").admitted);
  limiter.succeeded("ann", "a", first);
  EXPECT_TRUE(limiter.admit("ann", "a").admitted);
}

TEST_F(SignInLimiterTest, SuccessForgetsTheNameButOnlyItsOwnAttemptAtTheAddress) {
  SignInLimiter limiter = make(100, 3);
  ASSERT_TRUE(limiter.admit("x", "a").admitted);
  ASSERT_TRUE(limiter.admit("y", "a").admitted);
  const auto ok = limiter.admit("ann", "a");
  ASSERT_TRUE(ok.admitted);
  EXPECT_FALSE(limiter.admit("z", "a").admitted);
  limiter.succeeded("ann", "a", ok);
  EXPECT_TRUE(limiter.admit("z", "a").admitted);
  EXPECT_FALSE(limiter.admit("w", "a").admitted);
}

TEST_F(SignInLimiterTest, AbandonedAttemptsAreTakenOffBothCounts) {
  SignInLimiter limiter = make(1, 1);
  const auto attempt = limiter.admit("ann", "a");
  ASSERT_TRUE(attempt.admitted);
  limiter.abandoned("ann", "a", attempt);
  EXPECT_TRUE(limiter.admit("ann", "a").admitted);
}

TEST_F(SignInLimiterTest, AnEmptyNameIsCountedByAddressOnly) {
  SignInLimiter limiter = make(1, 2);
  EXPECT_TRUE(limiter.admit("", "a").admitted);
  EXPECT_TRUE(limiter.admit("", "b").admitted);
  EXPECT_TRUE(limiter.admit("", "a").admitted);
  EXPECT_FALSE(limiter.admit("", "a").admitted);
}

TEST_F(SignInLimiterTest, LongAddressesAreCountedByTheirPrefix) {
  SignInLimiter limiter = make(100, 1);
  const std::string prefix(kAddressKeyBytesMax, 'a');
  EXPECT_TRUE(limiter.admit("x", prefix + "1").admitted);
  EXPECT_FALSE(limiter.admit("x", prefix + "2").admitted);
}

TEST_F(SignInLimiterTest, KeepsAtMostKeysMaxEntriesForgettingTheStalest) {
  SignInLimiter limiter = make(1, 1000, /*keys_max=*/3);
  for (const char* name : {"a", "b", "c"}) {
    ASSERT_TRUE(limiter.admit(name, "addr").admitted);
    clock_.advance(seconds(1));
  }
  EXPECT_FALSE(limiter.admit("a", "addr").admitted);
  ASSERT_TRUE(limiter.admit("d", "addr").admitted);  // "a", the stalest, is forgotten
  EXPECT_TRUE(limiter.admit("a", "addr").admitted);
  EXPECT_FALSE(limiter.admit("d", "addr").admitted);
  EXPECT_FALSE(limiter.admit("c", "addr").admitted);
}

}  // namespace
}  // namespace leasehold::accounts
