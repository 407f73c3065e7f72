// The app's readers of requests' parts (app/request_parsing.h): the bearer
// token and the session cookie, an upload's movie name, a frame image's
// name, and the bodies of POST /api/fleet/connections and PUT
// /api/movies/{id}/markers.
//
// Input: a line, then a body. The line is read as the Authorization
// header, the Cookie header, an upload's query and a frame image's name;
// the body, when it is a JSON object, as both bodies.
// Properties: a bearer token taken is what follows "Bearer " (in any case);
// a cookie's value is that of the first pair with its name, holds no ';',
// and a value set beside other cookies reads back; a movie name taken is
// the query's `name`, within its bounds, and reads back once encoded again;
// a frame number taken is the name's only spelling ("N.jpg", N in decimal)
// and every frame's name reads back; a connection taken passes fleet's
// checks, holds the body's fields and reads back from its own JSON; markers
// taken are the body's, at most kMarkersMax, finite, and read back from
// their own JSON. Refusals are kInvalidArgument, their message starting
// with the field they are about.
#include <algorithm>
#include <boost/json.hpp>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "app/request_parsing.h"
#include "aws/sigv4.h"
#include "check.h"
#include "movies/movies.h"
#include "server/target.h"

namespace {

namespace json = boost::json;
namespace app = leasehold::app;
namespace server = leasehold::server;
using leasehold::Code;
using leasehold::fuzz::escaped;

server::Request with_header(std::string_view name, std::string_view value) {
  server::Request r;
  r.method = "GET";
  r.headers.emplace_back(std::string(name), std::string(value));
  return r;
}

void check_bearer(std::string_view line) {
  FUZZ_CHECK(!app::bearer_token(server::Request()).has_value(), "a token without the header");
  const server::Request request = with_header("authorization", line);
  const auto token = app::bearer_token(request);
  FUZZ_CHECK(token.has_value(), "no token from an Authorization header");
  if (token->empty()) return;
  bool scheme = line.size() > 7 && line[6] == ' ';
  for (size_t i = 0; scheme && i < 6; ++i) scheme = (line[i] | 0x20) == "bearer"[i];
  FUZZ_CHECK(scheme, "a token from " + escaped(line));
  FUZZ_CHECK_EQ(*token, line.substr(7), "the token");
}

void check_cookie(std::string_view line) {
  const server::Request request = with_header("cookie", line);
  const auto value = app::cookie_value(request, app::kSessionCookie);
  if (value) {
    FUZZ_CHECK(value->find(';') == std::string_view::npos, "a value with ';': " + escaped(*value));
    // It is the value of the first pair so named.
    std::string_view rest = line;
    bool found = false;
    while (!found) {
      const size_t end = rest.find(';');
      std::string_view pair = rest.substr(0, end);
      while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
      if (pair.starts_with(std::string(app::kSessionCookie) + "=")) {
        FUZZ_CHECK_EQ(*value, pair.substr(sizeof app::kSessionCookie), "the first pair's value");
        found = true;
      }
      if (end == std::string_view::npos) break;
      rest.remove_prefix(end + 1);
    }
    FUZZ_CHECK(found, "a session cookie found in " + escaped(line));
  }
  // A value set beside other cookies, as a browser sends it, reads back.
  if (line.find(';') != std::string_view::npos) return;
  const std::string header =
      "theme=dark; " + std::string(app::kSessionCookie) + "=" + std::string(line) + "; lang=en";
  const server::Request sent = with_header("cookie", header);
  const auto again = app::cookie_value(sent, app::kSessionCookie);
  FUZZ_CHECK(again.has_value(), "the session cookie in " + escaped(header));
  FUZZ_CHECK_EQ(*again, line, "the session cookie read back");
}

void check_movie_name(std::string_view line) {
  server::Request r;
  r.query = std::string(line);
  const auto name = app::movie_name(r);
  if (!name.ok()) {
    FUZZ_CHECK(name.status().code() == Code::kInvalidArgument,
               "a name refused with " + name.status().to_string());
    return;
  }
  FUZZ_CHECK(!name->empty() && name->size() <= leasehold::movies::kMovieNameBytesMax,
             "a name of " + std::to_string(name->size()) + " bytes");
  for (const unsigned char c : *name) {
    FUZZ_CHECK(c >= 0x20 && c != 0x7f, "a control character in the name " + escaped(*name));
  }
  const auto given = server::query_value(line, "name");
  FUZZ_CHECK(given.ok() && given->has_value() && **given == *name, "the query's name");
  server::Request again;
  again.query = "name=" + leasehold::aws::uri_encode(*name, /*keep_slash=*/false);
  const auto read_back = app::movie_name(again);
  FUZZ_CHECK(read_back.ok() && *read_back == *name, "the name read back from " + again.query);
}

void check_frame_number(std::string_view line) {
  if (const auto n = app::frame_number(line)) {
    FUZZ_CHECK(*n >= 0, "a frame number " + std::to_string(*n));
    FUZZ_CHECK_EQ(line, std::to_string(*n) + ".jpg", "the one name of frame " + std::to_string(*n));
  }
  // Every frame's own name reads back.
  uint64_t bytes = 0;
  for (const unsigned char c : line.substr(0, 8)) bytes = bytes * 251 + c;
  const auto frame = static_cast<int64_t>(bytes >> 1);
  const auto read_back = app::frame_number(std::to_string(frame) + ".jpg");
  FUZZ_CHECK(read_back == frame, "frame " + std::to_string(frame) + " read back");
}

bool starts_with_field(const leasehold::Status& s, std::initializer_list<std::string_view> fields) {
  if (s.message().starts_with("unknown field '")) return true;
  for (const std::string_view f : fields) {
    if (s.message().starts_with(std::string(f) + ": ") ||
        s.message().starts_with(std::string(f) + "[")) {
      return true;
    }
  }
  return false;
}

void check_connection(const json::object& body) {
  const auto c = app::parse_new_connection(body);
  if (!c.ok()) {
    FUZZ_CHECK(c.status().code() == Code::kInvalidArgument &&
                   starts_with_field(c.status(), {"id", "url", "seq_field", "stopped"}),
               "a connection refused with " + escaped(c.status().to_string()));
    return;
  }
  for (const auto& field : body) {
    const std::string_view key = field.key();
    FUZZ_CHECK(key == "id" || key == "url" || key == "seq_field" || key == "stopped",
               "a connection taken with the field " + escaped(key));
  }
  FUZZ_CHECK(leasehold::fleet::validate_connection_id(c->id).ok(), "the ID " + escaped(c->id));
  FUZZ_CHECK(leasehold::fleet::validate_url_template(c->url).ok(), "the URL " + escaped(c->url));
  FUZZ_CHECK(leasehold::fleet::validate_seq_field(c->seq_field).ok(),
             "the sequence field " + escaped(c->seq_field));
  FUZZ_CHECK_EQ(c->id, std::string_view(body.at("id").as_string()), "the ID");
  FUZZ_CHECK_EQ(c->url, std::string_view(body.at("url").as_string()), "the URL");
  const json::value* stopped = body.if_contains("stopped");
  FUZZ_CHECK(c->stopped == (stopped != nullptr && stopped->as_bool()), "stopped");
  const json::object written{
      {"id", c->id}, {"url", c->url}, {"seq_field", c->seq_field}, {"stopped", c->stopped}};
  const auto again = app::parse_new_connection(json::parse(json::serialize(written)).as_object());
  FUZZ_CHECK(again.ok() && again->id == c->id && again->url == c->url &&
                 again->seq_field == c->seq_field && again->stopped == c->stopped,
             "the connection read back from " + escaped(json::serialize(written)));
}

// Equal, but for the last place of a double, which Boost.JSON's default
// parser may read back a unit away from what it wrote.
bool close(double a, double b) {
  return a == b || std::fabs(a - b) <= 1e-15 * std::max(std::fabs(a), std::fabs(b));
}

void check_markers(const json::object& body) {
  const auto markers = app::parse_markers(body);
  if (!markers.ok()) {
    FUZZ_CHECK(markers.status().code() == Code::kInvalidArgument &&
                   starts_with_field(markers.status(), {"markers"}),
               "markers refused with " + escaped(markers.status().to_string()));
    return;
  }
  const json::array& given = body.at("markers").as_array();
  FUZZ_CHECK(markers->size() == given.size() && markers->size() <= leasehold::movies::kMarkersMax,
             std::to_string(markers->size()) + " markers");
  json::array written;
  for (size_t i = 0; i < markers->size(); ++i) {
    const leasehold::tracer::Marker& m = (*markers)[i];
    const json::object& o = given[i].as_object();
    FUZZ_CHECK_EQ(m.id, std::string_view(o.at("id").as_string()), "a marker's ID");
    FUZZ_CHECK(std::isfinite(m.x) && std::isfinite(m.y), "a marker's place");
    FUZZ_CHECK(m.x == o.at("x").to_number<double>() && m.y == o.at("y").to_number<double>(),
               "a marker's place is the body's");
    FUZZ_CHECK(static_cast<double>(m.frame) == o.at("frame").to_number<double>(),
               "a marker's frame " + std::to_string(m.frame));
    written.push_back(
        json::object{{"id", m.id}, {"label", m.label}, {"frame", m.frame}, {"x", m.x}, {"y", m.y}});
  }
  const std::string text = json::serialize(json::object{{"markers", written}});
  const auto again = app::parse_markers(json::parse(text).as_object());
  FUZZ_CHECK(again.ok() && again->size() == markers->size(), "markers read back from " + text);
  for (size_t i = 0; i < markers->size(); ++i) {
    const leasehold::tracer::Marker &a = (*again)[i], &m = (*markers)[i];
    FUZZ_CHECK(a.id == m.id && a.label == m.label && a.frame == m.frame && close(a.x, m.x) &&
                   close(a.y, m.y),
               "marker " + std::to_string(i) + " read back from " + escaped(text));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  const std::string_view line = input.substr(0, newline);
  check_bearer(line);
  check_cookie(line);
  check_movie_name(line);
  check_frame_number(line);
  if (newline == std::string_view::npos) return 0;
  json::error_code ec;
  const json::value body = json::parse(input.substr(newline + 1), ec);
  if (ec || !body.is_object()) return 0;
  check_connection(body.get_object());
  check_markers(body.get_object());
  return 0;
}
