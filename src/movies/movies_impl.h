// Movies' parts, shared by the files that define them (private to movies/:
// movies/movies.h is the interface):
//   movies.cc           movie records: opening, create, probe, list, get,
//                       remove; items read and parsed
//   movies_analysis.cc  the analysis lease, and the edits made under it
//   movies_trace.cc     trace jobs: their start, their end (exactly once) and
//                       their audit
//   movies_frames.cc    a trace's frame rows: pages, and the CSV
//   movies_sweep.cc     the sweep: movies that crashes left unfinished
// Thread-safety as Movies': an Impl keeps no mutable state of its own.
#pragma once

#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "movies/movies.h"
#include "movies/schema.h"

namespace leasehold::movies {
namespace movies_parts {

// The statuses from which a movie may be locked for analysis or traced. A
// movie whose job is queued or tracing is taken only by the write that ends
// that job (Impl::acquire_analysis).
inline Condition traceable_status() {
  return cond::eq(attr::kStatus, kStatusReady) || cond::eq(attr::kStatus, kStatusTraced) ||
         cond::eq(attr::kStatus, kStatusTracingFailed);
}

inline bool is_traceable(const std::string& status) {
  return status == kStatusReady || status == kStatusTraced || status == kStatusTracingFailed;
}

// Free: no owner, or expired at now_ms (a released lease has expiry 0).
inline Condition slot_free(const SlotNames& n, int64_t now_ms) {
  return cond::not_exists(n.owner) || cond::lt(n.expires_at_ms, now_ms);
}

}  // namespace movies_parts

class Movies::Impl {
 public:
  Impl(ItemStore& store, Clock& clock, Random& random, Queue& queue, MoviesOptions options)
      : store_(store),
        clock_(clock),
        random_(random),
        queue_(queue),
        options_(std::move(options)),
        leases_(store, clock, random, options_.lease) {}

  // movies.cc: the records.
  Result<MovieDetail> create(const std::string& name, const User& owner, const std::string& file);
  Result<MovieDetail> probe(const std::string& id, std::stop_token stop);
  Status probe_alive(const std::string& id);
  Status make_proxy(const std::string& id, std::stop_token stop);
  Result<MoviePage> list(const ListOptions& options);
  Result<MovieDetail> get(const std::string& id);
  Status remove(const std::string& id, const std::string& user_name, bool is_admin);
  Status finish_remove(const std::string& id);
  Result<MovieDetail> read(const std::string& id);
  Result<Item> read_item(const std::string& id);
  Status remove_partition(std::string_view table, const std::string& id);

  // movies_analysis.cc: the analysis lease, and the edits made under it.
  Result<AnalysisLease> acquire_analysis(const std::string& id, const User& user, Lock* holder);
  Result<Lease> take_ending_job(const std::string& id, const AcquireOptions& o, const Item& item);
  Result<AnalysisLease> heartbeat(const std::string& id, const std::string& user_name,
                                  const std::string& lease_id);
  Status release(const std::string& id, const std::string& user_name, const std::string& lease_id);
  Status break_analysis(const std::string& id, const User& by, bool is_admin);
  Status edit(const std::string& id, const std::string& user_name, const std::string& lease_id,
              const Update& update);
  LeaseRef analysis_ref(const std::string& id, const std::string& user_name,
                        const std::string& lease_id) {
    return LeaseRef{movie_key(id), kAnalysisSlot, user_name, lease_id};
  }

  // movies_trace.cc: trace jobs and the audit.
  Result<TraceStarted> start_trace(const std::string& id, const User& user,
                                   const std::string& lease_id);
  Result<bool> end_unqueued(const std::string& id, const Lease& lease, const Status& why);
  // Sends trace job `job_id`'s message: the queue's errors.
  Status send_trace_job(const std::string& id, const std::string& job_id);
  // `*ended` (if given) is set when this call ended a job whose worker went
  // away.
  Result<Item> settle(const std::string& id, Item item, bool* ended = nullptr);
  Result<std::vector<AuditEntry>> audit(const std::string& id);

  // movies_sweep.cc: the sweep.
  Result<SweepReport> sweep(Queue& probe_queue, const SweepOptions& options);
  Status sweep_movie(const Item& item, Queue& probe_queue, const SweepOptions& options,
                     SweepReport& report);
  Status sweep_processing(const std::string& id, const Item& item, Queue& probe_queue,
                          const SweepOptions& options, SweepReport& report);
  Status sweep_queued(const std::string& id, const Item& item, const SweepOptions& options,
                      SweepReport& report);
  Status sweep_deleting(const std::string& id, const Item& item, Queue& probe_queue,
                        const SweepOptions& options, SweepReport& report);
  Result<std::vector<Key>> movies_in(std::string_view status, const KeyRange& created);

  // movies_frames.cc: a trace's frame rows.
  Result<tracer::FrameTimes> frame_times(const std::string& id);
  Result<FramePage> frames(const std::string& id, const FramesOptions& options);

 private:
  ItemStore& store_;
  Clock& clock_;
  Random& random_;
  Queue& queue_;
  const MoviesOptions options_;
  LeaseManager leases_;
};

}  // namespace leasehold::movies
