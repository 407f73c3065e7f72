// A request target ("/api/movies/a%20b?x=1") split into its path,
// percent-decoded once ("/api/movies/a b"), and its query, kept as sent
// ("x=1"). Only the origin form is accepted: a target that does not start
// with '/' ("*", "http://host/") is refused.
//
// Pure functions; safe from any thread.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "leasehold/status.h"

namespace leasehold::server {

struct Target {
  std::string path;   // decoded once: "%2e%2e" is "..", "%252e" is "%2e"
  std::string query;  // after the first '?', not decoded; empty if none
};

// kInvalidArgument for a target not in origin form, a '%' not followed by two
// hex digits, or a decoded path holding a control character (NUL, CR, LF,
// ...), which no file or route name has and a log must not receive.
Result<Target> parse_target(std::string_view target);

// The value of the first `name=value` pair of a query ("name=a%20b&x=1"),
// percent-decoded, with '+' read as a space (the form encoding); nullopt if
// the query has no such pair ("name" alone is an empty value).
// kInvalidArgument for a malformed percent-escape or a control character in
// the value.
Result<std::optional<std::string>> query_value(std::string_view query, std::string_view name);

// A count a query parameter gives (`limit=100`): `value` as an integer from
// 1 to `max`, or `fallback` if absent; else kInvalidArgument ("NAME:
// expected an integer from 1 to MAX").
Result<size_t> query_count(const std::optional<std::string>& value, std::string_view name,
                           size_t fallback, size_t max);

}  // namespace leasehold::server
