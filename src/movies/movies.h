// Movies: the movie tracing service's core. Movies are created from a file
// already in the media folder, probed, edited (markers, trim, capture
// interval) by the one browser that holds the movie's analysis lease, and
// traced by a TraceWorker (movies/trace_worker.h) through a job queue. No
// HTTP here: the routes are in app/, and map the Status codes below.
//
// The movie item (table `movies`, movies/schema.h) is the single source of
// truth. It carries two lease slots (include/leasehold/lease.h):
//   analysis  the browser that edits: owner = the user's name, holder = the
//             user's display name, token = the lease ID the browser sends
//             back with every edit, heartbeat and release;
//   tracing   the job that traces: owner = the user who started it, holder =
//             that user's display name, token = the job ID.
// Both expire (15 minutes unless set); nothing deletes them: a stale lease is
// ignored by reads and replaced atomically by the next acquisition. While a
// tracing lease is live nobody may take the analysis lease (nothing but the
// job writes then), and the tracing lease wins in a movie's `lock`.
//
// A trace job is `queued`, then `tracing` once a worker claims it, then
// `traced` or `tracing failed`. It ends exactly once, by one write
// conditioned on its ID (the tracing token) and its status, made by
// whichever comes first of: its worker publishing; a read of the movie
// (Movies::get and every call that reads) finding a `tracing` job whose
// lease expired unrenewed (its worker went away); the user who started a
// `queued` job, or an admin, taking the movie back once the job's tracing
// lease has expired (the queue's wait does not end a job, and nobody else
// can take the movie from it; but a job whose message was lost must not
// keep its movie forever either: the claim re-arms the lease unless the
// movie was taken back first); start_trace failing to queue it. That write leaves
// job_audit_pending, and the job's two audit entries (internal::record_job_audit) are then written,
// by the ender or the next reader, once each.
//
// What a crash leaves unfinished, the sweep (Movies::sweep, run every minute
// or so by a Sweeper, movies/sweeper.h, in every process of the service)
// finishes or fails, each by one write conditioned on the state it read,
// so that two sweeps, or a sweep and the worker it thought gone, change a
// movie once:
//   - `processing` with no sign of a probe for a grace (since its creation,
//     the last time a probe said it was probing, or the sweep's last
//     requeue): its probe job is queued again, at most kProbeRequeuesMax
//     times; then it is `invalid` ("the movie could not be probed").
//   - `queued` past its tracing lease's expiry (its message lost, or a dead
//     letter): its message is sent again, once; still queued a grace later,
//     the job is ended as `tracing failed` by the one write that ends a job.
//   - `tracing` past its tracing lease's expiry (its worker went away, and
//     nobody read the movie since): ended as a read would end it.
//   - `deleting` for a grace since it was marked or last requeued: its
//     removal job is queued again, for as long as it takes.
// Each repair but the last is recorded in the audit as kEventRepaired, once
// (sweep_audit_pending, written like a job's audit); a removal's audit goes
// with the movie.
//
// Rules, each enforced by one conditional write on the movie item:
//   - acquire_analysis: the slot is free or expired, no live tracing lease,
//     and the movie is traceable (ready, traced, tracing failed; a job whose
//     worker went away is ended first, and a queued one may be ended by its
//     starter or an admin, see above). A second browser is refused, the
//     same user's included.
//   - heartbeat / release / edits / start_trace name the lease by
//     LeaseRef{owner = user name, token = lease ID} and are conditioned on it
//     and on its not having expired by this process's wall clock.
//   - start_trace replaces the analysis lease by a tracing lease with a fresh
//     job ID and sets status `queued`, frames_done 0 and frames_total in the
//     same write; then it records `movie.tracing.started` and enqueues
//     {movie_id, job_id}. The rows of earlier jobs are not touched here (the
//     reads skip them; the worker removes them once the job is published).
//   - remove marks the movie `deleting`; finish_remove takes the rest.
//   - break_analysis (an admin's) clears a live analysis lease, conditioned
//     on the owner and token it read; the slot's epoch stays.
//
// Error codes:
//   kNotFound           no such movie
//   kInvalidArgument    bad input (nothing was written), a malformed lease ID
//   kAlreadyExists      someone else holds the movie: a live analysis lease of
//                       another browser, or a live tracing lease (the lock is
//                       reported through `holder` where asked for)
//   kFailedPrecondition the caller's lease ID is not (or no longer) the
//                       movie's analysis lease; the movie is not in a state
//                       for this (not probed, invalid; removed while locked)
//   kPermissionDenied   not the owner nor an admin
//   kUnavailable / kUnknownOutcome  the store's, passed on
// The HTTP layer maps kAlreadyExists and kFailedPrecondition of the lease
// calls to 409.
//
// Time: wall time (Unix ms) from the injected Clock only.
//
// Thread-safe: a Movies keeps no mutable state of its own; its store, queue,
// clock and random source must be safe for concurrent use.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <utility>
#include <vector>

#include "leasehold/clock.h"
#include "leasehold/lease.h"
#include "leasehold/logger.h"
#include "leasehold/queue.h"
#include "leasehold/random.h"
#include "leasehold/status.h"
#include "leasehold/store.h"
#include "movies/media.h"
#include "tracer/tracer.h"

namespace leasehold::movies {

inline constexpr size_t kMovieNameBytesMax = 256;
inline constexpr size_t kFileNameBytesMax = 255;
inline constexpr size_t kMarkersMax = tracer::kMarkersMax;
inline constexpr size_t kMarkerIdBytesMax = tracer::kMarkerIdBytesMax;
inline constexpr size_t kMarkerLabelBytesMax = tracer::kMarkerLabelBytesMax;
// A page of list() (ListOptions::limit): by default, and at most.
inline constexpr size_t kListLimitDefault = 100;
inline constexpr size_t kListLimitMax = 1000;
// A page of frames(id, options) (FramesOptions::limit): by default, and at most.
inline constexpr size_t kFramesLimitDefault = 1000;
inline constexpr size_t kFramesLimitMax = 10'000;
// The rows of one part of frames_csv() (FramesCsv::next()).
inline constexpr size_t kFramesCsvRowsPerPart = 1000;
inline constexpr size_t kAuditEntriesMax = 1000;
inline constexpr Duration kDefaultLeaseTtl = std::chrono::minutes(15);
// The sweep (Movies::sweep): how long a movie may go with nothing seen of
// its probe or removal by default; how often its probe is queued again
// before it is given up; the movies one sweep reads of each status, at most
// (the rest wait for the next sweep).
inline constexpr Duration kDefaultSweepGrace = std::chrono::minutes(5);
inline constexpr int64_t kProbeRequeuesMax = 2;
inline constexpr size_t kSweepMoviesMax = 1000;
// The queue the jobs go through (QueueOptions::name).
inline constexpr char kTraceQueueName[] = "movie-trace";
// The audit event of Movies::break_analysis() (the others are in schema.h).
inline constexpr char kEventAnalysisBroken[] = "movie.analysis.broken";

// Who calls: the account's name (unique, the lease owner), the name shown
// to others, and whether an admin (as the caller vouches).
struct User {
  std::string name;
  std::string display_name;
  bool admin = false;
};

// Who holds a movie: a live lease.
struct Lock {
  std::string kind;  // "analysis" or "tracing"
  std::string user_display_name;
  int64_t started_at_ms = 0;
};

struct AnalysisLease {
  std::string lease_id;
  int64_t expires_at_ms = 0;
};

struct MovieSummary {
  std::string id;
  std::string name;
  std::string status;  // processing, ready, invalid, tracing, traced, tracing failed
  int64_t frames_done = 0;
  // Sampled frames of the trace (tracer::sampled_frame_count): frames_done
  // counts them as they are written, whatever the number of markers.
  int64_t frames_total = 0;
  std::optional<Lock> lock;  // a live lease; tracing wins over analysis
};

struct MovieDetail : MovieSummary {
  std::string file;  // its name in the media folder
  std::string owner_user;
  std::string owner_display_name;
  int64_t created_at_ms = 0;
  // Frames per second over the whole movie (its average, from the first
  // frame's time to the last's); whether the rate varies (a phone's in low
  // light), in which case only the frame times say when a frame is.
  double fps = 0;
  bool frame_rate_varies = false;
  int64_t duration_us = 0;  // the last frame's time and its own length
  // Its proxy (make_proxy()), if made: the file, and its frames' timestamps.
  std::string proxy_file;
  tracer::ProxyInfo proxy;
  int proxy_key_every = 0;
  int width = 0;
  int height = 0;
  int64_t frame_count = 0;
  std::vector<tracer::Marker> markers;
  tracer::Trim trim;
  int64_t every_frames = 1;
  std::string failure_summary;  // empty unless status is `tracing failed` or `invalid`
};

struct TraceStarted {
  std::string job_id;
  int64_t frames_total = 0;
  int64_t expires_at_ms = 0;  // of the tracing lease, until the worker renews it
};

// One row of movie_frames.
struct FrameRow {
  std::string marker_id;
  std::string label;
  int64_t frame = 0;
  double time_s = 0;
  double x = 0;
  double y = 0;
  double score = 0;
  std::string status;        // tracked or lost
  std::optional<double> vx;  // px/s
  std::optional<double> vy;
  std::string job_id;
  int64_t job_epoch = 0;
};

// The order of list(): by creation, the oldest or the newest first.
enum class ListOrder { kOldestFirst, kNewestFirst };

// Which page of list(): `limit` movies after the movie `after` in `order`
// (none: from the first movie of that order).
struct ListOptions {
  size_t limit = kListLimitDefault;  // 1..kListLimitMax
  std::string after;                 // a movie's ID: the previous page's last
  ListOrder order = ListOrder::kOldestFirst;
};

struct MoviePage {
  std::vector<MovieSummary> items;
  // The `after` of the next page (the ID of this page's last movie); empty
  // on the last page.
  std::string next_after;
};

// Which page of frames(id, options): `limit` rows after the cursor `after`
// (none: from the first row).
struct FramesOptions {
  size_t limit = kFramesLimitDefault;  // 1..kFramesLimitMax
  std::string after;                   // a FramePage::next_after, as given
};

struct FramePage {
  std::vector<FrameRow> items;
  // An opaque cursor, the `after` of the next page; empty on the last page.
  std::string next_after;
};

struct AuditEntry {
  std::string event;
  std::string job_id;
  std::string user_display_name;
  int64_t at_ms = 0;
  std::string summary;
};

struct SweepOptions {
  // A movie whose probe or removal has shown no sign of life for this long
  // is repaired; so is a job still queued this long after its message was
  // sent again. Positive.
  Duration grace = kDefaultSweepGrace;
};

// What one sweep read and did.
struct SweepReport {
  size_t read = 0;               // movies in a status it looks at
  size_t probes_requeued = 0;    // processing: probe job queued again
  size_t probes_given_up = 0;    // processing: made invalid
  size_t traces_requeued = 0;    // queued: job message sent again
  size_t traces_ended = 0;       // queued: ended as tracing failed
  size_t dead_traces_ended = 0;  // tracing: its worker went away
  size_t removals_requeued = 0;  // deleting: removal job queued again
  // Reads and repairs that failed on the store or a queue (the next sweep
  // tries again), and the first of their errors.
  size_t errors = 0;
  Status first_error;
  size_t repairs() const {
    return probes_requeued + probes_given_up + traces_requeued + traces_ended + dead_traces_ended +
           removals_requeued;
  }
};

struct MoviesOptions {
  // Where the movie files are (required; not owned); create() names a file
  // kept there.
  MediaStore* media = nullptr;
  Duration analysis_ttl = kDefaultLeaseTtl;
  // The tracing lease's first ttl, until the worker renews it with its own.
  Duration tracing_ttl = kDefaultLeaseTtl;
  // The clock-skew bound and safety margin; the table is set here.
  LeaseConfig lease;
  tracer::VideoLimits video_limits;
  // The proxies make_proxy() writes.
  tracer::ProxyOptions proxy;
  Logger* logger = nullptr;  // not owned; null logs nothing
};

class FramesCsv;

class Movies {
 public:
  // Requires the three tables (ItemStore::require_table). `queue` is where
  // jobs go (a StoreQueue named kTraceQueueName in production).
  // kInvalidArgument if there are no media or a ttl leaves no
  // room for the clock-skew bound and margin.
  // REQUIRES: everything given outlives the Movies.
  static Result<std::unique_ptr<Movies>> open(ItemStore& store, Clock& clock, Random& random,
                                              Queue& queue, MoviesOptions options);
  ~Movies();

  // A movie of `file` (a plain file name the media keep, which must be
  // a regular file there), status `processing`. kInvalidArgument for an
  // empty or oversized name, a file name with a path in it, or no such file.
  Result<MovieDetail> create(const std::string& name, const User& owner, const std::string& file);
  // Probes the file: status `ready` with fps, size, frame_count and a trim of
  // all frames, or `invalid` with a summary for users. kFailedPrecondition
  // unless the movie is `processing`, and, with nothing written, once `stop`
  // is requested while the file is being decoded.
  Result<MovieDetail> probe(const std::string& id, std::stop_token stop = {});
  // Says a probe is under way (probe() at its start, and its worker while
  // it runs): probe_seen_at_ms, from which the sweep counts its grace, in
  // one write. kFailedPrecondition if the movie is not `processing`.
  Status probe_alive(const std::string& id);
  // Makes the proxy of a probed movie (tracer::write_proxy(): every frame
  // with a key frame every MoviesOptions::proxy.key_every), keeps it in the
  // media beside the movie's file, and names it on the movie, whose frame
  // images are then decoded from it: any frame after a few others, not
  // after all those since the movie's last key frame (seconds of them in a
  // phone's movie). Done once: OK at once for a movie that has one. OK,
  // with nothing made, for a movie whose frames cannot have one (odd
  // sides), which goes on being shown from its own file. kFailedPrecondition
  // unless the movie is probed and not being removed, and, with nothing
  // kept, once `stop` is requested.
  Status make_proxy(const std::string& id, std::stop_token stop = {});

  // A page of the movies, in the order they were created (by created_at_ms,
  // then by ID within one millisecond) or, with kNewestFirst, in the reverse
  // of that order, resuming strictly after the movie `after` in that order.
  // kInvalidArgument, with nothing read, for a limit out of range or a
  // malformed ID, and for an `after` that names no movie (removed since the
  // page before: its place in the order is gone with it, so the caller
  // starts again from the first page). Holds the page and the movies of one
  // millisecond in memory, whatever the number of movies.
  Result<MoviePage> list(const ListOptions& options = {});
  Result<MovieDetail> get(const std::string& id);
  // The owner or an admin; not while a live lease or a queued job is on the
  // movie (kFailedPrecondition). Marks the movie `deleting` in one write,
  // after which nobody may take it; finish_remove() does the rest, off the
  // request (a removal job, movies/probe_worker.h). Removing a `deleting`
  // movie again is allowed: it starts over a removal whose job was lost.
  Status remove(const std::string& id, const std::string& user_name, bool is_admin);
  // Removes a `deleting` movie's frames, audit and file, then its item.
  // Idempotent: each step may have run before, so a removal interrupted at
  // any point (a process killed, a store that stopped answering) is finished
  // by calling it again. kFailedPrecondition if the movie is not
  // `deleting`; kNotFound once it is gone.
  Status finish_remove(const std::string& id);

  // Finishes or fails what crashes left unfinished (see the file comment):
  // reads the movies that are `processing`, `queued`, `tracing` or
  // `deleting` (the status index: keys of at most kSweepMoviesMax of each,
  // then the items, consistently) and repairs those stuck past their bound,
  // each by one conditional write on what it read; a write that finds the
  // movie changed does nothing. Probe and removal jobs go to `probe_queue`
  // (the ProbeWorkers' queue), trace jobs to the Movies' queue. A read or a
  // repair that fails on the store or a queue is counted in the report and
  // the sweep goes on with the others. kInvalidArgument, with nothing read,
  // for a grace that is not positive.
  Result<SweepReport> sweep(Queue& probe_queue, const SweepOptions& options = {});

  // Takes the analysis lease. kAlreadyExists if held: then `*holder` (if not
  // null) says by whom. A queued trace holds its movie however long it
  // waits; once its tracing lease has expired, the user who started it or
  // an admin may take the movie back, which ends the job (see above).
  Result<AnalysisLease> acquire_analysis(const std::string& id, const User& user,
                                         Lock* holder = nullptr);
  // Extends the lease by the analysis ttl.
  Result<AnalysisLease> heartbeat(const std::string& id, const std::string& user_name,
                                  const std::string& lease_id);
  // Ends the lease. kFailedPrecondition, and nothing changes, if it is no
  // longer this one (replaced by a tracing lease, taken after expiry).
  Status release(const std::string& id, const std::string& user_name, const std::string& lease_id);
  // Ends the live analysis lease of whoever holds it, for an admin (`by`;
  // kPermissionDenied unless `is_admin`, which the caller vouches for). One
  // write, conditioned on the owner and token read from the movie, clears
  // the slot (its epoch stays), so that the old holder's next heartbeat,
  // edit, release or trace is kFailedPrecondition; then the audit records
  // kEventAnalysisBroken with `by`'s display name and whose lease it was.
  // kFailedPrecondition, with nothing written, if no analysis lease is live
  // (or it changed hands meanwhile).
  Status break_analysis(const std::string& id, const User& by, bool is_admin);

  // Edits, each one fenced write conditioned on the lease. Validated first
  // against the probed movie (kInvalidArgument, nothing written): markers
  // inside the frame (0 <= x < width, 0 <= y < height, 0 <= frame <
  // frame_count), unique non-empty ids, at most kMarkersMax, bounded labels;
  // 0 <= trim start <= end < frame_count; every_frames >= 1.
  Status set_markers(const std::string& id, const std::string& user_name,
                     const std::string& lease_id, const std::vector<tracer::Marker>& markers);
  Status set_trim(const std::string& id, const std::string& user_name, const std::string& lease_id,
                  const tracer::Trim& trim);
  Status set_capture_interval(const std::string& id, const std::string& user_name,
                              const std::string& lease_id, int64_t every_frames);

  // Starts a trace (see the file comment). kInvalidArgument if the markers,
  // trim and interval do not make a trace (no markers, a marker outside the
  // trim: tracer::validate); kAlreadyExists while a live tracing lease
  // exists; kFailedPrecondition if the caller does not hold the analysis
  // lease. If the job cannot be queued, the trace is ended as failed and the
  // queue's error returned (unless a worker claimed it meanwhile: then the
  // message was stored after all, and the trace runs).
  Result<TraceStarted> start_trace(const std::string& id, const User& user,
                                   const std::string& lease_id);

  // A page of the rows of the movie's latest trace: rows whose job_epoch is
  // the epoch of the movie's tracing slot (none if it was never traced), by
  // frame then marker id. The cursor names the trace too: a page after
  // one of an earlier trace is kFailedPrecondition (the movie was traced
  // again: start from the first page). kInvalidArgument, with nothing read,
  // for a limit out of range or a cursor that no page gave.
  Result<FramePage> frames(const std::string& id, const FramesOptions& options);
  // Each frame's time and the key frames of a probed movie, as its probe
  // read them (movies/frame_times.h); for a movie probed before they were
  // kept, its frames at its rate (each frame n at n / fps, only frame 0 a
  // key frame). kNotFound for no such movie; kFailedPrecondition while it
  // is not probed.
  Result<tracer::FrameTimes> frame_times(const std::string& id);
  // The rows of frames(id, options), every page of them, as CSV read a part
  // at a time (FramesCsv below), never whole in memory. A header line
  //   frame,time_s,marker_id,label,x,y,score,status,vx_px_per_s,vy_px_per_s
  // then a line per row. Text cells (marker_id, label, status) that begin
  // with '=', '+', '-', '@', a tab or a CR, which a spreadsheet would run as
  // a formula, are neutralised as OWASP's advice on CSV injection says:
  // prefixed with a single quote ("=1+2" is written '=1+2). Then a cell
  // holding ',', '"', CR or LF is quoted, its '"' doubled. The numbers are
  // written as they are (a velocity may be -3). Reads nothing until
  // FramesCsv::next().
  // REQUIRES: the Movies outlives the FramesCsv.
  FramesCsv frames_csv(const std::string& id);
  // The audit, oldest first (at most kAuditEntriesMax).
  Result<std::vector<AuditEntry>> audit(const std::string& id);

 private:
  class Impl;
  explicit Movies(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A movie's rows as CSV (Movies::frames_csv()), read a part at a time:
// the header line and the first kFramesCsvRowsPerPart rows, then as many
// rows per part, each part one frames(id, options) page.
//
// Not thread-safe: one reader at a time.
class FramesCsv {
 public:
  // Sets `part` to the next part of the CSV. True while more parts may
  // follow; false once `part` is the last (it may be empty). The errors of
  // frames(id, options): kNotFound once the movie is removed,
  // kFailedPrecondition if it was traced again since the first part.
  // REQUIRES: not called again after it returned false or an error.
  Result<bool> next(std::string& part);

 private:
  friend class Movies;
  FramesCsv(Movies& movies, std::string id) : movies_(&movies), id_(std::move(id)) {}

  Movies* movies_;
  std::string id_;
  std::string after_;  // the cursor of the next page
  bool started_ = false;
};

// Shared by Movies and TraceWorker (movies.cc, movies_trace.cc).
namespace internal {

inline constexpr char kSummaryWorkerWentAway[] = "the trace stopped: its worker went away";

// How a trace job ends: its ID (the tracing lease's token), the status it
// leaves (traced or tracing failed) and the summary users see (empty when
// traced).
struct JobEnd {
  std::string job_id;
  std::string status;
  std::string summary;
};

// Reads a movie item; kInternal for a malformed one.
Result<MovieDetail> parse_movie(const Item& item, LeaseManager& leases);
// The end of a job that went away: a `tracing` movie whose tracing lease has
// expired by this process's wall clock (its worker stopped renewing it and
// published nothing); none otherwise.
std::optional<JobEnd> dead_job(const Item& item, LeaseManager& leases);
// What the one write that ends a job sets besides the lease: the status, the
// summary, job_ended_at_ms and job_audit_pending (record_job_audit's cue).
Update job_end_update(const JobEnd& end, int64_t now_ms);
// The movie's job is `end`'s and in `status`: the condition of that write.
Condition job_is(const JobEnd& end, std::string_view status);
// Writes the audit of the job an item names in job_audit_pending: its start
// and its end, each under a key of its own made from the job ID (a second
// writer finds them written), then clears the cue. Nothing when no job
// awaits its audit, or the movie is being removed (its audit goes with it).
Status record_job_audit(ItemStore& store, const std::string& movie_id, const Item& item);
// The same for the sweep's last repair (sweep_audit_pending): one
// kEventRepaired entry under a key made from swept_for and sweeps.
Status record_sweep_audit(ItemStore& store, const std::string& movie_id, const Item& item);
// Markers as stored (a JSON array of {id, label, frame, x, y}); kInternal
// for anything else, a place that is not finite among it.
std::string markers_json(const std::vector<tracer::Marker>& markers);
Result<std::vector<tracer::Marker>> parse_markers(const std::string& json);
// Appends an audit entry (sk time-ordered and unique).
Status record_audit(ItemStore& store, Clock& clock, Random& random, const std::string& movie_id,
                    const AuditEntry& entry);

// Where a page of a trace's frame rows ended (movies_frames.cc): the trace's
// epoch and the sort key of the page's last row, "<frame, 10 digits>#<marker
// id>". Its cursor (FramesOptions::after) is "<epoch>.<sort key in hex>",
// which reads as nothing in particular and needs no escaping in a URL;
// parse_frames_cursor() is kInvalidArgument for anything else.
struct FramesPosition {
  int64_t epoch = 0;
  std::string sk;
};
std::string frames_cursor(int64_t epoch, std::string_view sk);
Result<FramesPosition> parse_frames_cursor(std::string_view cursor);
}  // namespace internal

}  // namespace leasehold::movies
