// JSON bodies for handlers: reading a request's body as a JSON object, and
// answering with a JSON value. It includes Boost.JSON, so only handlers'
// translation units include it; http.h, router.h and server.h stay plain.
//
//   boost::json::object body;
//   if (auto refused = read_json_object(request, body)) return *refused;
//
// Pure functions; safe from any thread.
#pragma once

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <optional>

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

}  // namespace leasehold::server
