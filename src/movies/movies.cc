// Movie records (movies/movies_impl.h has the layout of Movies' files):
// opening the service, a movie created from a file in the media folder and
// probed, listed and read (a read settles what it finds unfinished,
// movies_trace.cc), and removed in two steps: marked, then its rows, audit,
// file and item taken away off the request.
#include "movies/movies.h"

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <string_view>
#include <tuple>

#include "base/crash_point.h"
#include "base/logging.h"
#include "base/text.h"
#include "movies/frame_images.h"
#include "movies/frame_times.h"
#include "movies/movies_impl.h"
#include "movies/schema.h"

namespace leasehold::movies {
namespace {

namespace json = boost::json;

// "NUM/DEN", each a positive 32-bit whole number.
bool parse_time_base(std::string_view text, int64_t& num, int64_t& den) {
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) return false;
  const auto whole = [](std::string_view part, int64_t& out) {
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), out);
    return ec == std::errc() && end == part.data() + part.size() && out > 0 && out <= INT32_MAX;
  };
  return whole(text.substr(0, slash), num) && whole(text.substr(slash + 1), den);
}

using movies_parts::slot_free;

const std::string* str(const Item& item, std::string_view a) { return get_string(item, a); }

std::optional<Lock> lock_of(const LeaseView& v) {
  if (!v.held) return std::nullopt;
  return Lock{v.slot, v.holder, v.acquired_at_ms};
}

// A movie ID as create() makes them (16 hex digits), or as a client may
// have been given one: short, of letters, digits, '-' and '_'.
bool is_movie_id(std::string_view id) {
  return !id.empty() && id.size() <= 64 && std::ranges::all_of(id, [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '-' ||
           c == '_';
  });
}

// What users see of a probe that failed: never the path.
std::string probe_summary(const Status& s) {
  if (s.code() == Code::kNotFound) return "the movie's file is missing";
  return "the file is not a video that can be traced";
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
    // A number past a double's range ("1e400") reads as infinity, which
    // markers_json() could not write back as JSON.
    if (!std::isfinite(m.x) || !std::isfinite(m.y)) return internal_error("malformed marker");
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
  m.name = get_string_or(item, attr::kName);
  m.status = *status;
  m.frames_done = get_int_or(item, attr::kFramesDone);
  m.frames_total = get_int_or(item, attr::kFramesTotal);
  const Key key = movie_key(m.id);
  const LeaseView tracing = leases.view_of(item, key, kTracingSlot);
  const LeaseView analysis = leases.view_of(item, key, kAnalysisSlot);
  m.lock = lock_of(tracing);
  // A queued job holds its movie however long it waits (Movies::acquire_analysis).
  if (!m.lock && m.status == kStatusQueued && !tracing.owner.empty()) {
    m.lock = Lock{tracing.slot, tracing.holder, tracing.acquired_at_ms};
  }
  if (!m.lock) m.lock = lock_of(analysis);
  m.file = get_string_or(item, attr::kFile);
  m.owner_user = get_string_or(item, attr::kOwnerUser);
  m.owner_display_name = get_string_or(item, attr::kOwnerDisplayName);
  m.created_at_ms = get_int_or(item, attr::kCreatedAtMs);
  if (const std::string* fps = str(item, attr::kFps)) parse_double(*fps, m.fps);
  m.frame_rate_varies = get_int_or(item, attr::kFrameRateVaries) == 1;
  m.duration_us = get_int_or(item, attr::kDurationUs);
  m.proxy_file = get_string_or(item, attr::kProxyFile);
  if (!m.proxy_file.empty()) {
    int64_t num = 0;
    int64_t den = 0;
    if (parse_time_base(get_string_or(item, attr::kProxyTimeBase), num, den)) {
      m.proxy = tracer::ProxyInfo{.frames = get_int_or(item, attr::kFrameCount),
                                  .time_base_num = static_cast<int>(num),
                                  .time_base_den = static_cast<int>(den),
                                  .pts_per_frame = get_int_or(item, attr::kProxyPtsPerFrame)};
      m.proxy_key_every = static_cast<int>(get_int_or(item, attr::kProxyKeyEvery));
    }
    // A proxy its movie cannot describe is not used.
    if (m.proxy.pts_per_frame < 1 || m.proxy_key_every < 1) m.proxy_file.clear();
  }
  m.width = static_cast<int>(get_int_or(item, attr::kWidth));
  m.height = static_cast<int>(get_int_or(item, attr::kHeight));
  m.frame_count = get_int_or(item, attr::kFrameCount);
  LEASEHOLD_ASSIGN_OR_RETURN(m.markers, parse_markers(get_string_or(item, attr::kMarkers)));
  m.trim.start_frame = get_int_or(item, attr::kTrimStart);
  m.trim.end_frame = get_int_or(item, attr::kTrimEnd);
  m.every_frames = get_int_or(item, attr::kEveryFrames, 1);
  m.failure_summary = get_string_or(item, attr::kFailureSummary);
  // A trace whose job stopped renewing its lease (a worker killed) ended
  // without publishing anything: report it as failed (the next read through
  // Movies records it so, once).
  if (m.status == kStatusTracing && !tracing.held) {
    m.status = kStatusTracingFailed;
    m.failure_summary = kSummaryWorkerWentAway;
  }
  return m;
}

}  // namespace internal

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
  LEASEHOLD_ASSIGN_OR_RETURN(Item item, read_item(id));
  LEASEHOLD_ASSIGN_OR_RETURN(item, settle(id, std::move(item)));
  return internal::parse_movie(item, leases_);
}

Result<MovieDetail> Movies::Impl::create(const std::string& name, const User& owner,
                                         const std::string& file) {
  LEASEHOLD_RETURN_IF_ERROR(validate_text("name", name, kMovieNameBytesMax, false));
  LEASEHOLD_RETURN_IF_ERROR(validate_text("user name", owner.name, kOwnerBytesMax, false));
  LEASEHOLD_RETURN_IF_ERROR(validate_text("file", file, kFileNameBytesMax, false));
  if (file.find('/') != std::string::npos || file == "." || file == "..") {
    return invalid_argument("file must be a plain file name");
  }
  if (const Status kept = options_.media->check_exists(file); !kept.ok()) {
    if (kept.code() == Code::kNotFound) return invalid_argument(kept.message());
    return kept;
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
  LEASEHOLD_RETURN_IF_ERROR(store_.put(kMoviesTable, item, cond::not_exists(attr::kPk)));
  return internal::parse_movie(item, leases_);
}

Result<MovieDetail> Movies::Impl::probe(const std::string& id, std::stop_token stop) {
  LEASEHOLD_ASSIGN_OR_RETURN(MovieDetail m, read(id));
  if (m.status != kStatusProcessing) return failed_precondition("movie is not being processed");
  // Seen probing from now (the sweep waits a grace from here before it
  // queues the probe again).
  LEASEHOLD_RETURN_IF_ERROR(probe_alive(id));
  // A file the media cannot give is probed as a file that is not a video.
  Result<std::shared_ptr<const LocalFile>> local = options_.media->local(m.file);
  if (!local.ok() && local.status().code() != Code::kNotFound) return local.status();
  Result<tracer::VideoInfo> info =
      local.ok() ? tracer::probe((*local)->path(), options_.video_limits, stop)
                 : Result<tracer::VideoInfo>(local.status());
  if (stop.stop_requested()) return failed_precondition("probing stopped");
  Update update;
  if (info.ok()) {
    // The times first: a movie is ready only with them. Written again by
    // a probe run again, should this one stop before its update.
    LEASEHOLD_RETURN_IF_ERROR(write_frame_times(store_, id, info->times));
    const int64_t n = info->frame_count;
    const int64_t last_us = info->times.us(n - 1);
    const int64_t last_length_us = n > 1 ? last_us - info->times.us(n - 2)
                                         : static_cast<int64_t>(1e6 / info->average_fps);
    update.set(attr::kStatus, std::string(kStatusReady))
        .set(attr::kFps, format_double(info->average_fps))
        .set(attr::kDurationUs, last_us + last_length_us)
        .set(attr::kWidth, int64_t{info->width})
        .set(attr::kHeight, int64_t{info->height})
        .set(attr::kFrameCount, info->frame_count)
        .set(attr::kMarkers, std::string("[]"))
        .set(attr::kTrimStart, int64_t{0})
        .set(attr::kTrimEnd, info->frame_count - 1)
        .set(attr::kEveryFrames, int64_t{1});
    if (info->rate_varies) update.set(attr::kFrameRateVaries, int64_t{1});
  } else {
    log_to(options_.logger, LogLevel::kWarn, "movie {}: probe failed: {}", id,
           info.status().to_string());
    update.set(attr::kStatus, std::string(kStatusInvalid))
        .set(attr::kFailureSummary, probe_summary(info.status()));
  }
  crash_point(CrashPoint::kProbeBeforeStatus);
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

Status Movies::Impl::probe_alive(const std::string& id) {
  Update seen;
  seen.set(attr::kProbeSeenAtMs, to_unix_ms(clock_.wall_now())).returning_updated_only();
  const Result<Item> written =
      store_.update(kMoviesTable, movie_key(id), seen, cond::eq(attr::kStatus, kStatusProcessing));
  if (!written.ok() && written.status().code() == Code::kConditionFailed) {
    return failed_precondition("movie is not being processed");
  }
  return written.status();
}

Status Movies::Impl::make_proxy(const std::string& id, std::stop_token stop) {
  LEASEHOLD_ASSIGN_OR_RETURN(MovieDetail m, read(id));
  if (!m.proxy_file.empty()) return {};
  if (m.frame_count < 1 || m.status == kStatusProcessing || m.status == kStatusInvalid ||
      m.status == kStatusDeleting) {
    return failed_precondition("the movie is " + m.status + ": no proxy");
  }
  LEASEHOLD_ASSIGN_OR_RETURN(const std::shared_ptr<const LocalFile> local,
                             options_.media->local(m.file));
  // Written in the work folder, then kept beside the movie's file under a
  // name of its own (the movie's token, which no other file has).
  const std::string name = std::filesystem::path(m.file).stem().string() + "-proxy.mp4";
  const std::string written = (std::filesystem::path(options_.media->work_dir()) /
                               (".proxy-" + name))
                                  .string();
  const auto discard = [&written] {
    std::error_code ec;
    std::filesystem::remove(written, ec);
  };
  Result<tracer::ProxyInfo> proxy =
      tracer::write_proxy(local->path(), written, options_.proxy, options_.video_limits, stop);
  if (!proxy.ok()) {
    discard();
    if (stop.stop_requested()) return failed_precondition("making the proxy stopped");
    if (proxy.status().code() == Code::kFailedPrecondition) {
      log_to(options_.logger, LogLevel::kInfo, "movie {}: no proxy: {}", id,
             proxy.status().message());
      return {};
    }
    return proxy.status().with_context("the proxy of movie " + id);
  }
  if (proxy->frames != m.frame_count) {
    discard();
    return internal_error("the proxy of movie " + id + " has " + std::to_string(proxy->frames) +
                          " frames, not " + std::to_string(m.frame_count));
  }
  LEASEHOLD_RETURN_IF_ERROR(options_.media->keep(written, name, "video/mp4"));
  Update update;
  update.set(attr::kProxyFile, name)
      .set(attr::kProxyTimeBase, std::to_string(proxy->time_base_num) + "/" +
                                     std::to_string(proxy->time_base_den))
      .set(attr::kProxyPtsPerFrame, proxy->pts_per_frame)
      .set(attr::kProxyKeyEvery, int64_t{options_.proxy.key_every});
  // Not on a movie being removed since: its removal may have passed the
  // proxy's file by, which goes now instead.
  const Result<Item> named =
      store_.update(kMoviesTable, movie_key(id), update,
                    cond::exists(attr::kPk) && !cond::eq(attr::kStatus, kStatusDeleting));
  if (!named.ok()) {
    (void)options_.media->remove(name);
    if (named.status().code() == Code::kConditionFailed) {
      return failed_precondition("the movie is being removed: no proxy");
    }
    return named.status();
  }
  log_to(options_.logger, LogLevel::kInfo, "movie {}: proxy of {} frames, a key frame every {}", id,
         proxy->frames, options_.proxy.key_every);
  return {};
}

// The index orders movies by created_at_ms alone, and movies created in the
// same millisecond in an order of the store's choosing, which may differ
// from one query to the next. A page is therefore read on until the
// millisecond of its last movie is complete, and ordered by (created_at_ms,
// id), or its reverse: an order that resuming after a movie's ID can rebuild
// exactly. Newest first, the index is read downwards, so that the first page
// costs what it costs oldest first, however many movies there are.
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
  const bool newest = options.order == ListOrder::kNewestFirst;
  // Whether a comes before b in the order asked for.
  const auto before = [newest](const Listed& a, const Listed& b) {
    const auto oldest_first = [](const Listed& x, const Listed& y) {
      return std::tie(x.created_at_ms, x.summary.id) < std::tie(y.created_at_ms, y.summary.id);
    };
    return newest ? oldest_first(b, a) : oldest_first(a, b);
  };
  std::vector<Listed> got;
  QueryOptions q;
  q.limit = static_cast<int>(std::min<size_t>(kQueryLimitMax, options.limit + 1));
  q.descending = newest;
  KeyRange range = KeyRange::all();
  if (after) {
    range = newest ? KeyRange::le(after->created_at_ms) : KeyRange::ge(after->created_at_ms);
  }
  bool complete = false;  // a page and one more, and all of the last one's millisecond
  do {
    LEASEHOLD_ASSIGN_OR_RETURN(
        Page page, store_.query_index(kMoviesTable, kMoviesIndex, kMovieKind, range, q));
    for (const Item& item : page.items) {
      Result<MovieDetail> m = internal::parse_movie(item, leases_);
      if (!m.ok()) continue;  // a malformed item is skipped, not fatal to the list
      Listed listed{m->created_at_ms, static_cast<MovieSummary&>(*m)};
      if (after && !before(*after, listed)) continue;
      complete = got.size() > options.limit && listed.created_at_ms != got.back().created_at_ms;
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

Result<MovieDetail> Movies::Impl::get(const std::string& id) { return read(id); }

// One write marks the movie `deleting` (nothing may take it then); the rows,
// the audit, the file and the item go later, off the request
// (finish_remove). A movie already `deleting` is marked again: a removal
// whose job was lost is started over by asking again.
Status Movies::Impl::remove(const std::string& id, const std::string& user_name, bool is_admin) {
  LEASEHOLD_ASSIGN_OR_RETURN(MovieDetail m, read(id));
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
  mark.set(attr::kStatus, std::string(kStatusDeleting)).set(attr::kRemovalStartedAtMs, now_ms);
  const Result<Item> marked =
      store_.update(kMoviesTable, movie_key(id), mark, cond::exists(attr::kPk) && unlocked);
  if (!marked.ok() && marked.status().code() == Code::kConditionFailed) {
    LEASEHOLD_RETURN_IF_ERROR(read(id).status());
    return failed_precondition("the movie is in use (locked); try again when it is free");
  }
  return marked.status();
}

// Each step is idempotent and the item goes last, so a removal stopped at
// any point is finished by running it again.
Status Movies::Impl::finish_remove(const std::string& id) {
  LEASEHOLD_ASSIGN_OR_RETURN(Item item, read_item(id));
  if (get_string_or(item, attr::kStatus) != kStatusDeleting) {
    return failed_precondition("the movie is not being removed");
  }
  LEASEHOLD_RETURN_IF_ERROR(remove_partition(kFramesTable, id));
  LEASEHOLD_RETURN_IF_ERROR(remove_partition(kTimesTable, id));
  LEASEHOLD_RETURN_IF_ERROR(remove_partition(kAuditTable, id));
  crash_point(CrashPoint::kDeleteAfterRows);
  for (const char* name : {attr::kProxyFile, attr::kFile}) {
    const std::string file = get_string_or(item, name);
    if (!file.empty()) LEASEHOLD_RETURN_IF_ERROR(options_.media->remove(file));
  }
  // The images of its frames (frame_images.h), made by this process if it
  // served them (another process's are its own to forget).
  std::error_code ec;
  std::filesystem::remove_all(frame_cache_dir(options_.media->work_dir(), id), ec);
  if (ec) return unavailable("the movie's frame images could not be removed: " + ec.message());
  crash_point(CrashPoint::kDeleteBeforeItem);
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
    LEASEHOLD_ASSIGN_OR_RETURN(Page page, store_.query(table, movie_pk(id), KeyRange::all(), q));
    if (page.items.empty()) return {};
    for (const Item& item : page.items) {
      LEASEHOLD_RETURN_IF_ERROR(
          store_.remove(table, Key{movie_pk(id), get_string_or(item, attr::kSk)}, {}));
    }
  }
}

Result<std::unique_ptr<Movies>> Movies::open(ItemStore& store, Clock& clock, Random& random,
                                             Queue& queue, MoviesOptions options) {
  for (const TableSpec& spec : movie_table_specs()) {
    LEASEHOLD_RETURN_IF_ERROR(store.require_table(spec).with_context("table '" + spec.name + "'"));
  }
  if (options.media == nullptr) return invalid_argument("Movies needs its media");
  options.lease.table = kMoviesTable;
  if (options.lease.info_log == nullptr) options.lease.info_log = options.logger;
  LeaseManager check(store, clock, random, options.lease);
  for (Duration ttl : {options.analysis_ttl, options.tracing_ttl}) {
    LEASEHOLD_RETURN_IF_ERROR(check.check_timing(ttl, check.default_renew_every(ttl)));
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
Status Movies::probe_alive(const std::string& id) { return impl_->probe_alive(id); }
Status Movies::make_proxy(const std::string& id, std::stop_token stop) {
  return impl_->make_proxy(id, stop);
}
Result<MoviePage> Movies::list(const ListOptions& options) { return impl_->list(options); }
Result<MovieDetail> Movies::get(const std::string& id) { return impl_->get(id); }
Status Movies::remove(const std::string& id, const std::string& user_name, bool is_admin) {
  return impl_->remove(id, user_name, is_admin);
}
Status Movies::finish_remove(const std::string& id) { return impl_->finish_remove(id); }
Result<SweepReport> Movies::sweep(Queue& probe_queue, const SweepOptions& options) {
  return impl_->sweep(probe_queue, options);
}

}  // namespace leasehold::movies
