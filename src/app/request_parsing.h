// What the app reads from a request before it calls a service: the
// credentials it carries (a bearer token, the session cookie), the bodies
// of POST /api/fleet/connections and PUT /api/movies/{id}/markers, an
// upload's movie name and a frame image's name in a path. Pure functions of
// what the client sent, kept apart from the handlers that use them (app.cc,
// fleet_api.cc, movies_api.cc) in a library of their own,
// leasehold_app_requests, so that the fuzz target (fuzz/app_requests_fuzz.cc)
// links them without the app.
//
// Private to app/: include it only from app/'s files and the fuzz target.
// Safe from any thread.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fleet/connections.h"
#include "leasehold/status.h"
#include "server/http.h"
#include "tracer/tracer.h"

namespace leasehold::app {

// The cookie that carries a browser's session (App's sign-in sets it).
inline constexpr char kSessionCookie[] = "leasehold_session";

// The value of cookie `name` in the request's Cookie headers: that of the
// first pair "NAME=VALUE" (pairs split at ';', spaces before a name
// skipped), as sent; nullopt if no pair has that name.
std::optional<std::string_view> cookie_value(const server::Request& request, std::string_view name);

// The token of "Authorization: Bearer TOKEN" (the scheme in any case),
// what follows "Bearer " as sent. Credentials of another kind (or "Bearer "
// alone) give an empty token, which no check takes; nullopt when the
// request has no Authorization header.
std::optional<std::string_view> bearer_token(const server::Request& request);

// The body of POST /api/fleet/connections: {"id", "url", "seq_field"?,
// "stopped"?} and nothing else, each as fleet/connections.h's checks
// accept it (validate_connection_id, validate_url_template,
// validate_seq_field). kInvalidArgument otherwise, its message starting
// with the field it is about ("url: ..."), so that a form can show it
// beside that field.
Result<fleet::NewConnection> parse_new_connection(const boost::json::object& body);

// The markers of PUT /api/movies/{id}/markers: body["markers"], an array of
// at most movies::kMarkersMax objects {"id", "label"?, "frame", "x", "y"}
// and no other field: id and label strings, frame an integer, x and y
// finite numbers. kInvalidArgument naming the marker ("markers[2]: ...").
// Their bounds against the movie (its frames, width and height, unique IDs)
// are Movies::set_markers()'s to check.
Result<std::vector<tracer::Marker>> parse_markers(const boost::json::object& body);

// An upload's movie name: the query's `name` (?name=NAME), percent-decoded,
// 1 to movies::kMovieNameBytesMax bytes with no control character; else
// kInvalidArgument.
Result<std::string> movie_name(const server::Request& request);

// The frame a frame image's name ("N.jpg") names: N a plain decimal, with no
// sign and no leading zero (so that each frame has one URL to cache), from
// 0 to INT64_MAX; nullopt for any other name.
std::optional<int64_t> frame_number(std::string_view name);

}  // namespace leasehold::app
