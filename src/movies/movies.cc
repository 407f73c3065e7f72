#include "movies/movies.h"

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string_view>
#include <tuple>

#include "base/logging.h"
#include "base/text.h"
#include "movies/frame_images.h"
#include "movies/schema.h"

namespace leasehold::movies {
namespace {

namespace json = boost::json;

const std::string* str(const Item& item, std::string_view a) { return get_string(item, a); }

std::string str_or(const Item& item, std::string_view a) {
  const std::string* v = get_string(item, a);
  return v ? *v : std::string();
}

int64_t int_or(const Item& item, std::string_view a, int64_t fallback = 0) {
  const int64_t* v = get_int(item, a);
  return v ? *v : fallback;
}

Status validate_markers(const std::vector<tracer::Marker>& markers, const MovieDetail& m) {
  if (markers.size() > kMarkersMax) {
    return invalid_argument("at most " + std::to_string(kMarkersMax) + " markers");
  }
  std::set<std::string> ids;
  for (const tracer::Marker& mk : markers) {
    RETURN_IF_ERROR(validate_text("marker id", mk.id, kMarkerIdBytesMax, false));
    RETURN_IF_ERROR(validate_text("marker label", mk.label, kMarkerLabelBytesMax, true));
    if (!ids.insert(mk.id).second) return invalid_argument("marker id '" + mk.id + "' repeats");
    if (mk.frame < 0 || mk.frame >= m.frame_count) {
      return invalid_argument("marker '" + mk.id + "': frame outside the movie");
    }
    if (!(mk.x >= 0 && mk.x < m.width && mk.y >= 0 && mk.y < m.height)) {
      return invalid_argument("marker '" + mk.id + "': point outside the frame");
    }
  }
  return {};
}

// The statuses from which a movie may be locked for analysis or traced. A
// movie whose job is queued or tracing is taken only by the write that ends
// that job (Impl::acquire_analysis).
Condition traceable_status() {
  return cond::eq(attr::kStatus, kStatusReady) || cond::eq(attr::kStatus, kStatusTraced) ||
         cond::eq(attr::kStatus, kStatusTracingFailed);
}

bool is_traceable(const std::string& status) {
  return status == kStatusReady || status == kStatusTraced || status == kStatusTracingFailed;
}

// Free: no owner, or expired at now_ms (a released lease has expiry 0).
Condition slot_free(const SlotNames& n, int64_t now_ms) {
  return cond::not_exists(n.owner) || cond::lt(n.expires_at_ms, now_ms);
}

std::optional<Lock> lock_of(const LeaseView& v) {
  if (!v.held) return std::nullopt;
  return Lock{v.slot, v.holder, v.acquired_at_ms};
}

// A text cell of the CSV. One that begins as a formula would (=, +, -, @,
// tab, CR) is prefixed with a single quote, which a spreadsheet shows and
// never runs (OWASP's advice on CSV injection); then a cell with a comma, a
// quote or a line break is quoted, its quotes doubled.
void append_csv_text(const std::string& s, std::string& out) {
  const bool formula = !s.empty() && std::string_view("=+-@\t\r").find(s[0]) != std::string::npos;
  const bool quoted = s.find_first_of(",\"\r\n") != std::string::npos;
  if (quoted) out += '"';
  if (formula) out += '\'';
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  if (quoted) out += '"';
}

void append_csv_line(const FrameRow& r, std::string& out) {
  out += std::to_string(r.frame);
  out += ',';
  out += format_double(r.time_s);
  out += ',';
  append_csv_text(r.marker_id, out);
  out += ',';
  append_csv_text(r.label, out);
  for (double v : {r.x, r.y, r.score}) {
    out += ',';
    out += format_double(v);
  }
  out += ',';
  append_csv_text(r.status, out);
  for (const std::optional<double>& v : {r.vx, r.vy}) {
    out += ',';
    if (v) out += format_double(*v);
  }
  out += '\n';
}

FrameRow frame_row_of(const Item& item) {
  FrameRow r;
  r.marker_id = str_or(item, "marker_id");
  r.label = str_or(item, "label");
  r.frame = int_or(item, "frame");
  parse_double(str_or(item, "time_s"), r.time_s);
  parse_double(str_or(item, "x"), r.x);
  parse_double(str_or(item, "y"), r.y);
  parse_double(str_or(item, "score"), r.score);
  r.status = str_or(item, "status");
  double v = 0;
  if (parse_double(str_or(item, "vx"), v)) r.vx = v;
  if (parse_double(str_or(item, "vy"), v)) r.vy = v;
  r.job_id = str_or(item, attr::kJobId);
  r.job_epoch = int_or(item, attr::kJobEpoch);
  return r;
}

// A movie ID as create() makes them (16 hex digits), or as a client may
// have been given one: short, of letters, digits, '-' and '_'.
bool is_movie_id(std::string_view id) {
  return !id.empty() && id.size() <= 64 && std::ranges::all_of(id, [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ||
           c == '_';
  });
}

// A frames cursor: the trace's epoch and the sort key of the page's last
// row, "<epoch>.<sort key in hex>", which reads as nothing in particular
// and needs no escaping in a URL.
std::string frames_cursor(int64_t epoch, std::string_view sk) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out = std::to_string(epoch) + ".";
  for (char c : sk) {
    const auto byte = static_cast<unsigned char>(c);
    out += kDigits[byte >> 4];
    out += kDigits[byte & 0xf];
  }
  return out;
}

struct FramesPosition {
  int64_t epoch = 0;
  std::string sk;  // of a row, "<frame, 10 digits>#<marker id>"
};

Result<FramesPosition> parse_frames_cursor(std::string_view cursor) {
  const Status bad = invalid_argument("after: not a cursor of this movie's frames");
  const size_t dot = cursor.find('.');
  if (dot == std::string_view::npos || cursor.size() > 512) return bad;
  FramesPosition p;
  const std::string_view epoch = cursor.substr(0, dot);
  const auto [end, ec] = std::from_chars(epoch.data(), epoch.data() + epoch.size(), p.epoch);
  if (ec != std::errc() || end != epoch.data() + epoch.size() || p.epoch < 1) return bad;
  const std::string_view hex = cursor.substr(dot + 1);
  if (hex.size() % 2 != 0) return bad;
  for (size_t i = 0; i < hex.size(); i += 2) {
    unsigned byte = 0;
    const auto [at, hex_ec] = std::from_chars(hex.data() + i, hex.data() + i + 2, byte, 16);
    if (hex_ec != std::errc() || at != hex.data() + i + 2) return bad;
    p.sk += static_cast<char>(byte);
  }
  // A row's sort key (schema.h): frame_sk() of a frame and a marker id.
  const size_t hash = p.sk.find('#');
  if (hash != 10 || p.sk.size() == 11 || p.sk.size() > 11 + kMarkerIdBytesMax ||
      !std::ranges::all_of(std::string_view(p.sk).substr(0, 10),
                           [](char c) { return c >= '0' && c <= '9'; })) {
    return bad;
  }
  return p;
}

// What users see of a probe that failed: never the path.
std::string probe_summary(const Status& s) {
  if (s.code() == Code::kNotFound) return "the movie's file is missing";
  return "the file is not a video that can be traced";
}

// Writes an audit entry of trace job `job_id` (phase 0 its start, 1 its
// end) under its key made from the job ID; one written before stays as it
// is, and counts as written.
Status put_job_event(ItemStore& store, const std::string& movie_id, const std::string& job_id,
                     int phase, const std::string& event, int64_t at_ms, const std::string& by,
                     const std::string& summary) {
  Item entry{{attr::kPk, movie_pk(movie_id)},
             {attr::kSk, job_audit_sk(at_ms, phase, job_id)},
             {"event", event},
             {"user_display_name", by},
             {"at_ms", at_ms},
             {attr::kJobId, job_id}};
  if (!summary.empty()) entry["summary"] = summary;
  const Status put = store.put(kAuditTable, entry, cond::not_exists(attr::kPk));
  return put.code() == Code::kConditionFailed ? Status() : put;
}

}  // namespace

namespace internal {

std::string markers_json(const std::vector<tracer::Marker>& markers) {
  json::array a;
  for (const tracer::Marker& m : markers) {
    a.push_back(
        json::object{{"id", m.id}, {"label", m.label}, {"frame", m.frame}, {"x", m.x}, {"y", m.y}});
  }
  return json::serialize(a);
}

Result<std::vector<tracer::Marker>> parse_markers(const std::string& text) {
  std::vector<tracer::Marker> out;
  if (text.empty()) return out;
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_array()) return internal_error("malformed markers");
  for (const json::value& e : v.as_array()) {
    const json::object* o = e.if_object();
    if (o == nullptr) return internal_error("malformed marker");
    tracer::Marker m;
    try {
      m.id = std::string(o->at("id").as_string());
      m.label = std::string(o->at("label").as_string());
      m.frame = o->at("frame").to_number<int64_t>();
      m.x = o->at("x").to_number<double>();
      m.y = o->at("y").to_number<double>();
    } catch (const std::exception&) {
      return internal_error("malformed marker");
    }
    out.push_back(std::move(m));
  }
  return out;
}

Result<MovieDetail> parse_movie(const Item& item, LeaseManager& leases) {
  MovieDetail m;
  const std::string* id = str(item, attr::kId);
  const std::string* status = str(item, attr::kStatus);
  if (id == nullptr || status == nullptr) return internal_error("malformed movie item");
  m.id = *id;
  m.name = str_or(item, attr::kName);
  m.status = *status;
  m.frames_done = int_or(item, attr::kFramesDone);
  m.frames_total = int_or(item, attr::kFramesTotal);
  const Key key = movie_key(m.id);
  const LeaseView tracing = leases.view_of(item, key, kTracingSlot);
  const LeaseView analysis = leases.view_of(item, key, kAnalysisSlot);
  m.lock = lock_of(tracing);
  // A queued job holds its movie however long it waits (Movies::acquire_analysis).
  if (!m.lock && m.status == kStatusQueued && !tracing.owner.empty()) {
    m.lock = Lock{tracing.slot, tracing.holder, tracing.acquired_at_ms};
  }
  if (!m.lock) m.lock = lock_of(analysis);
  m.file = str_or(item, attr::kFile);
  m.owner_user = str_or(item, attr::kOwnerUser);
  m.owner_display_name = str_or(item, attr::kOwnerDisplayName);
  m.created_at_ms = int_or(item, attr::kCreatedAtMs);
  if (const std::string* fps = str(item, attr::kFps)) parse_double(*fps, m.fps);
  m.width = static_cast<int>(int_or(item, attr::kWidth));
  m.height = static_cast<int>(int_or(item, attr::kHeight));
  m.frame_count = int_or(item, attr::kFrameCount);
  ASSIGN_OR_RETURN(m.markers, parse_markers(str_or(item, attr::kMarkers)));
  m.trim.start_frame = int_or(item, attr::kTrimStart);
  m.trim.end_frame = int_or(item, attr::kTrimEnd);
  m.every_frames = int_or(item, attr::kEveryFrames, 1);
  m.failure_summary = str_or(item, attr::kFailureSummary);
  // A trace whose job stopped renewing its lease (a worker killed) ended
  // without publishing anything: report it as failed (the next read through
  // Movies records it so, once).
  if (m.status == kStatusTracing && !tracing.held) {
    m.status = kStatusTracingFailed;
    m.failure_summary = kSummaryWorkerWentAway;
  }
  return m;
}

std::optional<JobEnd> dead_job(const Item& item, LeaseManager& leases) {
  const std::string* status = get_string(item, attr::kStatus);
  const std::string* id = get_string(item, attr::kId);
  if (status == nullptr || id == nullptr || *status != kStatusTracing) return std::nullopt;
  const LeaseView tracing = leases.view_of(item, movie_key(*id), kTracingSlot);
  if (tracing.held || tracing.token.empty()) return std::nullopt;
  return JobEnd{tracing.token, kStatusTracingFailed, kSummaryWorkerWentAway};
}

Update job_end_update(const JobEnd& end, int64_t now_ms) {
  Update u;
  u.set(attr::kStatus, end.status)
      .set(attr::kJobEndedAtMs, now_ms)
      .set(attr::kJobAuditPending, end.job_id);
  if (end.summary.empty())
    u.remove(attr::kFailureSummary);
  else
    u.set(attr::kFailureSummary, end.summary);
  return u;
}

Condition job_is(const JobEnd& end, std::string_view status) {
  return cond::eq(SlotNames(kTracingSlot).token, end.job_id) &&
         cond::eq(attr::kStatus, std::string(status));
}

Status record_job_audit(ItemStore& store, const std::string& movie_id, const Item& item) {
  const std::string* job_id = get_string(item, attr::kJobAuditPending);
  if (job_id == nullptr) return {};
  const std::string status = str_or(item, attr::kStatus);
  const int64_t started_at_ms = int_or(item, attr::kJobStartedAtMs);
  const int64_t ended_at_ms = std::max(started_at_ms, int_or(item, attr::kJobEndedAtMs));
  const std::string* started_by = get_string(item, attr::kJobStartedBy);
  const std::string by =
      started_by != nullptr ? *started_by : str_or(item, SlotNames(kTracingSlot).holder);
  const auto put = [&](int phase, const std::string& event, int64_t at_ms,
                       const std::string& summary) {
    return put_job_event(store, movie_id, *job_id, phase, event, at_ms, by, summary);
  };
  // The start first, in case its own write never happened (a server killed
  // in start_trace): both are then in the audit, the start sorting first. A
  // job started before the movie kept job_started_at_ms has its start
  // audited already, under a key of its own.
  if (get_int(item, attr::kJobStartedAtMs) != nullptr) {
    RETURN_IF_ERROR(put(0, kEventTracingStarted, started_at_ms, ""));
  }
  const bool traced = status == kStatusTraced;
  RETURN_IF_ERROR(put(1, traced ? kEventTracingCompleted : kEventTracingFailed, ended_at_ms,
                      traced ? "" : str_or(item, attr::kFailureSummary)));
  Update done;
  done.remove(attr::kJobAuditPending);
  const Result<Item> cleared = store.update(kMoviesTable, movie_key(movie_id), done,
                                            cond::eq(attr::kJobAuditPending, *job_id));
  if (cleared.ok() || cleared.status().code() == Code::kConditionFailed) return {};
  return cleared.status();
}

Status record_audit(ItemStore& store, Clock& clock, Random& random, const std::string& movie_id,
                    const AuditEntry& entry) {
  const int64_t at_ms = entry.at_ms != 0 ? entry.at_ms : to_unix_ms(clock.wall_now());
  // Within one millisecond a trace's start sorts before its end (the clock
  // gives no order there); the random part keeps keys unique.
  const int phase = entry.event == kEventTracingStarted ? 0 : 1;
  char sk[64];
  std::snprintf(sk, sizeof sk, "%015" PRId64 "#%d#%016" PRIx64, at_ms, phase, random.next_u64());
  Item item{{attr::kPk, movie_pk(movie_id)},
            {attr::kSk, std::string(sk)},
            {"event", entry.event},
            {"user_display_name", entry.user_display_name},
            {"at_ms", at_ms}};
  if (!entry.job_id.empty()) item[attr::kJobId] = entry.job_id;
  if (!entry.summary.empty()) item["summary"] = entry.summary;
  return store.put(kAuditTable, item, cond::not_exists(attr::kPk));
}

}  // namespace internal

class Movies::Impl {
 public:
  Impl(ItemStore& store, Clock& clock, Random& random, Queue& queue, MoviesOptions options)
      : store_(store),
        clock_(clock),
        random_(random),
        queue_(queue),
        options_(std::move(options)),
        leases_(store, clock, random, options_.lease) {}

  Result<MovieDetail> create(const std::string& name, const User& owner, const std::string& file);
  Result<MovieDetail> probe(const std::string& id, std::stop_token stop);
  Result<MoviePage> list(const ListOptions& options);
  Result<FramePage> frames(const std::string& id, const FramesOptions& options);
  Status break_analysis(const std::string& id, const User& by, bool is_admin);
  Result<MovieDetail> get(const std::string& id);
  Status remove(const std::string& id, const std::string& user_name, bool is_admin);
  Result<AnalysisLease> acquire_analysis(const std::string& id, const User& user, Lock* holder);
  Result<AnalysisLease> heartbeat(const std::string& id, const std::string& user_name,
                                  const std::string& lease_id);
  Status release(const std::string& id, const std::string& user_name, const std::string& lease_id);
  Status edit(const std::string& id, const std::string& user_name, const std::string& lease_id,
              const Update& update);
  Result<TraceStarted> start_trace(const std::string& id, const User& user,
                                   const std::string& lease_id);
  Result<std::vector<AuditEntry>> audit(const std::string& id);

  Status finish_remove(const std::string& id);

  Result<MovieDetail> read(const std::string& id);
  Result<Item> read_item(const std::string& id);
  LeaseRef analysis_ref(const std::string& id, const std::string& user_name,
                        const std::string& lease_id) {
    return LeaseRef{movie_key(id), kAnalysisSlot, user_name, lease_id};
  }
  Result<Item> settle(const std::string& id, Item item);
  Result<Lease> take_ending_job(const std::string& id, const AcquireOptions& o, const Item& item);
  Status remove_partition(std::string_view table, const std::string& id);
  Result<bool> end_unqueued(const std::string& id, const Lease& lease, const Status& why);

 private:
  ItemStore& store_;
  Clock& clock_;
  Random& random_;
  Queue& queue_;
  const MoviesOptions options_;
  LeaseManager leases_;
};

Result<Item> Movies::Impl::read_item(const std::string& id) {
  if (id.empty() || id.size() > 64) return not_found("no movie '" + id + "'");
  Result<Item> item = store_.get(kMoviesTable, movie_key(id), /*consistent=*/true);
  if (!item.ok() && item.status().code() == Code::kNotFound) {
    return not_found("no movie '" + id + "'");
  }
  return item;
}

// A movie as read settles what its readers find unfinished: a job whose
// worker went away is ended as failed, and a job's missing audit written.
Result<MovieDetail> Movies::Impl::read(const std::string& id) {
  ASSIGN_OR_RETURN(Item item, read_item(id));
  ASSIGN_OR_RETURN(item, settle(id, std::move(item)));
  return internal::parse_movie(item, leases_);
}

// Ends a dead job by one conditional write (one reader among many wins; the
// others find it ended), and writes the audit a job's ender did not. A store
// failure here fails nothing: the item read is returned, the next reader
// tries again.
Result<Item> Movies::Impl::settle(const std::string& id, Item item) {
  if (std::optional<internal::JobEnd> dead = internal::dead_job(item, leases_)) {
    const int64_t now_ms = to_unix_ms(clock_.wall_now());
    Result<Item> ended = store_.update(
        kMoviesTable, movie_key(id), internal::job_end_update(*dead, now_ms),
        internal::job_is(*dead, kStatusTracing) && slot_free(SlotNames(kTracingSlot), now_ms));
    if (ended.ok()) {
      log_to(options_.logger, LogLevel::kWarn, "movie {}: job {} ended: its worker went away", id,
             dead->job_id);
      item = std::move(*ended);
    } else if (ended.status().code() == Code::kConditionFailed) {
      ASSIGN_OR_RETURN(item, read_item(id));
    }
  }
  const Status audited = internal::record_job_audit(store_, id, item);
  if (!audited.ok()) {
    log_to(options_.logger, LogLevel::kInfo, "movie {}: job audit not written yet: {}", id,
           audited.to_string());
  }
  return item;
}

Result<MovieDetail> Movies::Impl::create(const std::string& name, const User& owner,
                                         const std::string& file) {
  RETURN_IF_ERROR(validate_text("name", name, kMovieNameBytesMax, false));
  RETURN_IF_ERROR(validate_text("user name", owner.name, kOwnerBytesMax, false));
  RETURN_IF_ERROR(validate_text("file", file, kFileNameBytesMax, false));
  if (file.find('/') != std::string::npos || file == "." || file == "..") {
    return invalid_argument("file must be a plain file name");
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(std::filesystem::path(options_.media_dir) / file, ec)) {
    return invalid_argument("no such file in the media folder: '" + file + "'");
  }
  const std::string id = random_token(random_).substr(0, 16);
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  Item item{{attr::kPk, movie_pk(id)},
            {attr::kKind, std::string(kMovieKind)},
            {attr::kId, id},
            {attr::kName, name},
            {attr::kFile, file},
            {attr::kOwnerUser, owner.name},
            {attr::kOwnerDisplayName, owner.display_name},
            {attr::kCreatedAtMs, now_ms},
            {attr::kStatus, std::string(kStatusProcessing)},
            {attr::kFramesDone, int64_t{0}},
            {attr::kFramesTotal, int64_t{0}}};
  RETURN_IF_ERROR(store_.put(kMoviesTable, item, cond::not_exists(attr::kPk)));
  return internal::parse_movie(item, leases_);
}

Result<MovieDetail> Movies::Impl::probe(const std::string& id, std::stop_token stop) {
  ASSIGN_OR_RETURN(MovieDetail m, read(id));
  if (m.status != kStatusProcessing) return failed_precondition("movie is not being processed");
  const std::string path = (std::filesystem::path(options_.media_dir) / m.file).string();
  Result<tracer::VideoInfo> info = tracer::probe(path, options_.video_limits, stop);
  if (stop.stop_requested()) return failed_precondition("probing stopped");
  Update update;
  if (info.ok()) {
    update.set(attr::kStatus, std::string(kStatusReady))
        .set(attr::kFps, format_double(info->fps))
        .set(attr::kWidth, int64_t{info->width})
        .set(attr::kHeight, int64_t{info->height})
        .set(attr::kFrameCount, info->frame_count)
        .set(attr::kMarkers, std::string("[]"))
        .set(attr::kTrimStart, int64_t{0})
        .set(attr::kTrimEnd, info->frame_count - 1)
        .set(attr::kEveryFrames, int64_t{1});
  } else {
    log_to(options_.logger, LogLevel::kWarn, "movie {}: probe failed: {}", id,
           info.status().to_string());
    update.set(attr::kStatus, std::string(kStatusInvalid))
        .set(attr::kFailureSummary, probe_summary(info.status()));
  }
  Result<Item> written = store_.update(kMoviesTable, movie_key(id), update,
                                       cond::eq(attr::kStatus, kStatusProcessing));
  if (!written.ok()) {
    if (written.status().code() == Code::kConditionFailed) {
      return failed_precondition("movie is not being processed");
    }
    return written.status();
  }
  return internal::parse_movie(*written, leases_);
}

// The index orders movies by created_at_ms alone, and movies created in the
// same millisecond in an order of the store's choosing, which may differ
// from one query to the next. A page is therefore read on until the
// millisecond of its last movie is complete, and ordered by (created_at_ms,
// id): an order that resuming after a movie's ID can rebuild exactly.
Result<MoviePage> Movies::Impl::list(const ListOptions& options) {
  if (options.limit < 1 || options.limit > kListLimitMax) {
    return invalid_argument("limit: expected 1 to " + std::to_string(kListLimitMax));
  }
  struct Listed {
    int64_t created_at_ms;
    MovieSummary summary;
  };
  std::optional<Listed> after;
  if (!options.after.empty()) {
    if (!is_movie_id(options.after)) return invalid_argument("after: not a movie ID");
    Result<Item> item = store_.get(kMoviesTable, movie_key(options.after), /*consistent=*/true);
    if (!item.ok() && item.status().code() != Code::kNotFound) return item.status();
    if (!item.ok() || get_int(*item, attr::kCreatedAtMs) == nullptr) {
      return invalid_argument("after: no movie '" + options.after +
                              "' (removed since?); list again from the first page");
    }
    after = Listed{*get_int(*item, attr::kCreatedAtMs), {}};
    after->summary.id = options.after;
  }
  const auto before = [](const Listed& a, const Listed& b) {
    return std::tie(a.created_at_ms, a.summary.id) < std::tie(b.created_at_ms, b.summary.id);
  };
  std::vector<Listed> got;
  QueryOptions q;
  q.limit = static_cast<int>(std::min<size_t>(kQueryLimitMax, options.limit + 1));
  const KeyRange range = after ? KeyRange::ge(after->created_at_ms) : KeyRange::all();
  bool complete = false;  // a page and one more, and all of the last one's millisecond
  do {
    ASSIGN_OR_RETURN(Page page,
                     store_.query_index(kMoviesTable, kMoviesIndex, kMovieKind, range, q));
    for (const Item& item : page.items) {
      Result<MovieDetail> m = internal::parse_movie(item, leases_);
      if (!m.ok()) continue;  // a malformed item is skipped, not fatal to the list
      Listed listed{m->created_at_ms, static_cast<MovieSummary&>(*m)};
      if (after && !before(*after, listed)) continue;
      complete = got.size() > options.limit && listed.created_at_ms > got.back().created_at_ms;
      if (complete) break;
      got.push_back(std::move(listed));
    }
    q.cursor = page.next_cursor;
  } while (!complete && !q.cursor.empty());
  std::sort(got.begin(), got.end(), before);
  MoviePage out;
  for (size_t i = 0; i < got.size() && i < options.limit; ++i) {
    out.items.push_back(std::move(got[i].summary));
  }
  if (got.size() > options.limit) out.next_after = out.items.back().id;
  return out;
}

// Rows of older traces are skipped (they are removed in the background), so
// a page may read past more rows than it returns. One row beyond the page
// says whether another page follows.
Result<FramePage> Movies::Impl::frames(const std::string& id, const FramesOptions& options) {
  if (options.limit < 1 || options.limit > kFramesLimitMax) {
    return invalid_argument("limit: expected 1 to " + std::to_string(kFramesLimitMax));
  }
  std::optional<FramesPosition> after;
  if (!options.after.empty()) {
    ASSIGN_OR_RETURN(after, parse_frames_cursor(options.after));
  }
  ASSIGN_OR_RETURN(const Item movie, read_item(id));
  const int64_t epoch = leases_.view_of(movie, movie_key(id), kTracingSlot).epoch;
  if (after && after->epoch != epoch) {
    return failed_precondition(
        "the movie was traced again since the page before; read its frames from the first page");
  }
  FramePage out;
  if (epoch == 0) return out;  // never traced
  std::string last_sk;
  QueryOptions q;
  q.limit = static_cast<int>(std::min<size_t>(kQueryLimitMax, options.limit + 1));
  const KeyRange range = after ? KeyRange::gt(after->sk) : KeyRange::all();
  do {
    ASSIGN_OR_RETURN(Page page, store_.query(kFramesTable, movie_pk(id), range, q));
    for (const Item& item : page.items) {
      if (int_or(item, attr::kJobEpoch) != epoch) continue;
      if (out.items.size() == options.limit) {
        out.next_after = frames_cursor(epoch, last_sk);
        return out;
      }
      out.items.push_back(frame_row_of(item));
      last_sk = str_or(item, attr::kSk);
    }
    q.cursor = page.next_cursor;
  } while (!q.cursor.empty());
  return out;
}

Status Movies::Impl::break_analysis(const std::string& id, const User& by, bool is_admin) {
  if (!is_admin) return permission_denied("only an admin may break another user's lease");
  RETURN_IF_ERROR(validate_text("display name", by.display_name, kHolderBytesMax, true));
  ASSIGN_OR_RETURN(const Item movie, read_item(id));
  const LeaseView held = leases_.view_of(movie, movie_key(id), kAnalysisSlot);
  if (!held.held) return failed_precondition("no live analysis lease on the movie to break");
  // Cleared, not expired: an expired slot keeps its owner and token, and the
  // old holder could still release it as if nothing had happened.
  const Status broken = leases_.release(
      LeaseRef{movie_key(id), kAnalysisSlot, held.owner, held.token}, ReleaseMode::kClear);
  if (broken.code() == Code::kFailedPrecondition) {
    return failed_precondition("the movie's analysis lease changed hands meanwhile; look again");
  }
  RETURN_IF_ERROR(broken);
  const std::string whose = held.holder.empty() ? held.owner : held.holder;
  const Status audited =
      internal::record_audit(store_, clock_, random_, id,
                             AuditEntry{kEventAnalysisBroken, "", by.display_name, 0,
                                        "the analysis lease of " + whose + " was broken"});
  if (!audited.ok()) {
    log_to(options_.logger, LogLevel::kWarn, "movie {}: audit not recorded: {}", id,
           audited.to_string());
  }
  return {};
}

Result<MovieDetail> Movies::Impl::get(const std::string& id) { return read(id); }

// One write marks the movie `deleting` (nothing may take it then); the rows,
// the audit, the file and the item go later, off the request
// (finish_remove). A movie already `deleting` is marked again: a removal
// whose job was lost is started over by asking again.
Status Movies::Impl::remove(const std::string& id, const std::string& user_name, bool is_admin) {
  ASSIGN_OR_RETURN(MovieDetail m, read(id));
  if (!is_admin && m.owner_user != user_name) {
    return permission_denied("only the movie's owner or an admin may remove it");
  }
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  // A queued job keeps its movie, live lease or not: its claim would take it
  // back (end it first by taking the movie, Impl::acquire_analysis).
  const Condition unlocked = slot_free(SlotNames(kAnalysisSlot), now_ms) &&
                             slot_free(SlotNames(kTracingSlot), now_ms) &&
                             cond::ne(attr::kStatus, kStatusQueued);
  Update mark;
  mark.set(attr::kStatus, std::string(kStatusDeleting));
  const Result<Item> marked =
      store_.update(kMoviesTable, movie_key(id), mark, cond::exists(attr::kPk) && unlocked);
  if (!marked.ok() && marked.status().code() == Code::kConditionFailed) {
    RETURN_IF_ERROR(read(id).status());
    return failed_precondition("the movie is in use (locked); try again when it is free");
  }
  return marked.status();
}

// Each step is idempotent and the item goes last, so a removal stopped at
// any point is finished by running it again.
Status Movies::Impl::finish_remove(const std::string& id) {
  ASSIGN_OR_RETURN(Item item, read_item(id));
  if (str_or(item, attr::kStatus) != kStatusDeleting) {
    return failed_precondition("the movie is not being removed");
  }
  RETURN_IF_ERROR(remove_partition(kFramesTable, id));
  RETURN_IF_ERROR(remove_partition(kAuditTable, id));
  const std::string file = str_or(item, attr::kFile);
  std::error_code ec;
  if (!file.empty()) std::filesystem::remove(std::filesystem::path(options_.media_dir) / file, ec);
  if (ec) return unavailable("the movie's file could not be removed: " + ec.message());
  // The images of its frames (frame_images.h), made by whichever process
  // served them.
  std::filesystem::remove_all(frame_cache_dir(options_.media_dir, id), ec);
  if (ec) return unavailable("the movie's frame images could not be removed: " + ec.message());
  const Status removed =
      store_.remove(kMoviesTable, movie_key(id), cond::eq(attr::kStatus, kStatusDeleting));
  if (removed.code() == Code::kConditionFailed) return {};  // removed by another worker
  return removed;
}

Status Movies::Impl::remove_partition(std::string_view table, const std::string& id) {
  QueryOptions q;
  q.limit = kQueryLimitMax;
  q.consistent = true;
  while (true) {
    ASSIGN_OR_RETURN(Page page, store_.query(table, movie_pk(id), KeyRange::all(), q));
    if (page.items.empty()) return {};
    for (const Item& item : page.items) {
      RETURN_IF_ERROR(store_.remove(table, Key{movie_pk(id), str_or(item, attr::kSk)}, {}));
    }
  }
}

}  // namespace leasehold::movies

namespace leasehold::movies {

// A refused acquisition says why: no such movie, who holds it, or a movie
// not in a state to be edited. A lease that expired between the write and
// the read is tried again, and a queued job whose tracing lease has expired
// is ended by the acquisition (take_ending_job).
Result<AnalysisLease> Movies::Impl::acquire_analysis(const std::string& id, const User& user,
                                                     Lock* holder) {
  RETURN_IF_ERROR(validate_text("user name", user.name, kOwnerBytesMax, false));
  RETURN_IF_ERROR(validate_text("display name", user.display_name, kHolderBytesMax, true));
  constexpr int kAttemptsMax = 3;
  for (int attempt = 0; attempt < kAttemptsMax; ++attempt) {
    AcquireOptions o;
    o.owner = user.name;
    o.holder = user.display_name;
    o.slot = kAnalysisSlot;
    o.ttl = options_.analysis_ttl;
    o.extra_condition = cond::exists(attr::kPk) && traceable_status() &&
                        slot_free(SlotNames(kTracingSlot), to_unix_ms(clock_.wall_now()));
    Result<Lease> lease = leases_.acquire(movie_key(id), o);
    if (lease.ok()) return AnalysisLease{lease->token, lease->expires_at_ms};
    if (lease.status().code() != Code::kAlreadyExists) return lease.status();
    ASSIGN_OR_RETURN(Item item, read_item(id));
    ASSIGN_OR_RETURN(item, settle(id, std::move(item)));
    ASSIGN_OR_RETURN(MovieDetail m, internal::parse_movie(item, leases_));
    const LeaseView tracing = leases_.view_of(item, movie_key(id), kTracingSlot);
    if (m.status == kStatusQueued && !tracing.held && (user.admin || user.name == tracing.owner)) {
      lease = take_ending_job(id, o, item);
      if (lease.ok()) return AnalysisLease{lease->token, lease->expires_at_ms};
      if (lease.status().code() != Code::kAlreadyExists) return lease.status();
      continue;
    }
    if (m.lock) {
      if (holder != nullptr) *holder = *m.lock;
      return already_exists("the movie is locked (" + m.lock->kind + ") by " +
                            m.lock->user_display_name);
    }
    if (!is_traceable(m.status)) return failed_precondition("the movie is " + m.status);
  }
  return unavailable("the movie's lease changed hands while it was taken; retry");
}

// A queued job keeps its movie past its tracing lease's expiry as long as
// nobody takes the movie: its claim re-arms the lease. Taking the movie
// then ends the job, in the same write, as failed; the claim finds it ended.
Result<Lease> Movies::Impl::take_ending_job(const std::string& id, const AcquireOptions& o,
                                            const Item& item) {
  const LeaseView tracing = leases_.view_of(item, movie_key(id), kTracingSlot);
  const internal::JobEnd end{tracing.token, kStatusTracingFailed,
                             "the trace was cancelled: the movie was taken back before a worker "
                             "started it"};
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  AcquireOptions ending = o;
  ending.extra_condition =
      internal::job_is(end, kStatusQueued) && slot_free(SlotNames(kTracingSlot), now_ms);
  ending.extra_update = internal::job_end_update(end, now_ms);
  ASSIGN_OR_RETURN(Lease lease, leases_.acquire(movie_key(id), ending));
  log_to(options_.logger, LogLevel::kInfo, "movie {}: queued job {} ended: the movie was taken", id,
         end.job_id);
  Result<Item> now = read_item(id);
  if (now.ok()) (void)settle(id, std::move(*now));  // the ended job's audit
  return lease;
}

Result<AnalysisLease> Movies::Impl::heartbeat(const std::string& id, const std::string& user_name,
                                              const std::string& lease_id) {
  Result<Lease> lease = leases_.renew(analysis_ref(id, user_name, lease_id), options_.analysis_ttl);
  if (lease.ok()) return AnalysisLease{lease->token, lease->expires_at_ms};
  if (lease.status().code() == Code::kFailedPrecondition) RETURN_IF_ERROR(read(id).status());
  return lease.status();
}

Status Movies::Impl::release(const std::string& id, const std::string& user_name,
                             const std::string& lease_id) {
  const Status released =
      leases_.release(analysis_ref(id, user_name, lease_id), ReleaseMode::kExpire);
  if (released.code() == Code::kFailedPrecondition) RETURN_IF_ERROR(read(id).status());
  return released;
}

Status Movies::Impl::edit(const std::string& id, const std::string& user_name,
                          const std::string& lease_id, const Update& update) {
  Result<Item> written = leases_.fenced_write(analysis_ref(id, user_name, lease_id), update);
  return written.status();
}

Result<TraceStarted> Movies::Impl::start_trace(const std::string& id, const User& user,
                                               const std::string& lease_id) {
  ASSIGN_OR_RETURN(Item item, read_item(id));
  ASSIGN_OR_RETURN(item, settle(id, std::move(item)));
  ASSIGN_OR_RETURN(MovieDetail m, internal::parse_movie(item, leases_));
  if (m.lock && m.lock->kind == kTracingSlot) {
    return already_exists("the movie is being traced (started by " + m.lock->user_display_name +
                          ")");
  }
  if (m.markers.empty()) return invalid_argument("place at least one marker");
  tracer::TraceRequest request{m.markers, m.trim, m.every_frames, {}};
  tracer::VideoInfo video;
  video.fps = m.fps;
  video.width = m.width;
  video.height = m.height;
  video.frame_count = m.frame_count;
  RETURN_IF_ERROR(tracer::validate(request, video));
  const int64_t frames_total = tracer::sampled_frame_count(m.trim, m.every_frames);

  AcquireOptions to;
  to.owner = user.name;
  to.holder = user.display_name;
  to.slot = kTracingSlot;
  to.ttl = options_.tracing_ttl;
  // The request validated above is the one traced: the edits it was read
  // from are part of the condition.
  to.extra_condition =
      traceable_status() && cond::eq(attr::kMarkers, internal::markers_json(m.markers)) &&
      cond::eq(attr::kTrimStart, m.trim.start_frame) &&
      cond::eq(attr::kTrimEnd, m.trim.end_frame) && cond::eq(attr::kEveryFrames, m.every_frames);
  // After the last job's end in the audit, even within its millisecond (or
  // behind this clock).
  const int64_t now_ms =
      std::max(to_unix_ms(clock_.wall_now()), int_or(item, attr::kJobEndedAtMs) + 1);
  to.extra_update.set(attr::kStatus, std::string(kStatusQueued))
      .set(attr::kFramesDone, int64_t{0})
      .set(attr::kFramesTotal, frames_total)
      .set(attr::kJobStartedAtMs, now_ms)
      .set(attr::kJobStartedBy, user.display_name)
      .remove(attr::kFailureSummary)
      .remove(attr::kJobClaimedBy)
      .remove(attr::kJobClaimedAtMs)
      .remove(attr::kJobEndedAtMs)
      .remove(attr::kJobAuditPending);
  Result<Lease> lease = leases_.replace(analysis_ref(id, user.name, lease_id), to);
  if (!lease.ok()) {
    if (lease.status().code() != Code::kAlreadyExists) return lease.status();
    ASSIGN_OR_RETURN(MovieDetail now, read(id));
    if (now.lock && now.lock->kind == kTracingSlot) {
      return already_exists("the movie is being traced");
    }
    return failed_precondition("the movie changed while the trace was started; reload it");
  }
  // Its start in the audit now (a settle writes it later if this fails).
  const Status audited = put_job_event(store_, id, lease->token, 0, kEventTracingStarted, now_ms,
                                       user.display_name, "");
  if (!audited.ok()) {
    log_to(options_.logger, LogLevel::kWarn, "movie {}: audit not recorded: {}", id,
           audited.to_string());
  }
  const std::string body =
      json::serialize(json::object{{"movie_id", id}, {"job_id", lease->token}});
  Result<std::string> sent = queue_.send(body);
  if (!sent.ok()) {
    ASSIGN_OR_RETURN(bool ended, end_unqueued(id, *lease, sent.status()));
    // Not ended: a worker claimed the job, so the message was sent after all.
    // Ended: the outcome is known now, whatever the queue said.
    if (ended) return unavailable("the trace could not be queued: " + sent.status().message());
  }
  return TraceStarted{lease->token, frames_total, lease->expires_at_ms};
}

// A job whose message may not have been sent is ended as failed, unless a
// worker has claimed it meanwhile (then it was sent: false). If this write
// fails too, the job stays queued, and ends when someone takes the movie
// after its tracing lease expires.
Result<bool> Movies::Impl::end_unqueued(const std::string& id, const Lease& lease,
                                        const Status& why) {
  log_to(options_.logger, LogLevel::kError, "movie {}: job {} not queued: {}", id, lease.token,
         why.to_string());
  const internal::JobEnd end{lease.token, kStatusTracingFailed, "the trace could not be queued"};
  Update update = internal::job_end_update(end, to_unix_ms(clock_.wall_now()));
  update.set(SlotNames(kTracingSlot).expires_at_ms, int64_t{0});
  Result<Item> ended =
      store_.update(kMoviesTable, movie_key(id), update, internal::job_is(end, kStatusQueued));
  if (!ended.ok() && ended.status().code() == Code::kConditionFailed) return false;
  if (!ended.ok()) return ended.status().with_context("the trace could not be queued");
  (void)settle(id, std::move(*ended));  // its audit
  return true;
}

Result<std::vector<AuditEntry>> Movies::Impl::audit(const std::string& id) {
  RETURN_IF_ERROR(read(id).status());
  QueryOptions q;
  q.limit = static_cast<int>(kAuditEntriesMax);
  ASSIGN_OR_RETURN(Page page, store_.query(kAuditTable, movie_pk(id), KeyRange::all(), q));
  std::vector<AuditEntry> out;
  for (const Item& item : page.items) {
    out.push_back(AuditEntry{str_or(item, "event"), str_or(item, attr::kJobId),
                             str_or(item, "user_display_name"), int_or(item, "at_ms"),
                             str_or(item, "summary")});
  }
  return out;
}

// ---------------------------------------------------------------- Movies

Result<std::unique_ptr<Movies>> Movies::open(ItemStore& store, Clock& clock, Random& random,
                                             Queue& queue, MoviesOptions options) {
  for (const TableSpec& spec : {movies_table_spec(), frames_table_spec(), audit_table_spec()}) {
    RETURN_IF_ERROR(store.require_table(spec).with_context("table '" + spec.name + "'"));
  }
  std::error_code ec;
  if (!std::filesystem::is_directory(options.media_dir, ec)) {
    return invalid_argument("the media folder is not a folder");
  }
  options.lease.table = kMoviesTable;
  if (options.lease.info_log == nullptr) options.lease.info_log = options.logger;
  LeaseManager check(store, clock, random, options.lease);
  for (Duration ttl : {options.analysis_ttl, options.tracing_ttl}) {
    RETURN_IF_ERROR(check.check_timing(ttl, check.default_renew_every(ttl)));
  }
  return std::unique_ptr<Movies>(
      new Movies(std::make_unique<Impl>(store, clock, random, queue, std::move(options))));
}

Movies::Movies(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Movies::~Movies() = default;

Result<MovieDetail> Movies::create(const std::string& name, const User& owner,
                                   const std::string& file) {
  return impl_->create(name, owner, file);
}
Result<MovieDetail> Movies::probe(const std::string& id, std::stop_token stop) {
  return impl_->probe(id, stop);
}
Result<MoviePage> Movies::list(const ListOptions& options) { return impl_->list(options); }
Result<MovieDetail> Movies::get(const std::string& id) { return impl_->get(id); }
Status Movies::remove(const std::string& id, const std::string& user_name, bool is_admin) {
  return impl_->remove(id, user_name, is_admin);
}
Status Movies::finish_remove(const std::string& id) { return impl_->finish_remove(id); }
Result<AnalysisLease> Movies::acquire_analysis(const std::string& id, const User& user,
                                               Lock* holder) {
  return impl_->acquire_analysis(id, user, holder);
}
Result<AnalysisLease> Movies::heartbeat(const std::string& id, const std::string& user_name,
                                        const std::string& lease_id) {
  return impl_->heartbeat(id, user_name, lease_id);
}
Status Movies::release(const std::string& id, const std::string& user_name,
                       const std::string& lease_id) {
  return impl_->release(id, user_name, lease_id);
}
Status Movies::break_analysis(const std::string& id, const User& by, bool is_admin) {
  return impl_->break_analysis(id, by, is_admin);
}

Status Movies::set_markers(const std::string& id, const std::string& user_name,
                           const std::string& lease_id,
                           const std::vector<tracer::Marker>& markers) {
  ASSIGN_OR_RETURN(MovieDetail m, impl_->read(id));
  RETURN_IF_ERROR(validate_markers(markers, m));
  Update update;
  update.set(attr::kMarkers, internal::markers_json(markers));
  return impl_->edit(id, user_name, lease_id, update);
}

Status Movies::set_trim(const std::string& id, const std::string& user_name,
                        const std::string& lease_id, const tracer::Trim& trim) {
  ASSIGN_OR_RETURN(MovieDetail m, impl_->read(id));
  if (!(0 <= trim.start_frame && trim.start_frame <= trim.end_frame &&
        trim.end_frame < m.frame_count)) {
    return invalid_argument("the trim must satisfy 0 <= start <= end < " +
                            std::to_string(m.frame_count));
  }
  Update update;
  update.set(attr::kTrimStart, trim.start_frame).set(attr::kTrimEnd, trim.end_frame);
  return impl_->edit(id, user_name, lease_id, update);
}

Status Movies::set_capture_interval(const std::string& id, const std::string& user_name,
                                    const std::string& lease_id, int64_t every_frames) {
  ASSIGN_OR_RETURN(MovieDetail m, impl_->read(id));
  if (every_frames < 1) return invalid_argument("the capture interval must be at least 1 frame");
  if (m.frame_count > 0 && every_frames > m.frame_count) {
    return invalid_argument("the capture interval is longer than the movie");
  }
  Update update;
  update.set(attr::kEveryFrames, every_frames);
  return impl_->edit(id, user_name, lease_id, update);
}

Result<TraceStarted> Movies::start_trace(const std::string& id, const User& user,
                                         const std::string& lease_id) {
  return impl_->start_trace(id, user, lease_id);
}

Result<FramePage> Movies::frames(const std::string& id, const FramesOptions& options) {
  return impl_->frames(id, options);
}

FramesCsv Movies::frames_csv(const std::string& id) { return FramesCsv(*this, id); }

Result<bool> FramesCsv::next(std::string& part) {
  part.clear();
  if (!started_) {
    part = "frame,time_s,marker_id,label,x,y,score,status,vx_px_per_s,vy_px_per_s\n";
    started_ = true;
  }
  ASSIGN_OR_RETURN(FramePage page, movies_->frames(id_, {kFramesCsvRowsPerPart, after_}));
  for (const FrameRow& r : page.items) append_csv_line(r, part);
  after_ = std::move(page.next_after);
  return !after_.empty();
}

Result<std::vector<AuditEntry>> Movies::audit(const std::string& id) { return impl_->audit(id); }

}  // namespace leasehold::movies
