#include "app/movies_api.h"

#include <boost/json.hpp>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <utility>

#include "app/request_parsing.h"
#include "base/crash_point.h"
#include "base/text.h"
#include "movies/frame_images.h"
#include "movies/probe_worker.h"
#include "server/errors.h"
#include "server/json.h"
#include "server/target.h"

namespace leasehold::app {

using server::Access;
using server::failed_response;
using server::json_response;
using server::kJsonBodyBytesMax;
using server::read_json_object;
using server::Request;
using server::Response;
using server::RouteOptions;
using server::Router;

namespace {

namespace json = boost::json;

constexpr char kMoviesPath[] = "/api/movies";

struct MoviesDeps {
  movies::Movies& movies;
  Queue& probe_queue;
  Random& random;
  Logger& log;
  const MoviesApiOptions options;
  std::unique_ptr<movies::FrameCache> frame_cache;
  std::unique_ptr<movies::FrameImages> frames;
};

// ---------------------------------------------------------------- answers

json::value lock_json(const std::optional<movies::Lock>& lock) {
  if (!lock) return nullptr;
  return json::object{{"kind", lock->kind},
                      {"user_display_name", lock->user_display_name},
                      {"started_at_ms", lock->started_at_ms}};
}

json::object summary_json(const movies::MovieSummary& m) {
  return {{"id", m.id},
          {"name", m.name},
          {"status", m.status},
          {"frames_done", m.frames_done},
          {"frames_total", m.frames_total},
          {"lock", lock_json(m.lock)}};
}

json::object detail_json(const movies::MovieDetail& m) {
  json::object o = summary_json(m);
  const bool probed = m.frame_count > 0;
  json::array markers;
  for (const tracer::Marker& mk : m.markers) {
    markers.push_back(json::object{
        {"id", mk.id}, {"label", mk.label}, {"frame", mk.frame}, {"x", mk.x}, {"y", mk.y}});
  }
  // What the probe finds is null until it has run.
  const auto probed_or_null = [probed](json::value v) { return probed ? v : json::value(nullptr); };
  o["fps"] = probed_or_null(m.fps);
  o["frame_rate_varies"] = probed_or_null(m.frame_rate_varies);
  // null too for a movie probed before durations were kept.
  o["duration_s"] = m.duration_us > 0 ? json::value(static_cast<double>(m.duration_us) / 1e6)
                                      : json::value(nullptr);
  o["width"] = probed_or_null(m.width);
  o["height"] = probed_or_null(m.height);
  o["frame_count"] = probed_or_null(m.frame_count);
  o["markers"] = std::move(markers);
  o["trim"] = probed ? json::value(json::object{{"start_frame", m.trim.start_frame},
                                                {"end_frame", m.trim.end_frame}})
                     : json::value(nullptr);
  o["capture_interval"] =
      probed ? json::value(json::object{{"every_frames", m.every_frames}}) : json::value(nullptr);
  o["failure_summary"] =
      m.failure_summary.empty() ? json::value(nullptr) : json::value(m.failure_summary);
  o["owner_display_name"] = m.owner_display_name;
  o["created_at_ms"] = m.created_at_ms;
  return o;
}

json::object frame_json(const movies::FrameRow& r) {
  const auto optional_number = [](const std::optional<double>& v) {
    return v ? json::value(*v) : json::value(nullptr);
  };
  return {{"marker_id", r.marker_id},   {"label", r.label},   {"frame", r.frame},
          {"time_s", r.time_s},         {"x", r.x},           {"y", r.y},
          {"score", r.score},           {"status", r.status}, {"vx", optional_number(r.vx)},
          {"vy", optional_number(r.vy)}};
}

// 409 with who holds the movie beside the error, for a page to say so.
Response conflict_with_holder(const Status& status, const movies::Lock& holder) {
  json::object body{
      {"error", json::object{{"code", server::error_code(409)}, {"message", status.message()}}},
      {"holder", lock_json(holder)}};
  return json_response(409, body);
}

Response no_content() { return Response{.status = 204, .headers = {}, .body = {}}; }

// ---------------------------------------------------------------- uploads

struct Container {
  std::string_view extension;
  std::string_view content_type;
};

// What kind of file the first bytes of a video say it is: the extension it
// is kept under and the Content-Type it is served with. FFmpeg decides
// whether it is a video at all; this only names it.
Container sniff_container(const std::string& path) {
  char head[64] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(head, sizeof head);
  const std::string_view h(head, static_cast<size_t>(in.gcount()));
  if (h.size() >= 12 && h.substr(4, 4) == "ftyp") {
    if (h.substr(8, 4) == "qt  ") return {".mov", "video/quicktime"};
    return {".mp4", "video/mp4"};
  }
  if (h.size() >= 12 && h.substr(0, 4) == "RIFF" && h.substr(8, 4) == "AVI ") {
    return {".avi", "video/x-msvideo"};
  }
  if (h.starts_with("\x1a\x45\xdf\xa3")) {
    if (h.find("webm") != std::string_view::npos) return {".webm", "video/webm"};
    return {".mkv", "video/x-matroska"};
  }
  if (h.starts_with("OggS")) return {".ogv", "video/ogg"};
  if (h.starts_with(std::string_view("\x00\x00\x01\xba", 4))) return {".mpg", "video/mpeg"};
  if (h.starts_with("FLV")) return {".flv", "video/x-flv"};
  return {".video", "application/octet-stream"};
}

std::string_view content_type_of(std::string_view file) {
  for (const Container c : {Container{".mp4", "video/mp4"}, Container{".mov", "video/quicktime"},
                            Container{".avi", "video/x-msvideo"}, Container{".webm", "video/webm"},
                            Container{".mkv", "video/x-matroska"}, Container{".ogv", "video/ogg"},
                            Container{".mpg", "video/mpeg"}, Container{".flv", "video/x-flv"}}) {
    if (file.ends_with(c.extension)) return c.content_type;
  }
  return "application/octet-stream";
}

// True if FFmpeg opens `path` as a video within the limits and its first
// frame decodes: what a movie needs before it is kept. The whole file is
// probed later, off the request path.
bool first_frame_decodes(const std::string& path, const tracer::VideoLimits& limits) {
  Result<std::unique_ptr<tracer::FrameReader>> reader = tracer::FrameReader::open(path, limits);
  if (!reader.ok()) return false;
  Result<bool> first = (*reader)->next(/*want_pixels=*/true);
  return first.ok() && *first;
}

Response upload(Request& request, const MoviesDeps& d) {
  Result<std::string> name = movie_name(request);
  if (!name.ok()) return failed_response(name.status(), request, d.log);
  if (!first_frame_decodes(request.body_file, d.options.video_limits)) {
    return server::error_response(415, "the file is not a video that can be read");
  }
  const std::string file =
      random_token(d.random) + std::string(sniff_container(request.body_file).extension);
  const Status kept =
      d.options.media->keep(request.body_file, file, std::string(content_type_of(file)));
  if (!kept.ok()) return failed_response(kept, request, d.log);
  const server::Caller& caller = *request.caller;
  Result<movies::MovieDetail> created =
      d.movies.create(*name, {caller.name, caller.display_name}, file);
  if (!created.ok()) {
    (void)d.options.media->remove(file);
    return failed_response(created.status(), request, d.log);
  }
  crash_point(CrashPoint::kUploadAfterCreate);
  if (const Status queued = movies::enqueue_probe(d.probe_queue, created->id); !queued.ok()) {
    // Unprobed, the movie would stay `processing`: take it back, file and
    // all (it has no rows yet; a probe job that did get queued then finds
    // nothing to do).
    Status taken_back = d.movies.remove(created->id, caller.name, /*is_admin=*/true);
    if (taken_back.ok()) taken_back = d.movies.finish_remove(created->id);
    if (!taken_back.ok()) {
      d.log.log(LogLevel::kWarn,
                "movie " + created->id +
                    " not taken back after its probe was not queued: " + taken_back.to_string());
    }
    return failed_response(queued, request, d.log);
  }
  if (d.options.probe_queued) d.options.probe_queued();
  Response r = json_response(201, detail_json(*created));
  r.set_header("Location", std::string(kMoviesPath) + "/" + created->id);
  return r;
}

// ---------------------------------------------------------------- reads

// Which page a request asks for: ?limit=N (1 to `limit_max`, else
// `limit_default`) and ?after=... (absent on the first page).
struct PageQuery {
  size_t limit = 0;
  std::string after;
};

Result<PageQuery> page_query(const Request& request, size_t limit_default, size_t limit_max) {
  LEASEHOLD_ASSIGN_OR_RETURN(std::optional<std::string> limit,
                             server::query_value(request.query, "limit"));
  LEASEHOLD_ASSIGN_OR_RETURN(std::optional<std::string> after,
                             server::query_value(request.query, "after"));
  PageQuery out{limit_default, after.value_or("")};
  LEASEHOLD_ASSIGN_OR_RETURN(out.limit,
                             server::query_count(limit, "limit", limit_default, limit_max));
  if (after && after->empty()) return invalid_argument("after: empty; leave it out for page one");
  return out;
}

// Link: <PATH?limit=N&after=NEXT>; rel="next", when another page follows,
// with `more` (parameters of the first request that every page keeps,
// "&order=newest") after them. `next_after` (a movie ID, a frames cursor)
// needs no escaping.
void link_next(Response& response, std::string_view path, size_t limit,
               const std::string& next_after, std::string_view more = {}) {
  if (next_after.empty()) return;
  response.set_header("Link", "<" + std::string(path) + "?limit=" + std::to_string(limit) +
                                  "&after=" + next_after + std::string(more) + ">; rel=\"next\"");
}

// GET /api/movies's query: a page, in the order ?order= names, `oldest`
// (the default, so that a caller that names none keeps the order it always
// had) or `newest`.
struct MovieListQuery {
  PageQuery page;
  movies::ListOrder order = movies::ListOrder::kOldestFirst;
  std::string link_more;  // "&order=..." as asked, for the next page's Link
};

Result<MovieListQuery> movie_list_query(const Request& request) {
  MovieListQuery out;
  LEASEHOLD_ASSIGN_OR_RETURN(out.page,
                             page_query(request, movies::kListLimitDefault, movies::kListLimitMax));
  LEASEHOLD_ASSIGN_OR_RETURN(std::optional<std::string> order,
                             server::query_value(request.query, "order"));
  if (!order) return out;
  if (*order == "newest") {
    out.order = movies::ListOrder::kNewestFirst;
  } else if (*order != "oldest") {
    return invalid_argument("order: expected oldest or newest");
  }
  out.link_more = "&order=" + *order;
  return out;
}

Response list_movies(const Request& request, const MoviesDeps& d) {
  Result<MovieListQuery> query = movie_list_query(request);
  if (!query.ok()) return failed_response(query.status(), request, d.log);
  Result<movies::MoviePage> listed =
      d.movies.list({query->page.limit, query->page.after, query->order});
  if (!listed.ok()) return failed_response(listed.status(), request, d.log);
  Response r = json_response(200, server::json_array(listed->items, summary_json));
  link_next(r, kMoviesPath, query->page.limit, listed->next_after, query->link_more);
  return server::revalidated(std::move(r), request);
}

Response get_movie(const Request& request, const MoviesDeps& d) {
  Result<movies::MovieDetail> m = d.movies.get(request.params.at("id"));
  if (!m.ok()) return failed_response(m.status(), request, d.log);
  return server::revalidated(json_response(200, detail_json(*m)), request);
}

Response get_video(const Request& request, const MoviesDeps& d) {
  Result<movies::MovieDetail> m = d.movies.get(request.params.at("id"));
  if (!m.ok()) return failed_response(m.status(), request, d.log);
  Result<movies::Download> download = d.options.media->download(m->file);
  if (!download.ok()) return failed_response(download.status(), request, d.log);
  Response r;
  if (!download->url.empty()) {
    // From S3 itself, through a URL that expires in minutes.
    r.status = 302;
    r.set_header("Location", download->url);
    r.set_header("Cache-Control", "no-store");
    return r;
  }
  r.file_path = download->path;
  r.set_header("Content-Type", std::string(content_type_of(m->file)));
  return r;
}

Response get_frames(const Request& request, const MoviesDeps& d) {
  Result<PageQuery> query =
      page_query(request, movies::kFramesLimitDefault, movies::kFramesLimitMax);
  if (!query.ok()) return failed_response(query.status(), request, d.log);
  Result<movies::FramePage> rows =
      d.movies.frames(request.params.at("id"), {query->limit, query->after});
  if (!rows.ok()) return failed_response(rows.status(), request, d.log);
  Response r = json_response(200, server::json_array(rows->items, frame_json));
  link_next(r, request.path, query->limit, rows->next_after);
  return r;
}

// Each frame's time, for the pages: {"frame_count", "steps_us": [[count,
// step], ...]}: frame 0 at 0 µs, then each run of `count` frames `step` µs
// after the frame before (a steady rate is one run, or a few where the
// microseconds round unevenly). A movie's times never change: the browser
// keeps them, and asks again only to revalidate.
Response get_frame_times(const Request& request, const MoviesDeps& d) {
  const std::string& id = request.params.at("id");
  Result<tracer::FrameTimes> times = d.movies.frame_times(id);
  if (!times.ok()) return failed_response(times.status(), request, d.log);
  const std::string etag = "\"times-" + id + "-" + std::to_string(times->pts.size()) + "\"";
  const auto cached = [&etag](Response r) {
    r.set_header("ETag", etag);
    r.set_header("Cache-Control", "private, max-age=31536000, immutable");
    return r;
  };
  if (const auto tag = request.header("if-none-match"); tag && server::etag_matches(*tag, etag)) {
    return cached(Response{.status = 304, .headers = {}, .body = {}});
  }
  json::array steps;
  for (size_t n = 1; n < times->pts.size(); ++n) {
    const int64_t step = times->us(static_cast<int64_t>(n)) - times->us(static_cast<int64_t>(n) - 1);
    if (!steps.empty() && steps.back().as_array()[1].as_int64() == step) {
      json::value& count = steps.back().as_array()[0];
      count = count.as_int64() + 1;
    } else {
      steps.push_back(json::array{int64_t{1}, step});
    }
  }
  return cached(json_response(200, json::object{{"frame_count", times->pts.size()},
                                                {"steps_us", std::move(steps)}}));
}

// The image of one exact frame (movies/frame_images.h). It never changes,
// so a browser keeps it for a year and its ETag answers a revalidation
// with 304 before anything is decoded.
Response get_frame_image(const Request& request, const MoviesDeps& d) {
  const std::string& id = request.params.at("id");
  const std::string& name = request.params.at("image");
  const std::optional<int64_t> n = frame_number(name);
  if (!n) return server::error_response(404, "no frame image '" + name + "'; ask for N.jpg");
  const auto cached = [](Response r, const std::string& etag) {
    r.set_header("ETag", etag);
    r.set_header("Cache-Control", "private, max-age=31536000, immutable");
    return r;
  };
  if (const auto tag = request.header("if-none-match")) {
    Result<std::string> etag = d.frames->check(id, *n);
    if (!etag.ok()) return failed_response(etag.status(), request, d.log);
    if (server::etag_matches(*tag, *etag)) {
      return cached(Response{.status = 304, .headers = {}, .body = {}}, *etag);
    }
  }
  Result<movies::FrameJpeg> image = d.frames->jpeg(id, *n);
  if (!image.ok()) return failed_response(image.status(), request, d.log);
  Response r;
  r.file_path = image->path;
  r.set_header("Content-Type", "image/jpeg");
  return cached(std::move(r), image->etag);
}

// "Run 3 (v2)" -> "Run_3__v2_": a file name safe in a header.
std::string download_name(std::string_view name) {
  std::string out;
  for (char c : name.substr(0, 64)) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                       c == '-' || c == '_' || c == '.';
    out.push_back(plain ? c : '_');
  }
  return out.empty() ? "movie" : out;
}

// Every row, streamed a part at a time (server/http.h, BodyStream). The
// first part is read here, so that a failure before a byte is sent still
// gets its status; a later one breaks the response off.
Response get_frames_csv(const Request& request, const MoviesDeps& d) {
  const std::string& id = request.params.at("id");
  Result<movies::MovieDetail> m = d.movies.get(id);
  if (!m.ok()) return failed_response(m.status(), request, d.log);
  auto csv = std::make_shared<movies::FramesCsv>(d.movies.frames_csv(id));
  auto first = std::make_shared<std::string>();
  Result<bool> more = csv->next(*first);
  if (!more.ok()) return failed_response(more.status(), request, d.log);
  Response r;
  r.body_stream = [csv, first, more = *more](std::string& part) mutable -> Result<bool> {
    if (!first) return csv->next(part);
    part = std::move(*first);
    first.reset();
    return more;
  };
  r.set_header("Content-Type", "text/csv; charset=utf-8");
  r.set_header("Content-Disposition",
               "attachment; filename=\"" + download_name(m->name) + "-frames.csv\"");
  return r;
}

Response get_audit(const Request& request, const MoviesDeps& d) {
  Result<std::vector<movies::AuditEntry>> entries = d.movies.audit(request.params.at("id"));
  if (!entries.ok()) return failed_response(entries.status(), request, d.log);
  return json_response(200, server::json_array(*entries, [](const movies::AuditEntry& e) {
                         return json::object{{"event", e.event},
                                             {"job_id", e.job_id},
                                             {"user_display_name", e.user_display_name},
                                             {"at_ms", e.at_ms},
                                             {"summary", e.summary}};
                       }));
}

// Marks the movie `deleting` and queues the rest (movies/probe_worker.h):
// 202, however many rows it has. Asked again, a removal whose job was lost
// is queued again.
Response remove_movie(const Request& request, const MoviesDeps& d) {
  const std::string& id = request.params.at("id");
  const Status removed = d.movies.remove(id, request.caller->name, request.caller->admin);
  if (!removed.ok()) return failed_response(removed, request, d.log);
  crash_point(CrashPoint::kDeleteAfterMark);
  const Status queued = movies::enqueue_remove(d.probe_queue, id);
  if (!queued.ok()) {
    return failed_response(
        queued.with_context("the movie is marked for removal, but its removal could not be "
                            "queued; ask again"),
        request, d.log);
  }
  if (d.options.probe_queued) d.options.probe_queued();
  return Response{.status = 202, .headers = {}, .body = {}};
}

// ---------------------------------------------------------------- leases and edits

// A lease call's body: a JSON object holding `lease_id` and no field but
// those in `fields`. The answer to send instead when it is not.
std::optional<Response> read_lease_body(const Request& request,
                                        std::initializer_list<std::string_view> fields,
                                        json::object& body, std::string& lease_id) {
  if (auto refused = read_json_object(request, body)) return refused;
  Status ok = server::check_fields(body, fields);
  if (ok.ok()) ok = server::read_string_field(body, "lease_id", true, lease_id);
  if (!ok.ok()) return server::error_response(ok, request.request_id);
  return std::nullopt;
}

movies::User user_of(const Request& request) {
  return {request.caller->name, request.caller->display_name, request.caller->admin};
}

Response acquire_analysis(const Request& request, const MoviesDeps& d) {
  movies::Lock holder;
  Result<movies::AnalysisLease> lease =
      d.movies.acquire_analysis(request.params.at("id"), user_of(request), &holder);
  if (!lease.ok()) {
    if (lease.status().code() == Code::kAlreadyExists) {
      return conflict_with_holder(lease.status(), holder);
    }
    return failed_response(lease.status(), request, d.log);
  }
  return json_response(
      200, json::object{{"lease_id", lease->lease_id}, {"expires_at_ms", lease->expires_at_ms}});
}

Response heartbeat(Request& request, const MoviesDeps& d) {
  json::object body;
  std::string lease_id;
  if (auto refused = read_lease_body(request, {"lease_id"}, body, lease_id)) return *refused;
  Result<movies::AnalysisLease> lease =
      d.movies.heartbeat(request.params.at("id"), request.caller->name, lease_id);
  if (!lease.ok()) return failed_response(lease.status(), request, d.log);
  return json_response(
      200, json::object{{"lease_id", lease->lease_id}, {"expires_at_ms", lease->expires_at_ms}});
}

Response release_analysis(Request& request, const MoviesDeps& d) {
  json::object body;
  std::string lease_id;
  if (auto refused = read_lease_body(request, {"lease_id"}, body, lease_id)) return *refused;
  const Status released = d.movies.release(request.params.at("id"), request.caller->name, lease_id);
  if (!released.ok()) return failed_response(released, request, d.log);
  return no_content();
}

// An admin's break of another user's analysis lease: no body, or `{}`.
Response break_analysis(Request& request, const MoviesDeps& d) {
  if (!request.body.empty()) {
    json::object body;
    if (auto refused = read_json_object(request, body)) return *refused;
    if (Status ok = server::check_fields(body, {}); !ok.ok()) {
      return failed_response(ok, request, d.log);
    }
  }
  const Status broken =
      d.movies.break_analysis(request.params.at("id"), user_of(request), request.caller->admin);
  if (!broken.ok()) return failed_response(broken, request, d.log);
  return get_movie(request, d);
}

// The movie as an edit left it.
Response edited(const Status& status, const Request& request, const MoviesDeps& d) {
  if (!status.ok()) return failed_response(status, request, d.log);
  return get_movie(request, d);
}

Response put_markers(Request& request, const MoviesDeps& d) {
  json::object body;
  std::string lease_id;
  if (auto refused = read_lease_body(request, {"lease_id", "markers"}, body, lease_id)) {
    return *refused;
  }
  Result<std::vector<tracer::Marker>> markers = parse_markers(body);
  if (!markers.ok()) return failed_response(markers.status(), request, d.log);
  return edited(
      d.movies.set_markers(request.params.at("id"), request.caller->name, lease_id, *markers),
      request, d);
}

Response put_trim(Request& request, const MoviesDeps& d) {
  json::object body;
  std::string lease_id;
  if (auto refused =
          read_lease_body(request, {"lease_id", "start_frame", "end_frame"}, body, lease_id)) {
    return *refused;
  }
  tracer::Trim trim;
  Status ok = server::read_int_field(body, "start_frame", true, trim.start_frame);
  if (ok.ok()) ok = server::read_int_field(body, "end_frame", true, trim.end_frame);
  if (!ok.ok()) return failed_response(ok, request, d.log);
  return edited(d.movies.set_trim(request.params.at("id"), request.caller->name, lease_id, trim),
                request, d);
}

Response put_capture_interval(Request& request, const MoviesDeps& d) {
  json::object body;
  std::string lease_id;
  if (auto refused = read_lease_body(request, {"lease_id", "every_frames"}, body, lease_id)) {
    return *refused;
  }
  int64_t every_frames = 0;
  if (Status ok = server::read_int_field(body, "every_frames", true, every_frames); !ok.ok()) {
    return failed_response(ok, request, d.log);
  }
  return edited(d.movies.set_capture_interval(request.params.at("id"), request.caller->name,
                                              lease_id, every_frames),
                request, d);
}

Response start_trace(Request& request, const MoviesDeps& d) {
  json::object body;
  std::string lease_id;
  if (auto refused = read_lease_body(request, {"lease_id"}, body, lease_id)) return *refused;
  Result<movies::TraceStarted> started =
      d.movies.start_trace(request.params.at("id"), user_of(request), lease_id);
  if (!started.ok()) return failed_response(started.status(), request, d.log);
  if (d.options.trace_queued) d.options.trace_queued();
  return json_response(
      202, json::object{{"job_id", started->job_id}, {"frames_total", started->frames_total}});
}

}  // namespace

Status add_movie_routes(Router& router, movies::Movies& movies, Queue& probe_queue, Random& random,
                        Logger& log, MoviesApiOptions options) {
  LEASEHOLD_ASSIGN_OR_RETURN(
      std::unique_ptr<movies::FrameCache> frame_cache,
      movies::FrameCache::open({.media = options.media,
                                .readers_max = options.frame_readers_max,
                                .cache_bytes_max = options.frame_cache_bytes_max,
                                .jpeg_quality = tracer::kJpegQualityDefault,
                                .video_limits = options.video_limits}));
  auto frames = std::make_unique<movies::FrameImages>(movies, *frame_cache);
  // One copy of what the handlers use, shared by every route.
  const auto deps = std::make_shared<const MoviesDeps>(
      MoviesDeps{movies, probe_queue, random, log, std::move(options), std::move(frame_cache),
                 std::move(frames)});
  const MoviesApiOptions& kept = deps->options;
  const auto on = [deps](auto* handler) {
    return [deps, handler](Request& r) { return handler(r, *deps); };
  };
  const RouteOptions read{.access = Access::kUser};
  const RouteOptions write{.access = Access::kUser, .body_bytes_max = kJsonBodyBytesMax};
  const RouteOptions upload_route{.access = Access::kUser,
                                  .body_bytes_max = kept.upload_bytes_max,
                                  .upload_dir = kept.upload_dir};
  const std::string movie = std::string(kMoviesPath) + "/{id}";
  const std::string lease = movie + "/analysis-lease";
  router.add("POST", kMoviesPath, on(upload), upload_route);
  router.add("GET", kMoviesPath, on(list_movies), read);
  router.add("GET", movie, on(get_movie), read);
  router.add("DELETE", movie, on(remove_movie), read);
  router.add("GET", movie + "/video", on(get_video), read);
  router.add("POST", lease, on(acquire_analysis), write);
  router.add("POST", lease + "/heartbeat", on(heartbeat), write);
  router.add("DELETE", lease, on(release_analysis), write);
  router.add("POST", lease + "/break", on(break_analysis), write);
  router.add("PUT", movie + "/markers", on(put_markers), write);
  router.add("PUT", movie + "/trim", on(put_trim), write);
  router.add("PUT", movie + "/capture-interval", on(put_capture_interval), write);
  router.add("POST", movie + "/trace", on(start_trace), write);
  router.add("GET", movie + "/frames", on(get_frames), read);
  router.add("GET", movie + "/frames.csv", on(get_frames_csv), read);
  router.add("GET", movie + "/times", on(get_frame_times), read);
  // "N.jpg" as one parameter: a pattern's parameter is a whole segment.
  router.add("GET", movie + "/frames/{image}", on(get_frame_image), read);
  router.add("GET", movie + "/audit", on(get_audit), read);
  return {};
}

}  // namespace leasehold::app
