#include "server/json.h"

#include <algorithm>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cctype>
#include <string>
#include <string_view>

#include "server/errors.h"

namespace leasehold::server {
namespace {

// True for "application/json" and "Application/JSON; charset=utf-8".
bool is_json_media_type(std::string_view content_type) {
  std::string_view type = content_type.substr(0, content_type.find(';'));
  while (!type.empty() && (type.back() == ' ' || type.back() == '\t')) type.remove_suffix(1);
  constexpr std::string_view kJson = "application/json";
  return std::ranges::equal(
      type, kJson, [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; });
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

}  // namespace leasehold::server
