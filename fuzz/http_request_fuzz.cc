// The parts of an HTTP request the server reads before any handler: the
// request target (server/target.h: its path, percent-decoded once, and the
// values of its query) and the Range and If-Range headers (server/range.h).
//
// The first byte picks the parser; the rest is its input.
//   0: a request target. Accepted, its path holds no control character, and
//      the path percent-encoded again, with the query as it was, reads back
//      the same.
//   1: a query and a parameter name (before the first NUL). A value found
//      is free of control characters, and that value percent-encoded as
//      the only pair reads back the same.
//   2: a Range header and a file size (the first 8 bytes). A part lies
//      within the file and is not empty; the whole file is the whole file;
//      Content-Range reads back as the part; a weak ETag never satisfies
//      If-Range (the next three lines: If-Range, ETag, Last-Modified).
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "aws/sigv4.h"
#include "check.h"
#include "server/range.h"
#include "server/target.h"

namespace {

using leasehold::aws::uri_encode;
using leasehold::fuzz::escaped;
namespace server = leasehold::server;

bool has_control(std::string_view text) {
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) return true;
  }
  return false;
}

void check_target(std::string_view text) {
  const auto target = server::parse_target(text);
  if (!target.ok()) return;
  FUZZ_CHECK(!has_control(target->path),
             "a control character in the path " + escaped(target->path));
  FUZZ_CHECK(target->path.starts_with('/'), "a path that is not one: " + escaped(target->path));
  const std::string again_text = uri_encode(target->path, /*keep_slash=*/true) +
                                 (text.find('?') != std::string_view::npos ? "?" : "") +
                                 target->query;
  const auto again = server::parse_target(again_text);
  FUZZ_CHECK(again.ok(), "the path encoded again is refused: " + escaped(again_text));
  FUZZ_CHECK_EQ(again->path, target->path, "the path read back from " + escaped(again_text));
  FUZZ_CHECK_EQ(again->query, target->query, "the query read back");
}

void check_query(std::string_view text) {
  const size_t nul = text.find('\0');
  const std::string_view name = text.substr(0, nul);
  const std::string_view query = nul == std::string_view::npos ? "" : text.substr(nul + 1);
  const auto value = server::query_value(query, name);
  if (!value.ok() || !value->has_value()) return;
  FUZZ_CHECK(!has_control(**value), "a control character in the value " + escaped(**value));
  const std::string pair = uri_encode(name, /*keep_slash=*/true) + "=" + uri_encode(**value, /*keep_slash=*/true);
  const auto again = server::query_value(pair, name);
  FUZZ_CHECK(again.ok() && again->has_value(), "the value encoded again is not found: " + pair);
  FUZZ_CHECK_EQ(**again, **value, "the value read back from " + pair);
  (void)server::query_count(*value, "limit", 10, 1000);
}

void check_range(std::string_view text) {
  uint64_t size = 0;
  if (text.size() >= sizeof size) {
    std::memcpy(&size, text.data(), sizeof size);
    text.remove_prefix(sizeof size);
  }
  // Small sizes as often as large ones.
  if (size & 1) size = (size >> 1) % 4096;
  const size_t newline = text.find('\n');
  const std::string_view range = text.substr(0, newline);
  using Kind = server::RangeAnswer::Kind;
  const server::RangeAnswer answer = server::resolve_range(range, size);
  const std::string shown = escaped(range) + " of " + std::to_string(size) + " bytes";
  switch (answer.kind) {
    case Kind::kWhole:
      FUZZ_CHECK(answer.range.first == 0 && answer.range.length == size,
                 "kWhole is not the whole file: " + shown);
      break;
    case Kind::kPart: {
      FUZZ_CHECK(answer.range.length >= 1 && answer.range.first < size &&
                     answer.range.length <= size - answer.range.first,
                 "a part outside the file: " + shown);
      const std::string content = server::content_range(answer.range, size);
      const std::string expected = "bytes " + std::to_string(answer.range.first) + "-" +
                                   std::to_string(answer.range.first + answer.range.length - 1) +
                                   "/" + std::to_string(size);
      FUZZ_CHECK_EQ(content, expected, "Content-Range of " + shown);
      break;
    }
    case Kind::kUnsatisfiable:
      FUZZ_CHECK_EQ(server::unsatisfied_content_range(size), "bytes */" + std::to_string(size),
                    "Content-Range of a 416");
      break;
  }
  if (newline != std::string_view::npos) {
    // The rest: If-Range, ETag and Last-Modified, a line each.
    std::string_view rest = text.substr(newline + 1);
    std::string_view lines[3];
    for (std::string_view& line : lines) {
      const size_t end = rest.find('\n');
      line = rest.substr(0, end);
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
    }
    FUZZ_CHECK(server::if_range_matches(std::nullopt, lines[1], lines[2]),
               "a Range without If-Range must apply");
    if (lines[1].starts_with("W/")) {
      FUZZ_CHECK(!server::if_range_matches(lines[0], lines[1], std::nullopt),
                 "a weak ETag matched If-Range " + escaped(lines[0]));
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      check_target(input);
      break;
    case 1:
      check_query(input);
      break;
    case 2:
      check_range(input);
      break;
  }
  return 0;
}
