// The retry policy on simulated time: the pauses' bounds for each cause and
// retry, the attempts, the quota (taken by retries, given back by successes,
// refusing retries once spent) and the deadline. Pauses are waited on a
// SteppingClock, which records them.
#include "base/retry.h"

#include <gtest/gtest.h>

#include "testing/stepping_clock.h"

namespace leasehold {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::SteppingClock;

TEST(RetryOptions, DefaultsAreTheStandardModes) {
  const RetryOptions o;
  EXPECT_EQ(o.attempts_max, 3);
  EXPECT_EQ(o.base_delay, milliseconds(100));
  EXPECT_EQ(o.throttling_base_delay, seconds(1));
  EXPECT_EQ(o.delay_max, seconds(20));
  EXPECT_EQ(o.quota_tokens, 500);
  EXPECT_EQ(o.retry_cost, 5);
  EXPECT_EQ(o.timeout_retry_cost, 10);
  EXPECT_EQ(o.success_refill, 1);
  EXPECT_TRUE(validate_retry_options(o).ok());
}

TEST(RetryOptions, BadOptionsAreRefused) {
  const auto refused = [](auto change) {
    RetryOptions o;
    change(o);
    return validate_retry_options(o).code() == Code::kInvalidArgument;
  };
  EXPECT_TRUE(refused([](RetryOptions& o) { o.attempts_max = 0; }));
  EXPECT_TRUE(refused([](RetryOptions& o) { o.base_delay = Duration::zero(); }));
  EXPECT_TRUE(refused([](RetryOptions& o) { o.throttling_base_delay = -seconds(1); }));
  EXPECT_TRUE(refused([](RetryOptions& o) { o.delay_max = milliseconds(50); }));
  EXPECT_TRUE(refused([](RetryOptions& o) { o.retry_cost = -1; }));
  EXPECT_TRUE(refused([](RetryOptions& o) { o.quota_tokens = -5; }));
}

TEST(RetryPause, DoublesFromItsBaseUpToTheCap) {
  const RetryOptions o;
  EXPECT_EQ(retry_pause_max(o, RetryCause::kTransient, 1), milliseconds(100));
  EXPECT_EQ(retry_pause_max(o, RetryCause::kTimeout, 2), milliseconds(200));
  EXPECT_EQ(retry_pause_max(o, RetryCause::kTransient, 8), milliseconds(12800));
  EXPECT_EQ(retry_pause_max(o, RetryCause::kTransient, 9), seconds(20));
  EXPECT_EQ(retry_pause_max(o, RetryCause::kThrottling, 1), seconds(1));
  EXPECT_EQ(retry_pause_max(o, RetryCause::kThrottling, 3), seconds(4));
  EXPECT_EQ(retry_pause_max(o, RetryCause::kThrottling, 6), seconds(20));
  EXPECT_EQ(retry_pause_max(o, RetryCause::kThrottling, 1000), seconds(20));
}

// Full jitter: anywhere from nothing to the bound, spread over all of it.
TEST(RetryPause, IsDrawnFromZeroToTheBound) {
  const RetryOptions o;
  SeededRandom random(7);
  for (const RetryCause cause : {RetryCause::kTransient, RetryCause::kThrottling}) {
    for (int retry = 1; retry <= 7; ++retry) {
      const Duration bound = retry_pause_max(o, cause, retry);
      Duration least = bound, most{};
      for (int i = 0; i < 400; ++i) {
        const Duration d = retry_pause(o, cause, retry, random);
        ASSERT_GE(d, Duration::zero());
        ASSERT_LE(d, bound);
        least = std::min(least, d);
        most = std::max(most, d);
      }
      EXPECT_LT(least, bound / 20) << retry;
      EXPECT_GT(most, bound - bound / 20) << retry;
    }
  }
}

// The standard mode's options, but for `attempts_max`.
RetryOptions with_attempts(int attempts_max) {
  RetryOptions o;
  o.attempts_max = attempts_max;
  return o;
}

TEST(Retrier, PausesOnTheClockWithinTheBoundsUntilTheAttemptsRunOut) {
  SteppingClock clock;
  SeededRandom random(1);
  Retrier retrier(with_attempts(4), clock, random);
  Retrier::Call call = retrier.start();
  EXPECT_EQ(call.attempts(), 1);
  const MonoTime started = clock.mono_now();
  for (int retry = 1; retry <= 3; ++retry) {
    ASSERT_EQ(retrier.retry(call, RetryCause::kThrottling), RetryStop::kNone);
    EXPECT_EQ(call.attempts(), retry + 1);
  }
  EXPECT_EQ(retrier.retry(call, RetryCause::kThrottling), RetryStop::kAttempts);
  const std::vector<Duration> pauses = clock.pauses();
  ASSERT_LE(pauses.size(), 3u);  // a pause drawn as 0 waits nothing
  EXPECT_EQ(clock.mono_now() - started, clock.paused());
  EXPECT_LE(clock.paused(), seconds(1 + 2 + 4));
  EXPECT_EQ(retrier.quota_left(), 500 - 3 * 5);
  EXPECT_EQ(describe_stop(RetryStop::kAttempts, call.attempts()), "after 4 attempts");
}

TEST(Retrier, ASuccessGivesBackWhatItsLastRetryTookOrOneToken) {
  SteppingClock clock;
  SeededRandom random(2);
  Retrier retrier(RetryOptions(), clock, random);
  Retrier::Call first = retrier.start();
  ASSERT_EQ(retrier.retry(first, RetryCause::kTransient), RetryStop::kNone);
  ASSERT_EQ(retrier.retry(first, RetryCause::kTimeout), RetryStop::kNone);
  EXPECT_EQ(retrier.quota_left(), 500 - 5 - 10);
  retrier.succeeded(first);
  EXPECT_EQ(retrier.quota_left(), 500 - 5);
  for (int i = 0; i < 3; ++i) retrier.succeeded(retrier.start());
  EXPECT_EQ(retrier.quota_left(), 500 - 2);
  for (int i = 0; i < 10; ++i) retrier.succeeded(retrier.start());
  EXPECT_EQ(retrier.quota_left(), 500) << "never above its capacity";
}

// A service that keeps failing spends the quota: then each call makes one
// attempt, without a pause, until successes fill the bucket again.
TEST(Retrier, ASpentQuotaStopsRetriesUntilSuccessesRefillIt) {
  SteppingClock clock;
  SeededRandom random(3);
  Retrier retrier(RetryOptions(), clock, random);
  int retries = 0;
  for (int call = 0; call < 200; ++call) {
    Retrier::Call c = retrier.start();
    while (retrier.retry(c, RetryCause::kTransient) == RetryStop::kNone) ++retries;
  }
  EXPECT_EQ(retries, 500 / 5);
  EXPECT_EQ(retrier.quota_left(), 0);
  const size_t pauses = clock.pauses().size();
  Retrier::Call refused = retrier.start();
  EXPECT_EQ(retrier.retry(refused, RetryCause::kTransient), RetryStop::kQuota);
  EXPECT_EQ(clock.pauses().size(), pauses) << "a refused retry waits nothing";
  EXPECT_EQ(describe_stop(RetryStop::kQuota, 1),
            "after 1 attempt (the retry quota is spent: the service has been failing)");
  for (int i = 0; i < 5; ++i) retrier.succeeded(retrier.start());
  Retrier::Call again = retrier.start();
  EXPECT_EQ(retrier.retry(again, RetryCause::kTransient), RetryStop::kNone);
  EXPECT_EQ(retrier.retry(again, RetryCause::kTimeout), RetryStop::kQuota) << "costs 10";
}

// No pause runs to or past the call's deadline.
TEST(Retrier, NoPauseRunsPastTheDeadline) {
  SteppingClock clock;
  SeededRandom random(4);
  Retrier retrier(with_attempts(1000), clock, random);
  const MonoTime deadline = clock.mono_now() + milliseconds(2500);
  Retrier::Call call = retrier.start(deadline);
  RetryStop stop;
  while ((stop = retrier.retry(call, RetryCause::kThrottling)) == RetryStop::kNone) {
  }
  EXPECT_EQ(stop, RetryStop::kDeadline);
  EXPECT_LT(clock.mono_now(), deadline);
  EXPECT_EQ(retrier.quota_left(), 500 - 5 * (call.attempts() - 1)) << "a refusal takes nothing";
  EXPECT_EQ(describe_stop(stop, 2), "at the deadline after 2 attempts");
}

TEST(SleepFor, WaitsOnTheClock) {
  SteppingClock clock;
  const MonoTime before = clock.mono_now();
  sleep_for(clock, milliseconds(1500));
  sleep_for(clock, Duration::zero());
  sleep_for(clock, -seconds(1));
  EXPECT_EQ(clock.mono_now() - before, milliseconds(1500));
  EXPECT_EQ(clock.pauses(), std::vector<Duration>{milliseconds(1500)});
}

}  // namespace
}  // namespace leasehold
