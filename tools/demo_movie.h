// The demo's sample movie: a synthetic movie (tracer/synthetic_movie.h) of
// four spots moving on different paths, written to a file, and a small
// client of the movies API (docs/server.md) that uploads it as a browser
// would and reads it back.
//
// Plain C++: the HTTP client behind MoviesClient stays in the .cc. Not
// thread-safe: one MoviesClient is used by one thread (the demo's).
#pragma once

#include <memory>
#include <string>

#include "leasehold/status.h"

namespace leasehold::net {
class HttpClient;
}

namespace leasehold::tools {

inline constexpr char kSampleMovieName[] = "Sample: moving spots";

// Writes the sample movie to `path`, which should end in ".avi": MJPG at
// 25 fps, 640x360 px, 250 frames (10 s), four spots on paths of their own
// (a straight line, a drift with a wobble, a circle, a slow climb) that stay
// inside the frame on every frame. kUnavailable if FFmpeg cannot write it.
Status write_sample_movie(const std::string& path);

// What GET /api/movies/{id} says of a movie, as far as the demo needs it.
struct MovieState {
  std::string id;
  std::string status;           // "processing", "ready", "invalid", ...
  std::string failure_summary;  // "" unless the probe or a trace failed
};

// A client of one server's movies API, signed in with a bearer token.
class MoviesClient {
 public:
  // `address` is the server's HOST:PORT on loopback (plain HTTP). The token
  // is sent in each request's Authorization header and never appears in an
  // error. kInvalidArgument for an address that is not one.
  static Result<std::unique_ptr<MoviesClient>> open(const std::string& address, std::string token);
  ~MoviesClient();

  // POST /api/movies?name=NAME with the file at `path` as the body (with its
  // Content-Length, as a browser sends a file): the new movie, `processing`
  // until the server's probe has read it. kUnavailable if the file cannot be
  // read or nothing was sent; kUnknownOutcome if no answer came back; an
  // answer other than 201 is an error carrying the server's status and
  // message (kInvalidArgument for 400, 413 and 415).
  Result<MovieState> upload(const std::string& name, const std::string& path);

  // GET /api/movies/{id}. kNotFound for 404; other errors as upload()'s.
  Result<MovieState> get(const std::string& id);

 private:
  MoviesClient(std::unique_ptr<net::HttpClient> http, std::string token);

  std::unique_ptr<net::HttpClient> http_;
  const std::string token_;
};

}  // namespace leasehold::tools
