// Parsing and printing of human durations: "1500ms", "20s", "15m", "2h".
#pragma once

#include <string>
#include <string_view>

#include "leasehold/clock.h"
#include "leasehold/status.h"

namespace leasehold {

// Parses a positive integer followed by one unit: ms, s, m or h. Bare numbers
// are refused so that "20" is never silently read as 20 ms or 20 s.
Result<Duration> parse_duration(std::string_view text);

// The shortest exact form: 1500ms, 20s, 15m.
std::string format_duration(Duration d);

}  // namespace leasehold
