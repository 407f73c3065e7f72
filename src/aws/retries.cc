#include "aws/retries.h"

#include <time.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <iterator>
#include <string>

namespace leasehold::aws {
namespace {

// botocore's ThrottledRetryableChecker._THROTTLED_ERROR_CODES, and Java v2's
// AwsErrorCode.THROTTLING_ERROR_CODES (a subset of it).
constexpr std::string_view kThrottlingCodes[] = {
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottledException",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "TransactionInProgressException",
    "RequestLimitExceeded",
    "BandwidthLimitExceeded",
    "LimitExceededException",
    "RequestThrottled",
    "SlowDown",
    "PriorRequestNotComplete",
    "EC2ThrottledException",
};

// botocore's TransientRetryableChecker._TRANSIENT_ERROR_CODES and
// _TRANSIENT_STATUS_CODES.
constexpr std::string_view kTransientCodes[] = {"RequestTimeout", "RequestTimeoutException",
                                                "PriorRequestNotComplete"};
constexpr int kTransientStatuses[] = {500, 502, 503, 504};

constexpr std::string_view kSkewCodes[] = {"RequestTimeTooSkewed", "RequestExpired",
                                           "RequestInTheFuture"};
// Codes that also mean a wrong secret: a refusal of the time only with one of
// these messages.
constexpr std::string_view kSignatureCodes[] = {"InvalidSignatureException",
                                                "SignatureDoesNotMatch"};
constexpr std::string_view kSkewMessages[] = {"Signature expired", "Signature not yet current"};

template <typename List, typename T>
bool listed(const List& list, const T& value) {
  return std::find(std::begin(list), std::end(list), value) != std::end(list);
}

// `n` decimal digits at `s`, or -1.
int digits(std::string_view s, size_t n) {
  if (s.size() < n) return -1;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return -1;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

// A field out of its range ("31 Feb") is refused rather than carried into
// the next, and so is a year a WallTime cannot hold (nanoseconds from 1970
// in int64 reach 2262), as parse_iso8601_utc does.
std::optional<WallTime> from_utc(int year, int month, int day, int hour, int minute, int second) {
  if (year < 1970 || year > 2200 || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 ||
      minute > 59 || second > 60) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  tm.tm_mday = day;
  tm.tm_hour = hour;
  tm.tm_min = minute;
  tm.tm_sec = second;
  const time_t t = timegm(&tm);
  // timegm() normalises a day past its month's end into the next month.
  if (t == static_cast<time_t>(-1) || tm.tm_mday != day) return std::nullopt;
  return WallTime(std::chrono::seconds(t));
}

// "20240101T001500Z", SigV4's X-Amz-Date, at the start of `s`.
std::optional<WallTime> parse_amz_date(std::string_view s) {
  if (s.size() < 16 || s[8] != 'T' || s[15] != 'Z') return std::nullopt;
  const int year = digits(s, 4), month = digits(s.substr(4), 2), day = digits(s.substr(6), 2);
  const int hour = digits(s.substr(9), 2), minute = digits(s.substr(11), 2);
  const int second = digits(s.substr(13), 2);
  if (year < 0 || month < 0 || day < 0 || hour < 0 || minute < 0 || second < 0) {
    return std::nullopt;
  }
  return from_utc(year, month, day, hour, minute, second);
}

}  // namespace

bool is_throttling_error(std::string_view code) { return listed(kThrottlingCodes, code); }

bool is_transient_error(int http_status, std::string_view code) {
  return listed(kTransientStatuses, http_status) || listed(kTransientCodes, code);
}

RetryCause no_reply_cause(Duration took, Duration timeout) {
  return took >= timeout ? RetryCause::kTimeout : RetryCause::kTransient;
}

bool is_clock_skew_refusal(std::string_view code, std::string_view message) {
  if (listed(kSkewCodes, code)) return true;
  if (!listed(kSignatureCodes, code)) return false;
  return std::any_of(std::begin(kSkewMessages), std::end(kSkewMessages),
                     [&](std::string_view m) { return message.starts_with(m); });
}

std::optional<WallTime> parse_http_date(std::string_view s) {
  // "Sun, 06 Nov 1994 08:49:37 GMT": 29 characters at fixed places.
  static constexpr std::array<std::string_view, 12> kMonths = {
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (s.size() != 29 || s.substr(3, 2) != ", " || s[7] != ' ' || s[11] != ' ' || s[16] != ' ' ||
      s[19] != ':' || s[22] != ':' || s.substr(25) != " GMT") {
    return std::nullopt;
  }
  const auto month = std::find(kMonths.begin(), kMonths.end(), s.substr(8, 3));
  const int day = digits(s.substr(5), 2), year = digits(s.substr(12), 4);
  const int hour = digits(s.substr(17), 2), minute = digits(s.substr(20), 2);
  const int second = digits(s.substr(23), 2);
  if (month == kMonths.end() || day < 0 || year < 0 || hour < 0 || minute < 0 || second < 0) {
    return std::nullopt;
  }
  return from_utc(year, static_cast<int>(month - kMonths.begin()) + 1, day, hour, minute, second);
}

std::optional<WallTime> service_time(std::optional<std::string_view> date_header,
                                     std::string_view message) {
  if (date_header) {
    if (std::optional<WallTime> t = parse_http_date(*date_header)) return t;
  }
  const size_t open = message.find('(');
  if (open == std::string_view::npos) return std::nullopt;
  return parse_amz_date(message.substr(open + 1));
}

WallTime ClockSkew::now(Clock& clock) const {
  return clock.wall_now() + std::chrono::duration_cast<WallTime::duration>(offset());
}

bool ClockSkew::learn(std::string_view code, std::string_view message,
                      std::optional<std::string_view> date_header, WallTime signed_at,
                      Clock& clock) {
  if (!is_clock_skew_refusal(code, message)) return false;
  const std::optional<WallTime> theirs = service_time(date_header, message);
  if (!theirs) return false;
  const Duration off = *theirs - signed_at;
  if (off < kSkewCorrectedFrom && off > -kSkewCorrectedFrom) return false;
  offset_ns_.store(Duration(*theirs - clock.wall_now()).count(), std::memory_order_relaxed);
  return true;
}

}  // namespace leasehold::aws
