// Request and Response lookups.
#include "server/http.h"

#include <algorithm>
#include <cctype>

namespace leasehold::server {
namespace {

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace

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

}  // namespace leasehold::server
