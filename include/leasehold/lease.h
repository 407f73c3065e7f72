// Leases with fencing on top of the item store.
//
// A lease lives in a *slot* of an item: attributes sharing a prefix. Slot
// "lease" uses lease_owner, lease_token, lease_epoch, lease_acquired_at_ms,
// lease_heartbeat_at_ms, lease_expires_at_ms, lease_holder and lease_session,
// which are the stream-fleet schema's names; slot "tracing" uses tracing_owner, and so on.
//
// Every operation is one conditional write; "mine" is owner = mine and
// token = mine:
//   acquire  not_exists(owner) or expires_at < now_wall; epoch += 1
//   renew    mine and expires_at > now_wall and heartbeat_at <= this
//            renewal's heartbeat (a renewal delivered late never undoes a
//            later one)
//   release  mine (mode expire: expires_at = 0; mode clear: remove the
//            slot's fields except epoch)
//   replace  mine(from) and slot `to` acquirable, ending one lease and
//            starting another on the same item in one write
//   fenced   any update conditioned on mine
//   end      mine(session) and expires_at < now_wall; expires_at = 0
//
// Sessions. A lease may belong to a *session*: another lease, short-lived
// and renewed often, whose token it carries in <slot>_session (as etcd
// attaches keys to one lease, and Consul locks to a session). Its holder
// trusts it only while the session is valid too, so many leases are kept
// alive by one heartbeat, and their own ttl may be long (for writers that
// know nothing of sessions, which still wait for that expiry). A session
// that expires is *ended* by whoever finds it expired (end_session(): a
// write that only an expired session allows, after which it can never be
// renewed), and only then are its leases taken, each conditioned on the dead
// session's owner and token (AcquireOptions::ended_session), whatever its
// own expiry. The same argument as for expiry keeps one holder: the session
// is ended only once its holder's local deadline has passed, and no
// renewal lands after that.
//
// The owner is in every holder-side condition, not only the token, because
// writers that know nothing of tokens share these items: the stream fleet's
// reference pattern takes an expired lease by setting only owner and
// expires_at, which leaves the old holder's token in place. Owner names must
// therefore be unique across the fleet.
//
// Holder-side validity: a holder trusts its lease until
//   mono time the request was sent + ttl - max_clock_skew - safety_margin.
// Past that the lease is lost for good; no renewal brings it back, and a
// lease whose acquisition is answered after it is given back, not returned.
// Wall clocks only decide when a taker may take over.
//
// A LeaseManager is safe for concurrent use; Lease values are plain data.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "leasehold/clock.h"
#include "leasehold/logger.h"
#include "leasehold/random.h"
#include "leasehold/status.h"
#include "leasehold/store.h"

namespace leasehold {

inline constexpr std::string_view kDefaultSlot = "lease";
inline constexpr size_t kOwnerBytesMax = 256;
inline constexpr size_t kHolderBytesMax = 1024;

struct LeaseConfig {
  std::string table = "leases";
  // The largest difference between any two wall clocks of the fleet.
  Duration max_clock_skew = std::chrono::milliseconds(500);
  // Slack for the time between checking validity and acting on it.
  Duration safety_margin = std::chrono::milliseconds(100);
  // Consistent reads tried to resolve a write whose outcome is unknown.
  int read_back_attempts_max = 3;
  // Where the manager says how it resolved writes whose outcome was unknown
  // (leasehold/logger.h). Not owned; must outlive the manager. Null logs
  // nothing.
  Logger* info_log = nullptr;
};

// The part of ttl a holder may trust: ttl - max_clock_skew - safety_margin.
Duration validity(const LeaseConfig& config, Duration ttl);
// The renew period used when none is given: a third of the validity window.
Duration default_renew_every(const LeaseConfig& config, Duration ttl);
// Refuses (kInvalidArgument, saying what would do) a negative skew, a ttl
// that leaves no room for the skew and margin, and a renew period that does
// not fit at least twice into the validity window. Needs no store: a
// configuration is checked before anything is opened.
Status check_timing(const LeaseConfig& config, Duration ttl, Duration renew_every);

// The attribute names of one slot.
struct SlotNames {
  explicit SlotNames(std::string_view slot);
  std::string owner, token, epoch, acquired_at_ms, heartbeat_at_ms, expires_at_ms, holder, session;
};

class SlotNamesCache;  // lease.cc

// A lease this process holds.
struct Lease {
  Key key;
  std::string slot;
  std::string owner;
  std::string holder;
  std::string token;  // 32 hex digits; the lease ID / job ID
  int64_t epoch = 0;  // the fencing token: +1 on every acquisition
  int64_t acquired_at_ms = 0;
  int64_t heartbeat_at_ms = 0;  // the latest heartbeat this holder wrote
  int64_t expires_at_ms = 0;    // wall time, as written to the store
  Duration ttl{};
  MonoTime valid_until{};  // local deadline; see the file comment
  // The token of the session it belongs to (AcquireOptions::session); empty:
  // none. valid_at() does not know the session: its holder checks both.
  std::string session;

  bool valid_at(MonoTime now) const { return now < valid_until; }
};

// What the store says about a slot (for `lease show` and for takers).
struct LeaseView {
  Key key;
  std::string slot;
  std::string owner;
  std::string holder;
  std::string token;
  int64_t epoch = 0;
  int64_t acquired_at_ms = 0;
  int64_t heartbeat_at_ms = 0;
  int64_t expires_at_ms = 0;
  std::string session;  // the token of the session it belongs to; empty: none
  bool held = false;    // an owner whose expiry is after the reader's wall clock
};

// Names a lease by what a separate process can know of it (CLI renew/release):
// the owner as well as the token, since a token-less writer may have taken
// the lease over and left the token in place.
struct LeaseRef {
  Key key;
  std::string slot = std::string(kDefaultSlot);
  std::string owner;
  std::string token;
};

struct AcquireOptions {
  std::string owner;
  Duration ttl = std::chrono::seconds(20);
  std::string slot = std::string(kDefaultSlot);
  std::string holder;
  // Joined into the same conditional write (e.g. "status = ready").
  Condition extra_condition;
  Update extra_update;
  // The new lease's token; empty: a fresh one from the manager's Random. A
  // caller that must name the lease before taking it (a job ID sent ahead
  // on a queue) passes one. REQUIRES: well formed and never used before
  // (random_token() of a CSPRNG): the read-back that resolves an unknown
  // outcome takes the token in the slot for proof that the write applied.
  std::string token;
  // The session this lease belongs to: the token of a lease of the same
  // owner, valid when the acquisition is sent (the caller's to check).
  // Written to <slot>_session; empty: none, and a session an earlier holder
  // left there is removed (its end must not free this lease).
  std::string session;
  // Also takes the lease if it belongs to this session of this owner,
  // whatever its own expiry. REQUIRES: nobody trusts a lease of that session
  // on this item: the caller has ended the session (end_session() returned
  // OK), or the session is the caller's own and the caller holds no lease of
  // it here (one it lost track of, taken back under a new token and epoch).
  struct SessionRef {
    std::string owner;
    std::string token;
  };
  std::optional<SessionRef> ended_session;
};

enum class ReleaseMode { kExpire, kClear };

// One release of LeaseManager::release_each().
struct Release {
  const Lease* lease = nullptr;  // not owned, not null
  Update extra_update;
};

// One renewal of LeaseManager::renew_each().
struct Renewal {
  const Lease* lease = nullptr;  // not owned, not null
  // Applied in the same write, under the same condition: what can ride on
  // a heartbeat (a worker's figures) costs no write of its own.
  Update extra_update;
  // Not null: once renewed, the item as written (what others wrote to it
  // too, read back with the heartbeat at no cost). Left as it was when the
  // renewal fails, or when its outcome was resolved by a read.
  Item* item = nullptr;
};

// One write of LeaseManager::fenced_write_each().
struct FencedWrite {
  const Lease* lease = nullptr;  // not owned, not null
  Update update;
  Condition extra_condition;
};

class LeaseManager {
 public:
  // REQUIRES: store, clock and random outlive the manager.
  LeaseManager(ItemStore& store, Clock& clock, Random& random, LeaseConfig config = {});
  ~LeaseManager();
  LeaseManager(const LeaseManager&) = delete;
  LeaseManager& operator=(const LeaseManager&) = delete;

  // check_timing() and validity() (above) of this manager's config.
  Status check_timing(Duration ttl, Duration renew_every) const;
  // The renew period used when none is given: a third of the validity window.
  Duration default_renew_every(Duration ttl) const;
  Duration validity(Duration ttl) const;

  // kAlreadyExists if another holder's lease is live (or `extra_condition`
  // failed); kUnavailable if the store could not be reached, or if the
  // outcome stayed unknown (should the write have applied, the lease expires
  // unused). kDeadlineExceeded if the store answered only after the lease's
  // local deadline: the lease is then given back at once (best effort; any
  // `extra_update` stays applied) and never returned.
  Result<Lease> acquire(const Key& key, const AcquireOptions& options);
  // The same, saying in `*late` whether a failed acquisition's write may
  // still apply: no answer came, so however the read-back decided, the
  // request may yet be delivered (on DynamoDB, until its signature expires,
  // five minutes after it was made) and take the lease then; or it applied
  // and was answered too late, and giving it back failed. A caller that
  // passed its own token can find such a lease by it, and release it.
  Result<Lease> acquire(const Key& key, const AcquireOptions& options, bool* late);

  // Extends the lease by its ttl (or `ttl`). kFailedPrecondition if the lease
  // is lost: past its local deadline, expired, taken over (another owner or
  // token) or released. kUnavailable if the store failed; the lease stays
  // valid until its deadline, so the caller may retry until then.
  Result<Lease> renew(const Lease& lease, std::optional<Duration> ttl = std::nullopt);
  // The same for a lease held by another process that knows only its owner
  // and token.
  Result<Lease> renew(const LeaseRef& ref, Duration ttl);

  // Renews many leases; results[i] belongs to leases[i]. One round trip per
  // store batch where the backend supports it. The store call is bounded by
  // `timeout` and by the earliest local deadline among the leases: a reply
  // after that could not keep that lease anyway, and a caller stuck in the
  // store is a caller that cannot try again.
  std::vector<Result<Lease>> renew_each(std::span<const Lease> leases,
                                        Duration timeout = kNoTimeout);
  // The same, each renewal with what it carries (see Renewal). An extra
  // update of a renewal whose outcome was unknown and that a read-back
  // found renewed may or may not have applied.
  std::vector<Result<Lease>> renew_each(std::span<const Renewal> renewals,
                                        Duration timeout = kNoTimeout);

  // kFailedPrecondition if the lease is no longer the caller's (another
  // owner or token in the slot). `extra_update` (mode expire only) is applied
  // in the same write, e.g. a final checkpoint handed over with the lease:
  // then a write whose outcome stayed unknown is OK only if a read-back shows
  // it applied, and kFailedPrecondition if the lease was taken over since.
  Status release(const LeaseRef& ref, ReleaseMode mode, const Update& extra_update = {});
  Status release(const Lease& lease, ReleaseMode mode, const Update& extra_update = {});
  // Many releases in mode expire, in as few round trips as the store allows
  // (one SQLite transaction; parallel writes on DynamoDB), as
  // fenced_write_each() does for writes: NOT a transaction; results[i]
  // belongs to releases[i] and is what release() would return for it. A
  // stopping holder of many leases gives them back in one go rather than
  // one round trip each. REQUIRES: each lease outlives the call.
  std::vector<Status> release_each(std::span<const Release> releases);

  // Ends `from` and starts a lease in `to.slot` of the same item in one
  // write. `from` must still be valid locally.
  Result<Lease> replace(const Lease& from, const AcquireOptions& to);
  // The same for a lease held elsewhere, known by its owner and token (a
  // browser's, through a server): `from` must also not have expired by this
  // process's wall clock, checked in the same write, since no local deadline
  // exists for it. kFailedPrecondition if it is lost or expired.
  Result<Lease> replace(const LeaseRef& from, const AcquireOptions& to);

  // Applies `update` to the lease's item if the lease is still ours (and
  // `extra_condition` holds). kFailedPrecondition if the lease is lost (the
  // write did not apply) or past its local deadline (the write was not
  // sent); kConditionFailed if only `extra_condition` failed.
  // kUnknownOutcome if the write was sent and no answer came, and a read
  // shows the lease still ours: the update may or may not have applied, and
  // re-sending it is safe only if it is idempotent (sets, not adds) or its
  // `extra_condition` makes it so. A lease found lost by that read is
  // kFailedPrecondition, the update having applied or not.
  Result<Item> fenced_write(const Lease& lease, const Update& update,
                            const Condition& extra_condition = {});
  // A fenced write for a lease held elsewhere (see replace(LeaseRef)): the
  // write is also conditioned on the lease not having expired by this
  // process's wall clock. kFailedPrecondition if it is lost or expired; the
  // other outcomes as above.
  Result<Item> fenced_write(const LeaseRef& ref, const Update& update,
                            const Condition& extra_condition = {});

  // Many fenced writes in as few round trips as the store allows (one
  // SQLite transaction; parallel writes on DynamoDB); NOT a transaction:
  // results[i] belongs to writes[i] and is what fenced_write() would return
  // for it. A write whose lease is past its local deadline is not sent.
  // REQUIRES: each lease outlives the call.
  std::vector<Result<Item>> fenced_write_each(std::span<const FencedWrite> writes);

  // Ends a session (a lease its holder keeps, and others belong to) that
  // has expired by this process's wall clock, so that it can never be
  // renewed: one write, conditioned on its owner and token and on its
  // expiry, setting expires_at to 0 (its owner, token and epoch stay). OK if
  // it is ended, by this call or before (expired and zeroed, released,
  // replaced by a later lease, or its item gone): its leases may then be
  // taken (AcquireOptions::ended_session). kFailedPrecondition if it is live
  // (not expired by this clock); kUnavailable if the store failed or the
  // outcome stayed unknown.
  Status end_session(const LeaseRef& session);

  // Releases, on its holder's behalf, a lease of a session that has ended
  // (end_session() returned OK for it), so that the item is free once it is
  // wanted again rather than when the lease's own ttl runs out: one write
  // conditioned on the lease's owner and on its session's token, setting
  // expires_at to 0 and removing its token and session (the owner and epoch
  // stay), so that nothing the dead holder sent can land on it afterwards.
  // OK if this call released it; kFailedPrecondition if the slot does not
  // belong to that session (any more): taken over, or released already;
  // kUnavailable if the store failed or the outcome stayed unknown.
  // `extra_update` is applied in the same write (what the holder left
  // elsewhere, e.g. its last checkpoint).
  Status release_ended(const Key& key, const AcquireOptions::SessionRef& ended,
                       std::string_view slot = kDefaultSlot, const Update& extra_update = {});

  // The slot as stored now. kNotFound if the item has no such slot.
  Result<LeaseView> inspect(const Key& key, std::string_view slot = kDefaultSlot);
  // Reads a slot out of an item already fetched.
  LeaseView view_of(const Item& item, const Key& key, std::string_view slot);

  ItemStore& store() { return store_; }
  Clock& clock() { return clock_; }
  const LeaseConfig& config() const { return config_; }

 private:
  struct RenewPlan;
  RenewPlan plan_renewal(LeaseRef ref, Duration ttl, int64_t heartbeat_floor_ms);
  Result<Lease> finish_renewal(const RenewPlan& plan, Result<Item> written);
  Result<Lease> explain_refused_renewal(const RenewPlan& plan);
  Update release_update(const SlotNames& n, ReleaseMode mode, const Update& extra_update);
  Status release_result(const LeaseRef& ref, const SlotNames& n, bool with_update,
                        Result<Item> written);
  Result<Lease> resolve_acquire(const Key& key, const Lease& attempt);
  Result<Lease> check_acquired_in_time(Lease lease);
  Result<Lease> replace_held(const LeaseRef& from, int64_t unexpired_at_ms,
                             const AcquireOptions& to);
  Result<Item> fenced_write_held(const LeaseRef& ref, int64_t unexpired_at_ms, const Update& update,
                                 const Condition& extra_condition);
  Result<Item> explain_fenced_write(const LeaseRef& ref, int64_t unexpired_at_ms,
                                    const Condition& extra_condition, Result<Item> written);
  Result<Item> read_back(const Key& key);
  // The attribute names of `slot`, built once: they are on every write's path.
  std::shared_ptr<const SlotNames> names(std::string_view slot);

  ItemStore& store_;
  Clock& clock_;
  Random& random_;
  LeaseConfig config_;
  const std::unique_ptr<SlotNamesCache> names_;
};

}  // namespace leasehold
