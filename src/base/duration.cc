#include "base/duration.h"

#include <charconv>
#include <limits>

namespace leasehold {

Result<Duration> parse_duration(std::string_view text) {
  const auto bad = [&](std::string_view why) {
    return invalid_argument("invalid duration '" + std::string(text) + "': " + std::string(why) +
                            " (examples: 1500ms, 20s, 15m)");
  };
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return bad("expected a number");
  int64_t n = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + digits, n);
  if (ec != std::errc() || ptr != text.data() + digits) return bad("number out of range");
  const std::string_view unit = text.substr(digits);
  int64_t ms_per_unit = 0;
  if (unit == "ms")
    ms_per_unit = 1;
  else if (unit == "s")
    ms_per_unit = 1000;
  else if (unit == "m")
    ms_per_unit = 60'000;
  else if (unit == "h")
    ms_per_unit = 3'600'000;
  else if (unit.empty() && n == 0)
    return Duration::zero();  // zero needs no unit
  else if (unit.empty())
    return bad("missing unit");
  else
    return bad("unknown unit '" + std::string(unit) + "'");
  // Cap at 1000 days: far past any sensible lease, far from overflow.
  constexpr int64_t kMaxMs = int64_t{1000} * 24 * 3'600'000;
  if (n > kMaxMs / ms_per_unit) return bad("longer than 1000 days");
  return Duration(std::chrono::milliseconds(n * ms_per_unit));
}

std::string format_duration(Duration d) {
  const int64_t ms = to_ms(d);
  if (ms != 0 && ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms != 0 && ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace leasehold
