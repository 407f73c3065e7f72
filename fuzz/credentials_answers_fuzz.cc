// The answers of the sources of AWS credentials (aws/credentials_internal.h):
// the container endpoint's and IMDS's JSON, a credential_process's output,
// STS's XML, the ISO 8601 times they all carry, and the credential_process
// command line split into words.
//
// The first byte picks the parser; the rest is its input.
// Properties: credentials taken have a key ID and a secret (and, from STS,
// a session token and an expiry); an error never quotes the answer, which
// holds the secret; a time taken is one that exists, and reads back the
// same from its own canonical text; a command line's words, quoted again,
// split to the same words.
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "aws/credentials_internal.h"
#include "check.h"

namespace {

namespace internal = leasehold::aws::credentials_internal;
using leasehold::WallTime;
using leasehold::fuzz::escaped;

void check_taken(const leasehold::Result<internal::ExpiringCredentials>& got,
                 std::string_view answer, bool from_sts) {
  if (!got.ok()) {
    // A whole document (the messages quote at most an error code from one,
    // never its braces or tags), long enough not to be among their words.
    if (answer.size() >= 24 && answer.find_first_of("{<") != std::string_view::npos) {
      FUZZ_CHECK(got.status().message().find(answer) == std::string::npos,
                 "an error quotes the answer: " + escaped(got.status().message()));
    }
    return;
  }
  FUZZ_CHECK(!got->credentials.access_key_id.empty() && !got->credentials.secret_access_key.empty(),
             "credentials without a key");
  if (from_sts) {
    FUZZ_CHECK(!got->credentials.session_token.empty() && got->expires.has_value(),
               "STS credentials without a token or an expiry");
  }
}

std::string canonical(WallTime t) {
  const time_t seconds =
      std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[64];
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
  return text;
}

void check_time(std::string_view text) {
  const std::optional<WallTime> t = internal::parse_iso8601_utc(text);
  if (!t) return;
  const std::string again_text = canonical(*t);
  // The date and time as given: no field out of its range, moved into the next.
  FUZZ_CHECK_EQ(again_text.substr(0, 19), std::string(text.substr(0, 19)),
                "the time taken from " + escaped(text));
  const std::optional<WallTime> again = internal::parse_iso8601_utc(again_text);
  FUZZ_CHECK(again && std::chrono::floor<std::chrono::seconds>(*t) == *again,
             "the time read back from " + again_text);
}

void check_command(std::string_view command) {
  const auto words = internal::split_command(command);
  if (!words.ok()) return;
  std::string quoted;
  for (const std::string& word : *words) {
    quoted += quoted.empty() ? "'" : " '";
    for (const char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    quoted += '\'';
  }
  const auto again = internal::split_command(quoted);
  FUZZ_CHECK(again.ok() && *again == *words, "the words quoted again: " + escaped(quoted));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 5) {
    case 0:
      check_taken(internal::parse_credentials_json(input, "the container endpoint", "Token"), input,
                  false);
      break;
    case 1:
      check_taken(internal::parse_process_output(input), input, false);
      break;
    case 2:
      check_taken(internal::parse_sts_reply(data[0] & 0x80 ? 200 : 403, input, "AssumeRole"), input,
                  data[0] & 0x80);
      break;
    case 3:
      check_time(input);
      break;
    case 4:
      check_command(input);
      break;
  }
  return 0;
}
