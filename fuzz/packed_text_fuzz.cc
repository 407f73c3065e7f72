// Packed text (base/packed.h: deflate, then base64), as store items hold
// it, and the fleet's positions text packed in it (fleet/positions.h).
//
// The first byte picks the parser; the rest is its input.
//   0: packed text from an item. What unpacks is within the bound given.
//   1: any text. Packed, it unpacks to itself, and its packed form is
//      base64 (what an item's string can hold).
//   2: a positions text, after an 8-byte written_at_ms. The positions read,
//      written again at that time, read back the same.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "base/packed.h"
#include "check.h"
#include "fleet/positions.h"

namespace {

namespace fleet = leasehold::fleet;
using leasehold::fuzz::escaped;

constexpr size_t kUnpackedMax = 1 << 16;

void check_unpack(std::string_view packed) {
  const std::optional<std::string> text = leasehold::unpack_text(packed, kUnpackedMax);
  if (!text) return;
  FUZZ_CHECK(text->size() <= kUnpackedMax, "unpacked past the bound");
  const std::string again = leasehold::pack_text(*text);
  const std::optional<std::string> unpacked = leasehold::unpack_text(again, kUnpackedMax);
  FUZZ_CHECK(unpacked && *unpacked == *text, "text unpacked, packed again, reads back otherwise");
}

void check_pack(std::string_view text) {
  const std::string packed = leasehold::pack_text(text);
  FUZZ_CHECK(!packed.empty(), "pack_text failed");
  FUZZ_CHECK(
      packed.find_first_not_of(
          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") == std::string::npos,
      "packed text that is not base64: " + escaped(packed));
  const std::optional<std::string> unpacked =
      leasehold::unpack_text(packed, std::max<size_t>(text.size(), 1));
  FUZZ_CHECK(unpacked.has_value(), "packed text that does not unpack: " + escaped(text));
  FUZZ_CHECK_EQ(*unpacked, text, "the text unpacked");
}

std::string show(const fleet::Positions& positions) {
  std::vector<fleet::Position> list;
  for (const auto& [id, p] : positions) list.push_back(p);
  return escaped(fleet::format_positions(list, 0)) + " (at 0)";
}

void check_positions(std::string_view input) {
  int64_t written_at_ms = 0;
  if (input.size() < sizeof written_at_ms) return;
  std::memcpy(&written_at_ms, input.data(), sizeof written_at_ms);
  const std::string_view text = input.substr(sizeof written_at_ms);
  fleet::Positions positions;
  fleet::parse_positions(text, written_at_ms, positions);
  std::vector<fleet::Position> list;
  for (const auto& [id, p] : positions) {
    FUZZ_CHECK(!id.empty() && id.find_first_of(" \n") == std::string::npos && id == p.id,
               "position ID " + escaped(id));
    list.push_back(p);
  }
  const std::string written = fleet::format_positions(list, written_at_ms);
  fleet::Positions again;
  fleet::parse_positions(written, written_at_ms, again);
  FUZZ_CHECK(again == positions,
             "positions written as " + escaped(written) + " read back as " + show(again));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      check_unpack(input);
      break;
    case 1:
      check_pack(input);
      break;
    case 2:
      check_positions(input);
      break;
  }
  return 0;
}
