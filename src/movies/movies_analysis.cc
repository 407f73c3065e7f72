// The analysis lease and the edits made under it (movies/movies_impl.h has
// the layout of Movies' files): taken by one browser at a time, heartbeats
// and release, an admin's break, and the markers, trim and capture interval,
// each validated against the movie and written fenced by the lease.
#include <set>
#include <string>
#include <vector>

#include "base/logging.h"
#include "base/text.h"
#include "movies/movies.h"
#include "movies/movies_impl.h"
#include "movies/schema.h"

namespace leasehold::movies {
namespace {

using movies_parts::is_traceable;
using movies_parts::slot_free;
using movies_parts::traceable_status;

Status validate_markers(const std::vector<tracer::Marker>& markers, const MovieDetail& m) {
  if (markers.size() > kMarkersMax) {
    return invalid_argument("at most " + std::to_string(kMarkersMax) + " markers");
  }
  std::set<std::string> ids;
  for (const tracer::Marker& mk : markers) {
    LEASEHOLD_RETURN_IF_ERROR(validate_text("marker id", mk.id, kMarkerIdBytesMax, false));
    LEASEHOLD_RETURN_IF_ERROR(validate_text("marker label", mk.label, kMarkerLabelBytesMax, true));
    if (!ids.insert(mk.id).second) return invalid_argument("marker id '" + mk.id + "' repeats");
    if (mk.frame < 0 || mk.frame >= m.frame_count) {
      return invalid_argument("marker '" + mk.id + "': frame outside the movie");
    }
    if (!(mk.x >= 0 && mk.x < m.width && mk.y >= 0 && mk.y < m.height)) {
      return invalid_argument("marker '" + mk.id + "': point outside the frame");
    }
  }
  return {};
}

}  // namespace

// A refused acquisition says why: no such movie, who holds it, or a movie
// not in a state to be edited. A lease that expired between the write and
// the read is tried again, and a queued job whose tracing lease has expired
// is ended by the acquisition (take_ending_job).
Result<AnalysisLease> Movies::Impl::acquire_analysis(const std::string& id, const User& user,
                                                     Lock* holder) {
  LEASEHOLD_RETURN_IF_ERROR(validate_text("user name", user.name, kOwnerBytesMax, false));
  LEASEHOLD_RETURN_IF_ERROR(
      validate_text("display name", user.display_name, kHolderBytesMax, true));
  constexpr int kAttemptsMax = 3;
  for (int attempt = 0; attempt < kAttemptsMax; ++attempt) {
    AcquireOptions o;
    o.owner = user.name;
    o.holder = user.display_name;
    o.slot = kAnalysisSlot;
    o.ttl = options_.analysis_ttl;
    o.extra_condition = cond::exists(attr::kPk) && traceable_status() &&
                        slot_free(SlotNames(kTracingSlot), to_unix_ms(clock_.wall_now()));
    Result<Lease> lease = leases_.acquire(movie_key(id), o);
    if (lease.ok()) return AnalysisLease{lease->token, lease->expires_at_ms};
    if (lease.status().code() != Code::kAlreadyExists) return lease.status();
    LEASEHOLD_ASSIGN_OR_RETURN(Item item, read_item(id));
    LEASEHOLD_ASSIGN_OR_RETURN(item, settle(id, std::move(item)));
    LEASEHOLD_ASSIGN_OR_RETURN(MovieDetail m, internal::parse_movie(item, leases_));
    const LeaseView tracing = leases_.view_of(item, movie_key(id), kTracingSlot);
    if (m.status == kStatusQueued && !tracing.held && (user.admin || user.name == tracing.owner)) {
      lease = take_ending_job(id, o, item);
      if (lease.ok()) return AnalysisLease{lease->token, lease->expires_at_ms};
      if (lease.status().code() != Code::kAlreadyExists) return lease.status();
      continue;
    }
    if (m.lock) {
      if (holder != nullptr) *holder = *m.lock;
      return already_exists("the movie is locked (" + m.lock->kind + ") by " +
                            m.lock->user_display_name);
    }
    if (!is_traceable(m.status)) return failed_precondition("the movie is " + m.status);
  }
  return unavailable("the movie's lease changed hands while it was taken; retry");
}

// A queued job keeps its movie past its tracing lease's expiry as long as
// nobody takes the movie: its claim re-arms the lease. Taking the movie
// then ends the job, in the same write, as failed; the claim finds it ended.
Result<Lease> Movies::Impl::take_ending_job(const std::string& id, const AcquireOptions& o,
                                            const Item& item) {
  const LeaseView tracing = leases_.view_of(item, movie_key(id), kTracingSlot);
  const internal::JobEnd end{tracing.token, kStatusTracingFailed,
                             "the trace was cancelled: the movie was taken back before a worker "
                             "started it"};
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  AcquireOptions ending = o;
  ending.extra_condition =
      internal::job_is(end, kStatusQueued) && slot_free(SlotNames(kTracingSlot), now_ms);
  ending.extra_update = internal::job_end_update(end, now_ms);
  LEASEHOLD_ASSIGN_OR_RETURN(Lease lease, leases_.acquire(movie_key(id), ending));
  log_to(options_.logger, LogLevel::kInfo, "movie {}: queued job {} ended: the movie was taken", id,
         end.job_id);
  Result<Item> now = read_item(id);
  if (now.ok()) (void)settle(id, std::move(*now));  // the ended job's audit
  return lease;
}

Result<AnalysisLease> Movies::Impl::heartbeat(const std::string& id, const std::string& user_name,
                                              const std::string& lease_id) {
  Result<Lease> lease = leases_.renew(analysis_ref(id, user_name, lease_id), options_.analysis_ttl);
  if (lease.ok()) return AnalysisLease{lease->token, lease->expires_at_ms};
  if (lease.status().code() == Code::kFailedPrecondition)
    LEASEHOLD_RETURN_IF_ERROR(read(id).status());
  return lease.status();
}

Status Movies::Impl::release(const std::string& id, const std::string& user_name,
                             const std::string& lease_id) {
  const Status released =
      leases_.release(analysis_ref(id, user_name, lease_id), ReleaseMode::kExpire);
  if (released.code() == Code::kFailedPrecondition) LEASEHOLD_RETURN_IF_ERROR(read(id).status());
  return released;
}

Status Movies::Impl::edit(const std::string& id, const std::string& user_name,
                          const std::string& lease_id, const Update& update) {
  Result<Item> written = leases_.fenced_write(analysis_ref(id, user_name, lease_id), update);
  return written.status();
}

Status Movies::Impl::break_analysis(const std::string& id, const User& by, bool is_admin) {
  if (!is_admin) return permission_denied("only an admin may break another user's lease");
  LEASEHOLD_RETURN_IF_ERROR(validate_text("display name", by.display_name, kHolderBytesMax, true));
  LEASEHOLD_ASSIGN_OR_RETURN(const Item movie, read_item(id));
  const LeaseView held = leases_.view_of(movie, movie_key(id), kAnalysisSlot);
  if (!held.held) return failed_precondition("no live analysis lease on the movie to break");
  // Cleared, not expired: an expired slot keeps its owner and token, and the
  // old holder could still release it as if nothing had happened.
  const Status broken = leases_.release(
      LeaseRef{movie_key(id), kAnalysisSlot, held.owner, held.token}, ReleaseMode::kClear);
  if (broken.code() == Code::kFailedPrecondition) {
    return failed_precondition("the movie's analysis lease changed hands meanwhile; look again");
  }
  LEASEHOLD_RETURN_IF_ERROR(broken);
  const std::string whose = held.holder.empty() ? held.owner : held.holder;
  const Status audited =
      internal::record_audit(store_, clock_, random_, id,
                             AuditEntry{kEventAnalysisBroken, "", by.display_name, 0,
                                        "the analysis lease of " + whose + " was broken"});
  if (!audited.ok()) {
    log_to(options_.logger, LogLevel::kWarn, "movie {}: audit not recorded: {}", id,
           audited.to_string());
  }
  return {};
}

Result<AnalysisLease> Movies::acquire_analysis(const std::string& id, const User& user,
                                               Lock* holder) {
  return impl_->acquire_analysis(id, user, holder);
}
Result<AnalysisLease> Movies::heartbeat(const std::string& id, const std::string& user_name,
                                        const std::string& lease_id) {
  return impl_->heartbeat(id, user_name, lease_id);
}
Status Movies::release(const std::string& id, const std::string& user_name,
                       const std::string& lease_id) {
  return impl_->release(id, user_name, lease_id);
}
Status Movies::break_analysis(const std::string& id, const User& by, bool is_admin) {
  return impl_->break_analysis(id, by, is_admin);
}

Status Movies::set_markers(const std::string& id, const std::string& user_name,
                           const std::string& lease_id,
                           const std::vector<tracer::Marker>& markers) {
  LEASEHOLD_ASSIGN_OR_RETURN(MovieDetail m, impl_->read(id));
  LEASEHOLD_RETURN_IF_ERROR(validate_markers(markers, m));
  Update update;
  update.set(attr::kMarkers, internal::markers_json(markers));
  return impl_->edit(id, user_name, lease_id, update);
}

Status Movies::set_trim(const std::string& id, const std::string& user_name,
                        const std::string& lease_id, const tracer::Trim& trim) {
  LEASEHOLD_ASSIGN_OR_RETURN(MovieDetail m, impl_->read(id));
  if (!(0 <= trim.start_frame && trim.start_frame <= trim.end_frame &&
        trim.end_frame < m.frame_count)) {
    return invalid_argument("the trim must satisfy 0 <= start <= end < " +
                            std::to_string(m.frame_count));
  }
  Update update;
  update.set(attr::kTrimStart, trim.start_frame).set(attr::kTrimEnd, trim.end_frame);
  return impl_->edit(id, user_name, lease_id, update);
}

Status Movies::set_capture_interval(const std::string& id, const std::string& user_name,
                                    const std::string& lease_id, int64_t every_frames) {
  LEASEHOLD_ASSIGN_OR_RETURN(MovieDetail m, impl_->read(id));
  if (every_frames < 1) return invalid_argument("the capture interval must be at least 1 frame");
  if (m.frame_count > 0 && every_frames > m.frame_count) {
    return invalid_argument("the capture interval is longer than the movie");
  }
  Update update;
  update.set(attr::kEveryFrames, every_frames);
  return impl_->edit(id, user_name, lease_id, update);
}

}  // namespace leasehold::movies
