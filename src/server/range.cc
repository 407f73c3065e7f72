// Range parsing: one "bytes=" range-spec, with the RFC's rules for what is
// ignored, what is clamped and what cannot be satisfied.
#include "server/range.h"

#include <algorithm>
#include <limits>

#include "base/text.h"

namespace leasehold::server {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Decimal digits only, at least one; a number past 2^64 - 1 saturates, which
// every caller handles as "past the end of any file".
std::optional<uint64_t> parse_position(std::string_view text) {
  if (text.empty()) return std::nullopt;
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto digit = static_cast<uint64_t>(c - '0');
    value = value > (kMax - digit) / 10 ? kMax : value * 10 + digit;
  }
  return value;
}

}  // namespace

RangeAnswer resolve_range(std::optional<std::string_view> range_header, uint64_t size) {
  using Kind = RangeAnswer::Kind;
  const RangeAnswer whole{.kind = Kind::kWhole, .range = {.first = 0, .length = size}};
  const RangeAnswer unsatisfiable{.kind = Kind::kUnsatisfiable, .range = {}};
  if (!range_header) return whole;
  const std::string_view value = trim(*range_header);
  const size_t equals = value.find('=');
  if (equals == std::string_view::npos ||
      !equal_ignoring_case(trim(value.substr(0, equals)), "bytes")) {
    return whole;
  }
  const std::string_view spec = trim(value.substr(equals + 1));
  const size_t dash = spec.find('-');
  if (spec.find(',') != std::string_view::npos || dash == std::string_view::npos) return whole;
  const std::string_view first_text = trim(spec.substr(0, dash));
  const std::string_view last_text = trim(spec.substr(dash + 1));
  if (first_text.empty()) {  // "-n": the last n bytes
    const std::optional<uint64_t> suffix = parse_position(last_text);
    if (!suffix) return whole;
    if (*suffix == 0) return unsatisfiable;
    if (size == 0) return whole;
    const uint64_t length = std::min(*suffix, size);
    return {.kind = Kind::kPart, .range = {.first = size - length, .length = length}};
  }
  const std::optional<uint64_t> first = parse_position(first_text);
  if (!first) return whole;
  std::optional<uint64_t> last;
  if (!last_text.empty()) {
    last = parse_position(last_text);
    if (!last || *last < *first) return whole;
  }
  if (*first >= size) return unsatisfiable;
  const uint64_t end = last ? std::min(*last, size - 1) : size - 1;
  return {.kind = Kind::kPart, .range = {.first = *first, .length = end - *first + 1}};
}

bool if_range_matches(std::optional<std::string_view> if_range,
                      std::optional<std::string_view> etag,
                      std::optional<std::string_view> last_modified) {
  if (!if_range) return true;
  const std::string_view validator = trim(*if_range);
  if (etag && !etag->starts_with("W/") && validator == trim(*etag)) return true;
  return last_modified && validator == trim(*last_modified);
}

std::string content_range(const ByteRange& range, uint64_t size) {
  return "bytes " + std::to_string(range.first) + "-" +
         std::to_string(range.first + range.length - 1) + "/" + std::to_string(size);
}

std::string unsatisfied_content_range(uint64_t size) { return "bytes */" + std::to_string(size); }

}  // namespace leasehold::server
