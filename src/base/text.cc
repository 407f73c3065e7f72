#include "base/text.h"

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

}  // namespace leasehold
