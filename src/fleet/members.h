// Fleet membership: each worker holds a lease on its own item in the table
// fleet_workers, so that every worker (and the fleet API) knows which
// workers are alive: those whose lease has not expired. The item also
// carries the worker's latest figures, written by the worker each reconcile:
//
//   Pk                "WORKER#<id>"
//   kind              "worker" (the hash key of the index below)
//   lease_*           the default lease slot; the owner is the worker's id
//   owned             connections owned
//   capacity          the most it may own
//   messages          messages written to the sink since the worker started
//   messages_per_s    over the last reconcile period, in thousandths
//   taking            false while the worker cannot take connections (its
//                     last query of the orphan index failed); absent: true
//   started_at_ms, updated_at_ms
//   session_ttl_ms    when the membership lease is the worker's session
//                     (fleet/worker.h): its ttl; absent: no session
//   previous_session  the token its lease had when this one was taken, so
//                     that the others take that session's connections
//
// The index kind-lease_expires_at_ms-index lists every worker, alive first
// when read from the top. Thread-safe: plain functions on a store.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/clock.h"
#include "leasehold/status.h"
#include "leasehold/store.h"

namespace leasehold::fleet {

inline constexpr char kWorkersTable[] = "fleet_workers";
inline constexpr char kWorkersIndex[] = "kind-lease_expires_at_ms-index";
inline constexpr char kWorkerKind[] = "worker";

TableSpec workers_table_spec();
Key worker_key(std::string_view id);

struct Member {
  std::string id;
  bool alive = false;  // its lease expires after the reader's wall clock
  int64_t expires_at_ms = 0;
  int64_t owned = 0;
  int64_t capacity = 0;  // the most it may own (its --max-connections)
  int64_t messages = 0;
  double messages_per_s = 0;
  int64_t started_at_ms = 0;
  int64_t updated_at_ms = 0;
  bool taking = true;  // it says it can take connections
  // Its membership lease: the epoch counts its sessions, and with sessions,
  // the token is that of the session its connections belong to.
  int64_t session_epoch = 0;
  int64_t session_ttl_ms = 0;  // 0: it runs without a session
  int64_t heartbeat_at_ms = 0;
  std::string session;           // the lease's token; never shown
  std::string previous_session;  // see the file comment; never shown
};

// Every worker the table knows, sorted by id. `alive_only` leaves out the
// ones whose lease has expired (in the index, not after reading them).
Result<std::vector<Member>> list_members(ItemStore& store, Clock& clock, bool alive_only);

// The figures part of a membership write.
Update member_figures(int64_t owned, int64_t capacity, int64_t messages, double messages_per_s,
                      int64_t now_ms, bool taking = true);

}  // namespace leasehold::fleet
