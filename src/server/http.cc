// Request and Response lookups, and If-None-Match.
#include "server/http.h"

#include <algorithm>

#include "base/text.h"

namespace leasehold::server {

std::optional<std::string_view> Request::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) return value;
  }
  return std::nullopt;
}

Response& Response::set_header(std::string name, std::string value) {
  std::erase_if(headers, [&](const auto& h) { return equal_ignoring_case(h.first, name); });
  headers.emplace_back(std::move(name), std::move(value));
  return *this;
}

std::optional<std::string_view> Response::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (equal_ignoring_case(key, name)) return value;
  }
  return std::nullopt;
}

bool etag_matches(std::string_view if_none_match, std::string_view etag) {
  if (if_none_match == "*") return true;
  while (!if_none_match.empty()) {
    const size_t comma = if_none_match.find(',');
    std::string_view candidate = if_none_match.substr(0, comma);
    while (!candidate.empty() && candidate.front() == ' ') candidate.remove_prefix(1);
    while (!candidate.empty() && candidate.back() == ' ') candidate.remove_suffix(1);
    if (candidate.starts_with("W/")) candidate.remove_prefix(2);
    if (candidate == etag) return true;
    if (comma == std::string_view::npos) break;
    if_none_match.remove_prefix(comma + 1);
  }
  return false;
}

}  // namespace leasehold::server
