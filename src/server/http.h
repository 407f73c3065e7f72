// Request and Response: an HTTP exchange as the server's handlers see it,
// in plain C++. Handlers never see sockets or Beast types: the transport
// (server/transport.cc) parses the request, finds the route, reads the body
// within the route's limit, runs the handler and writes the response.
//
// Plain values; not synchronised.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace leasehold::server {

// The authenticated sender of a request.
struct Caller {
  std::string name;
  std::string display_name;
  bool admin = false;
};

struct Request {
  std::string method;  // "GET", "POST", ...
  std::string target;  // as sent: "/api/movies/7?x=1"
  std::string path;    // the target's path, percent-decoded once: "/api/movies/7"
  std::string query;   // after '?', not decoded; empty if none
  // Header names lower-cased; values as sent. A repeated header appears once
  // per occurrence.
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::string client_address;  // the peer's IP address, e.g. "127.0.0.1"
  bool tls = false;            // arrived over TLS
  std::string request_id;      // also sent back as X-Request-Id
  // The route's pattern ("/api/movies/{id}") and its parameters ({"id": "7"}),
  // filled in by the router.
  std::string route;
  std::map<std::string, std::string, std::less<>> params;
  // Who sent it, once authenticated (bearer token or session cookie); none
  // for a public route called without credentials.
  std::optional<Caller> caller;
  bool by_cookie = false;  // authenticated by the session cookie (CSRF rules apply)

  // The first value of header `name` (lower-case), if present.
  std::optional<std::string_view> header(std::string_view name) const;
};

struct Response {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  // Sets header `name` to `value`, replacing every header of that name
  // (compared without case); returns *this. To send a header more than once
  // (Set-Cookie), append to `headers`. The transport owns Content-Length,
  // Transfer-Encoding and Connection, and drops a handler's.
  Response& set_header(std::string name, std::string value);
  // The first value of header `name` (compared without case), if present.
  std::optional<std::string_view> header(std::string_view name) const;
};

}  // namespace leasehold::server
