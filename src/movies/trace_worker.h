// TraceWorker: runs the trace jobs that Movies::start_trace() queues, one at
// a time, and writes their results.
//
// A job message {movie_id, job_id} may be delivered more than once (the queue
// delivers at least once). The worker claims a job exactly once with a
// conditional write on the movie item:
//   tracing_token = job_id AND status = queued
//   -> status tracing, job_claimed_by, tracing_expires_at_ms = now + ttl
// which re-arms a tracing lease that expired while the job waited in the
// queue (nobody replaced it: the token says so; nobody took the movie back:
// the status says so). A redelivered message, or one of a job that was
// replaced or ended since, fails that condition and is deleted without
// doing anything. A claim without an answer is read back; one that cannot
// be read back leaves the message for redelivery, and this worker, finding
// the job claimed by itself, re-arms it then. After claiming, the worker
// deletes the message, takes the tracing lease over by renewing it
// (LeaseManager::renew(LeaseRef): owner = the movie's tracing_owner, token =
// the job ID; a renewal without an answer is tried again while the claim's
// lease lasts), hands it to a Renewer, and traces.
//
// Fencing of the frame rows (table movie_frames; single-item writes only,
// no transactions):
//   - before every row write the tracing lease is checked valid at the local
//     monotonic time (Lease::valid_at), so a worker paused past its lease
//     writes nothing more;
//   - each row write is conditioned on
//       not_exists(job_epoch) OR job_epoch <= this job's epoch
//     (the tracing slot's fencing epoch), so an older job never overwrites a
//     newer one's rows;
//   - after each frame's rows, frames_done is set on the movie item by a
//     fenced write conditioned on the tracing owner and token; its failure
//     means the lease is lost, and the trace stops at once;
//   - a loss reported by the Renewer requests a stop of the trace.
// A worker that lost its lease writes nothing more: no row, no status, no
// audit. Otherwise it publishes `traced`, or `tracing failed` with a summary
// safe to show (no paths, no internals; the full error goes to the log), and
// ends the tracing lease in the same write (LeaseManager::release, mode
// expire), which is conditioned on the job ID: only its own lease is ended.
// Then it records movie.tracing.completed or movie.tracing.failed
// (internal::record_job_audit: once, whoever else tries), and removes the
// rows of the movie's earlier jobs. A job whose worker died is ended by the
// next reader of the movie (Movies::get), once its lease has expired.
// A trace that makes no progress for progress_deadline is stopped, and
// published as failed by a watchdog thread if it does not stop.
//
// Threads: one thread of its own receives and runs jobs (tracer::trace runs
// on it, with FFmpeg's threads inside); a Renewer's threads renew the lease.
// stats() and wake() may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>

#include "leasehold/clock.h"
#include "leasehold/lease.h"
#include "leasehold/logger.h"
#include "leasehold/queue.h"
#include "leasehold/random.h"
#include "leasehold/status.h"
#include "leasehold/store.h"
#include "movies/media.h"
#include "tracer/tracer.h"

namespace leasehold::metrics {
class Registry;
}

namespace leasehold::movies {

inline constexpr size_t kTraceWorkerIdBytesMax = 128;

struct TraceWorkerOptions {
  std::string id;  // unique among trace workers, 1..kTraceWorkerIdBytesMax bytes
  // The tracing lease's ttl while the worker holds it, and its renew period
  // (zero: LeaseManager::default_renew_every).
  Duration tracing_ttl = std::chrono::seconds(60);
  Duration renew_every{};
  MediaStore* media = nullptr;  // where the movie files are (required; not owned)
  // How long a received message stays hidden from other workers before it
  // is claimed and deleted.
  Duration queue_visibility = std::chrono::seconds(60);
  // How long the worker waits before asking an empty queue again.
  Duration idle_wait = std::chrono::milliseconds(200);
  // The clock-skew bound and safety margin; the table is set here.
  LeaseConfig lease;
  tracer::TraceOptions trace;
  // The longest a trace may go without decoding or writing a frame (a
  // decode stuck in a broken file): it is then stopped, and if it does not
  // stop within a quarter of this again, its lease is taken back and the job
  // published as failed.
  Duration progress_deadline = std::chrono::minutes(2);
  // Runs the trace instead of tracer::trace (tests: a decode that hangs).
  std::function<Status(const std::string& path, const tracer::VideoInfo& video,
                       const tracer::TraceRequest& request, const tracer::FrameCallback& on_frame,
                       std::stop_token stop)>
      trace_fn;
  // The nice value of the worker's thread and the decoder threads it
  // starts (0..19; 0 leaves it as it is): tracing yields the CPU to a
  // server in the same process, so that its answers stay quick.
  int nice = 10;
  Logger* logger = nullptr;  // not owned; null logs nothing
  // Where the worker counts jobs by outcome and traced frames
  // (leasehold_movies_trace_jobs_total{outcome},
  // leasehold_movies_traced_frames_total); not owned; null counts nothing
  // but stats().
  metrics::Registry* metrics = nullptr;
};

struct TraceWorkerStats {
  uint64_t messages = 0;        // job messages received
  uint64_t stale_messages = 0;  // redelivered or replaced: deleted, nothing done
  uint64_t claimed = 0;
  uint64_t traced = 0;
  uint64_t failed = 0;
  uint64_t lost = 0;            // jobs stopped because their lease was lost
  uint64_t frames_written = 0;  // sampled frames whose rows were all written
  uint64_t rows_written = 0;
  bool stopped = false;  // stop() or abandon() was called
};

class TraceWorker {
 public:
  // Requires the movie tables, checks the options (kInvalidArgument) and
  // starts the thread. REQUIRES: everything given outlives the worker.
  static Result<std::unique_ptr<TraceWorker>> start(ItemStore& store, Clock& clock, Random& random,
                                                    Queue& queue, TraceWorkerOptions options);
  ~TraceWorker();  // stop()
  TraceWorker(const TraceWorker&) = delete;
  TraceWorker& operator=(const TraceWorker&) = delete;

  // Asks the queue now instead of at the end of the idle wait (a job was
  // just queued in this process).
  void wake();
  // Stops receiving; a trace under way is stopped and published as
  // `tracing failed` ("the trace was interrupted"). Idempotent; returns once
  // the thread has ended.
  void stop();
  // Stops as a killed process would: the trace under way writes nothing
  // more, publishes nothing, and its lease is left to expire.
  void abandon();

  TraceWorkerStats stats() const;

 private:
  class Impl;
  explicit TraceWorker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace leasehold::movies
