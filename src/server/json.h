// JSON bodies for handlers: reading a request's body as a JSON object, and
// answering with a JSON value. It includes Boost.JSON, so only handlers'
// translation units include it; http.h, router.h and server.h stay plain.
//
//   boost::json::object body;
//   if (auto refused = read_json_object(request, body)) return *refused;
//
// Pure functions; safe from any thread.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include "leasehold/status.h"
#include "server/http.h"

namespace leasehold::server {

// Parses the body of `request` into `out`. Returns nullopt on success, or the
// error response to send instead: 415 unsupported_media_type unless the
// Content-Type is application/json (parameters such as charset allowed), 400
// bad_request with a short reason when the body is not JSON or not an object.
// The reason never quotes the body.
std::optional<Response> read_json_object(const Request& request, boost::json::object& out);

// A response with `body` serialised, Content-Type application/json.
Response json_response(int status, const boost::json::value& body);

// A 200 answer that pages poll, tagged so that a poll that finds nothing
// changed costs a 304 and no body: the ETag is a hash of the body, the same
// for the same answer on any server of this build, and the answer is kept
// but asked for again each time (Cache-Control: private, no-cache). Other
// statuses pass unchanged.
Response revalidated(Response response, const Request& request);

// `items` as a JSON array, each element `to_json(item)`.
template <class Items, class ToJson>
boost::json::array json_array(const Items& items, ToJson to_json) {
  boost::json::array out;
  out.reserve(items.size());
  for (const auto& item : items) out.push_back(to_json(item));
  return out;
}

// Fields of a request body. Each reads field `name` of `body` into `out`:
// absent, it is kInvalidArgument ("NAME: missing; expected ...") if
// `required`, else `out` is left as it is; of another type, kInvalidArgument
// ("NAME: expected ..."). Messages start with the field's name, so that a
// form can show them beside it.
Status read_string_field(const boost::json::object& body, std::string_view name, bool required,
                         std::string& out);
// An integer: a JSON integer, or a number with no fractional part.
Status read_int_field(const boost::json::object& body, std::string_view name, bool required,
                      int64_t& out);
// A finite number.
Status read_number_field(const boost::json::object& body, std::string_view name, bool required,
                         double& out);
// kInvalidArgument naming the first field of `body` that is not `allowed`.
Status check_fields(const boost::json::object& body,
                    std::initializer_list<std::string_view> allowed);

}  // namespace leasehold::server
