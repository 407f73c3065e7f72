// Text packed for a store item: deflated (zlib's format, RFC 1950), then in
// base64 (RFC 4648), so that a write of repetitive text is billed for a
// fraction of its KB and the item still holds only a string.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace leasehold {

// `text` packed. Empty if zlib failed (it runs out of memory at worst).
std::string pack_text(std::string_view text);

// The text `packed` holds; nullopt if it is not base64 of deflated text, or
// if that text would be longer than `unpacked_max` bytes (which bounds what
// a damaged or hostile item can make a reader allocate).
std::optional<std::string> unpack_text(std::string_view packed, size_t unpacked_max);

}  // namespace leasehold
