#include "tools/demo_movie.h"

#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <utility>

#include "net/endpoint.h"
#include "net/http_client.h"
#include "tracer/synthetic_movie.h"

namespace leasehold::tools {
namespace {

constexpr int kWidthPx = 640;
constexpr int kHeightPx = 360;
constexpr int64_t kFrames = 250;  // 10 s at the default 25 fps
// Room kept between a spot's edge and the frame's, so that what the tracer
// looks at around a spot is inside the frame too.
constexpr int kEdgeMarginPx = 8;
constexpr auto kUploadTimeout = std::chrono::seconds(30);
constexpr auto kGetTimeout = std::chrono::seconds(5);

// Four spots, each in a part of the frame of its own, so that no two meet:
// a straight line along the top, a drift down the right with a wobble, a
// circle on the left, a slow climb with a faster wobble at the bottom.
tracer::SyntheticMovie sample_movie() {
  tracer::SyntheticMovie m;
  m.width = kWidthPx;
  m.height = kHeightPx;
  m.frames = kFrames;
  m.seed = 7;
  m.spots = {
      tracer::Spot{.x0_px = 60.3,
                   .y0_px = 60.6,
                   .vx_px_per_frame = 1.2,
                   .vy_px_per_frame = 0.2,
                   .radius_px = 9},
      tracer::Spot{.x0_px = 560.2,
                   .y0_px = 80.4,
                   .vy_px_per_frame = 0.8,
                   .amplitude_px = 25,
                   .period_frames = 50,
                   .radius_px = 8},
      tracer::Spot{.x0_px = 250.5,
                   .y0_px = 240.3,
                   .amplitude_px = 45,
                   .period_frames = 125,
                   .radius_px = 10},
      tracer::Spot{.x0_px = 380.7,
                   .y0_px = 320.2,
                   .vx_px_per_frame = 0.4,
                   .vy_px_per_frame = -0.4,
                   .amplitude_px = 10,
                   .period_frames = 40,
                   .radius_px = 7},
  };
  return m;
}

// True if every spot, with the margin around it, is inside the frame on
// every frame of `m`.
bool spots_stay_inside(const tracer::SyntheticMovie& m) {
  for (const tracer::Spot& spot : m.spots) {
    const double edge = spot.radius_px + kEdgeMarginPx;
    for (int64_t f = 0; f < m.frames; ++f) {
      const tracer::SpotPosition at = tracer::spot_position(spot, f);
      if (at.x < edge || at.y < edge || at.x > m.width - 1 - edge || at.y > m.height - 1 - edge) {
        return false;
      }
    }
  }
  return true;
}

// `text` as one value of a query string: every byte but the unreserved ones
// percent-encoded.
std::string query_escape(const std::string& text) {
  std::string out;
  for (const unsigned char c : text) {
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~';
    if (unreserved) {
      out += static_cast<char>(c);
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", c);
      out += escaped;
    }
  }
  return out;
}

// An answer other than the one `what` expects, as an error carrying its
// status and the server's message ({"error":{"code","message"}}).
Status answer_error(const std::string& what, const net::HttpResponse& response) {
  std::string message = what + " answered " + std::to_string(response.status);
  boost::system::error_code ec;
  const boost::json::value body = boost::json::parse(response.body, ec);
  if (!ec && body.is_object() && body.as_object().contains("error")) {
    const boost::json::value& error = body.as_object().at("error");
    if (error.is_object() && error.as_object().contains("message") &&
        error.as_object().at("message").is_string()) {
      message += ": " + std::string(error.as_object().at("message").as_string());
    }
  }
  switch (response.status) {
    case 400:
    case 413:
    case 415:
      return invalid_argument(message);
    case 401:
      return unauthenticated(message);
    case 403:
      return permission_denied(message);
    case 404:
      return not_found(message);
    default:
      return unavailable(message);
  }
}

std::string string_field(const boost::json::object& o, const char* name) {
  return o.contains(name) && o.at(name).is_string() ? std::string(o.at(name).as_string()) : "";
}

// The movie in an answer's body.
Result<MovieState> movie_state(const std::string& what, const net::HttpResponse& response) {
  boost::system::error_code ec;
  const boost::json::value body = boost::json::parse(response.body, ec);
  if (ec || !body.is_object()) return internal_error(what + " answered with no movie");
  const boost::json::object& o = body.as_object();
  MovieState movie{string_field(o, "id"), string_field(o, "status"),
                   string_field(o, "failure_summary")};
  if (movie.id.empty() || movie.status.empty()) {
    return internal_error(what + " answered a movie with no id or status");
  }
  return movie;
}

}  // namespace

Status write_sample_movie(const std::string& path) {
  const tracer::SyntheticMovie movie = sample_movie();
  if (!spots_stay_inside(movie)) return internal_error("a sample movie's spot leaves the frame");
  return tracer::write_synthetic_movie(path, movie);
}

MoviesClient::MoviesClient(std::unique_ptr<net::HttpClient> http, std::string token)
    : http_(std::move(http)), token_(std::move(token)) {}

MoviesClient::~MoviesClient() = default;

Result<std::unique_ptr<MoviesClient>> MoviesClient::open(const std::string& address,
                                                         std::string token) {
  net::HttpClientOptions options;
  LEASEHOLD_ASSIGN_OR_RETURN(options.endpoint, net::parse_http_endpoint("http://" + address));
  options.connections_max = 1;
  LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<net::HttpClient> http,
                             net::HttpClient::open(std::move(options)));
  return std::unique_ptr<MoviesClient>(new MoviesClient(std::move(http), std::move(token)));
}

Result<MovieState> MoviesClient::upload(const std::string& name, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return unavailable("could not read " + path);
  const net::HttpRequest request{
      .method = "POST",
      .target = "/api/movies?name=" + query_escape(name),
      .headers = {{"Authorization", "Bearer " + token_}, {"Content-Type", "video/x-msvideo"}},
      .body = std::string(std::istreambuf_iterator<char>(in), {})};
  LEASEHOLD_ASSIGN_OR_RETURN(const net::HttpResponse response,
                             http_->send(request, kUploadTimeout));
  if (response.status != 201) return answer_error("POST /api/movies", response);
  return movie_state("POST /api/movies", response);
}

Result<MovieState> MoviesClient::get(const std::string& id) {
  const std::string target = "/api/movies/" + id;
  const net::HttpRequest request{.method = "GET",
                                 .target = target,
                                 .headers = {{"Authorization", "Bearer " + token_}},
                                 .body = {}};
  LEASEHOLD_ASSIGN_OR_RETURN(const net::HttpResponse response, http_->send(request, kGetTimeout));
  if (response.status != 200) return answer_error("GET " + target, response);
  return movie_state("GET " + target, response);
}

}  // namespace leasehold::tools
