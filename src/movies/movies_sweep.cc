// The sweep (movies/movies_impl.h has the layout of Movies' files): the
// movies that a crash left `processing`, `queued`, `tracing` or `deleting`,
// found through the status index, and each finished or failed by one write
// conditioned on the state the sweep read (movies/movies.h says what each
// repair is). A write that finds the movie changed (its probe or worker was
// alive after all, another sweep was first) does nothing; so a job is
// queued again before the write that records it, never after: a lost race
// leaves at most a message too many, which its worker finds stale.
#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "base/logging.h"
#include "movies/movies.h"
#include "movies/movies_impl.h"
#include "movies/probe_worker.h"
#include "movies/schema.h"

namespace leasehold::movies {
namespace {

using movies_parts::slot_free;

constexpr char kQueuedPrefix[] = "queued:";

constexpr char kSummaryProbeRequeued[] =
    "the probe was queued again: nothing was seen of it for the sweep's grace";
constexpr char kSummaryProbeGivenUp[] =
    "the movie could not be probed: its probe never finished, however often it was queued";
constexpr char kSummaryTraceRequeued[] =
    "the trace job was queued again: its lease expired while it waited in the queue";
constexpr char kSummaryTraceLost[] = "the trace never started: its job was lost";

// How many times the sweep has repaired `what` on this movie: 0 if its last
// repair (if any) was of something else. A count the sweep never writes
// (below 0, or past a million: another program's) is taken as its nearest,
// so that one more cannot overflow.
int64_t sweeps_of(const Item& item, const std::string& what) {
  constexpr int64_t kSweepsCountedMax = 1'000'000;
  if (get_string_or(item, attr::kSweptFor) != what) return 0;
  return std::clamp(get_int_or(item, attr::kSweeps), int64_t{0}, kSweepsCountedMax);
}

// Whether less than `grace` has passed from `since_ms`, a time read from the
// movie, to `now_ms`. Any time is taken, however far off (another program
// may have written it): the difference saturates rather than overflows.
bool within_grace(int64_t now_ms, int64_t since_ms, Duration grace) {
  int64_t elapsed_ms = 0;
  if (__builtin_sub_overflow(now_ms, since_ms, &elapsed_ms)) return since_ms > now_ms;
  return elapsed_ms < to_ms(grace);
}

// The sweep's record on the movie is as read: no repair since.
Condition sweep_unchanged(const Item& item) {
  const std::string* what = get_string(item, attr::kSweptFor);
  if (what == nullptr) return cond::not_exists(attr::kSweptFor);
  return cond::eq(attr::kSweptFor, *what) &&
         cond::eq(attr::kSweeps, get_int_or(item, attr::kSweeps));
}

// An integer attribute is as read (absent if it was).
Condition int_unchanged(const Item& item, const char* name) {
  const int64_t* v = get_int(item, name);
  return v != nullptr ? cond::eq(name, *v) : cond::not_exists(name);
}

// The record of repair number `sweeps` of `what`, and, unless `summary` is
// empty, the cue for its audit entry.
Update sweep_mark(const std::string& what, int64_t sweeps, int64_t now_ms,
                  const std::string& summary) {
  Update u;
  u.set(attr::kSweptFor, what).set(attr::kSweeps, sweeps).set(attr::kSweptAtMs, now_ms);
  if (!summary.empty()) u.set(attr::kSweepAuditPending, summary);
  return u;
}

}  // namespace

Result<SweepReport> Movies::Impl::sweep(Queue& probe_queue, const SweepOptions& options) {
  if (options.grace <= Duration::zero()) {
    return invalid_argument("the sweep's grace must be positive");
  }
  SweepReport report;
  const auto failed = [&report](const Status& s) {
    if (report.errors++ == 0) report.first_error = s;
  };
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  for (const std::string_view status :
       {kStatusProcessing, kStatusQueued, kStatusTracing, kStatusDeleting}) {
    // A probe's or a removal's grace runs from the movie's creation at the
    // earliest, so a younger movie is not read at all. A job's lease may be
    // shorter than the grace: every queued or tracing movie is read.
    const bool by_grace = status == kStatusProcessing || status == kStatusDeleting;
    const KeyRange created =
        by_grace ? KeyRange::le(now_ms - to_ms(options.grace)) : KeyRange::all();
    Result<std::vector<Key>> keys = movies_in(status, created);
    Result<std::vector<Item>> items = keys.ok() ? store_.batch_get(kMoviesTable, *keys)
                                                : Result<std::vector<Item>>(keys.status());
    if (!items.ok()) {
      failed(items.status());
      continue;
    }
    for (const Item& item : *items) {
      ++report.read;
      const Status swept = sweep_movie(item, probe_queue, options, report);
      if (!swept.ok()) failed(swept);
    }
  }
  return report;
}

// The keys of at most kSweepMoviesMax movies in `status` created in
// `created`, oldest first (the index is eventually consistent: each item is
// read again before anything is decided).
Result<std::vector<Key>> Movies::Impl::movies_in(std::string_view status, const KeyRange& created) {
  std::vector<Key> keys;
  QueryOptions q;
  q.limit = static_cast<int>(std::min<size_t>(kQueryLimitMax, kSweepMoviesMax));
  do {
    LEASEHOLD_ASSIGN_OR_RETURN(
        Page page, store_.query_index(kMoviesTable, kStatusIndex, std::string(status), created, q));
    for (const Item& item : page.items) {
      if (keys.size() == kSweepMoviesMax) return keys;
      if (const std::string* pk = get_string(item, attr::kPk)) keys.push_back(Key{*pk, ""});
    }
    q.cursor = page.next_cursor;
  } while (!q.cursor.empty());
  return keys;
}

// One movie as read now: repaired if it is stuck in its status, left as it
// is otherwise (a status it is not stuck in since the index was read: only
// an audit its last writer left to write).
Status Movies::Impl::sweep_movie(const Item& item, Queue& probe_queue, const SweepOptions& options,
                                 SweepReport& report) {
  const std::string* id = get_string(item, attr::kId);
  if (id == nullptr) return {};  // not a movie this code wrote: not the sweep's to repair
  const std::string status = get_string_or(item, attr::kStatus);
  if (status == kStatusProcessing) {
    return sweep_processing(*id, item, probe_queue, options, report);
  }
  if (status == kStatusQueued) return sweep_queued(*id, item, options, report);
  if (status == kStatusDeleting) return sweep_deleting(*id, item, probe_queue, options, report);
  // A job whose worker went away is ended as a read ends it.
  bool ended = false;
  LEASEHOLD_RETURN_IF_ERROR(settle(*id, item, &ended).status());
  if (ended) ++report.dead_traces_ended;
  return {};
}

// `processing` with nothing seen of a probe for the grace: its probe job
// again, kProbeRequeuesMax times at most, then `invalid`. Conditioned on
// the status, the last probe seen and the sweep's own record as read: a
// probe that said it was alive meanwhile, or another sweep, wins.
Status Movies::Impl::sweep_processing(const std::string& id, const Item& item, Queue& probe_queue,
                                      const SweepOptions& options, SweepReport& report) {
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  const int64_t sweeps = sweeps_of(item, kStatusProcessing);
  const int64_t seen_ms =
      std::max({get_int_or(item, attr::kCreatedAtMs), get_int_or(item, attr::kProbeSeenAtMs),
                sweeps > 0 ? get_int_or(item, attr::kSweptAtMs) : int64_t{0}});
  if (within_grace(now_ms, seen_ms, options.grace)) return {};
  const bool give_up = sweeps >= kProbeRequeuesMax;
  if (!give_up) LEASEHOLD_RETURN_IF_ERROR(enqueue_probe(probe_queue, id));
  Update update = sweep_mark(kStatusProcessing, sweeps + 1, now_ms,
                             give_up ? kSummaryProbeGivenUp : kSummaryProbeRequeued);
  if (give_up) {
    update.set(attr::kStatus, std::string(kStatusInvalid))
        .set(attr::kFailureSummary, std::string(kSummaryProbeGivenUp));
  }
  const Result<Item> written =
      store_.update(kMoviesTable, movie_key(id), update,
                    cond::eq(attr::kStatus, kStatusProcessing) &&
                        int_unchanged(item, attr::kProbeSeenAtMs) && sweep_unchanged(item));
  if (!written.ok() && written.status().code() == Code::kConditionFailed) return {};
  LEASEHOLD_RETURN_IF_ERROR(written.status());
  log_to(options_.logger, LogLevel::kWarn, "movie {}: swept: {}", id,
         give_up ? kSummaryProbeGivenUp : kSummaryProbeRequeued);
  ++(give_up ? report.probes_given_up : report.probes_requeued);
  (void)settle(id, *written);  // the repair's audit
  return {};
}

// `queued` past its tracing lease's expiry: its message again, once; still
// queued a grace after that, the job is ended as failed by the write that
// ends a job (conditioned on its ID, its status and its lease's expiry), and
// its two audit entries written once.
Status Movies::Impl::sweep_queued(const std::string& id, const Item& item,
                                  const SweepOptions& options, SweepReport& report) {
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  const LeaseView tracing = leases_.view_of(item, movie_key(id), kTracingSlot);
  if (tracing.held || tracing.token.empty()) return {};  // it waits within its lease
  const std::string what = kQueuedPrefix + tracing.token;
  const int64_t sweeps = sweeps_of(item, what);
  if (sweeps > 0 && within_grace(now_ms, get_int_or(item, attr::kSweptAtMs), options.grace)) {
    return {};
  }
  const internal::JobEnd end{tracing.token, kStatusTracingFailed, kSummaryTraceLost};
  const Condition unchanged = internal::job_is(end, kStatusQueued) &&
                              slot_free(SlotNames(kTracingSlot), now_ms) && sweep_unchanged(item);
  Update update;
  if (sweeps == 0) {
    LEASEHOLD_RETURN_IF_ERROR(send_trace_job(id, tracing.token));
    update = sweep_mark(what, 1, now_ms, kSummaryTraceRequeued);
  } else {
    update = internal::job_end_update(end, now_ms).append(sweep_mark(what, sweeps + 1, now_ms, ""));
  }
  const Result<Item> written = store_.update(kMoviesTable, movie_key(id), update, unchanged);
  if (!written.ok() && written.status().code() == Code::kConditionFailed) return {};
  LEASEHOLD_RETURN_IF_ERROR(written.status());
  log_to(options_.logger, LogLevel::kWarn, "movie {}: job {} swept: {}", id, tracing.token,
         sweeps == 0 ? kSummaryTraceRequeued : kSummaryTraceLost);
  ++(sweeps == 0 ? report.traces_requeued : report.traces_ended);
  (void)settle(id, *written);  // the audit: the repair's, or the ended job's
  return {};
}

// `deleting` for the grace since it was marked or last queued: its removal
// job again, as often as it takes (finish_remove may run any number of
// times). Not audited: the audit goes with the movie.
Status Movies::Impl::sweep_deleting(const std::string& id, const Item& item, Queue& probe_queue,
                                    const SweepOptions& options, SweepReport& report) {
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  const int64_t sweeps = sweeps_of(item, kStatusDeleting);
  const int64_t since_ms = std::max(get_int_or(item, attr::kRemovalStartedAtMs),
                                    sweeps > 0 ? get_int_or(item, attr::kSweptAtMs) : int64_t{0});
  if (within_grace(now_ms, since_ms, options.grace)) return {};
  LEASEHOLD_RETURN_IF_ERROR(enqueue_remove(probe_queue, id));
  const Result<Item> written = store_.update(
      kMoviesTable, movie_key(id), sweep_mark(kStatusDeleting, sweeps + 1, now_ms, ""),
      cond::eq(attr::kStatus, kStatusDeleting) && int_unchanged(item, attr::kRemovalStartedAtMs) &&
          sweep_unchanged(item));
  if (!written.ok() && written.status().code() == Code::kConditionFailed) return {};
  LEASEHOLD_RETURN_IF_ERROR(written.status());
  log_to(options_.logger, LogLevel::kWarn, "movie {}: swept: its removal was queued again", id);
  ++report.removals_requeued;
  return {};
}

}  // namespace leasehold::movies
