#include "server/target.h"

#include <charconv>

namespace leasehold::server {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Appends `text` percent-decoded to `out`; '+' is a space when
// `plus_is_space`. Errors name `what`.
Status percent_decode(std::string_view what, std::string_view text, bool plus_is_space,
                      std::string& out) {
  out.reserve(out.size() + text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      const int high = i + 2 < text.size() ? hex_value(text[i + 1]) : -1;
      const int low = high >= 0 ? hex_value(text[i + 2]) : -1;
      if (low < 0) return invalid_argument(std::string(what) + " has a malformed percent-escape");
      c = static_cast<char>(high * 16 + low);
      i += 2;
    } else if (c == '+' && plus_is_space) {
      c = ' ';
    }
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      return invalid_argument(std::string(what) + " holds a control character");
    }
    out.push_back(c);
  }
  return {};
}

}  // namespace

Result<std::optional<std::string>> query_value(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    std::string key;
    if (!percent_decode("", pair.substr(0, eq), true, key).ok() || key != name) continue;
    std::string value;
    if (eq != std::string_view::npos) {
      LEASEHOLD_RETURN_IF_ERROR(percent_decode("query parameter '" + std::string(name) + "'",
                                               pair.substr(eq + 1), true, value));
    }
    return std::optional<std::string>(std::move(value));
  }
  return std::optional<std::string>();
}

Result<size_t> query_count(const std::optional<std::string>& value, std::string_view name,
                           size_t fallback, size_t max) {
  if (!value) return fallback;
  size_t n = 0;
  const char* end = value->data() + value->size();
  const auto [stop, ec] = std::from_chars(value->data(), end, n);
  if (ec != std::errc() || stop != end || n < 1 || n > max) {
    return invalid_argument(std::string(name) + ": expected an integer from 1 to " +
                            std::to_string(max));
  }
  return n;
}

Result<Target> parse_target(std::string_view target) {
  if (target.empty() || target.front() != '/') {
    return invalid_argument("the request target is not a path");
  }
  Target result;
  const size_t question = target.find('?');
  std::string_view path = target.substr(0, question);
  if (question != std::string_view::npos) result.query = std::string(target.substr(question + 1));
  LEASEHOLD_RETURN_IF_ERROR(percent_decode("the request path", path, false, result.path));
  return result;
}

}  // namespace leasehold::server
