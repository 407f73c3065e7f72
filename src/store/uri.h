// Store URIs, "SCHEME:REST" with REST "PATH[?NAME=VALUE&...]", split into
// their parts for open_store(), validate_store_uri() and each backend's own
// parser, so that every backend reads query parameters the same way.
//
// Splitting only: what a scheme's path and parameters may be, and the words
// of its errors, stay with the scheme. Pure functions over views of the
// caller's string; safe from any thread.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "leasehold/status.h"

namespace leasehold::store {

struct SchemeAndRest {
  std::string_view scheme;  // before the first ':'
  std::string_view rest;    // after it
};

// kInvalidArgument, naming the URI and the known forms, when there is no ':'.
Result<SchemeAndRest> split_store_uri(std::string_view uri);

struct PathAndQuery {
  std::string_view path;                  // `rest` up to the first '?'
  std::optional<std::string_view> query;  // after it; nullopt when there is no '?'
};

PathAndQuery split_path_and_query(std::string_view rest);

struct UriParam {
  std::string_view name;   // before the first '='; the whole part without one
  std::string_view value;  // after the first '='; empty without one
  std::string_view text;   // the whole part, for error messages
  bool has_equals = false;
};

// "a=1&b=2" split at each '&', and each part at its first '='. No decoding
// and no judgement: an empty part (from "a=1&&b=2" or a leading '&') comes
// back as a part with empty text for its scheme to refuse; a trailing '&'
// ends the list.
std::vector<UriParam> split_uri_params(std::string_view query);

}  // namespace leasehold::store
