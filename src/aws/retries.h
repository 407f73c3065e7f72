// What the AWS clients (the DynamoDB store, JsonClient for SQS, S3Client)
// share about sending a request again, on top of the policy of base/retry.h:
// which of a service's errors are throttling and which are transient, what a
// request that got no reply counts as, and the correction of a clock that is
// off the services' own.
//
// The error lists are botocore's standard mode (botocore/retries/standard.py:
// ThrottledRetryableChecker._THROTTLED_ERROR_CODES and
// TransientRetryableChecker's codes and statuses), which the AWS SDK for
// Java v2 shares (AwsErrorCode.THROTTLING_ERROR_CODES,
// SdkDefaultRetrySetting.RETRYABLE_STATUS_CODES). A throttling error promises
// that nothing was done; a transient one does not, so whether a request that
// met one may be sent again stays each client's rule (a write that may have
// applied is not).
//
// ClockSkew follows the SDKs that correct a skewed clock (the AWS SDK for
// C++'s AWSClient::AdjustClockSkew, Java v2's ClockSkew): a request refused
// because its signature's time is too far from the service's (DynamoDB and
// SQS accept 5 minutes either way, S3 15) is signed again with the service's
// time, read from the reply's Date header, and the offset is kept for the
// client's later requests.
//
// send_with_retries() is the loop all three clients run a request in: one
// attempt after another, as the client judges each and as the Retrier
// allows.
//
// Pure functions, and a ClockSkew safe for concurrent use.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "base/retry.h"
#include "leasehold/clock.h"
#include "leasehold/status.h"

namespace leasehold::aws {

// The service asked the client to slow down ("ThrottlingException",
// "ProvisionedThroughputExceededException", "SlowDown", ...): nothing was
// done, and the retry waits on RetryOptions::throttling_base_delay.
bool is_throttling_error(std::string_view code);

// The service failed in a way that may pass: HTTP 500, 502, 503 or 504, or
// the codes "RequestTimeout", "RequestTimeoutException" and
// "PriorRequestNotComplete". The request may have been applied.
bool is_transient_error(int http_status, std::string_view code);

// The cause of a retry after an attempt that got no reply: kTimeout when it
// ran for its whole `timeout` (it held a connection that long, and costs the
// quota more, as botocore's ConnectTimeoutError and ReadTimeoutError do),
// else kTransient (a refused or dropped connection).
RetryCause no_reply_cause(Duration took, Duration timeout);

// A refusal of the request's time rather than of its credentials:
// "RequestTimeTooSkewed" (S3), "RequestExpired", "RequestInTheFuture", or an
// "InvalidSignatureException" or "SignatureDoesNotMatch" whose message starts
// "Signature expired" or "Signature not yet current" (what DynamoDB and SQS
// say of a signature more than 5 minutes off their time).
bool is_clock_skew_refusal(std::string_view code, std::string_view message);

// An HTTP date, "Sun, 06 Nov 1994 08:49:37 GMT" (RFC 9110's IMF-fixdate);
// nullopt for anything else.
std::optional<WallTime> parse_http_date(std::string_view text);

// The service's time when it refused a request: the reply's Date header if it
// has one that parses, else the time the refusal's message quotes as the
// service's ("Signature expired: 20240101T000000Z is now earlier than
// 20240101T001000Z (20240101T001500Z - 5 min.)": the one in brackets).
std::optional<WallTime> service_time(std::optional<std::string_view> date_header,
                                     std::string_view message);

// How far a request's time must be from the service's for a refusal to be
// put down to the clock: Java v2's ClockSkew.CLOCK_SKEW_ADJUST_THRESHOLD.
inline constexpr Duration kSkewCorrectedFrom = std::chrono::minutes(4);

// One client's correction of its clock for signing.
class ClockSkew {
 public:
  // The time to sign a request with: `clock`'s wall time plus the offset
  // learnt so far (none at first).
  WallTime now(Clock& clock) const;
  Duration offset() const { return Duration(offset_ns_.load(std::memory_order_relaxed)); }

  // After a refusal (`code`, `message`, the reply's Date header) of a request
  // signed at `signed_at`: if it refused the request's time
  // (is_clock_skew_refusal) and the service's time (service_time()) is at
  // least kSkewCorrectedFrom from `signed_at`, keeps service time - `clock`'s
  // wall time as the offset and returns true: the request is worth signing
  // again, at once. Otherwise changes nothing and returns false.
  bool learn(std::string_view code, std::string_view message,
             std::optional<std::string_view> date_header, WallTime signed_at, Clock& clock);

 private:
  std::atomic<int64_t> offset_ns_{0};
};

// What one attempt of a request came to, as the client judges it.
template <typename T>
struct Attempt {
  // What the call returns now, or, with `retry` set, the failure it returns
  // if it is not sent again.
  Result<T> result;
  // Set: the failure may be sent again, after a pause for this cause.
  std::optional<RetryCause> retry = std::nullopt;
  // The service refused the request's time and the client's ClockSkew has
  // learnt the service's: the request is signed again and sent at once,
  // without a pause, a token of the quota or counting as an attempt, once a
  // call (as the AWS SDK for C++ does not pause after correcting its clock).
  // A second such refusal is returned as `result`.
  bool resign = false;
};

// Runs one request: `attempt(call)` makes an attempt (signing it afresh) and
// judges it; while it says the failure may be sent again, `retrier` pauses
// and it is sent again, until the retrier stops it: then the call returns
// `give_up(last failure, why, attempts made)`. A success (an ok result) gives
// the quota back its due. No pause runs to or past `deadline`
// (MonoTime::max(): none); `attempt` bounds each attempt by the time left.
template <typename T, typename AttemptFn, typename GiveUpFn>
Result<T> send_with_retries(Retrier& retrier, MonoTime deadline, AttemptFn attempt,
                            GiveUpFn give_up) {
  Retrier::Call call = retrier.start(deadline);
  bool resigned = false;
  while (true) {
    Attempt<T> a = attempt(static_cast<const Retrier::Call&>(call));
    if (a.resign && !resigned) {
      resigned = true;
      continue;
    }
    if (!a.retry || a.resign) {
      if (a.result.ok()) retrier.succeeded(call);
      return std::move(a.result);
    }
    const RetryStop stop = retrier.retry(call, *a.retry);
    if (stop != RetryStop::kNone) return give_up(a.result.status(), stop, call.attempts());
  }
}

}  // namespace leasehold::aws
