// Liveness (docs/fleet.md, Liveness): no connection waits for its own
// lease's ttl because something failed. Every lease this worker may hold and
// does not stream is released: the releases that failed are tried again
// every reconcile, the audit finds what its own session holds that it does
// not stream, and the fleet's leader reaps what sessions no member names
// hold, and removes members long dead.
#include <algorithm>
#include <map>
#include <set>

#include "base/logging.h"
#include "fleet/schema.h"
#include "fleet/summary.h"
#include "fleet/worker_impl.h"

namespace leasehold::fleet {
namespace {

// A dead member's item is kept this many reconcile periods (and two session
// ttls, at least) after its last renewal, so that every member reads it
// dead at least once and sweeps its sessions, then removed.
constexpr int kMemberKeepPeriods = 5;

// How long a request that got no answer may still land: DynamoDB refuses a
// request signed more than five minutes ago; a minute more for the clocks.
constexpr std::chrono::minutes kLateRequestMax{6};
// A watched acquisition is looked for again after a reconcile period, then
// twice that, and so on up to this.
constexpr std::chrono::seconds kWatchLookMax{8};

}  // namespace

Duration Worker::Impl::audit_every() const {
  return options_.audit_every > Duration::zero() ? options_.audit_every
                                                 : Duration(kAuditEveryDefault);
}

Duration Worker::Impl::reap_every() const {
  return options_.reap_every > Duration::zero() ? options_.reap_every : Duration(kReapEveryDefault);
}

Duration Worker::Impl::member_keep() const {
  return std::max(kMemberKeepPeriods * options_.reconcile_every, 2 * options_.session_ttl);
}

void Worker::Impl::sync(std::string_view point) const {
  if (options_.sync_point) options_.sync_point(point);
}

// ---------------------------------------------------------------- releases

void Worker::Impl::release_later(const std::string& id, const Lease& lease,
                                 Update final_checkpoint) {
  pending_releases_.push_back({id, lease, std::move(final_checkpoint), clock_.mono_now()});
  // Bounded: past its own ttl a lease has expired anyway.
  if (pending_releases_.size() > options_.max_connections) {
    pending_releases_.erase(pending_releases_.begin());
  }
}

bool Worker::Impl::release_pending(const std::string& id) const {
  return std::any_of(pending_releases_.begin(), pending_releases_.end(),
                     [&](const PendingRelease& p) { return p.id == id; });
}

// Each release is conditioned on the owner and token: one that lands late
// frees only the lease it names, and one whose lease is gone fails harmlessly.
void Worker::Impl::retry_releases() {
  const MonoTime now = clock_.mono_now();
  std::erase_if(pending_releases_,
                [&](const PendingRelease& p) { return now - p.since > options_.lease_ttl; });
  if (pending_releases_.empty()) return;
  std::vector<Release> releases;
  releases.reserve(pending_releases_.size());
  for (const PendingRelease& p : pending_releases_)
    releases.push_back({&p.lease, p.final_checkpoint});
  const std::vector<Status> released = conn_leases_.release_each(releases);
  std::vector<PendingRelease> still;
  for (size_t i = 0; i < released.size(); ++i) {
    const Status& r = released[i];
    if (r.ok() || r.code() == Code::kFailedPrecondition) {
      ++releases_retried_;
      log_to(options_.logger, LogLevel::kInfo, "released {} on a retry{}", pending_releases_[i].id,
             r.ok() ? "" : " (it was no longer this worker's)");
    } else {
      still.push_back(std::move(pending_releases_[i]));
    }
  }
  pending_releases_ = std::move(still);
}

void Worker::Impl::watch_acquisition(const std::string& id, Lease attempt) {
  const MonoTime now = clock_.mono_now();
  watched_.push_back({id, std::move(attempt), now, now, Duration::zero()});
  if (watched_.size() > options_.max_connections) watched_.erase(watched_.begin());
}

// One consistent read each, when due: a watched acquisition found applied
// (the item holds its token) is given back; its connection is then an
// orphan like any other.
void Worker::Impl::check_watched() {
  const MonoTime now = clock_.mono_now();
  std::erase_if(watched_, [&](const Watched& w) { return now - w.since > kLateRequestMax; });
  const SlotNames lease(kDefaultSlot);
  std::vector<Watched> still;
  for (Watched& w : watched_) {
    if (now < w.next_look) {
      still.push_back(std::move(w));
      continue;
    }
    Result<Item> item = store_.get(kConnectionsTable, w.attempt.key, /*consistent=*/true);
    if (item.ok() && get_string_or(*item, lease.token) == w.attempt.token &&
        get_string_or(*item, lease.owner) == options_.id) {
      log_to(options_.logger, LogLevel::kWarn,
             "an acquisition of {} that got no answer landed later; it is given back", w.id);
      release_later(w.id, w.attempt, Update());
      continue;
    }
    w.backoff = w.backoff == Duration::zero() ? options_.reconcile_every
                                              : std::min<Duration>(2 * w.backoff, kWatchLookMax);
    w.next_look = now + w.backoff;
    still.push_back(std::move(w));
  }
  watched_ = std::move(still);
}

// ---------------------------------------------------------------- the audit

// The leases the store holds under this worker's session, as this
// reconcile's read of its index showed them (read_desired_state()), are
// compared with the streams it runs: one it does not stream (lost track of
// by a path no other mechanism covers) is taken back if STARTED, released
// if not.
void Worker::Impl::audit_own_session() {
  const MonoTime now = clock_.mono_now();
  if (now < next_audit_) return;
  const std::optional<SessionNow> session = current_session();
  if (!session) return;
  // Not read this reconcile (the read failed, or the session is new): next.
  if (!session_view_ || session_view_->token != session->token) return;
  next_audit_ = now + audit_every();
  size_t found = 0;
  for (const Item& item : session_view_->items) audit_item(session->token, item, found);
  retry_releases();
  if (found > 0) {
    audit_finds_ += found;
    log_to(options_.logger, LogLevel::kWarn,
           "the audit found {} connection(s) held under this worker's session that it did not "
           "stream, and took them back or released them",
           found);
  }
}

void Worker::Impl::audit_item(const std::string& token, const Item& item, size_t& found) {
  const auto forgotten = [&](const Result<Connection>& c) {
    return c.ok() && c->owner == options_.id && c->session == token && c->expires_at_ms != 0 &&
           find(c->id) == nullptr && !release_pending(c->id);
  };
  if (!forgotten(parse_connection(item))) return;
  // The index may show a lease this worker has since released: the item
  // itself decides.
  Result<Item> now = store_.get(
      kConnectionsTable, Key{get_string_or(item, kConnectionsKeyAttr), ""}, /*consistent=*/true);
  Result<Connection> c = now.ok() ? parse_connection(*now) : Result<Connection>(now.status());
  if (!forgotten(c)) return;
  ++found;
  log_to(options_.logger, LogLevel::kWarn,
         "connection {} is held under this worker's session but not streamed", c->id);
  if (c->desired_state == DesiredState::kStarted) {
    (void)acquire(*c, /*own_session=*/true);
    return;
  }
  Lease lost;
  lost.key = connection_key(c->id);
  lost.slot = std::string(kDefaultSlot);
  lost.owner = options_.id;
  lost.token = c->token;
  release_later(c->id, lost, Update());
}

// ---------------------------------------------------------------- the leader's work

// The fleet's leader: the live member with a session whose ID sorts first.
// Members that disagree for a moment (one joined, one died) both do the
// leader's work once, harmlessly.
bool Worker::Impl::leads(const std::vector<Member>& members) const {
  for (const Member& m : members) {
    if (m.alive && m.session_ttl_ms > 0) return m.id == options_.id;  // sorted by id
  }
  return false;
}

// Every STARTED connection held under a session: one whose session is no
// live member's has lost its holder without anyone naming the session (its
// member was removed, or restarted more often than it could name them all).
// The session is ended (a consistent, conditioned write: it refuses a live
// one) and swept like any other.
void Worker::Impl::reap(const std::vector<Member>& members) {
  const MonoTime now = clock_.mono_now();
  if (now < next_reap_) return;
  next_reap_ = now + reap_every();
  std::set<std::string, std::less<>> live;
  for (const Member& m : members) {
    if (m.alive) live.insert(m.session);
  }
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  std::map<std::string, std::string, std::less<>> suspects;  // token -> owner
  const SlotNames lease(kDefaultSlot);
  QueryOptions q;
  q.limit = kQueryLimitMax;
  do {
    Result<Page> page =
        store_.query_index(kConnectionsTable, kOrphanIndex,
                           desired_state_name(DesiredState::kStarted), KeyRange::gt(now_ms), q);
    if (!page.ok()) {
      log_to(options_.logger, LogLevel::kWarn, "reaping: {}", page.status().message());
      next_reap_ = now;
      return;
    }
    for (const Item& item : page->items) {
      Result<Connection> c = parse_connection(item);
      if (!c.ok() || c->session.empty() || live.contains(c->session) ||
          dead_sessions_.contains(c->session) || suspects.contains(c->session)) {
        continue;
      }
      // The index may lag: the item itself must still be under that session.
      Result<Item> now = store_.get(kConnectionsTable, connection_key(c->id), /*consistent=*/true);
      if (now.ok() && get_string_or(*now, lease.session) == c->session) {
        suspects.emplace(c->session, c->owner);
      }
    }
    q.cursor = page->next_cursor;
  } while (!q.cursor.empty());
  for (const auto& [token, owner] : suspects) {
    const Status ended = member_leases_.end_session(
        LeaseRef{worker_key(owner), std::string(kDefaultSlot), owner, token});
    if (!ended.ok()) continue;  // live after all (it joined since), or the store failed
    ++reaper_finds_;
    dead_sessions_.try_emplace(token, DeadSession{owner, now, now, now});
    log_to(options_.logger, LogLevel::kWarn,
           "the reaper found connections held under a session of {} that no member named; "
           "they are taken as orphans",
           owner);
  }
}

// The leader counts every connection by desired state when it starts
// leading and every kRecountEvery after (fleet/summary.h), for the counts
// that a process which died between its writes, or another tool, left off.
// A recount that a change overtook is tried again next reconcile.
void Worker::Impl::recount() {
  const MonoTime now = clock_.mono_now();
  if (now < next_recount_) return;
  const Status counted = recount_connections(store_, clock_);
  if (counted.code() == Code::kFailedPrecondition) return;
  next_recount_ = now + kRecountEvery;
  if (!counted.ok()) {
    log_to(options_.logger, LogLevel::kWarn, "counting the connections: {}", counted.message());
  }
}

// Members dead for longer than member_keep() are removed, so that what a
// reconcile reads stays the live members and those just dead.
void Worker::Impl::prune_members(const std::vector<Member>& members) {
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  const int64_t idle_before_ms = now_ms - to_ms(member_keep());
  for (const Member& m : members) {
    if (m.alive || m.id == options_.id || m.heartbeat_at_ms >= idle_before_ms) continue;
    const Status pruned = prune_member(store_, m, now_ms, idle_before_ms);
    if (pruned.ok()) {
      ++members_pruned_;
      log_to(options_.logger, LogLevel::kInfo, "removed worker {}, dead since {}", m.id,
             format_utc_ms(m.heartbeat_at_ms));
    } else if (pruned.code() != Code::kFailedPrecondition) {
      log_to(options_.logger, LogLevel::kWarn, "{}", pruned.message());
    }
  }
}

}  // namespace leasehold::fleet
