// The AWS JSON-protocol client's error replies (aws/json_client_internal.h,
// aws/retries.h): the code and message read from the body, the Status they
// make, and the service's time read from the reply's Date header or from
// the message of a refusal for a skewed clock.
//
// Input: the HTTP status, the request ID and the Date header, a line each,
// then the body.
// Properties: the code is __type's after its last '#' and before any ':',
// the message the body's Message (or message); the Status is never OK,
// names the operation and the code (or the HTTP status), holds no control
// character and stays bounded, is kUnavailable when throttled and follows
// the caller's rules otherwise. A time taken from a Date header (an
// IMF-fixdate) or from an X-Amz-Date in the message names the same day and
// time when written again (but for a leap second), which the clock skew
// then learns.
#include <time.h>

#include <boost/json.hpp>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "aws/json_client_internal.h"
#include "aws/retries.h"
#include "check.h"
#include "leasehold/clock.h"

namespace {

namespace aws = leasehold::aws;
namespace internal = leasehold::aws::json_client_internal;
namespace json = boost::json;
using leasehold::Code;
using leasehold::fuzz::escaped;

// The longest Status message an error reply may make: the operation, a code
// and a message cut to their bounds, a request ID and a note.
constexpr size_t kStatusMessageBytesMax = 1024;
constexpr aws::JsonErrorRule kRules[] = {{"QueueDoesNotExist", Code::kNotFound},
                                         {"OverLimit", Code::kResourceExhausted}};

// The error's code and message as json_client.h describes them, from
// boost::json::parse's reading of the body.
internal::ErrorReply reference_error(std::string_view body) {
  internal::ErrorReply out;
  json::error_code ec;
  const json::value parsed = json::parse(body, ec);
  if (ec || !parsed.is_object()) return out;
  const json::object& o = parsed.get_object();
  if (const json::value* t = o.if_contains("__type"); t != nullptr && t->is_string()) {
    std::string_view type = t->get_string();
    if (const size_t hash = type.rfind('#'); hash != std::string_view::npos) {
      type.remove_prefix(hash + 1);
    }
    out.code = std::string(type.substr(0, type.find(':')));
  }
  if (const json::value* m = o.if_contains("Message"); m != nullptr && m->is_string()) {
    out.message = std::string(m->get_string());
  } else if (const json::value* m = o.if_contains("message"); m != nullptr && m->is_string()) {
    out.message = std::string(m->get_string());
  }
  return out;
}

void check_status(int http_status, std::string_view request_id, std::string_view body) {
  const internal::ErrorReply error = internal::parse_error(body);
  const internal::ErrorReply expected = reference_error(body);
  FUZZ_CHECK_EQ(error.code, expected.code, "the error's code");
  FUZZ_CHECK_EQ(error.message, expected.message, "the error's message");
  bool throttled = false;
  const leasehold::Status s = internal::error_status("ReceiveMessage", http_status, error,
                                                     request_id, "sqs", kRules, &throttled);
  FUZZ_CHECK(!s.ok(), "an error reply made an OK status");
  const std::string& text = s.message();
  FUZZ_CHECK(text.size() <= kStatusMessageBytesMax,
             "a Status message of " + std::to_string(text.size()) + " bytes");
  for (const unsigned char c : text) {
    FUZZ_CHECK(c >= 0x20 && c != 0x7f, "a control character in " + escaped(text));
  }
  FUZZ_CHECK(text.starts_with("ReceiveMessage: "), "the operation in " + escaped(text));
  FUZZ_CHECK(throttled == aws::is_throttling_error(error.code.empty()
                                                       ? "HTTP" + std::to_string(http_status)
                                                       : error.code),
             "throttled");
  if (throttled) FUZZ_CHECK(s.code() == Code::kUnavailable, "a throttled reply's code");
  if (!throttled && error.code == "QueueDoesNotExist") {
    FUZZ_CHECK(s.code() == Code::kNotFound, "the caller's rule: " + s.to_string());
  }
}

// `t` as "DD Mon YYYY HH:MM:SS GMT" and as "YYYYMMDDTHHMMSSZ".
std::string http_date(leasehold::WallTime t) {
  static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                            "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  const time_t seconds =
      std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%02d %s %04d %02d:%02d:%02d GMT", tm.tm_mday, kMonths[tm.tm_mon],
                tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

std::string amz_date(leasehold::WallTime t) {
  const time_t seconds =
      std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d%02d%02dT%02d%02d%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

void check_times(std::string_view date, std::string_view body) {
  if (const auto t = aws::parse_http_date(date)) {
    // The weekday is not checked: the date and time say when.
    if (date.substr(23, 2) != "60") {
      FUZZ_CHECK_EQ(http_date(*t), date.substr(5), "the Date header written again");
    }
  }
  const internal::ErrorReply error = internal::parse_error(body);
  const size_t open = error.message.find('(');
  if (const auto t = aws::service_time(std::nullopt, error.message);
      t && open != std::string::npos) {
    const std::string_view given = std::string_view(error.message).substr(open + 1, 16);
    if (given.substr(13, 2) != "60") {
      FUZZ_CHECK_EQ(amz_date(*t), given, "the service's time written again");
    }
  }
  // What the clock skew learns from it: the service's time, from this clock's.
  leasehold::SimulatedClock clock;
  aws::ClockSkew skew;
  const auto theirs = aws::service_time(date, error.message);
  if (skew.learn(error.code, error.message, date, clock.wall_now(), clock)) {
    FUZZ_CHECK(theirs.has_value(), "a skew learnt without the service's time");
    FUZZ_CHECK(skew.now(clock) == *theirs, "the time signed with after the skew is learnt");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto line = [&input] {
    const size_t end = input.find('\n');
    const std::string_view out = input.substr(0, end);
    input = end == std::string_view::npos ? std::string_view() : input.substr(end + 1);
    return out;
  };
  const std::string_view status_line = line();
  int http_status = 400;
  (void)std::from_chars(status_line.data(), status_line.data() + status_line.size(), http_status);
  const std::string_view request_id = line();
  const std::string_view date = line();
  check_status(http_status, request_id, input);
  check_times(date, input);
  return 0;
}
