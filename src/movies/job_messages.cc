#include "movies/job_messages.h"

#include <boost/json.hpp>

#include "leasehold/random.h"

namespace leasehold::movies::internal {
namespace {

namespace json = boost::json;

const json::string* string_field(const json::object& o, std::string_view name) {
  const json::value* v = o.if_contains(name);
  return v != nullptr ? v->if_string() : nullptr;
}

}  // namespace

std::string trace_job_body(const TraceJob& job) {
  return json::serialize(json::object{{"movie_id", job.movie_id}, {"job_id", job.job_id}});
}

Result<TraceJob> parse_trace_job(std::string_view body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  const json::object* o = ec ? nullptr : v.if_object();
  const json::string* movie = o != nullptr ? string_field(*o, "movie_id") : nullptr;
  const json::string* job = o != nullptr ? string_field(*o, "job_id") : nullptr;
  if (movie == nullptr || job == nullptr || movie->empty() || movie->size() > kJobMovieIdBytesMax ||
      !is_well_formed_token(std::string_view(*job))) {
    return invalid_argument("malformed job message");
  }
  return TraceJob{std::string(*movie), std::string(*job)};
}

std::string movie_job_body(const MovieJob& job) {
  json::object o{{"movie_id", job.movie_id}};
  if (job.remove) o["job"] = "remove";
  return json::serialize(o);
}

MovieJob parse_movie_job(std::string_view body) {
  boost::system::error_code ec;
  const json::value v = json::parse(body, ec);
  const json::object* o = ec ? nullptr : v.if_object();
  const json::value* id = o != nullptr ? o->if_contains("movie_id") : nullptr;
  if (id == nullptr || !id->is_string()) return {};
  const json::string& s = id->as_string();
  if (s.empty() || s.size() > kJobMovieIdBytesMax) return {};
  const json::value* job = o->if_contains("job");
  if (job != nullptr && !(job->is_string() && job->as_string() == "remove")) return {};
  return MovieJob{std::string(s), job != nullptr};
}

}  // namespace leasehold::movies::internal
