#include "server/target.h"

namespace leasehold::server {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Result<Target> parse_target(std::string_view target) {
  if (target.empty() || target.front() != '/') {
    return invalid_argument("the request target is not a path");
  }
  Target result;
  const size_t question = target.find('?');
  std::string_view path = target.substr(0, question);
  if (question != std::string_view::npos) result.query = std::string(target.substr(question + 1));
  result.path.reserve(path.size());
  for (size_t i = 0; i < path.size(); ++i) {
    char c = path[i];
    if (c == '%') {
      const int high = i + 2 < path.size() ? hex_value(path[i + 1]) : -1;
      const int low = high >= 0 ? hex_value(path[i + 2]) : -1;
      if (low < 0) return invalid_argument("the request path has a malformed percent-escape");
      c = static_cast<char>(high * 16 + low);
      i += 2;
    }
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      return invalid_argument("the request path holds a control character");
    }
    result.path.push_back(c);
  }
  return result;
}

}  // namespace leasehold::server
