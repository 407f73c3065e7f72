// What the fuzz targets check besides crashes: a property that does not
// hold aborts the run, after printing what differed, so that libFuzzer keeps
// the input as a crash and the replay test (fuzz_replay.<name>) fails on it.
//
//   FUZZ_CHECK(decoded.ok(), "encode_item's output does not decode: " + text);
//   FUZZ_CHECK_EQ(reparsed->path, target->path, "the path read back");
//
// Header only; the targets are single-threaded.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>

namespace leasehold::fuzz {

// `bytes` printable: control characters, '\\', '"' and bytes past ASCII as
// escapes, so that a report shows exactly what differed.
inline std::string escaped(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (const char c : bytes) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (byte < 0x20 || byte >= 0x7f) {
      out += "\\x";
      out += kHex[byte >> 4];
      out += kHex[byte & 0xf];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

[[noreturn]] inline void fail(const char* condition, const char* file, int line,
                              const std::string& detail) {
  std::fprintf(stderr, "%s:%d: property failed: %s\n  %s\n", file, line, condition, detail.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace leasehold::fuzz

#define FUZZ_CHECK(condition, detail)                                                    \
  do {                                                                                   \
    if (!(condition)) ::leasehold::fuzz::fail(#condition, __FILE__, __LINE__, (detail)); \
  } while (false)

// Strings (or anything with a std::string conversion through `show`) equal.
#define FUZZ_CHECK_EQ(actual, expected, what)                                                  \
  do {                                                                                         \
    if (!((actual) == (expected))) {                                                           \
      ::leasehold::fuzz::fail(#actual " == " #expected, __FILE__, __LINE__,                    \
                              std::string(what) + ": got " + ::leasehold::fuzz::show(actual) + \
                                  ", expected " + ::leasehold::fuzz::show(expected));          \
    }                                                                                          \
  } while (false)

namespace leasehold::fuzz {

inline std::string show(std::string_view s) { return escaped(s); }
inline std::string show(const std::string& s) { return escaped(s); }
inline std::string show(const char* s) { return escaped(s); }
template <class Int>
requires std::is_integral_v<Int> std::string show(Int n) { return std::to_string(n); }

}  // namespace leasehold::fuzz
