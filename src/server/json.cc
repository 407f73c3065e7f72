#include "server/json.h"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

#include "base/text.h"
#include "server/errors.h"

namespace leasehold::server {
namespace {

// True for "application/json" and "Application/JSON; charset=utf-8".
bool is_json_media_type(std::string_view content_type) {
  std::string_view type = content_type.substr(0, content_type.find(';'));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
  return equal_ignoring_case(type, "application/json");
}

}  // namespace

std::optional<Response> read_json_object(const Request& request, boost::json::object& out) {
  const auto content_type = request.header("content-type");
  if (!content_type || !is_json_media_type(*content_type)) {
    return error_response(415, "the request body must be application/json");
  }
  if (request.body.empty()) return error_response(400, "the request body is empty");
  boost::system::error_code ec;
  boost::json::value value = boost::json::parse(request.body, ec);
  // The parser's message names the kind of error ("syntax error"), never
  // the input.
  if (ec) return error_response(400, "the request body is not valid JSON: " + ec.message());
  if (!value.is_object()) return error_response(400, "the request body must be a JSON object");
  out = std::move(value.as_object());
  return std::nullopt;
}

Response json_response(int status, const boost::json::value& body) {
  Response response{.status = status, .headers = {}, .body = boost::json::serialize(body)};
  response.set_header("Content-Type", "application/json");
  return response;
}

namespace {

// W/"<hash>-<size>": the same for the same text on any server of this build.
std::string weak_tag(std::string_view tagged) {
  char tag[48];
  std::snprintf(tag, sizeof tag, "W/\"%016zx-%zx\"", std::hash<std::string_view>{}(tagged),
                tagged.size());
  return tag;
}

Response tagged(Response r, const Request& request, const std::string& tag) {
  // etag_matches compares weakly: it takes the tag without its W/.
  const std::string_view opaque = std::string_view(tag).substr(2);
  if (etag_matches(request.header("if-none-match").value_or(""), opaque)) {
    r = Response{.status = 304, .headers = {}, .body = {}};
  }
  r.set_header("ETag", tag);
  r.set_header("Cache-Control", "private, no-cache");
  return r;
}

}  // namespace

Response revalidated(Response r, const Request& request) {
  if (r.status != 200) return r;
  const std::string tag = weak_tag(r.body);
  return tagged(std::move(r), request, tag);
}

namespace {

Status missing_or_kept(std::string_view name, bool required, std::string_view expected) {
  if (!required) return {};
  return invalid_argument(std::string(name) + ": missing; expected " + std::string(expected));
}

Status wrong_type(std::string_view name, std::string_view expected) {
  return invalid_argument(std::string(name) + ": expected " + std::string(expected));
}

}  // namespace

Status read_string_field(const boost::json::object& body, std::string_view name, bool required,
                         std::string& out) {
  const boost::json::value* value = body.if_contains(name);
  if (value == nullptr) return missing_or_kept(name, required, "a string");
  if (!value->is_string()) return wrong_type(name, "a string");
  out = std::string(value->as_string());
  return {};
}

Status read_int_field(const boost::json::object& body, std::string_view name, bool required,
                      int64_t& out) {
  constexpr std::string_view kExpected = "an integer";
  const boost::json::value* value = body.if_contains(name);
  if (value == nullptr) return missing_or_kept(name, required, kExpected);
  if (value->is_int64()) {
    out = value->as_int64();
  } else if (value->is_uint64()) {
    if (value->as_uint64() > static_cast<uint64_t>(INT64_MAX)) return wrong_type(name, kExpected);
    out = static_cast<int64_t>(value->as_uint64());
  } else if (value->is_double()) {
    const double d = value->as_double();
    // 2^63 is the first double past int64's range.
    if (!(d >= -9.2233720368547758e18 && d < 9.2233720368547758e18) || d != std::trunc(d)) {
      return wrong_type(name, kExpected);
    }
    out = static_cast<int64_t>(d);
  } else {
    return wrong_type(name, kExpected);
  }
  return {};
}

Status read_number_field(const boost::json::object& body, std::string_view name, bool required,
                         double& out) {
  constexpr std::string_view kExpected = "a number";
  const boost::json::value* value = body.if_contains(name);
  if (value == nullptr) return missing_or_kept(name, required, kExpected);
  if (!value->is_number()) return wrong_type(name, kExpected);
  const double d = value->to_number<double>();
  if (!std::isfinite(d)) return wrong_type(name, kExpected);
  out = d;
  return {};
}

Status check_fields(const boost::json::object& body,
                    std::initializer_list<std::string_view> allowed) {
  for (const auto& field : body) {
    if (std::find(allowed.begin(), allowed.end(), field.key()) != allowed.end()) continue;
    std::string names;
    for (std::string_view a : allowed) names += (names.empty() ? "" : ", ") + std::string(a);
    return invalid_argument("unknown field '" + std::string(field.key().substr(0, 64)) +
                            "': expected " + names);
  }
  return {};
}

}  // namespace leasehold::server
