#include "movies/trace_worker.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stop_token>
#include <thread>

#include "base/crash_point.h"
#include "base/logging.h"
#include "base/mutex.h"
#include "leasehold/renewer.h"
#include "metrics/registry.h"
#include "movies/job_messages.h"
#include "movies/movies.h"
#include "movies/schema.h"

namespace leasehold::movies {

// The types TraceWorker::Impl holds are named in this namespace, not an
// anonymous one: a class every file may name must not hold a member of a
// type that is this file's alone (GCC's -Wsubobject-linkage, which sees
// this file as a header in the unity build).

using JobMessage = internal::TraceJob;

// The worker's counters in a registry: each TraceWorkerStats field that has
// one, by outcome.
class TraceMetrics {
 public:
  explicit TraceMetrics(metrics::Registry& r)
      : jobs_(r.counter("leasehold_movies_trace_jobs_total",
                        "Trace job messages by what became of them: claimed, then traced, "
                        "failed or lost; or stale (redelivered or replaced, nothing done)",
                        {"outcome"})),
        frames_(r.counter("leasehold_movies_traced_frames_total",
                          "Sampled frames whose rows were written")
                    .with({})) {}

  void add(uint64_t TraceWorkerStats::*field, uint64_t n) {
    const auto outcome = [&](const char* name) { jobs_.with({name}).inc(static_cast<double>(n)); };
    if (field == &TraceWorkerStats::claimed) outcome("claimed");
    if (field == &TraceWorkerStats::traced) outcome("traced");
    if (field == &TraceWorkerStats::failed) outcome("failed");
    if (field == &TraceWorkerStats::lost) outcome("lost");
    if (field == &TraceWorkerStats::stale_messages) outcome("stale");
    if (field == &TraceWorkerStats::frames_written) frames_.inc(static_cast<double>(n));
  }

 private:
  metrics::Family<metrics::Counter>& jobs_;
  metrics::Counter& frames_;
};

// One job's state, shared with the Renewer's loss callback and the
// watchdog, which may run after the job has ended.
struct JobState {
  std::stop_source stop;
  std::atomic<bool> lost{false};
  // Who publishes the job's end: the thread that traced it, or the watchdog
  // of a trace that stopped making progress; the first to set it.
  std::atomic<bool> ended{false};
  // The worker's monotonic clock, in ns, when the trace last made progress
  // (a frame decoded or written).
  std::atomic<int64_t> progress_ns{0};
  Renewer::Id renewal{};
  JobMessage job;
  std::string user_display_name;
};

namespace {

// What users may see of a failed trace: a fixed sentence per kind of
// failure, never a path or an internal message (those go to the log).
std::string failure_summary(const Status& s) {
  switch (s.code()) {
    case Code::kNotFound:
      return "the movie's file is missing";
    case Code::kInvalidArgument:
      return "the movie's file could not be traced with these markers";
    case Code::kFailedPrecondition:
      return "the trace was interrupted";
    case Code::kUnavailable:
    case Code::kUnknownOutcome:
    case Code::kDeadlineExceeded:
      return "the store could not be reached while tracing";
    default:
      return "the trace failed (internal error)";
  }
}

bool transient(const Status& s) {
  return s.code() == Code::kUnavailable || s.code() == Code::kUnknownOutcome ||
         s.code() == Code::kDeadlineExceeded;
}

}  // namespace

class TraceWorker::Impl {
 public:
  Impl(ItemStore& store, Clock& clock, Random& random, Queue& queue, TraceWorkerOptions options)
      : store_(store),
        clock_(clock),
        queue_(queue),
        options_(std::move(options)),
        leases_(store, clock, random, options_.lease),
        renewer_(leases_, clock, random, renewer_options(options_)) {
    if (options_.metrics != nullptr) metrics_.emplace(*options_.metrics);
  }

  static RenewerOptions renewer_options(const TraceWorkerOptions& o) {
    RenewerOptions r;
    r.renew_every = o.renew_every;
    r.renew_threads = 1;
    r.info_log = o.logger;
    return r;
  }

  void start() {
    renewer_.start();
    thread_ = std::thread([this] {
      lower_priority();
      loop();
    });
    watchdog_ = std::thread([this] { watch(); });
  }
  void stop(bool abandon);
  void wake() {
    MutexLock lock(mu_);
    woken_ = true;
    cv_.notify_all();
  }
  TraceWorkerStats stats() const {
    MutexLock lock(mu_);
    return stats_;
  }

 private:
  void lower_priority();
  void loop();
  void wait_idle();
  void handle(const Message& message);
  Result<Item> claim(const JobMessage& job);
  Result<Item> claimed_by_me(const JobMessage& job);
  Result<Lease> take_over(const JobMessage& job, const Item& movie, MonoTime claimed);
  void run(const JobMessage& job, const Item& movie, MonoTime claimed);
  Status write_frame(const tracer::TracedFrame& frame, Renewer::Id rid, JobState& state,
                     const JobMessage& job, int64_t epoch, int64_t& frames_done);
  Result<Lease> current_lease(Renewer::Id rid, JobState& state);
  // `summary`: what users see of a failure, if not failure_summary(traced).
  void publish(const JobState& state, const Lease& lease, const Status& traced,
               std::string summary = {});
  void remove_old_rows(const JobMessage& job, int64_t epoch);
  void watch();
  // Stops a trace that makes no progress, or publishes it as failed.
  void check_progress(JobState& state);
  void pause(Duration d, bool until_woken = false);
  int64_t mono_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               clock_.mono_now().time_since_epoch())
        .count();
  }
  void count(uint64_t TraceWorkerStats::*field, uint64_t n = 1) {
    if (metrics_) metrics_->add(field, n);
    MutexLock lock(mu_);
    stats_.*field += n;
  }

  ItemStore& store_;
  Clock& clock_;
  Queue& queue_;
  const TraceWorkerOptions options_;
  LeaseManager leases_;
  Renewer renewer_;
  std::optional<TraceMetrics> metrics_;  // set once, before the thread starts
  std::atomic<bool> abandoned_{false};

  mutable Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool woken_ GUARDED_BY(mu_) = false;
  // Set by stop() once the trace thread has ended: until then the watchdog
  // may still have to end a trace that does not stop.
  bool watchdog_stopping_ GUARDED_BY(mu_) = false;
  std::shared_ptr<JobState> current_ GUARDED_BY(mu_);
  TraceWorkerStats stats_ GUARDED_BY(mu_);
  std::thread thread_;
  std::thread watchdog_;
};

void TraceWorker::Impl::stop(bool abandon) {
  {
    MutexLock lock(mu_);
    if (abandon) abandoned_ = true;
    stopping_ = true;
    stats_.stopped = true;
    if (current_) current_->stop.request_stop();
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  {
    MutexLock lock(mu_);
    watchdog_stopping_ = true;
    cv_.notify_all();
  }
  if (watchdog_.joinable()) watchdog_.join();
  renewer_.stop();
}

// Tracing is CPU work that can wait a moment; a server answering in the
// same process cannot. The thread (and the decoder threads FFmpeg starts
// from it, which inherit its nice value) yields the CPU to the others.
void TraceWorker::Impl::lower_priority() {
  if (options_.nice <= 0) return;
  const pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  if (setpriority(PRIO_PROCESS, static_cast<id_t>(tid), options_.nice) != 0) {
    log_to(options_.logger, LogLevel::kInfo, "trace worker {}: nice {} not set: {}", options_.id,
           options_.nice, std::strerror(errno));
  }
}

void TraceWorker::Impl::loop() {
  while (true) {
    {
      MutexLock lock(mu_);
      if (stopping_) return;
    }
    Result<std::vector<Message>> got = queue_.receive(1, options_.queue_visibility);
    if (!got.ok()) {
      log_to(options_.logger, LogLevel::kWarn, "trace worker {}: receive failed: {}", options_.id,
             got.status().to_string());
      wait_idle();
    } else if (got->empty()) {
      wait_idle();
    } else {
      for (const Message& m : *got) handle(m);
    }
  }
}

// Waits idle_wait, or until wake() or stop().
void TraceWorker::Impl::wait_idle() { pause(options_.idle_wait, /*until_woken=*/true); }

// Sleeps `d` on the worker's clock, or until stop() (or wake(), if
// `until_woken`).
void TraceWorker::Impl::pause(Duration d, bool until_woken) {
  const MonoTime due = clock_.mono_now() + d;
  MutexLock lock(mu_);
  while (!stopping_ && !(until_woken && woken_) && clock_.mono_now() < due) {
    cv_.wait_until(mu_, clock_, due);
  }
  if (until_woken) woken_ = false;
}

void TraceWorker::Impl::handle(const Message& message) {
  count(&TraceWorkerStats::messages);
  Result<JobMessage> job = internal::parse_trace_job(message.body);
  if (!job.ok()) {
    log_to(options_.logger, LogLevel::kWarn, "trace worker {}: message {} dropped: {}", options_.id,
           message.id, job.status().message());
    (void)queue_.remove(message.receipt);
    return;
  }
  const MonoTime claim_sent = clock_.mono_now();
  Result<Item> claimed = claim(*job);
  if (!claimed.ok()) {
    if (claimed.status().code() != Code::kConditionFailed) {
      // The store failed: the message comes back after its visibility.
      log_to(options_.logger, LogLevel::kWarn, "trace worker {}: claim of job {} failed: {}",
             options_.id, job->job_id, claimed.status().to_string());
      return;
    }
    count(&TraceWorkerStats::stale_messages);
    log_to(options_.logger, LogLevel::kInfo, "trace worker {}: job {} of movie {} is stale",
           options_.id, job->job_id, job->movie_id);
    (void)queue_.remove(message.receipt);
    return;
  }
  crash_point(CrashPoint::kTraceAfterClaim);
  count(&TraceWorkerStats::claimed);
  const Status removed = queue_.remove(message.receipt);
  if (!removed.ok()) {
    // A redelivery will find the job claimed: a no-op.
    log_to(options_.logger, LogLevel::kInfo, "trace worker {}: message {} not removed: {}",
           options_.id, message.id, removed.to_string());
  }
  run(*job, *claimed, claim_sent);
}

// One conditional write takes a queued job: its token still in the tracing
// slot (no later job replaced it) and the movie still `queued` (nobody took
// the movie back). It re-arms the tracing lease for tracing_ttl, which may
// have expired while the job waited: the queue's wait does not count
// against the job. kConditionFailed if the job is not there to claim
// (claimed already, replaced, ended, or its movie gone).
//
// A claim without an answer is read back: ours, tried again while the job
// is still queued, or not there. A claim that applied but could not be read
// back leaves the message for redelivery, and the next delivery to this
// worker finds the job claimed by it (claimed_by_me).
Result<Item> TraceWorker::Impl::claim(const JobMessage& job) {
  const SlotNames tracing(kTracingSlot);
  constexpr int kAttemptsMax = 3;
  for (int attempt = 0; attempt < kAttemptsMax; ++attempt) {
    const int64_t now_ms = to_unix_ms(clock_.wall_now());
    Update update;
    update.set(attr::kStatus, std::string(kStatusTracing))
        .set(attr::kJobClaimedBy, options_.id)
        .set(attr::kJobClaimedAtMs, now_ms)
        .set(tracing.expires_at_ms, now_ms + to_ms(options_.tracing_ttl));
    const Condition condition =
        cond::eq(tracing.token, job.job_id) && cond::eq(attr::kStatus, kStatusQueued);
    Result<Item> written = store_.update(kMoviesTable, movie_key(job.movie_id), update, condition);
    if (written.ok()) return written;
    if (written.status().code() == Code::kConditionFailed) return claimed_by_me(job);
    if (written.status().code() != Code::kUnknownOutcome) return written;
    Result<Item> item = store_.get(kMoviesTable, movie_key(job.movie_id), true);
    if (!item.ok()) {
      if (item.status().code() == Code::kNotFound) return condition_failed("the movie is gone");
      return item.status();
    }
    if (get_string_or(*item, tracing.token) != job.job_id) {
      return condition_failed("the job was replaced");
    }
    const std::string status = get_string_or(*item, attr::kStatus);
    if (status == kStatusTracing && get_string_or(*item, attr::kJobClaimedBy) == options_.id) {
      return item;
    }
    if (status != kStatusQueued) return condition_failed("the job was not claimed");
  }
  return unavailable("the claim got no answer");
}

// A job this worker claimed before without learning so (or whose run it
// lost), and which nobody has ended since: the claim is re-armed under the
// same conditions, for this worker only. A worker runs one job at a time,
// so none of its threads is running this one.
Result<Item> TraceWorker::Impl::claimed_by_me(const JobMessage& job) {
  const SlotNames tracing(kTracingSlot);
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  Update update;
  update.set(attr::kJobClaimedAtMs, now_ms)
      .set(tracing.expires_at_ms, now_ms + to_ms(options_.tracing_ttl));
  const Condition condition = cond::eq(tracing.token, job.job_id) &&
                              cond::eq(attr::kStatus, kStatusTracing) &&
                              cond::eq(attr::kJobClaimedBy, options_.id);
  Result<Item> written = store_.update(kMoviesTable, movie_key(job.movie_id), update, condition);
  if (written.ok()) {
    log_to(options_.logger, LogLevel::kInfo, "trace worker {}: job {} was claimed by it already",
           options_.id, job.job_id);
  }
  if (!written.ok() && written.status().code() == Code::kUnknownOutcome) {
    return unavailable("the claim got no answer");
  }
  return written;
}

Result<Lease> TraceWorker::Impl::current_lease(Renewer::Id rid, JobState& state) {
  if (abandoned_) return failed_precondition("the worker was abandoned");
  std::optional<Lease> lease = renewer_.get(rid);
  if (!lease || !lease->valid_at(clock_.mono_now())) {
    state.lost = true;
    return failed_precondition("the tracing lease was lost");
  }
  return *lease;
}

Status TraceWorker::Impl::write_frame(const tracer::TracedFrame& frame, Renewer::Id rid,
                                      JobState& state, const JobMessage& job, int64_t epoch,
                                      int64_t& frames_done) {
  const std::string pk = movie_pk(job.movie_id);
  for (const tracer::TrackRow& row : frame.rows) {
    LEASEHOLD_RETURN_IF_ERROR(current_lease(rid, state).status());
    Update update;
    update.set("marker_id", row.marker_id)
        .set("label", row.label)
        .set("frame", row.frame)
        .set("time_s", format_double(row.time_s))
        .set("x", format_double(row.x))
        .set("y", format_double(row.y))
        .set("score", format_double(row.score))
        .set("status", std::string(tracer::status_name(row.status)))
        .set(attr::kJobId, job.job_id)
        .set(attr::kJobEpoch, epoch);
    if (row.vx_px_per_s)
      update.set("vx", format_double(*row.vx_px_per_s));
    else
      update.remove("vx");
    if (row.vy_px_per_s)
      update.set("vy", format_double(*row.vy_px_per_s));
    else
      update.remove("vy");
    const Condition not_newer =
        cond::not_exists(attr::kJobEpoch) || cond::le(attr::kJobEpoch, epoch);
    Result<Item> written =
        store_.update(kFramesTable, Key{pk, frame_sk(row.frame, row.marker_id)}, update, not_newer);
    if (!written.ok()) {
      if (written.status().code() == Code::kConditionFailed) {
        state.lost = true;
        return failed_precondition("a newer job has written this movie's frames");
      }
      return written.status();
    }
    count(&TraceWorkerStats::rows_written);
  }
  LEASEHOLD_ASSIGN_OR_RETURN(Lease lease, current_lease(rid, state));
  Update progress;
  progress.set(attr::kFramesDone, frames_done + 1).returning_updated_only();
  Result<Item> written = leases_.fenced_write(lease, progress);
  if (!written.ok()) {
    if (written.status().code() == Code::kFailedPrecondition) state.lost = true;
    return written.status();
  }
  ++frames_done;
  count(&TraceWorkerStats::frames_written);
  return {};
}

// Takes the tracing lease over from the claim by renewing it under the job
// ID. A renewal the store does not answer is tried again, with a pause,
// until the claim's own lease would be past its local deadline: a transient
// error must not cost the job. kFailedPrecondition if the lease is lost.
Result<Lease> TraceWorker::Impl::take_over(const JobMessage& job, const Item& movie,
                                           MonoTime claimed) {
  const LeaseView tracing = leases_.view_of(movie, movie_key(job.movie_id), kTracingSlot);
  const LeaseRef ref{movie_key(job.movie_id), kTracingSlot, tracing.owner, job.job_id};
  const MonoTime deadline = claimed + leases_.validity(options_.tracing_ttl);
  Duration wait = std::chrono::milliseconds(50);
  while (true) {
    Result<Lease> lease = leases_.renew(ref, options_.tracing_ttl);
    if (lease.ok() || !transient(lease.status())) return lease;
    if (clock_.mono_now() + wait >= deadline || abandoned_) return lease;
    log_to(options_.logger, LogLevel::kInfo, "trace worker {}: job {}: renewal failed, retried: {}",
           options_.id, job.job_id, lease.status().to_string());
    pause(wait);
    wait = std::min<Duration>(wait * 2, std::chrono::seconds(1));
  }
}

void TraceWorker::Impl::run(const JobMessage& job, const Item& movie, MonoTime claimed) {
  Result<MovieDetail> m = internal::parse_movie(movie, leases_);
  Result<Lease> lease = m.ok() ? take_over(job, movie, claimed) : Result<Lease>(m.status());
  if (!lease.ok()) {
    count(&TraceWorkerStats::lost);
    log_to(options_.logger, LogLevel::kWarn, "trace worker {}: job {} not run: {}", options_.id,
           job.job_id, lease.status().to_string());
    return;
  }
  auto state = std::make_shared<JobState>();
  state->job = job;
  state->user_display_name = get_string_or(movie, attr::kJobStartedBy);
  state->progress_ns = mono_ns();
  state->renewal = renewer_.add(*lease, [state](const Lease&, const Status&) {
    state->lost = true;
    state->stop.request_stop();
  });
  const Renewer::Id rid = state->renewal;
  // The movie's file on the local disk (from S3, a copy, kept until the trace
  // ends), fetched under the renewed lease and before the watchdog looks.
  const Result<std::shared_ptr<const LocalFile>> local = options_.media->local(m->file);
  state->progress_ns = mono_ns();
  {
    MutexLock lock(mu_);
    current_ = state;
    if (stopping_) state->stop.request_stop();
  }
  tracer::TraceRequest request{m->markers, m->trim, m->every_frames, options_.trace};
  request.options.on_decoded = [this, &state = *state](int64_t) { state.progress_ns = mono_ns(); };
  tracer::VideoInfo video;
  video.fps = m->fps;
  video.width = m->width;
  video.height = m->height;
  video.frame_count = m->frame_count;
  int64_t frames_done = 0;
  Status traced = local.status().with_context("the movie's file");
  if (local.ok()) {
    try {
      const std::string& path = (*local)->path();
      const tracer::FrameCallback on_frame = [&](const tracer::TracedFrame& f) {
        Status written = write_frame(f, rid, *state, job, lease->epoch, frames_done);
        if (written.ok()) state->progress_ns = mono_ns();
        return written;
      };
      traced = options_.trace_fn
                   ? options_.trace_fn(path, video, request, on_frame, state->stop.get_token())
                   : tracer::trace(path, video, request, on_frame, state->stop.get_token());
    } catch (const std::exception& e) {
      traced = internal_error(std::string("tracer threw: ") + e.what());
    }
  }
  {
    MutexLock lock(mu_);
    current_.reset();
  }
  // Whoever ends the job first (this thread or the watchdog) takes the lease
  // from the Renewer and publishes; the other does neither.
  if (state->ended.exchange(true)) return;
  const std::optional<Lease> latest = renewer_.remove(rid);
  if (abandoned_) return;  // as a killed process: nothing more is written
  if (state->lost || !latest || !latest->valid_at(clock_.mono_now())) {
    count(&TraceWorkerStats::lost);
    log_to(options_.logger, LogLevel::kWarn,
           "trace worker {}: job {} of movie {} lost its lease and stopped: {}", options_.id,
           job.job_id, job.movie_id, traced.to_string());
    return;
  }
  publish(*state, *latest, traced);
  remove_old_rows(job, lease->epoch);
}

// The job's end in one write, the lease's release: the status, the summary
// and the cue for its audit, conditioned on the lease (only its own job is
// ended). A write the store does not answer is tried again while the lease
// is valid; a job never published is ended by the next reader once its
// lease expires ("its worker went away"). Then the audit, exactly once.
void TraceWorker::Impl::publish(const JobState& state, const Lease& lease, const Status& traced,
                                std::string summary) {
  const JobMessage& job = state.job;
  if (!traced.ok()) {
    if (summary.empty()) summary = failure_summary(traced);
    log_to(options_.logger, LogLevel::kWarn, "trace worker {}: job {} of movie {} failed: {}",
           options_.id, job.job_id, job.movie_id, traced.to_string());
  }
  const internal::JobEnd end{job.job_id, traced.ok() ? kStatusTraced : kStatusTracingFailed,
                             summary};
  Status released;
  Duration wait = std::chrono::milliseconds(50);
  while (true) {
    released = leases_.release(lease, ReleaseMode::kExpire,
                               internal::job_end_update(end, to_unix_ms(clock_.wall_now())));
    if (released.ok() || !transient(released) || !lease.valid_at(clock_.mono_now() + wait)) {
      break;
    }
    pause(wait);
    wait = std::min<Duration>(wait * 2, std::chrono::seconds(1));
  }
  if (!released.ok()) {
    count(&TraceWorkerStats::lost);
    log_to(options_.logger, LogLevel::kWarn, "trace worker {}: job {} not published: {}",
           options_.id, job.job_id, released.to_string());
    return;
  }
  crash_point(CrashPoint::kTraceAfterPublish);
  Result<Item> movie = store_.get(kMoviesTable, movie_key(job.movie_id), true);
  const Status audited =
      movie.ok() ? internal::record_job_audit(store_, job.movie_id, *movie) : movie.status();
  if (!audited.ok()) {
    log_to(options_.logger, LogLevel::kWarn,
           "trace worker {}: audit of job {} not recorded (the next reader records it): {}",
           options_.id, job.job_id, audited.to_string());
  }
  // Counted last, so that whoever sees the count sees the whole publication.
  count(traced.ok() ? &TraceWorkerStats::traced : &TraceWorkerStats::failed);
}

// Rows of earlier jobs of the movie (lower epochs), which no reader returns,
// are removed off the request path once the job has published; a row
// rewritten by a later job since is kept by the condition.
void TraceWorker::Impl::remove_old_rows(const JobMessage& job, int64_t epoch) {
  const std::string pk = movie_pk(job.movie_id);
  QueryOptions q;
  q.limit = kQueryLimitMax;
  uint64_t removed = 0;
  do {
    Result<Page> page = store_.query(kFramesTable, pk, KeyRange::all(), q);
    if (!page.ok()) {
      log_to(options_.logger, LogLevel::kInfo, "trace worker {}: old rows of movie {} kept: {}",
             options_.id, job.movie_id, page.status().to_string());
      return;
    }
    for (const Item& row : page->items) {
      const int64_t* row_epoch = get_int(row, attr::kJobEpoch);
      if (row_epoch != nullptr && *row_epoch >= epoch) continue;
      const Status gone =
          store_.remove(kFramesTable, Key{pk, get_string_or(row, attr::kSk)},
                        cond::not_exists(attr::kJobEpoch) || cond::lt(attr::kJobEpoch, epoch));
      if (gone.ok()) ++removed;
    }
    q.cursor = page->next_cursor;
  } while (!q.cursor.empty() && !abandoned_);
  if (removed > 0) {
    log_to(options_.logger, LogLevel::kInfo, "trace worker {}: {} old rows of movie {} removed",
           options_.id, removed, job.movie_id);
  }
}

// The watchdog looks at the trace under way every progress_deadline / 4 on
// the worker's clock, until stop() has ended the trace thread.
void TraceWorker::Impl::watch() {
  const Duration period =
      std::max<Duration>(options_.progress_deadline / 4, std::chrono::milliseconds(10));
  MutexLock lock(mu_);
  while (!watchdog_stopping_) {
    const MonoTime due = clock_.mono_now() + period;
    while (!watchdog_stopping_ && clock_.mono_now() < due) cv_.wait_until(mu_, clock_, due);
    if (watchdog_stopping_) return;
    const std::shared_ptr<JobState> state = current_;
    lock.unlock();
    if (state && !state->ended && !abandoned_) check_progress(*state);
    lock.lock();
  }
}

// A trace that decodes and writes no frame for progress_deadline (a decode
// stuck in a broken file, a stalled read) is asked to stop; if it has not ended after
// another progress_deadline / 4, the watchdog takes its lease from the
// Renewer and publishes it as failed. The stuck thread, should it ever
// return, finds no lease and writes nothing.
void TraceWorker::Impl::check_progress(JobState& state) {
  const Duration deadline = options_.progress_deadline;
  const Duration grace = deadline / 4;
  const auto idle = std::chrono::nanoseconds(mono_ns() - state.progress_ns.load());
  if (idle < deadline) return;
  if (!state.stop.stop_requested()) {
    log_to(options_.logger, LogLevel::kWarn,
           "trace worker {}: job {} made no progress for {} ms: stopped", options_.id,
           state.job.job_id, to_ms(std::chrono::duration_cast<Duration>(idle)));
    state.stop.request_stop();
    return;
  }
  if (idle < deadline + grace || state.ended.exchange(true)) return;
  const std::optional<Lease> latest = renewer_.remove(state.renewal);
  if (!latest || !latest->valid_at(clock_.mono_now())) return;
  log_to(options_.logger, LogLevel::kWarn,
         "trace worker {}: job {} did not stop: published as failed", options_.id,
         state.job.job_id);
  const std::string why = "the trace stopped: reading the movie made no progress for " +
                          std::to_string(to_ms(deadline)) + " ms";
  publish(state, *latest, deadline_exceeded(why), why);
}

// ---------------------------------------------------------------- TraceWorker

Result<std::unique_ptr<TraceWorker>> TraceWorker::start(ItemStore& store, Clock& clock,
                                                        Random& random, Queue& queue,
                                                        TraceWorkerOptions options) {
  if (options.id.empty() || options.id.size() > kTraceWorkerIdBytesMax) {
    return invalid_argument("trace worker id must be 1.." + std::to_string(kTraceWorkerIdBytesMax) +
                            " bytes");
  }
  if (options.queue_visibility <= Duration::zero() || options.idle_wait <= Duration::zero() ||
      options.progress_deadline <= Duration::zero()) {
    return invalid_argument("queue visibility, idle wait and progress deadline must be positive");
  }
  if (options.media == nullptr) return invalid_argument("a trace worker needs the media");
  for (const TableSpec& spec : movie_table_specs()) {
    LEASEHOLD_RETURN_IF_ERROR(store.require_table(spec).with_context("table '" + spec.name + "'"));
  }
  options.lease.table = kMoviesTable;
  if (options.lease.info_log == nullptr) options.lease.info_log = options.logger;
  {
    LeaseManager check(store, clock, random, options.lease);
    const Duration every = options.renew_every != Duration::zero()
                               ? options.renew_every
                               : check.default_renew_every(options.tracing_ttl);
    LEASEHOLD_RETURN_IF_ERROR(check.check_timing(options.tracing_ttl, every));
  }
  auto impl = std::make_unique<Impl>(store, clock, random, queue, std::move(options));
  impl->start();
  return std::unique_ptr<TraceWorker>(new TraceWorker(std::move(impl)));
}

TraceWorker::TraceWorker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TraceWorker::~TraceWorker() { stop(); }
void TraceWorker::stop() { impl_->stop(/*abandon=*/false); }
void TraceWorker::abandon() { impl_->stop(/*abandon=*/true); }
void TraceWorker::wake() { impl_->wake(); }
TraceWorkerStats TraceWorker::stats() const { return impl_->stats(); }

}  // namespace leasehold::movies
