#include "movies/trace_worker.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <boost/json.hpp>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stop_token>
#include <thread>

#include "base/logging.h"
#include "base/mutex.h"
#include "leasehold/renewer.h"
#include "metrics/registry.h"
#include "movies/movies.h"
#include "movies/schema.h"

namespace leasehold::movies {
namespace {

namespace json = boost::json;

std::string str_or(const Item& item, std::string_view a) {
  const std::string* v = get_string(item, a);
  return v ? *v : std::string();
}

struct JobMessage {
  std::string movie_id;
  std::string job_id;
};

const json::string* string_field(const json::object& o, std::string_view name) {
  const json::value* v = o.if_contains(name);
  return v != nullptr ? v->if_string() : nullptr;
}

Result<JobMessage> parse_job(std::string_view body) {
  boost::system::error_code ec;
  json::value v = json::parse(body, ec);
  const json::object* o = ec ? nullptr : v.if_object();
  const json::string* movie = o != nullptr ? string_field(*o, "movie_id") : nullptr;
  const json::string* job = o != nullptr ? string_field(*o, "job_id") : nullptr;
  if (movie == nullptr || job == nullptr || movie->empty() || movie->size() > 64 ||
      !is_well_formed_token(std::string_view(*job))) {
    return invalid_argument("malformed job message");
  }
  return JobMessage{std::string(*movie), std::string(*job)};
}

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

// One job's state, shared with the Renewer's loss callback, which may run
// after the job has ended.
struct JobState {
  std::stop_source stop;
  std::atomic<bool> lost{false};
};

}  // namespace

class TraceWorker::Impl {
 public:
  Impl(ItemStore& store, Clock& clock, Random& random, Queue& queue, TraceWorkerOptions options)
      : store_(store),
        clock_(clock),
        random_(random),
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
  void run(const JobMessage& job, const Item& movie);
  Status write_frame(const tracer::TracedFrame& frame, Renewer::Id rid, JobState& state,
                     const JobMessage& job, int64_t epoch, int64_t& frames_done);
  Result<Lease> current_lease(Renewer::Id rid, JobState& state);
  void publish(const JobMessage& job, const Lease& lease, const std::string& user_display_name,
               const Status& traced);
  void count(uint64_t TraceWorkerStats::*field, uint64_t n = 1) {
    if (metrics_) metrics_->add(field, n);
    MutexLock lock(mu_);
    stats_.*field += n;
  }

  ItemStore& store_;
  Clock& clock_;
  Random& random_;
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
  std::shared_ptr<JobState> current_ GUARDED_BY(mu_);
  TraceWorkerStats stats_ GUARDED_BY(mu_);
  std::thread thread_;
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

// Waits idle_wait, or until wake() or stop(). Condition variables wait on the real
// steady clock, so the wait is slept there (as the Renewer does), which also
// keeps a simulated clock from turning it into a busy loop.
void TraceWorker::Impl::wait_idle() {
  const auto due = std::chrono::steady_clock::now() + options_.idle_wait;
  MutexLock lock(mu_);
  while (!stopping_ && !woken_ && std::chrono::steady_clock::now() < due) cv_.wait_until(mu_, due);
  woken_ = false;
}

void TraceWorker::Impl::handle(const Message& message) {
  count(&TraceWorkerStats::messages);
  Result<JobMessage> job = parse_job(message.body);
  if (!job.ok()) {
    log_to(options_.logger, LogLevel::kWarn, "trace worker {}: message {} dropped: {}", options_.id,
           message.id, job.status().message());
    (void)queue_.remove(message.receipt);
    return;
  }
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
  count(&TraceWorkerStats::claimed);
  const Status removed = queue_.remove(message.receipt);
  if (!removed.ok()) {
    // A redelivery will find the job claimed: a no-op.
    log_to(options_.logger, LogLevel::kInfo, "trace worker {}: message {} not removed: {}",
           options_.id, message.id, removed.to_string());
  }
  run(*job, *claimed);
}

// kConditionFailed if the job is not there to claim (claimed already,
// replaced by another job, or its movie gone).
Result<Item> TraceWorker::Impl::claim(const JobMessage& job) {
  const SlotNames tracing(kTracingSlot);
  Update update;
  update.set(attr::kJobClaimedBy, options_.id)
      .set(attr::kJobClaimedAtMs, to_unix_ms(clock_.wall_now()));
  const Condition condition = cond::eq(tracing.token, job.job_id) &&
                              cond::not_exists(attr::kJobClaimedBy) &&
                              cond::eq(attr::kStatus, kStatusTracing);
  Result<Item> written = store_.update(kMoviesTable, movie_key(job.movie_id), update, condition);
  if (written.ok() || written.status().code() != Code::kUnknownOutcome) return written;
  // No answer: the claim is ours only if the item says so.
  ASSIGN_OR_RETURN(Item item, store_.get(kMoviesTable, movie_key(job.movie_id), true));
  if (str_or(item, attr::kJobClaimedBy) == options_.id && str_or(item, tracing.token) == job.job_id)
    return item;
  return condition_failed("the job was not claimed");
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
    RETURN_IF_ERROR(current_lease(rid, state).status());
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
  ASSIGN_OR_RETURN(Lease lease, current_lease(rid, state));
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

void TraceWorker::Impl::run(const JobMessage& job, const Item& movie) {
  Result<MovieDetail> m = internal::parse_movie(movie, leases_);
  const LeaseView tracing = leases_.view_of(movie, movie_key(job.movie_id), kTracingSlot);
  Result<Lease> lease =
      leases_.renew(LeaseRef{movie_key(job.movie_id), kTracingSlot, tracing.owner, job.job_id},
                    options_.tracing_ttl);
  if (!lease.ok() || !m.ok()) {
    count(&TraceWorkerStats::lost);
    log_to(options_.logger, LogLevel::kWarn, "trace worker {}: job {} not run: {}", options_.id,
           job.job_id, (!lease.ok() ? lease.status() : m.status()).to_string());
    return;
  }
  auto state = std::make_shared<JobState>();
  {
    MutexLock lock(mu_);
    current_ = state;
    if (stopping_) state->stop.request_stop();
  }
  const Renewer::Id rid = renewer_.add(*lease, [state](const Lease&, const Status&) {
    state->lost = true;
    state->stop.request_stop();
  });
  tracer::TraceRequest request{m->markers, m->trim, m->every_frames, options_.trace};
  tracer::VideoInfo video;
  video.fps = m->fps;
  video.width = m->width;
  video.height = m->height;
  video.frame_count = m->frame_count;
  const std::string path = (std::filesystem::path(options_.media_dir) / m->file).string();
  int64_t frames_done = 0;
  Status traced;
  try {
    traced = tracer::trace(
        path, video, request,
        [&](const tracer::TracedFrame& f) {
          return write_frame(f, rid, *state, job, lease->epoch, frames_done);
        },
        state->stop.get_token());
  } catch (const std::exception& e) {
    traced = internal_error(std::string("tracer threw: ") + e.what());
  }
  {
    MutexLock lock(mu_);
    current_.reset();
  }
  const std::optional<Lease> latest = renewer_.remove(rid);
  if (abandoned_) return;  // as a killed process: nothing more is written
  if (state->lost || !latest || !latest->valid_at(clock_.mono_now())) {
    count(&TraceWorkerStats::lost);
    log_to(options_.logger, LogLevel::kWarn,
           "trace worker {}: job {} of movie {} lost its lease and stopped: {}", options_.id,
           job.job_id, job.movie_id, traced.to_string());
    return;
  }
  publish(job, *latest, tracing.holder, traced);
}

void TraceWorker::Impl::publish(const JobMessage& job, const Lease& lease,
                                const std::string& user_display_name, const Status& traced) {
  Update update;
  std::string summary;
  if (traced.ok()) {
    update.set(attr::kStatus, std::string(kStatusTraced)).remove(attr::kFailureSummary);
  } else {
    summary = failure_summary(traced);
    log_to(options_.logger, LogLevel::kWarn, "trace worker {}: job {} of movie {} failed: {}",
           options_.id, job.job_id, job.movie_id, traced.to_string());
    update.set(attr::kStatus, std::string(kStatusTracingFailed))
        .set(attr::kFailureSummary, summary);
  }
  const Status released = leases_.release(lease, ReleaseMode::kExpire, update);
  if (!released.ok()) {
    count(&TraceWorkerStats::lost);
    log_to(options_.logger, LogLevel::kWarn, "trace worker {}: job {} not published: {}",
           options_.id, job.job_id, released.to_string());
    return;
  }
  const Status audited =
      internal::record_audit(store_, clock_, random_, job.movie_id,
                             AuditEntry{traced.ok() ? kEventTracingCompleted : kEventTracingFailed,
                                        job.job_id, user_display_name, 0, summary});
  if (!audited.ok()) {
    log_to(options_.logger, LogLevel::kWarn, "trace worker {}: audit of job {} not recorded: {}",
           options_.id, job.job_id, audited.to_string());
  }
  // Counted last, so that whoever sees the count sees the whole publication.
  count(traced.ok() ? &TraceWorkerStats::traced : &TraceWorkerStats::failed);
}

// ---------------------------------------------------------------- TraceWorker

Result<std::unique_ptr<TraceWorker>> TraceWorker::start(ItemStore& store, Clock& clock,
                                                        Random& random, Queue& queue,
                                                        TraceWorkerOptions options) {
  if (options.id.empty() || options.id.size() > kTraceWorkerIdBytesMax) {
    return invalid_argument("trace worker id must be 1.." + std::to_string(kTraceWorkerIdBytesMax) +
                            " bytes");
  }
  if (options.queue_visibility <= Duration::zero() || options.idle_wait <= Duration::zero()) {
    return invalid_argument("queue visibility and idle wait must be positive");
  }
  for (const TableSpec& spec : {movies_table_spec(), frames_table_spec(), audit_table_spec()}) {
    RETURN_IF_ERROR(store.require_table(spec).with_context("table '" + spec.name + "'"));
  }
  options.lease.table = kMoviesTable;
  if (options.lease.info_log == nullptr) options.lease.info_log = options.logger;
  {
    LeaseManager check(store, clock, random, options.lease);
    const Duration every = options.renew_every != Duration::zero()
                               ? options.renew_every
                               : check.default_renew_every(options.tracing_ttl);
    RETURN_IF_ERROR(check.check_timing(options.tracing_ttl, every));
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
