// What the movie service reads back of what it stored (movies/): a movie's
// item (internal::parse_movie: its markers' JSON, what its probe found, its
// proxy, its two leases), the markers' JSON alone (internal::parse_markers),
// and the jobs it queues (movies/job_messages.h: a trace job, a probe or
// removal job); what the sweep reads of a movie (Movies::sweep: the times
// and counts of its grace and its repairs); and the cursor of a page of a
// trace's frames (internal::parse_frames_cursor: GET .../frames?after=).
//
// Input: any text, read as each of them: as a movie item in the store's
// JSON (store/item_json.h), as the markers' JSON, and as a job's body.
// Properties: a movie read has the item's ID and status and the markers its
// markers' text holds; a movie `tracing` holds its tracing lease; a proxy
// used is the one the item describes, in numbers that fit. Markers read,
// written again with markers_json(), read back the same but for a unit in
// the last place of a place (below), and their places are finite. A double taken from its text
// (parse_double: the fps, a frame row's numbers) is finite and reads back from format_double(). A
// job taken names a movie ID of 1 to 64 bytes (and a token for a trace job) and reads back from its
// own body. Refusals of an item or of markers are kInternal. A movie swept (stored as the item,
// under its ID's key) is repaired at most once, to a status the service knows, and a second sweep
// at the same instant repairs nothing. A frames cursor taken has an epoch from 1 and a row's sort
// key, and written again reads back the same.
#include <stdlib.h>

#include <boost/json.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "leasehold/clock.h"
#include "leasehold/lease.h"
#include "leasehold/queue.h"
#include "leasehold/random.h"
#include "movies/job_messages.h"
#include "movies/media.h"
#include "movies/movies.h"
#include "movies/probe_worker.h"
#include "movies/schema.h"
#include "store/item_json.h"
#include "store/memory/memory_store.h"

namespace {

namespace json = boost::json;
namespace movies = leasehold::movies;
namespace internal = leasehold::movies::internal;
namespace attr = leasehold::movies::attr;
using leasehold::Code;
using leasehold::Item;
using leasehold::fuzz::escaped;

// The lease manager parse_movie() reads the leases with; its store is
// never used. A movie's lease is live when it expires after this clock.
struct Leases {
  leasehold::SimulatedClock clock;
  leasehold::SeededRandom random{1};
  std::unique_ptr<leasehold::ItemStore> store = leasehold::store::make_memory_store();
  leasehold::LeaseManager manager{*store, clock, random};
};

// Within `ulps` units in the last place (0: equal).
bool near(double a, double b, int ulps) {
  for (int i = 0; i < ulps && a != b; ++i) a = std::nextafter(a, b);
  return a == b;
}

// Boost.JSON (1.74) does not round every number it reads correctly: the
// shortest text of a double may read back one unit in the last place off
// (some 14% of random places in a frame), so markers written and read again
// are the same but for that (`ulps` 1). Nothing depends on more: a trace's
// start is conditioned on the markers' text as read, not as written again.
bool same(const leasehold::tracer::Marker& a, const leasehold::tracer::Marker& b, int ulps) {
  return a.id == b.id && a.label == b.label && a.frame == b.frame && near(a.x, b.x, ulps) &&
         near(a.y, b.y, ulps);
}

bool same(const std::vector<leasehold::tracer::Marker>& a,
          const std::vector<leasehold::tracer::Marker>& b, int ulps = 0) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!same(a[i], b[i], ulps)) return false;
  }
  return true;
}

void check_markers(const std::string& text) {
  const auto markers = internal::parse_markers(text);
  if (!markers.ok()) {
    FUZZ_CHECK(markers.status().code() == Code::kInternal,
               "markers refused with " + markers.status().to_string());
    return;
  }
  for (const leasehold::tracer::Marker& m : *markers) {
    FUZZ_CHECK(std::isfinite(m.x) && std::isfinite(m.y),
               "a marker's place is not finite in " + escaped(text));
  }
  const std::string written = internal::markers_json(*markers);
  const auto again = internal::parse_markers(written);
  FUZZ_CHECK(again.ok(), "markers written do not read back: " + escaped(written));
  FUZZ_CHECK(same(*again, *markers, /*ulps=*/1), "markers read back differ: " + escaped(written));
}

void check_proxy(const movies::MovieDetail& m, const Item& item) {
  if (m.proxy_file.empty()) return;
  FUZZ_CHECK_EQ(m.proxy_file, leasehold::get_string_or(item, attr::kProxyFile), "the proxy file");
  FUZZ_CHECK(m.proxy.time_base_num > 0 && m.proxy.time_base_den > 0,
             "the proxy's time base " + leasehold::get_string_or(item, attr::kProxyTimeBase));
  FUZZ_CHECK(m.proxy.pts_per_frame >= 1 && m.proxy_key_every >= 1, "the proxy's steps");
  FUZZ_CHECK(m.proxy.pts_per_frame == leasehold::get_int_or(item, attr::kProxyPtsPerFrame) &&
                 m.proxy_key_every == leasehold::get_int_or(item, attr::kProxyKeyEvery),
             "a proxy used is the item's: key frame every " + std::to_string(m.proxy_key_every));
}

void check_movie(std::string_view text, Leases& leases) {
  const auto item = leasehold::store::decode_item(text);
  if (!item.ok()) return;
  const auto m = internal::parse_movie(*item, leases.manager);
  if (!m.ok()) {
    FUZZ_CHECK(m.status().code() == Code::kInternal,
               "a movie refused with " + m.status().to_string());
    return;
  }
  const std::string* id = leasehold::get_string(*item, attr::kId);
  const std::string* status = leasehold::get_string(*item, attr::kStatus);
  FUZZ_CHECK(id != nullptr && status != nullptr, "a movie without an ID or a status");
  FUZZ_CHECK_EQ(m->id, *id, "the movie's ID");
  const auto markers = internal::parse_markers(leasehold::get_string_or(*item, attr::kMarkers));
  FUZZ_CHECK(markers.ok() && same(m->markers, *markers), "the movie's markers");
  if (m->status == movies::kStatusTracing) {
    FUZZ_CHECK(m->lock && m->lock->kind == movies::kTracingSlot,
               "a movie tracing without its tracing lease");
  } else if (*status != movies::kStatusTracing) {
    FUZZ_CHECK_EQ(m->status, *status, "the movie's status");
  }
  double fps = 0;
  if (const std::string* given = leasehold::get_string(*item, attr::kFps);
      given != nullptr && movies::parse_double(*given, fps)) {
    FUZZ_CHECK(m->fps == fps, "fps " + *given);
  }
  FUZZ_CHECK(m->every_frames == leasehold::get_int_or(*item, attr::kEveryFrames, 1),
             "every_frames");
  check_proxy(*m, *item);
}

// Doubles as stored (schema.h): a number taken is finite, and its shortest
// form reads back the same.
void check_double(std::string_view text) {
  double d = 0;
  if (!movies::parse_double(text, d)) return;
  FUZZ_CHECK(std::isfinite(d), "parse_double took " + escaped(text));
  double again = 0;
  FUZZ_CHECK(movies::parse_double(movies::format_double(d), again) && again == d,
             "a double read back from " + movies::format_double(d));
}

void check_trace_job(std::string_view body) {
  const auto job = internal::parse_trace_job(body);
  if (!job.ok()) {
    FUZZ_CHECK(job.status().code() == Code::kInvalidArgument, job.status().to_string());
    return;
  }
  FUZZ_CHECK(!job->movie_id.empty() && job->movie_id.size() <= internal::kJobMovieIdBytesMax,
             "a trace job's movie ID " + escaped(job->movie_id));
  FUZZ_CHECK(leasehold::is_well_formed_token(job->job_id), "a job ID " + escaped(job->job_id));
  const json::value parsed = json::parse(body);
  const json::object& given = parsed.as_object();
  FUZZ_CHECK_EQ(job->movie_id, std::string_view(given.at("movie_id").as_string()), "movie_id");
  FUZZ_CHECK_EQ(job->job_id, std::string_view(given.at("job_id").as_string()), "job_id");
  const std::string written = internal::trace_job_body(*job);
  const auto again = internal::parse_trace_job(written);
  FUZZ_CHECK(again.ok() && again->movie_id == job->movie_id && again->job_id == job->job_id,
             "a trace job read back from " + escaped(written));
}

void check_movie_job(std::string_view body) {
  const internal::MovieJob job = internal::parse_movie_job(body);
  if (job.movie_id.empty()) return;
  FUZZ_CHECK(job.movie_id.size() <= internal::kJobMovieIdBytesMax,
             "a movie job's ID of " + std::to_string(job.movie_id.size()) + " bytes");
  const json::value parsed = json::parse(body);
  const json::object& given = parsed.as_object();
  FUZZ_CHECK_EQ(job.movie_id, std::string_view(given.at("movie_id").as_string()), "movie_id");
  FUZZ_CHECK(job.remove == given.contains("job"), "a removal job");
  const std::string written = internal::movie_job_body(job);
  const internal::MovieJob again = internal::parse_movie_job(written);
  FUZZ_CHECK(again.movie_id == job.movie_id && again.remove == job.remove,
             "a movie job read back from " + escaped(written));
}

// A movie service on a store of its own, for one input: its movies table
// holds only what the input puts there.
struct Service {
  explicit Service(movies::MediaStore& media) {
    FUZZ_CHECK(store->ensure_table(leasehold::StoreQueue::table_spec()).ok(), "the queue table");
    for (const leasehold::TableSpec& spec : movies::movie_table_specs()) {
      FUZZ_CHECK(store->ensure_table(spec).ok(), "the table " + spec.name);
    }
    trace_queue =
        leasehold::StoreQueue::open(*store, clock, random, {.name = movies::kTraceQueueName})
            .value();
    probe_queue =
        leasehold::StoreQueue::open(*store, clock, random, {.name = movies::kProbeQueueName})
            .value();
    movies::MoviesOptions options;
    options.media = &media;
    service = movies::Movies::open(*store, clock, random, *trace_queue, options).value();
  }

  leasehold::SimulatedClock clock;
  leasehold::SeededRandom random{1};
  std::unique_ptr<leasehold::ItemStore> store = leasehold::store::make_memory_store();
  std::unique_ptr<leasehold::StoreQueue> trace_queue;
  std::unique_ptr<leasehold::StoreQueue> probe_queue;
  std::unique_ptr<movies::Movies> service;
};

bool known_status(std::string_view status) {
  for (const std::string_view known :
       {movies::kStatusProcessing, movies::kStatusReady, movies::kStatusInvalid,
        movies::kStatusQueued, movies::kStatusTracing, movies::kStatusTraced,
        movies::kStatusTracingFailed, movies::kStatusDeleting}) {
    if (status == known) return true;
  }
  return false;
}

void check_sweep(std::string_view text, movies::MediaStore& media) {
  auto item = leasehold::store::decode_item(text);
  if (!item.ok()) return;
  const std::string* id = leasehold::get_string(*item, attr::kId);
  if (id == nullptr || id->empty() || id->size() > 64) return;
  const leasehold::Key key = movies::movie_key(*id);
  (*item)[attr::kPk] = key.pk;
  Service s(media);
  if (!s.store->put(movies::kMoviesTable, *item, {}).ok()) return;
  const std::string before = leasehold::get_string_or(*item, attr::kStatus);
  const movies::SweepOptions options{.grace = std::chrono::seconds(60)};
  const auto first = s.service->sweep(*s.probe_queue, options);
  FUZZ_CHECK(first.ok(), "the sweep: " + first.status().to_string());
  FUZZ_CHECK(first->repairs() <= 1,
             "one movie repaired " + std::to_string(first->repairs()) + " times: " + escaped(text));
  const auto after = s.store->get(movies::kMoviesTable, key, true);
  FUZZ_CHECK(after.ok(), "the movie read after the sweep");
  const std::string status = leasehold::get_string_or(*after, attr::kStatus);
  FUZZ_CHECK(status == before || known_status(status),
             "swept from " + escaped(before) + " to " + escaped(status));
  const auto second = s.service->sweep(*s.probe_queue, options);
  FUZZ_CHECK(second.ok() && second->repairs() == 0,
             "a second sweep at the same instant repaired it again: " + escaped(text));
}

// A frames cursor taken names a row of a trace; written again, it reads
// back the same.
void check_frames_cursor(std::string_view text) {
  const auto position = internal::parse_frames_cursor(text);
  if (!position.ok()) {
    FUZZ_CHECK(position.status().code() == Code::kInvalidArgument,
               "a cursor refused with " + position.status().to_string());
    return;
  }
  FUZZ_CHECK(position->epoch >= 1, "a cursor's epoch " + std::to_string(position->epoch));
  FUZZ_CHECK(position->sk.size() > 11 && position->sk[10] == '#',
             "a cursor's row " + escaped(position->sk));
  const std::string written = internal::frames_cursor(position->epoch, position->sk);
  const auto again = internal::parse_frames_cursor(written);
  FUZZ_CHECK(again.ok() && again->epoch == position->epoch && again->sk == position->sk,
             "a cursor read back from " + escaped(written));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Leases* leases = new Leases;
  const std::string text(reinterpret_cast<const char*>(data), size);
  check_movie(text, *leases);
  check_markers(text);
  check_double(text);
  check_trace_job(text);
  check_movie_job(text);
  check_frames_cursor(text);
  static movies::MediaStore* media = [] {
    std::string dir = "/tmp/movies_stored_fuzz-XXXXXX";
    FUZZ_CHECK(::mkdtemp(dir.data()) != nullptr, "a media folder");
    return movies::open_media(dir).value().release();
  }();
  check_sweep(text, *media);
  return 0;
}
