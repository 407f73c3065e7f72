// Request and Response: an HTTP exchange as the server's handlers see it,
// in plain C++. Handlers never see sockets or Beast types: the transport
// (server/transport*.cc) parses the request, finds the route, reads the body
// within the route's limit, runs the handler and writes the response.
//
// Plain values; not synchronised.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "leasehold/status.h"

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
  std::string body;  // empty on an upload route: see body_file
  // On an upload route (RouteOptions::upload_dir), the file that holds the
  // body: a new file in upload_dir, mode 0600, complete and closed when the
  // handler runs. The handler may keep it by renaming it (within the same
  // file system); the transport removes whatever is still at this path once
  // the response is written or the request is dropped. Empty elsewhere.
  std::string body_file = {};
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

// A body made while it is sent (Response::body_stream). Each call sets
// `part` (empty when called) to the next part of the body, which may be
// empty, and returns true while more parts may follow, false once `part` is
// the last. An error means the body cannot be finished.
using BodyStream = std::function<Result<bool>(std::string& part)>;

struct Response {
  int status = 200;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // A file to send instead of `body`: the transport opens it when it writes
  // the response (404 if it is gone by then) and streams it from disk. With
  // status 200 it serves a single Range (206, or 416 when unsatisfiable) and
  // says Accept-Ranges: bytes. Content-Type is the handler's, else
  // application/octet-stream. The transport only reads the file.
  std::string file_path = {};
  // A body made while it is sent, instead of `body`: one too long to hold in
  // memory (every row of a trace as CSV). The transport sends it in chunks
  // (Transfer-Encoding: chunked) and calls it on the blocking pool, never on
  // an I/O thread, so it may block (on a store); one call at a time, each
  // after the part before was written and under the transfer limits of a
  // streamed body. A call that fails, throws or overruns ends the connection
  // without the body's last chunk, so that the client sees a broken
  // response, never a short body that looks whole; the cause is logged with
  // the request's ID. It must not refer to the Request, which is gone by
  // then. Not called for HEAD, nor for a 204 or 304. An HTTP/1.0 client,
  // which cannot read chunks, gets the body ended by the connection's close
  // (and, there alone, cannot tell a broken body from a whole one).
  // Content-Type is the handler's, else application/octet-stream.
  BodyStream body_stream = {};

  // Sets header `name` to `value`, replacing every header of that name
  // (compared without case); returns *this. To send a header more than once
  // (Set-Cookie), append to `headers`. The transport owns Content-Length,
  // Transfer-Encoding and Connection, and drops a handler's.
  Response& set_header(std::string name, std::string value);
  // The first value of header `name` (compared without case), if present.
  std::optional<std::string_view> header(std::string_view name) const;
};

// True if an If-None-Match header's value names `etag` (a quoted ETag),
// weakly compared as RFC 9110 says for If-None-Match, or is "*": the client
// has what it would get, and a GET is answered 304.
bool etag_matches(std::string_view if_none_match, std::string_view etag);

}  // namespace leasehold::server
