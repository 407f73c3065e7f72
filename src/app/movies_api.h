// The movie tracing service's HTTP API, under /api/movies/ (docs/server.md
// lists every field and status). Every route needs a signed-in user.
//
//   POST   /api/movies?name=NAME                    201 the movie (`processing`)
//   GET    /api/movies?limit=N&after=ID&order=O     200 [movie summary, ...], Link rel=next
//                                                   (O: oldest, the default, or newest)
//   GET    /api/movies/{id}                         200 the movie
//   GET    /api/movies/{id}/video                   200/206 the file (Range)
//   DELETE /api/movies/{id}                         204 (owner or admin; 409 while locked)
//   POST   /api/movies/{id}/analysis-lease          200 {lease_id, expires_at_ms} | 409 {holder}
//   POST   /api/movies/{id}/analysis-lease/heartbeat  {lease_id}  200 | 409
//   DELETE /api/movies/{id}/analysis-lease          {lease_id}  204 | 409
//   POST   /api/movies/{id}/analysis-lease/break    200 the movie (admin; 403 | 409 none live)
//   PUT    /api/movies/{id}/markers                 {lease_id, markers}  200 the movie
//   PUT    /api/movies/{id}/trim                    {lease_id, start_frame, end_frame}
//   PUT    /api/movies/{id}/capture-interval        {lease_id, every_frames}
//   POST   /api/movies/{id}/trace                   {lease_id}  202 {job_id, frames_total} | 409
//   GET    /api/movies/{id}/frames?limit=N&after=C  200 [frame row, ...], Link rel=next
//   GET    /api/movies/{id}/frames.csv              200 text/csv, streamed
//   GET    /api/movies/{id}/frames/{n}.jpg          200 image/jpeg of frame n | 304 | 404 | 409
//   GET    /api/movies/{id}/audit                   200 [audit entry, ...]
//
// An upload streams to a file in the upload folder (never whole in memory;
// 413 over the limit before a byte is read), is checked to be a video whose
// first frame decodes (415 otherwise, and nothing is kept), is moved into the
// media folder under a random name, and becomes a `processing` movie whose
// probe is queued (movies/probe_worker.h): it turns `ready` or `invalid`
// off the request path. Every other rule (the leases, fenced edits, traces)
// is the service's (movies/movies.h); each handler validates its input,
// makes one call of it and maps the Status through server/errors.h, where
// every lease conflict is a 409. A 409 on taking the analysis lease carries
// who holds the movie: {"error": {...}, "holder": {kind, user_display_name,
// started_at_ms}}.
//
// The movie list and the frame rows come a page at a time: ?limit=N (movies
// 100 by default, at most 1000; rows 1000, at most 10,000) and ?after= the
// last movie's ID or the cursor the page before gave, with a header
// `Link: <...?limit=N&after=...>; rel="next"` while more follow. frames.csv
// is every row of the latest trace, streamed (server/http.h, BodyStream),
// with cells a spreadsheet would run as formulas neutralised
// (Movies::frames_csv). The break route is for admins (Caller::admin).
//
// frames/{n}.jpg is the exact n-th decoded frame (0-based, the numbering of
// the tracer and the markers; movies/frame_images.h), decoded by readers
// kept open where they stopped and kept on disk under the media folder. It
// never changes: Cache-Control: private, max-age=31536000, immutable, and an
// ETag whose If-None-Match gets 304 without decoding. 404 for an unknown
// movie, a frame outside 0..frame_count - 1 or a name that is not N.jpg
// (N without sign or leading zero); 409 while the movie is not probed
// (processing, invalid, deleting).
//
// Handlers call the store (and the upload's check and the frame images
// decode), so they are blocking routes; they hold only references and are safe on many
// threads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "leasehold/logger.h"
#include "leasehold/queue.h"
#include "leasehold/random.h"
#include "movies/frame_images.h"
#include "movies/movies.h"
#include "server/router.h"
#include "tracer/video.h"

namespace leasehold::app {

inline constexpr uint64_t kUploadBytesMaxDefault = uint64_t{2} << 30;  // 2 GiB

struct MoviesApiOptions {
  movies::MediaStore* media = nullptr;  // Movies' media (required; not owned)
  // In the media's work folder (a kept upload is renamed into a media folder).
  std::string upload_dir;
  uint64_t upload_bytes_max = kUploadBytesMaxDefault;
  tracer::VideoLimits video_limits;  // what the upload's check and the frame images accept
  // The frame images' open readers, in all, and the size of the images kept.
  size_t frame_readers_max = movies::kFrameReadersMaxDefault;
  uint64_t frame_cache_bytes_max = movies::kFrameCacheBytesMaxDefault;
  // Called once a probe or a trace job has been queued by this process, to
  // wake the workers of this process (null: nobody to wake).
  std::function<void()> probe_queued;
  std::function<void()> trace_queued;
};

// Adds the routes above to `router`. A failure behind a 5xx answer is
// logged to `log` with the request's ID (the answer names only the ID).
// kInvalidArgument, with no route added, for frame image options out of
// range (movies::FrameCache::open).
// REQUIRES: movies, probe_queue, random and log outlive the router; both
// folders exist.
Status add_movie_routes(server::Router& router, movies::Movies& movies, Queue& probe_queue,
                        Random& random, Logger& log, MoviesApiOptions options);

}  // namespace leasehold::app
