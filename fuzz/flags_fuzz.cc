// Command-line flags (cli/validate.h, base/duration.h): durations, byte
// sizes, lease ttls and graces, and the checks of keys, owners, tokens and
// slots.
//
// The first byte picks the parser; the rest is the flag's value (for
// --grace, a ttl, a newline, then the grace).
// Properties: a duration taken is at most 1000 days and reads back the
// same from format_duration(); a size taken is 1 to 2^62 bytes, a whole
// number of its unit; a grace taken is in (0, kGraceMax]; a key, owner or
// slot taken is non-empty, within its limit and free of control characters.
#include <cstdint>
#include <string>
#include <string_view>

#include "base/duration.h"
#include "check.h"
#include "cli/validate.h"

namespace {

namespace cli = leasehold::cli;
using leasehold::Duration;
using leasehold::fuzz::escaped;

void check_duration(std::string_view text) {
  const auto d = leasehold::parse_duration(text);
  if (!d.ok()) return;
  FUZZ_CHECK(*d >= Duration::zero() && *d <= std::chrono::hours(24 * 1000),
             "duration " + escaped(text));
  const std::string formatted = leasehold::format_duration(*d);
  const auto again = leasehold::parse_duration(formatted);
  FUZZ_CHECK(again.ok() && *again == *d,
             escaped(text) + " formatted as " + escaped(formatted) + " reads back otherwise");
}

void check_size(std::string_view text) {
  const auto bytes = cli::parse_byte_size("--part-size", text);
  if (!bytes.ok()) return;
  FUZZ_CHECK(*bytes >= 1 && *bytes <= (uint64_t{1} << 62), "size " + escaped(text));
  const size_t digits = text.find_first_not_of("0123456789");
  const std::string_view number = text.substr(0, digits);
  FUZZ_CHECK(
      std::stoull(std::string(number)) != 0 && *bytes % std::stoull(std::string(number)) == 0,
      "size " + escaped(text) + " read as " + std::to_string(*bytes));
}

void check_lease_times(std::string_view text) {
  const size_t newline = text.find('\n');
  const auto ttl = cli::parse_ttl(text.substr(0, newline));
  if (!ttl.ok()) return;
  std::optional<std::string> grace_text;
  if (newline != std::string_view::npos) grace_text = std::string(text.substr(newline + 1));
  const auto grace = cli::parse_grace(grace_text, *ttl);
  if (!grace.ok()) return;
  FUZZ_CHECK(*grace > Duration::zero() && *grace <= cli::kGraceMax && *grace < *ttl,
             "grace " + escaped(text));
}

bool has_control(std::string_view text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) return true;
  }
  return false;
}

void check_names(std::string_view text) {
  if (cli::check_key(text).ok()) {
    FUZZ_CHECK(!text.empty() && text.size() <= cli::kKeyBytesMax && !has_control(text),
               "key " + escaped(text));
  }
  if (cli::check_owner(text).ok()) {
    FUZZ_CHECK(!text.empty() && !has_control(text), "owner " + escaped(text));
  }
  if (cli::check_holder(text).ok()) FUZZ_CHECK(!has_control(text), "holder " + escaped(text));
  if (cli::check_slot(text).ok()) {
    FUZZ_CHECK(!text.empty() && text.size() <= cli::kSlotBytesMax && !has_control(text),
               "slot " + escaped(text));
  }
  if (cli::check_token(text).ok()) FUZZ_CHECK_EQ(text.size(), size_t{32}, "token " + escaped(text));
  (void)cli::parse_mode(text);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 4) {
    case 0:
      check_duration(text);
      break;
    case 1:
      check_size(text);
      break;
    case 2:
      check_lease_times(text);
      break;
    case 3:
      check_names(text);
      break;
  }
  return 0;
}
