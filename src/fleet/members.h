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
//   streaming, reconnecting, stalled, erroring
//                     of the connections owned: those streaming now; those
//                     whose upstream failed since and that wait to connect
//                     again or are connecting; those without a message for
//                     the worker's --stall-after; those whose last upstream
//                     attempt left an error (absent: an older build)
//   taking            false while the worker cannot take connections (its
//                     last query of the orphan index failed); absent: true
//   started_at_ms, updated_at_ms
//   session_ttl_ms    when the membership lease is the worker's session
//                     (fleet/worker.h): its ttl; absent: no session
//   nudges            a count that `conn stop`, `set` and `rm` (Connections)
//                     raise on the holder's item, so that it reads its
//                     connections' desired state at once rather than at
//                     its next poll (it sees the item in each reconcile's
//                     list of members anyway)
//   previous_sessions the tokens of this worker's earlier sessions that may
//                     still hold connections (space-separated, newest first,
//                     at most kPreviousSessionsMax), so that it and the
//                     others take those connections however often it
//                     restarted before it could; it drops each once it has
//                     found none left. Items of older builds name one, as
//                     previous_session.
//
// A member whose lease has ended (expired, ended or released) and has not
// been renewed for kMemberKeepMin or more is removed (prune_member()), so
// that the members a reconcile reads stay those alive and those just dead,
// however many worker IDs came and went.
//
// The index kind-Pk-index lists every worker, by ID. Its keys never change
// for a worker, so a renewal of its lease (its session's heartbeat, about
// once a second) updates the index's copy of the item in place: on DynamoDB
// one write unit there, where an index keyed on lease_expires_at_ms (as
// before) cost two, a delete and a put. Thread-safe: plain functions on a
// store.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/clock.h"
#include "leasehold/status.h"
#include "leasehold/store.h"

namespace leasehold::fleet {

inline constexpr char kWorkersTable[] = "fleet_workers";
inline constexpr char kWorkersIndex[] = "kind-Pk-index";
inline constexpr char kWorkerKind[] = "worker";
inline constexpr char kPreviousSessionsAttr[] = "previous_sessions";
// Earlier sessions a member names; one that restarts more often than it
// can take its connections back loses the oldest, which the reaper finds.
inline constexpr size_t kPreviousSessionsMax = 8;

TableSpec workers_table_spec();
Key worker_key(std::string_view id);

// How a worker's connections stream (see the file comment).
struct StreamCounts {
  int64_t streaming = 0;
  int64_t reconnecting = 0;
  int64_t stalled = 0;
  int64_t erroring = 0;

  bool operator==(const StreamCounts&) const = default;
};

struct Member {
  std::string id;
  bool alive = false;  // its lease expires after the reader's wall clock
  int64_t expires_at_ms = 0;
  int64_t owned = 0;
  int64_t capacity = 0;  // the most it may own (its --max-connections)
  int64_t messages = 0;
  double messages_per_s = 0;
  // Of its connections; nullopt from an older build, which does not say.
  std::optional<StreamCounts> streams;
  int64_t started_at_ms = 0;
  int64_t updated_at_ms = 0;
  bool taking = true;  // it says it can take connections
  // Its membership lease: the epoch counts its sessions, and with sessions,
  // the token is that of the session its connections belong to.
  int64_t session_epoch = 0;
  int64_t session_ttl_ms = 0;  // 0: it runs without a session
  int64_t heartbeat_at_ms = 0;
  std::string session;  // the lease's token; never shown
  int64_t nudges = 0;   // see the file comment
  // Its earlier sessions that may still hold connections (the file
  // comment), newest first; never shown.
  std::vector<std::string> previous_sessions;
};

// Every worker the table knows, sorted by id. `alive_only` leaves out the
// ones whose lease has expired.
Result<std::vector<Member>> list_members(ItemStore& store, Clock& clock, bool alive_only);

// Removes `member`'s item if its lease, as read, has not been renewed since
// `idle_before_ms` and is not live at `now_ms`: one write conditioned on
// the owner, token and last heartbeat read, so that a member that rejoined
// or renewed meanwhile stays. OK if removed or gone already;
// kFailedPrecondition if it changed since it was read.
Status prune_member(ItemStore& store, const Member& member, int64_t now_ms, int64_t idle_before_ms);

// previous_sessions as written: the tokens joined by spaces.
std::string join_sessions(const std::vector<std::string>& tokens);
// The sessions of `id` that its item names (its lease's token, when the
// lease is its own, then its previous sessions), newest first, without
// repeats, at most kPreviousSessionsMax: what a worker that joins under
// `id` names as its previous sessions.
std::vector<std::string> sessions_named(const Item& item, std::string_view id);

// The connections a worker holds that need attention (fleet/summary.h):
// an item of fleet_workers per worker, with no `kind`,
//   Pk         "ATTENTION#<id>"
//   session    the worker's session token when it wrote it: a reader takes
//              it only from the member's live session
//   attention  a line per connection, longest in trouble first, at most
//              kAttentionMax: "<connection id> <reason> <since ms>", the
//              reason `not_streaming` (for kAttentionAfter or more, by
//              default) or
//              `stalled` (no message for the worker's --stall-after)
// written when what it says changes, removed when nothing needs attention.
inline constexpr char kAttentionPrefix[] = "ATTENTION#";
inline constexpr size_t kAttentionMax = 20;
inline constexpr std::chrono::seconds kAttentionAfter{5};
Key attention_key(std::string_view id);

struct Trouble {
  std::string id;      // the connection's
  std::string reason;  // "not_streaming" or "stalled"
  int64_t since_ms = 0;

  bool operator==(const Trouble&) const = default;
};
std::string format_troubles(const std::vector<Trouble>& troubles);
std::vector<Trouble> parse_troubles(std::string_view text);

inline constexpr char kNudgesAttr[] = "nudges";
inline constexpr char kTakeHintAttr[] = "take_hint";

// Raises the nudges of member `id`, if it has an item (otherwise nothing is
// written): it then reads its connections' desired state in its next
// reconcile. With `take`, the ID of a connection just free, the same write
// names it (`take_hint`, in place of one named before): the member tries it
// without waiting its turn by rank. kUnavailable and the like if the store
// failed.
Status nudge_member(ItemStore& store, std::string_view id, std::string_view take = {});

// The figures part of a membership write.
Update member_figures(int64_t owned, int64_t capacity, int64_t messages, double messages_per_s,
                      int64_t now_ms, bool taking = true);
// The stream counts part.
Update stream_figures(const StreamCounts& counts);

}  // namespace leasehold::fleet
