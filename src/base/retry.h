// Retrier: when, and after how long a pause, a client sends a failed request
// again. One policy for every client of a remote service (the AWS clients:
// DynamoDB, SQS, S3), the one the AWS SDKs call their "standard" retry mode
// (botocore's botocore/retries/standard.py and quota.py; the AWS SDK for Java
// v2's software.amazon.awssdk.retries.DefaultRetryStrategy.Standard):
//
// - At most attempts_max attempts per call, the first included.
// - Before retry n (n = 1 for the second attempt) a pause drawn uniformly
//   from [0, min(delay_max, base * 2^(n-1))]: exponential backoff with full
//   jitter. The base is throttling_base_delay after the service asked the
//   client to slow down and base_delay after any other failure, so that a
//   throttled client backs off ten times as far as one that met a passing
//   fault.
// - A retry quota, a token bucket shared by every call of one client: a retry
//   takes retry_cost tokens (timeout_retry_cost after an attempt that timed
//   out, which held a connection for its whole timeout), and a call is not
//   retried when the bucket holds too few. A call that succeeds gives back
//   what its last retry took, or success_refill when it needed none. So a
//   service that keeps failing soon gets one attempt per call instead of
//   attempts_max, and gets its retries back as it recovers.
// - A deadline: no pause is taken that would end at or past the call's
//   deadline.
//
// Whether a failure may be retried at all (a write that may have applied may
// not) is the caller's to say; the Retrier only decides whether and when a
// failure the caller calls retryable is sent again. Pauses are waited on the
// Clock (sleep_for), so that code that retries runs on a SimulatedClock in
// tests.
//
// A Retrier is safe for concurrent use by many threads; a Call belongs to the
// one thread that makes the call.
#pragma once

#include <chrono>
#include <string>

#include "base/mutex.h"
#include "leasehold/clock.h"
#include "leasehold/random.h"
#include "leasehold/status.h"

namespace leasehold {

// What kind of failure a retry follows, which sets its pause and its cost.
enum class RetryCause {
  kTransient,   // a 5xx, a dropped or refused connection: base_delay, retry_cost
  kThrottling,  // the service asked the client to slow down: throttling_base_delay
  kTimeout,     // no reply within the attempt's timeout: base_delay, timeout_retry_cost
};

struct RetryOptions {
  // The defaults are the standard mode's: 3 attempts (botocore
  // DEFAULT_MAX_ATTEMPTS; Java v2 Standard.MAX_ATTEMPTS), a 100 ms base and a
  // 1 s base after throttling (Java v2 Standard.BASE_DELAY and
  // THROTTLED_BASE_DELAY), 20 s at most (botocore _MAX_BACKOFF; Java v2
  // MAX_BACKOFF), a quota of 500 tokens, 5 a retry, 10 a retry after a
  // timeout, 1 given back by a call that needed no retry (botocore
  // RetryQuota.INITIAL_CAPACITY, RetryQuotaChecker._RETRY_COST,
  // _TIMEOUT_RETRY_REQUEST, _NO_RETRY_INCREMENT).
  int attempts_max = 3;
  Duration base_delay = std::chrono::milliseconds(100);
  Duration throttling_base_delay = std::chrono::seconds(1);
  Duration delay_max = std::chrono::seconds(20);
  int quota_tokens = 500;
  int retry_cost = 5;
  int timeout_retry_cost = 10;
  int success_refill = 1;
};

// kInvalidArgument unless attempts_max >= 1, the delays are positive with
// each base at most delay_max, and the quota's numbers are >= 0.
Status validate_retry_options(const RetryOptions& options);

// The longest pause before retry `retry` (>= 1) after a `cause` failure:
// min(delay_max, base * 2^(retry-1)).
Duration retry_pause_max(const RetryOptions& options, RetryCause cause, int retry);

// A pause drawn uniformly from [0, retry_pause_max()], to the nanosecond.
Duration retry_pause(const RetryOptions& options, RetryCause cause, int retry, Random& random);

// Why a failed call is not sent again.
enum class RetryStop {
  kNone,      // it is: the pause has been waited
  kAttempts,  // attempts_max attempts have been made
  kQuota,     // the retry quota holds too few tokens
  kDeadline,  // the pause would end at or past the call's deadline
};

// "after 3 attempts", "after 2 attempts: the retry quota is spent", "at the
// deadline after 1 attempt": why a call that made `attempts` attempts
// stopped, for an error message. REQUIRES: stop != kNone.
std::string describe_stop(RetryStop stop, int attempts);

class Retrier {
 public:
  // One call's attempts so far, and its deadline.
  class Call {
   public:
    int attempts() const { return attempts_; }
    MonoTime deadline() const { return deadline_; }

   private:
    friend class Retrier;
    explicit Call(MonoTime deadline) : deadline_(deadline) {}

    MonoTime deadline_;
    int attempts_ = 1;      // the first attempt is made without asking
    int tokens_taken_ = 0;  // by the last retry
  };

  // REQUIRES: validate_retry_options(options).ok(); `clock` and `random`
  // outlive the Retrier. `random` is drawn from under a mutex of the
  // Retrier's, so a SeededRandom may serve.
  Retrier(RetryOptions options, Clock& clock, Random& random);

  Retrier(const Retrier&) = delete;
  Retrier& operator=(const Retrier&) = delete;

  // A call about to make its first attempt; MonoTime::max() is no deadline.
  Call start(MonoTime deadline = MonoTime::max()) const { return Call(deadline); }

  // After an attempt of `call` failed for `cause` in a way that the caller
  // may send again: kNone once the pause has been waited (on the clock) and
  // the next attempt counted; else why not, without waiting. A refusal takes
  // no token.
  RetryStop retry(Call& call, RetryCause cause) EXCLUDES(mu_, random_mu_);

  // Waits, on the clock, a pause drawn as retry() draws the one before retry
  // `retry` (>= 1) after a `cause` failure, without counting an attempt or
  // taking from the quota: for a request the service answered in part and
  // asked to send the rest again (DynamoDB's unprocessed keys).
  void pause(RetryCause cause, int retry) EXCLUDES(random_mu_);

  // After `call` succeeded: gives back to the quota what its last retry took,
  // or success_refill when it needed none, up to quota_tokens.
  void succeeded(const Call& call) EXCLUDES(mu_);

  int quota_left() const EXCLUDES(mu_);
  const RetryOptions& options() const { return options_; }
  Clock& clock() const { return clock_; }

 private:
  Duration draw_pause(RetryCause cause, int retry) EXCLUDES(random_mu_);

  const RetryOptions options_;
  Clock& clock_;
  Random& random_;
  Mutex random_mu_;
  mutable Mutex mu_;
  int quota_left_ GUARDED_BY(mu_);
};

}  // namespace leasehold
