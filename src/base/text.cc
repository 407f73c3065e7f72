#include "base/text.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>

namespace leasehold {

Status validate_text(std::string_view what, std::string_view text, size_t bytes_max,
                     bool may_be_empty) {
  if (text.empty() && !may_be_empty) return invalid_argument(std::string(what) + " is empty");
  if (text.size() > bytes_max) {
    return invalid_argument(std::string(what) + " is longer than " + std::to_string(bytes_max) +
                            " bytes");
  }
  for (unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) {
      return invalid_argument(std::string(what) + " contains a control character");
    }
  }
  return {};
}

std::string printable(std::string_view text, size_t bytes_max) {
  std::string out;
  for (const unsigned char c : text.substr(0, bytes_max)) {
    out += (c < 0x20 || c >= 0x7f) ? '?' : static_cast<char>(c);
  }
  if (text.size() > bytes_max) out += "...";
  return out;
}

void append_json_string(std::string_view s, std::string& out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += '"';
  size_t plain = 0;  // the start of the bytes that need no escape
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out.append(s.substr(plain, i - plain));
    plain = i + 1;
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 0xf];
    }
  }
  out.append(s.substr(plain));
  out += '"';
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

bool next_int(std::string_view& text, int64_t& out) {
  const size_t start = text.find_first_not_of(' ');
  if (start == std::string_view::npos) return false;
  text.remove_prefix(start);
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  if (ec != std::errc()) return false;
  text.remove_prefix(static_cast<size_t>(end - text.data()));
  return true;
}

}  // namespace leasehold
