// Byte ranges (RFC 9110 section 14): which part of a file a GET with a
// Range header asks for. The transport sends a file response whole (200),
// one part of it (206 with Content-Range) or nothing (416) by what
// resolve_range() says. Only one range is served: a request for several
// ("bytes=0-1,5-6") gets the whole file, as the RFC allows, rather than a
// multipart answer.
//
// Pure functions; safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace leasehold::server {

struct ByteRange {
  uint64_t first = 0;   // the offset of its first byte
  uint64_t length = 0;  // at least 1 for a part
};

struct RangeAnswer {
  enum class Kind {
    kWhole,          // 200: no Range, a malformed one, another unit, several ranges
    kPart,           // 206: `range`
    kUnsatisfiable,  // 416: the range starts past the end
  };
  Kind kind = Kind::kWhole;
  ByteRange range;  // the whole file for kWhole; empty for kUnsatisfiable
};

// What a Range header (its value, e.g. "bytes=0-99", "bytes=500-",
// "bytes=-100") asks of a file of `size` bytes. A last position past the end
// is taken as the end, and a suffix longer than the file as the whole file
// (206). A range starting at or past the end, or a suffix of 0 bytes, is
// unsatisfiable. Anything malformed (a last position before the first, a
// sign, an empty header) is ignored: the whole file. A file of 0 bytes has
// no part to send, so a satisfiable suffix gets the whole (empty) file.
RangeAnswer resolve_range(std::optional<std::string_view> range_header, uint64_t size);

// Whether a Range applies given the request's If-Range: always without one;
// with one, only if it equals the response's strong ETag or its
// Last-Modified exactly (else the client's copy is stale and it gets the
// whole file).
bool if_range_matches(std::optional<std::string_view> if_range,
                      std::optional<std::string_view> etag,
                      std::optional<std::string_view> last_modified);

// "bytes 0-99/1000": the Content-Range of a 206.
std::string content_range(const ByteRange& range, uint64_t size);
// "bytes */1000": the Content-Range of a 416.
std::string unsatisfied_content_range(uint64_t size);

}  // namespace leasehold::server
