// JSON request bodies (server/json.h): read_json_object(), which every
// handler that takes a body calls first, and the readers of its fields.
//
// Input: the Content-Type header's value, a newline, then the body.
// Properties: a body taken is a JSON object whose text, written again,
// parses to the same object (unless it holds a number past a double's
// range, which JSON cannot write); an integer field read is the number the
// body holds, exactly; a number field read is finite; a string field read
// is the field's string. A body refused is refused with 400 or 415, never
// with a 5xx.
#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "check.h"
#include "server/json.h"

namespace {

namespace json = boost::json;
namespace server = leasehold::server;
using leasehold::fuzz::escaped;

// Equal, but for doubles, which Boost.JSON's default parser may read back
// a unit in the last place away from what it wrote.
bool same(const json::value& a, const json::value& b) {
  if (a.is_double() && b.is_double()) {
    const double x = a.get_double(), y = b.get_double();
    return x == y || std::fabs(x - y) <= 1e-15 * std::max(std::fabs(x), std::fabs(y));
  }
  if (a.kind() != b.kind()) return false;
  if (a.is_object()) {
    const json::object &x = a.get_object(), &y = b.get_object();
    if (x.size() != y.size()) return false;
    for (auto i = x.begin(), j = y.begin(); i != x.end(); ++i, ++j) {
      if (i->key() != j->key() || !same(i->value(), j->value())) return false;
    }
    return true;
  }
  if (a.is_array()) {
    const json::array &x = a.get_array(), &y = b.get_array();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!same(x[i], y[i])) return false;
    }
    return true;
  }
  return a == b;
}

// Whether `v` holds a number that is not finite ("1e400" parses to
// infinity), which JSON cannot write: Boost.JSON serialises it as Infinity.
bool has_non_finite(const json::value& v) {
  if (v.is_double()) return !std::isfinite(v.get_double());
  if (v.is_object()) {
    for (const auto& field : v.get_object()) {
      if (has_non_finite(field.value())) return true;
    }
  }
  if (v.is_array()) {
    for (const json::value& e : v.get_array()) {
      if (has_non_finite(e)) return true;
    }
  }
  return false;
}

void check_fields(const json::object& body) {
  for (const auto& [key, value] : body) {
    const std::string_view name = key;
    std::string text;
    if (server::read_string_field(body, name, true, text).ok()) {
      FUZZ_CHECK(value.is_string() && text == std::string_view(value.get_string()),
                 "read_string_field of " + escaped(name));
    }
    int64_t n = 0;
    if (server::read_int_field(body, name, true, n).ok()) {
      FUZZ_CHECK(value.is_number(), "read_int_field took a non-number " + escaped(name));
      if (value.is_int64()) FUZZ_CHECK_EQ(n, value.get_int64(), "an int64 field");
      if (value.is_uint64()) FUZZ_CHECK(static_cast<uint64_t>(n) == value.get_uint64(), "a uint64");
      if (value.is_double()) {
        FUZZ_CHECK(static_cast<double>(n) == value.get_double(),
                   "an integral double read as " + std::to_string(n));
      }
    }
    double d = 0;
    if (server::read_number_field(body, name, true, d).ok()) {
      FUZZ_CHECK(std::isfinite(d) && value.is_number(), "read_number_field of " + escaped(name));
    }
  }
  // No field is allowed: the first one is named.
  const leasehold::Status unknown = server::check_fields(body, {});
  FUZZ_CHECK(unknown.ok() == body.empty(), "check_fields with nothing allowed");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  server::Request request;
  request.method = "POST";
  request.target = request.path = "/api/x";
  if (newline != std::string_view::npos) {
    request.headers.emplace_back("content-type", std::string(input.substr(0, newline)));
    request.body = std::string(input.substr(newline + 1));
  } else {
    request.body = std::string(input);
  }
  json::object body;
  const std::optional<server::Response> refused = server::read_json_object(request, body);
  if (refused) {
    FUZZ_CHECK(refused->status == 400 || refused->status == 415,
               "a body refused with " + std::to_string(refused->status));
    return 0;
  }
  check_fields(body);
  if (has_non_finite(json::value(body))) return 0;
  const std::string text = json::serialize(body);
  json::error_code ec;
  const json::value again = json::parse(text, ec);
  FUZZ_CHECK(!ec && same(again, json::value(body)),
             "the body written again does not read back: " + escaped(text));
  return 0;
}
