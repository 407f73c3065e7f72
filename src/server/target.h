// A request target ("/api/movies/a%20b?x=1") split into its path,
// percent-decoded once ("/api/movies/a b"), and its query, kept as sent
// ("x=1"). Only the origin form is accepted: a target that does not start
// with '/' ("*", "http://host/") is refused.
//
// Pure functions; safe from any thread.
#pragma once

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

}  // namespace leasehold::server
