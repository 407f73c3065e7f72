// The movie tracing service's tables (docs/schema.md lists every attribute).
//
//   movies        one item per movie, pk "MOVIE#<id>": the single source of
//                 truth for its state, its edits and its two lease slots,
//                 `analysis` (the browser that edits) and `tracing` (the job
//                 that traces; its token is the job ID). Index
//                 kind-created_at_ms-index (kind = "movie") lists movies;
//                 index status-created_at_ms-index (keys only) finds the
//                 movies in one status, for the sweep (Movies::sweep).
//   movie_frames  traced rows, pk "MOVIE#<id>", sk "<frame, 10 digits>#<marker id>"
//   movie_times   each frame's time (movies/frame_times.h), pk "MOVIE#<id>",
//                 sk "<first frame, 10 digits>": parts of packed timestamps
//                 written by the probe, read by the frame images and the API
//   movie_audit   what happened to a movie, pk "MOVIE#<id>",
//                 sk "<at_ms, 15 digits>#<phase>#<16 hex digits>" (time-ordered,
//                 unique; phase 0 for a start, 1 for an end, so that a start
//                 sorts first within one millisecond). A trace's two events
//                 take the last part from the job ID (job_audit_sk), so that
//                 each is written once however often it is tried.
//
// Plain functions and constants; no state.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/store.h"

namespace leasehold::movies {

inline constexpr char kMoviesTable[] = "movies";
inline constexpr char kFramesTable[] = "movie_frames";
inline constexpr char kAuditTable[] = "movie_audit";
inline constexpr char kTimesTable[] = "movie_times";
inline constexpr char kMoviesIndex[] = "kind-created_at_ms-index";
inline constexpr char kStatusIndex[] = "status-created_at_ms-index";
inline constexpr char kMovieKind[] = "movie";

// Lease slots of a movie item (include/leasehold/lease.h).
inline constexpr char kAnalysisSlot[] = "analysis";
inline constexpr char kTracingSlot[] = "tracing";

// Movie statuses.
inline constexpr char kStatusProcessing[] = "processing";
inline constexpr char kStatusReady[] = "ready";
inline constexpr char kStatusInvalid[] = "invalid";
// Traced, waiting for a worker to claim the job.
inline constexpr char kStatusQueued[] = "queued";
inline constexpr char kStatusTracing[] = "tracing";
inline constexpr char kStatusTraced[] = "traced";
inline constexpr char kStatusTracingFailed[] = "tracing failed";
// Removal under way: frames, audit and file are being removed, the item last.
inline constexpr char kStatusDeleting[] = "deleting";

// Audit events.
inline constexpr char kEventTracingStarted[] = "movie.tracing.started";
inline constexpr char kEventTracingCompleted[] = "movie.tracing.completed";
inline constexpr char kEventTracingFailed[] = "movie.tracing.failed";
// What the sweep did to a movie left unfinished (Movies::sweep).
inline constexpr char kEventRepaired[] = "movie.repaired";

// Attributes of a movie item besides the lease slots.
namespace attr {
inline constexpr char kPk[] = "pk";
inline constexpr char kKind[] = "kind";
inline constexpr char kId[] = "id";
inline constexpr char kName[] = "name";
inline constexpr char kFile[] = "file";
inline constexpr char kOwnerUser[] = "owner_user";
inline constexpr char kOwnerDisplayName[] = "owner_display_name";
inline constexpr char kCreatedAtMs[] = "created_at_ms";
inline constexpr char kStatus[] = "status";
inline constexpr char kFps[] = "fps";
inline constexpr char kFrameRateVaries[] = "frame_rate_varies";  // 1 or absent
inline constexpr char kDurationUs[] = "duration_us";
// The proxy (Movies::make_proxy): its file in the media, and its frames'
// timestamps: frame n's is n * proxy_pts_per_frame in proxy_time_base
// ("NUM/DEN") seconds, a key frame every proxy_key_every.
inline constexpr char kProxyFile[] = "proxy_file";
inline constexpr char kProxyTimeBase[] = "proxy_time_base";
inline constexpr char kProxyPtsPerFrame[] = "proxy_pts_per_frame";
inline constexpr char kProxyKeyEvery[] = "proxy_key_every";
inline constexpr char kWidth[] = "width";
inline constexpr char kHeight[] = "height";
inline constexpr char kFrameCount[] = "frame_count";
inline constexpr char kMarkers[] = "markers";
inline constexpr char kTrimStart[] = "trim_start_frame";
inline constexpr char kTrimEnd[] = "trim_end_frame";
inline constexpr char kEveryFrames[] = "every_frames";
inline constexpr char kFramesDone[] = "frames_done";
inline constexpr char kFramesTotal[] = "frames_total";
inline constexpr char kFailureSummary[] = "failure_summary";
inline constexpr char kJobClaimedBy[] = "job_claimed_by";
inline constexpr char kJobClaimedAtMs[] = "job_claimed_at_ms";
// The current (or last) trace job: when it started and by whom (display
// name), when it ended, and, until both of its audit entries are written,
// its ID in job_audit_pending.
inline constexpr char kJobStartedAtMs[] = "job_started_at_ms";
inline constexpr char kJobStartedBy[] = "job_started_by";
inline constexpr char kJobEndedAtMs[] = "job_ended_at_ms";
inline constexpr char kJobAuditPending[] = "job_audit_pending";
// The sweep (Movies::sweep). When a probe last said it was probing a
// `processing` movie (Movies::probe_alive), and when the movie was marked
// `deleting`: the times from which the sweep counts its grace.
inline constexpr char kProbeSeenAtMs[] = "probe_seen_at_ms";
inline constexpr char kRemovalStartedAtMs[] = "removal_started_at_ms";
// The sweep's last repair of the movie: what it repaired ("processing",
// "deleting", or "queued:<job ID>"), how many times it has repaired that,
// and when; and, until its audit entry is written, what it did.
inline constexpr char kSweptFor[] = "swept_for";
inline constexpr char kSweeps[] = "sweeps";
inline constexpr char kSweptAtMs[] = "swept_at_ms";
inline constexpr char kSweepAuditPending[] = "sweep_audit_pending";
// Frame rows.
inline constexpr char kSk[] = "sk";
inline constexpr char kJobId[] = "job_id";
inline constexpr char kJobEpoch[] = "job_epoch";
}  // namespace attr

TableSpec movies_table_spec();
TableSpec frames_table_spec();
TableSpec audit_table_spec();
TableSpec times_table_spec();
// Every table of the service: the movies, frames, times and audit tables.
std::vector<TableSpec> movie_table_specs();

// "MOVIE#<id>".
std::string movie_pk(std::string_view id);
Key movie_key(std::string_view id);
// The sort key of a frame row, and the smallest sort key of a frame's rows.
std::string frame_sk(int64_t frame, std::string_view marker_id);
std::string frame_sk_prefix(int64_t frame);
// The sort key of an audit entry of trace job `job_id`: phase 0 for its
// start, 1 for its end; the same key for the same arguments.
std::string job_audit_sk(int64_t at_ms, int phase, std::string_view job_id);

// Doubles are stored as strings (the store has no floating point type), in
// the shortest form that reads back as the same double.
std::string format_double(double v);
// False, leaving `out` as it was, if `text` is not a whole decimal number
// (so not "inf" or "nan").
bool parse_double(std::string_view text, double& out);

}  // namespace leasehold::movies
