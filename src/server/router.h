// Router: maps a method and a path to a handler, with path parameters
// ("/api/movies/{id}" matches "/api/movies/7" with id = "7"; a parameter
// matches one non-empty segment). A last segment "{name...}" matches the rest
// of the path, one or more non-empty segments ("/static/{file...}" matches
// "/static/css/site.css" with file = "css/site.css"). When several patterns
// match, the one whose first differing segment is the more specific wins: a
// literal segment over a parameter, a parameter over the rest
// ("/api/movies/new" over "/api/movies/{id}"). A path that matches no route
// is 404; a path that matches a route under other methods is 405 with an
// Allow header. HEAD is answered by a path's GET route when it has no HEAD
// route of its own (the transport sends the headers only).
//
// Each route carries what the transport must enforce before the handler
// runs: the most body bytes it accepts (more is 413, refused from the
// Content-Length before the body is read), who may call it, whether its
// handler may block (it calls the store: it then runs on the runtime's
// BlockingPool, never on an I/O thread), and whether its body is streamed
// to a file rather than held in memory (an upload: admission runs before a
// byte of the body is read, see server.h).
//
// Routes are added before the server starts; after that the router is only
// read, from many threads at once.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "server/http.h"

namespace leasehold::server {

// Named limits (each has a test).
inline constexpr size_t kJsonBodyBytesMax = 16 * 1024;  // small JSON routes

enum class Access {
  kPublic,  // no credentials needed (sign-in, health, metrics, pages)
  kUser,    // a signed-in user (bearer token or session cookie)
  kAdmin,   // a signed-in admin; other users get 403
};

// A route's handler; request.caller is set for kUser and kAdmin routes. It
// may throw: the transport answers 500 without the exception's text.
using Handler = std::function<Response(Request& request)>;

struct RouteOptions {
  Access access = Access::kUser;
  size_t body_bytes_max = 0;  // 0: the route takes no body (GET, DELETE)
  bool blocking = true;       // the handler calls the store
  // Non-empty: an upload route. The body, up to body_bytes_max (which may be
  // gigabytes), is streamed into a new file in this directory
  // (Request::body_file) instead of Request::body. The directory must exist;
  // keep it on the file system the handler renames kept files to.
  std::string upload_dir = {};
};

struct Route {
  std::string method;
  std::string pattern;
  Handler handler;
  RouteOptions options;
};

class Router {
 public:
  Router() = default;
  // Matches point into the router, and its index into its routes: not
  // copied, only moved.
  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;
  Router(Router&&) = default;
  Router& operator=(Router&&) = default;

  // REQUIRES: `pattern` starts with '/', its parameters are named
  // ([a-z0-9_]+) and distinct, "{name...}" comes last if at all, and no route
  // with the same method and the same pattern (up to the parameters' names)
  // was added before; `handler` is set. Asserted: a bad route is a bug.
  void add(std::string method, std::string pattern, Handler handler, RouteOptions options = {});

  struct Match {
    const Route* route = nullptr;  // null: see allow
    // The route's parameters, when matched.
    std::map<std::string, std::string, std::less<>> params;
    // When no route matched: the methods the path accepts ("" : no route at
    // all → 404; else → 405 with this as Allow, e.g. "GET, POST").
    std::string allow;
  };
  // `path` is the percent-decoded path (Request::path).
  Match match(std::string_view method, std::string_view path) const;

 private:
  enum class SegmentKind { kLiteral, kParam, kRest };  // in order of precedence
  struct Segment {
    SegmentKind kind;
    std::string text;  // the literal, or the parameter's name
  };
  struct Entry {
    Route route;
    std::vector<Segment> segments;
  };
  // True if `entry` matches `segments`; fills `params` if given.
  static bool matches(const Entry& entry, const std::vector<std::string_view>& segments,
                      std::map<std::string, std::string, std::less<>>* params);

  std::deque<Entry> entries_;  // a deque: Match::route points into it
  // The routes whose pattern has no parameter, by path and method. A
  // request for one of them is routed by one lookup, since such a route is
  // more specific than any other of its method that matches its path.
  std::map<std::string, std::map<std::string, const Entry*, std::less<>>, std::less<>> literal_;
};

}  // namespace leasehold::server
