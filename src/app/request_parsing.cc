#include "app/request_parsing.h"

#include <strings.h>

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>

#include "base/text.h"
#include "movies/movies.h"
#include "server/json.h"
#include "server/target.h"

namespace leasehold::app {
namespace {

namespace json = boost::json;

Result<tracer::Marker> parse_marker(const json::value& value) {
  const json::object* o = value.if_object();
  if (o == nullptr) return invalid_argument("expected an object {id, label, frame, x, y}");
  LEASEHOLD_RETURN_IF_ERROR(server::check_fields(*o, {"id", "label", "frame", "x", "y"}));
  tracer::Marker m;
  LEASEHOLD_RETURN_IF_ERROR(server::read_string_field(*o, "id", true, m.id));
  LEASEHOLD_RETURN_IF_ERROR(server::read_string_field(*o, "label", false, m.label));
  LEASEHOLD_RETURN_IF_ERROR(server::read_int_field(*o, "frame", true, m.frame));
  LEASEHOLD_RETURN_IF_ERROR(server::read_number_field(*o, "x", true, m.x));
  LEASEHOLD_RETURN_IF_ERROR(server::read_number_field(*o, "y", true, m.y));
  return m;
}

}  // namespace

std::optional<std::string_view> cookie_value(const server::Request& request,
                                             std::string_view name) {
  for (const auto& [header, value] : request.headers) {
    if (header != "cookie") continue;
    std::string_view rest = value;
    while (!rest.empty()) {
      const size_t end = rest.find(';');
      std::string_view pair = rest.substr(0, end);
      rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + 1);
      while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
      const size_t eq = pair.find('=');
      if (eq != std::string_view::npos && pair.substr(0, eq) == name) return pair.substr(eq + 1);
    }
  }
  return std::nullopt;
}

std::optional<std::string_view> bearer_token(const server::Request& request) {
  const auto header = request.header("authorization");
  if (!header) return std::nullopt;
  constexpr std::string_view kScheme = "Bearer ";
  if (header->size() <= kScheme.size() ||
      strncasecmp(header->data(), kScheme.data(), kScheme.size()) != 0) {
    return std::string_view();  // credentials of another kind: never valid here
  }
  return header->substr(kScheme.size());
}

Result<fleet::NewConnection> parse_new_connection(const json::object& body) {
  LEASEHOLD_RETURN_IF_ERROR(server::check_fields(body, {"id", "url", "seq_field", "stopped"}));
  fleet::NewConnection c;
  LEASEHOLD_RETURN_IF_ERROR(server::read_string_field(body, "id", true, c.id));
  LEASEHOLD_RETURN_IF_ERROR(server::read_string_field(body, "url", true, c.url));
  LEASEHOLD_RETURN_IF_ERROR(server::read_string_field(body, "seq_field", false, c.seq_field));
  if (const json::value* stopped = body.if_contains("stopped")) {
    if (!stopped->is_bool()) return invalid_argument("stopped: expected true or false");
    c.stopped = stopped->as_bool();
  }
  LEASEHOLD_RETURN_IF_ERROR(fleet::validate_connection_id(c.id).with_context("id"));
  LEASEHOLD_RETURN_IF_ERROR(fleet::validate_url_template(c.url).with_context("url"));
  LEASEHOLD_RETURN_IF_ERROR(fleet::validate_seq_field(c.seq_field).with_context("seq_field"));
  return c;
}

Result<std::vector<tracer::Marker>> parse_markers(const json::object& body) {
  const json::value* value = body.if_contains("markers");
  if (value == nullptr) return invalid_argument("markers: missing; expected an array");
  if (!value->is_array()) return invalid_argument("markers: expected an array");
  const json::array& array = value->as_array();
  if (array.size() > movies::kMarkersMax) {
    return invalid_argument("markers: at most " + std::to_string(movies::kMarkersMax));
  }
  std::vector<tracer::Marker> out;
  for (size_t i = 0; i < array.size(); ++i) {
    Result<tracer::Marker> m = parse_marker(array[i]);
    if (!m.ok()) return m.status().with_context("markers[" + std::to_string(i) + "]");
    out.push_back(std::move(*m));
  }
  return out;
}

Result<std::string> movie_name(const server::Request& request) {
  LEASEHOLD_ASSIGN_OR_RETURN(std::optional<std::string> name,
                             server::query_value(request.query, "name"));
  if (!name) return invalid_argument("name: missing; give ?name=NAME");
  LEASEHOLD_RETURN_IF_ERROR(validate_text("name", *name, movies::kMovieNameBytesMax, false));
  return *name;
}

std::optional<int64_t> frame_number(std::string_view name) {
  if (!name.ends_with(".jpg")) return std::nullopt;
  name.remove_suffix(4);
  // Digits only: from_chars() takes a sign, and "-0" would be frame 0's
  // second name.
  if (name.empty() || (name.size() > 1 && name.front() == '0') ||
      !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  int64_t n = 0;
  const char* end = name.data() + name.size();
  const auto [stop, ec] = std::from_chars(name.data(), end, n);
  if (ec != std::errc() || stop != end) return std::nullopt;  // past INT64_MAX
  return n;
}

}  // namespace leasehold::app
