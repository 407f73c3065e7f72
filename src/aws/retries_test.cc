// What the AWS clients share about retries, without a server: the error
// lists, the dates a refusal carries, the clock skew a client learns from
// one, and the loop that runs a request's attempts (on a SteppingClock).
#include "aws/retries.h"

#include <gtest/gtest.h>

#include "testing/stepping_clock.h"

namespace leasehold::aws {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using testing::SteppingClock;

TEST(AwsRetryErrors, ThrottlingAndTransientAreBotocoresLists) {
  for (const char* code :
       {"Throttling", "ThrottlingException", "ThrottledException", "RequestThrottledException",
        "TooManyRequestsException", "ProvisionedThroughputExceededException",
        "TransactionInProgressException", "RequestLimitExceeded", "BandwidthLimitExceeded",
        "LimitExceededException", "RequestThrottled", "SlowDown", "PriorRequestNotComplete",
        "EC2ThrottledException"}) {
    EXPECT_TRUE(is_throttling_error(code)) << code;
  }
  for (const char* code : {"", "ValidationException", "InternalServerError", "throttling"}) {
    EXPECT_FALSE(is_throttling_error(code)) << code;
  }
  for (const int status : {500, 502, 503, 504}) EXPECT_TRUE(is_transient_error(status, ""));
  for (const int status : {200, 400, 403, 404, 501, 505})
    EXPECT_FALSE(is_transient_error(status, ""));
  for (const char* code :
       {"RequestTimeout", "RequestTimeoutException", "PriorRequestNotComplete"}) {
    EXPECT_TRUE(is_transient_error(400, code)) << code;
  }
}

TEST(AwsRetryErrors, AnAttemptThatUsedItsWholeTimeoutIsATimeout) {
  EXPECT_EQ(no_reply_cause(seconds(10), seconds(10)), RetryCause::kTimeout);
  EXPECT_EQ(no_reply_cause(seconds(11), seconds(10)), RetryCause::kTimeout);
  EXPECT_EQ(no_reply_cause(milliseconds(3), seconds(10)), RetryCause::kTransient);
}

TEST(AwsClockSkew, RefusalsOfTheTimeAreToldFromWrongSecrets) {
  EXPECT_TRUE(is_clock_skew_refusal("RequestTimeTooSkewed", "The difference ... is too large."));
  EXPECT_TRUE(is_clock_skew_refusal("RequestExpired", ""));
  EXPECT_TRUE(is_clock_skew_refusal("RequestInTheFuture", ""));
  EXPECT_TRUE(is_clock_skew_refusal(
      "InvalidSignatureException",
      "Signature expired: 20240101T000000Z is now earlier than 20240101T001000Z "
      "(20240101T001500Z - 5 min.)"));
  EXPECT_TRUE(is_clock_skew_refusal("SignatureDoesNotMatch",
                                    "Signature not yet current: 20240101T003000Z is still later "
                                    "than 20240101T002000Z (20240101T001500Z + 5 min.)"));
  EXPECT_FALSE(is_clock_skew_refusal(
      "InvalidSignatureException",
      "The request signature we calculated does not match the signature you provided."));
  EXPECT_FALSE(is_clock_skew_refusal("SignatureDoesNotMatch", ""));
  EXPECT_FALSE(is_clock_skew_refusal("ThrottlingException", "Signature expired"));
}

TEST(AwsClockSkew, ReadsHttpDatesAndTheTimeARefusalQuotes) {
  EXPECT_EQ(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), WallTime(seconds(784111777)));
  EXPECT_EQ(parse_http_date("Tue, 14 Nov 2023 22:13:20 GMT"), from_unix_ms(1'700'000'000'000));
  for (const char* bad : {"", "Sun, 06 Nov 1994 08:49:37", "Sunday, 06-Nov-94 08:49:37 GMT",
                          "Sun, 06 Xyz 1994 08:49:37 GMT", "Sun, 36 Nov 1994 08:49:37 GMT",
                          "Sun, 06 Nov 1994 08:4x:37 GMT"}) {
    EXPECT_EQ(parse_http_date(bad), std::nullopt) << bad;
  }
  const std::string expired =
      "Signature expired: 20231114T214320Z is now earlier than 20231114T215820Z "
      "(20231114T221320Z - 15 min.)";
  EXPECT_EQ(service_time(std::nullopt, expired), from_unix_ms(1'700'000'000'000));
  EXPECT_EQ(service_time("Sun, 06 Nov 1994 08:49:37 GMT", expired), WallTime(seconds(784111777)))
      << "the Date header first";
  EXPECT_EQ(service_time("garbled", expired), from_unix_ms(1'700'000'000'000));
  EXPECT_EQ(service_time(std::nullopt, "Signature expired"), std::nullopt);
  EXPECT_EQ(service_time(std::nullopt, "(2023)"), std::nullopt);
}

// A date whose day is past its month's end was carried into the next month,
// and one far from 1970 overflowed WallTime (UBSan; found by fuzzing,
// fuzz/corpus/json_client_errors/regress-*): both are refused.
TEST(AwsClockSkew, RefusesDatesOutOfRangeRatherThanCarryingThem) {
  EXPECT_EQ(parse_http_date("Thu, 29 Feb 2024 00:00:00 GMT"),
            from_unix_ms(1'709'164'800'000));  // a leap day
  for (const char* bad : {"Sat, 31 Feb 2026 10:00:00 GMT", "Sun, 29 Feb 2026 10:00:00 GMT",
                          "Mon, 31 Apr 2026 10:00:00 GMT", "Mon, 07 Dec 8794 18:49:32 GMT",
                          "Fri, 31 Dec 9999 23:59:59 GMT"}) {
    EXPECT_EQ(parse_http_date(bad), std::nullopt) << bad;
  }
  EXPECT_EQ(service_time(std::nullopt, "Signature expired: (99991231T235959Z - 5 min.)"),
            std::nullopt);
  EXPECT_EQ(service_time(std::nullopt, "Signature expired: (20260230T000000Z - 5 min.)"),
            std::nullopt);
}

// A clock 20 minutes ahead learns the service's time from one refusal and
// signs with it from then on; a refusal that is not about the time, or
// whose time is near the request's, teaches nothing.
TEST(AwsClockSkew, LearnsTheOffsetFromARefusalOfTheTime) {
  SteppingClock clock;  // the service's time
  OffsetClock ahead(clock, minutes(20));
  ClockSkew skew;
  EXPECT_EQ(skew.now(ahead), clock.wall_now() + minutes(20));
  const std::string date = "Tue, 14 Nov 2023 22:13:20 GMT";  // clock's start
  EXPECT_FALSE(skew.learn("InvalidSignatureException", "The request signature we calculated", date,
                          skew.now(ahead), ahead));
  EXPECT_FALSE(skew.learn("ThrottlingException", "", date, skew.now(ahead), ahead));
  EXPECT_FALSE(skew.learn("RequestExpired", "", std::nullopt, skew.now(ahead), ahead))
      << "no time to learn from";
  EXPECT_FALSE(skew.learn("RequestExpired", "", date, clock.wall_now() + minutes(3), ahead))
      << "within kSkewCorrectedFrom";
  EXPECT_EQ(skew.offset(), Duration::zero());

  ASSERT_TRUE(skew.learn("RequestExpired", "", date, skew.now(ahead), ahead));
  EXPECT_EQ(skew.offset(), -Duration(minutes(20)));
  EXPECT_EQ(skew.now(ahead), clock.wall_now());
  clock.simulated().advance(seconds(90));
  EXPECT_EQ(skew.now(ahead), clock.wall_now()) << "kept for later requests";
}

// The loop of every client: attempts judged by the client, retried as the
// Retrier allows, with one re-signing after a refusal of the time.
TEST(SendWithRetries, RetriesWhatTheClientSaysAndGivesUpAsTheRetrierSays) {
  SteppingClock clock;
  SeededRandom random(9);
  Retrier retrier(RetryOptions(), clock, random);
  const auto give_up = [](const Status& last, RetryStop stop, int attempts) {
    return last.with_context("gave up " + describe_stop(stop, attempts));
  };
  int sent = 0;
  const auto throttled_twice = [&](const Retrier::Call&) -> Attempt<int> {
    if (++sent <= 2) return {unavailable("throttled"), RetryCause::kThrottling};
    return {sent};
  };
  Result<int> got = send_with_retries<int>(retrier, MonoTime::max(), throttled_twice, give_up);
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(*got, 3);
  EXPECT_LE(clock.paused(), seconds(1 + 2));
  EXPECT_EQ(retrier.quota_left(), 500 - 10 + 5) << "the success gave back its last retry's 5";

  sent = 0;
  const auto always_throttled = [&](const Retrier::Call&) -> Attempt<int> {
    ++sent;
    return {unavailable("throttled"), RetryCause::kThrottling};
  };
  got = send_with_retries<int>(retrier, MonoTime::max(), always_throttled, give_up);
  EXPECT_EQ(sent, 3);
  EXPECT_EQ(got.status().message(), "gave up after 3 attempts: throttled");
  EXPECT_EQ(retrier.quota_left(), 495 - 10);

  sent = 0;
  const size_t pauses = clock.pauses().size();
  const auto skewed = [&](const Retrier::Call& call) -> Attempt<int> {
    EXPECT_EQ(call.attempts(), 1) << "a re-signing is no retry";
    ++sent;
    return {unauthenticated("Signature expired"), std::nullopt, true};
  };
  got = send_with_retries<int>(retrier, MonoTime::max(), skewed, give_up);
  EXPECT_EQ(sent, 2) << "signed again once, then its refusal is returned";
  EXPECT_EQ(got.status().code(), Code::kUnauthenticated);
  EXPECT_EQ(clock.pauses().size(), pauses) << "no pause before signing again";

  const auto not_retryable = [&](const Retrier::Call&) -> Attempt<int> {
    return {invalid_argument("bad")};
  };
  got = send_with_retries<int>(retrier, MonoTime::max(), not_retryable, give_up);
  EXPECT_EQ(got.status().message(), "bad");
}

}  // namespace
}  // namespace leasehold::aws
