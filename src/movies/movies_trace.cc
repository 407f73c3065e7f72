// Trace jobs (movies/movies_impl.h has the layout of Movies' files):
// start_trace, which replaces the analysis lease by a tracing lease and
// queues the job; the one write that ends a job, by whoever finds it ended
// first (its worker, a reader finding its worker gone, the movie taken back,
// a failed send); and the movie's audit, a job's two entries written once
// each by its ender or the next reader.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include "base/crash_point.h"
#include "base/logging.h"
#include "movies/job_messages.h"
#include "movies/movies.h"
#include "movies/movies_impl.h"
#include "movies/schema.h"

namespace leasehold::movies {
namespace {

using movies_parts::slot_free;
using movies_parts::traceable_status;

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
  const std::string status = get_string_or(item, attr::kStatus);
  // A removal takes the audit away: an entry written now could outlive it.
  if (job_id == nullptr || status == kStatusDeleting) return {};
  const int64_t started_at_ms = get_int_or(item, attr::kJobStartedAtMs);
  const int64_t ended_at_ms = std::max(started_at_ms, get_int_or(item, attr::kJobEndedAtMs));
  const std::string* started_by = get_string(item, attr::kJobStartedBy);
  const std::string by =
      started_by != nullptr ? *started_by : get_string_or(item, SlotNames(kTracingSlot).holder);
  const auto put = [&](int phase, const std::string& event, int64_t at_ms,
                       const std::string& summary) {
    return put_job_event(store, movie_id, *job_id, phase, event, at_ms, by, summary);
  };
  // The start first, in case its own write never happened (a server killed
  // in start_trace): both are then in the audit, the start sorting first. A
  // job started before the movie kept job_started_at_ms has its start
  // audited already, under a key of its own.
  if (get_int(item, attr::kJobStartedAtMs) != nullptr) {
    LEASEHOLD_RETURN_IF_ERROR(put(0, kEventTracingStarted, started_at_ms, ""));
  }
  const bool traced = status == kStatusTraced;
  LEASEHOLD_RETURN_IF_ERROR(put(1, traced ? kEventTracingCompleted : kEventTracingFailed,
                                ended_at_ms,
                                traced ? "" : get_string_or(item, attr::kFailureSummary)));
  Update done;
  done.remove(attr::kJobAuditPending);
  const Result<Item> cleared = store.update(kMoviesTable, movie_key(movie_id), done,
                                            cond::eq(attr::kJobAuditPending, *job_id));
  if (cleared.ok() || cleared.status().code() == Code::kConditionFailed) return {};
  return cleared.status();
}

Status record_sweep_audit(ItemStore& store, const std::string& movie_id, const Item& item) {
  const std::string* summary = get_string(item, attr::kSweepAuditPending);
  if (summary == nullptr || get_string_or(item, attr::kStatus) == kStatusDeleting) return {};
  const std::string what = get_string_or(item, attr::kSweptFor);
  const int64_t sweeps = get_int_or(item, attr::kSweeps);
  const int64_t at_ms = get_int_or(item, attr::kSweptAtMs);
  // The same key for the same repair, whoever writes it.
  Item entry{{attr::kPk, movie_pk(movie_id)},
             {attr::kSk, job_audit_sk(at_ms, 1, "sweep#" + what + "#" + std::to_string(sweeps))},
             {"event", std::string(kEventRepaired)},
             {"user_display_name", std::string()},
             {"at_ms", at_ms},
             {"summary", *summary}};
  constexpr std::string_view kQueued = "queued:";
  if (what.starts_with(kQueued)) entry[attr::kJobId] = what.substr(kQueued.size());
  const Status put = store.put(kAuditTable, entry, cond::not_exists(attr::kPk));
  if (!put.ok() && put.code() != Code::kConditionFailed) return put;
  Update done;
  done.remove(attr::kSweepAuditPending);
  const Result<Item> cleared =
      store.update(kMoviesTable, movie_key(movie_id), done,
                   cond::exists(attr::kSweepAuditPending) && cond::eq(attr::kSweptFor, what) &&
                       cond::eq(attr::kSweeps, sweeps));
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

// Ends a dead job by one conditional write (one reader among many wins; the
// others find it ended), and writes the audit a job's ender, or the sweep,
// did not. A store failure here fails nothing: the item read is returned,
// the next reader tries again.
Result<Item> Movies::Impl::settle(const std::string& id, Item item, bool* ended_here) {
  if (std::optional<internal::JobEnd> dead = internal::dead_job(item, leases_)) {
    const int64_t now_ms = to_unix_ms(clock_.wall_now());
    Result<Item> ended = store_.update(
        kMoviesTable, movie_key(id), internal::job_end_update(*dead, now_ms),
        internal::job_is(*dead, kStatusTracing) && slot_free(SlotNames(kTracingSlot), now_ms));
    if (ended.ok()) {
      log_to(options_.logger, LogLevel::kWarn, "movie {}: job {} ended: its worker went away", id,
             dead->job_id);
      if (ended_here != nullptr) *ended_here = true;
      item = std::move(*ended);
    } else if (ended.status().code() == Code::kConditionFailed) {
      LEASEHOLD_ASSIGN_OR_RETURN(item, read_item(id));
    }
  }
  const Status audited = internal::record_job_audit(store_, id, item);
  if (!audited.ok()) {
    log_to(options_.logger, LogLevel::kInfo, "movie {}: job audit not written yet: {}", id,
           audited.to_string());
  }
  const Status repaired = internal::record_sweep_audit(store_, id, item);
  if (!repaired.ok()) {
    log_to(options_.logger, LogLevel::kInfo, "movie {}: repair audit not written yet: {}", id,
           repaired.to_string());
  }
  return item;
}

Status Movies::Impl::send_trace_job(const std::string& id, const std::string& job_id) {
  return queue_.send(internal::trace_job_body({.movie_id = id, .job_id = job_id})).status();
}

Result<TraceStarted> Movies::Impl::start_trace(const std::string& id, const User& user,
                                               const std::string& lease_id) {
  LEASEHOLD_ASSIGN_OR_RETURN(Item item, read_item(id));
  LEASEHOLD_ASSIGN_OR_RETURN(item, settle(id, std::move(item)));
  LEASEHOLD_ASSIGN_OR_RETURN(MovieDetail m, internal::parse_movie(item, leases_));
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
  LEASEHOLD_RETURN_IF_ERROR(tracer::validate(request, video));
  const int64_t frames_total = tracer::sampled_frame_count(m.trim, m.every_frames);

  AcquireOptions to;
  to.owner = user.name;
  to.holder = user.display_name;
  to.slot = kTracingSlot;
  to.ttl = options_.tracing_ttl;
  // The request validated above is the one traced: the edits it was read
  // from are part of the condition, the markers as the text read (written
  // again, they need not be the same text: Boost.JSON's reading of a number
  // can be one unit in the last place off, and the shortest text of that
  // double another).
  to.extra_condition =
      traceable_status() && cond::eq(attr::kMarkers, get_string_or(item, attr::kMarkers)) &&
      cond::eq(attr::kTrimStart, m.trim.start_frame) &&
      cond::eq(attr::kTrimEnd, m.trim.end_frame) && cond::eq(attr::kEveryFrames, m.every_frames);
  // After the last job's end in the audit, even within its millisecond (or
  // behind this clock).
  const int64_t now_ms =
      std::max(to_unix_ms(clock_.wall_now()), get_int_or(item, attr::kJobEndedAtMs) + 1);
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
    LEASEHOLD_ASSIGN_OR_RETURN(MovieDetail now, read(id));
    if (now.lock && now.lock->kind == kTracingSlot) {
      return already_exists("the movie is being traced");
    }
    return failed_precondition("the movie changed while the trace was started; reload it");
  }
  crash_point(CrashPoint::kTraceAfterStart);
  // Its start in the audit now (a settle writes it later if this fails).
  const Status audited = put_job_event(store_, id, lease->token, 0, kEventTracingStarted, now_ms,
                                       user.display_name, "");
  if (!audited.ok()) {
    log_to(options_.logger, LogLevel::kWarn, "movie {}: audit not recorded: {}", id,
           audited.to_string());
  }
  crash_point(CrashPoint::kTraceBeforeEnqueue);
  const Status sent = send_trace_job(id, lease->token);
  if (!sent.ok()) {
    LEASEHOLD_ASSIGN_OR_RETURN(bool ended, end_unqueued(id, *lease, sent));
    // Not ended: a worker claimed the job, so the message was sent after all.
    // Ended: the outcome is known now, whatever the queue said.
    if (ended) return unavailable("the trace could not be queued: " + sent.message());
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
  LEASEHOLD_RETURN_IF_ERROR(read(id).status());
  QueryOptions q;
  q.limit = static_cast<int>(kAuditEntriesMax);
  LEASEHOLD_ASSIGN_OR_RETURN(Page page,
                             store_.query(kAuditTable, movie_pk(id), KeyRange::all(), q));
  std::vector<AuditEntry> out;
  for (const Item& item : page.items) {
    out.push_back(AuditEntry{get_string_or(item, "event"), get_string_or(item, attr::kJobId),
                             get_string_or(item, "user_display_name"), get_int_or(item, "at_ms"),
                             get_string_or(item, "summary")});
  }
  return out;
}

Result<TraceStarted> Movies::start_trace(const std::string& id, const User& user,
                                         const std::string& lease_id) {
  return impl_->start_trace(id, user, lease_id);
}

Result<std::vector<AuditEntry>> Movies::audit(const std::string& id) { return impl_->audit(id); }

}  // namespace leasehold::movies
