// The worker's session (fleet/worker.h): joining the fleet, what it may
// trust of its own session, and the sessions that have ended (of others,
// and its own earlier ones) with the connections they still hold.
#include <algorithm>

#include "base/logging.h"
#include "fleet/schema.h"
#include "fleet/worker_impl.h"

namespace leasehold::fleet {
namespace {

// A dead session whose sweeps find nothing is swept again after a reconcile
// period, then after twice that, and so on up to this many periods: the
// index may show late a lease taken just before the session died.
constexpr int kSweepBackoffPeriodsMax = 8;

// The most dead sessions a worker keeps in sight; past it, those named
// longest ago are forgotten first (the reaper finds what they still hold).
constexpr size_t kDeadSessionsMax = 4096;

// A dead session stays in sight (and swept, less and less often) at least
// this long after it was last named, for an index that shows a lease late.
constexpr std::chrono::seconds kDeadSessionKeepMin{30};

}  // namespace

using worker_parts::Stream;

// ---------------------------------------------------------------- joining

// Takes the membership lease: the session, with sessions. The item's earlier
// sessions of this id (the one it holds, and those it names) are named
// again, so that this worker, and the others, take their connections
// however often this id restarted before it could.
Status Worker::Impl::join() {
  AcquireOptions o;
  o.owner = options_.id;
  o.holder = options_.id;
  o.ttl = sessions() ? options_.session_ttl : options_.lease_ttl;
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  o.extra_update.set("kind", std::string(kWorkerKind)).set("started_at_ms", now_ms);
  Result<Item> before = store_.get(kWorkersTable, worker_key(options_.id), /*consistent=*/true);
  if (!before.ok() && before.status().code() != Code::kNotFound) {
    return before.status().with_context("joining the fleet");
  }
  const std::vector<std::string> previous =
      before.ok() ? sessions_named(*before, options_.id) : std::vector<std::string>{};
  if (previous.empty()) {
    o.extra_update.remove(kPreviousSessionsAttr);
  } else {
    o.extra_update.set(kPreviousSessionsAttr, join_sessions(previous));
  }
  o.extra_update.remove("previous_session");  // an older build's single one
  if (sessions()) {
    o.extra_update.set("session_ttl_ms", to_ms(options_.session_ttl));
  } else {
    o.extra_update.remove("session_ttl_ms");
  }
  o.extra_update.append(
      member_figures(0, static_cast<int64_t>(options_.max_connections), 0, 0, now_ms));
  Result<Lease> lease = member_leases_.acquire(worker_key(options_.id), o);
  if (!lease.ok()) {
    if (lease.status().code() == Code::kAlreadyExists) {
      return already_exists("worker id '" + options_.id + "' is in use by a live worker");
    }
    return lease.status().with_context("joining the fleet");
  }
  previous_sessions_ = previous;
  // Nudges from here on are news (hear_nudges()).
  nudges_heard_ = before.ok() ? get_int_or(*before, kNudgesAttr) : 0;
  Renewer::RenewedCallback on_renewed;
  if (sessions()) on_renewed = [this](const Item& item) { hear_nudges(item); };
  const Renewer::Id id = member_renewer_.add(
      *lease,
      [this](const Lease&, const Status& why) {
        log_to(options_.logger, LogLevel::kWarn, "{} lost: {}",
               sessions() ? "session" : "membership lease", why.message());
        {
          MutexLock lock(mu_);
          member_id_.reset();
        }
        if (sessions()) on_session_lost(why);
      },
      std::move(on_renewed));
  if (sessions()) {
    MutexLock lock(session_mu_);
    ++session_gen_;
    session_token_ = lease->token;
    session_id_ = id;
  }
  ++sessions_started_;
  MutexLock lock(mu_);
  member_id_ = id;
  last_figures_at_ = clock_.mono_now();
  return {};
}

// ---------------------------------------------------------------- its own session

// Whether the change feed's reader named connection `id` to this worker in
// a nudge heard in the last kNudgeFollow.
bool Worker::Impl::hinted(std::string_view id) {
  MutexLock lock(mu_);
  const auto hint = take_hints_.find(id);
  return hint != take_hints_.end() && clock_.mono_now() < hint->second;
}

// Each heartbeat of the session reads its member item back, and between
// heartbeats the control loop reads it where that is worth a read
// (read_nudges()): a nudge there (`conn stop`, `set`, `rm` of a connection
// it holds; the change feed reader's) is acted on at once, not at the next
// reconcile. The count only goes up, but a read between heartbeats is
// eventually consistent and may show less than the heartbeat before it:
// only a count above every one heard is news.
void Worker::Impl::hear_nudges(const Item& member) {
  {
    MutexLock lock(mu_);
    nudges_looked_at_ = clock_.mono_now();
  }
  const int64_t nudges = get_int_or(member, kNudgesAttr);
  int64_t before = nudges_heard_.load();
  while (nudges > before && !nudges_heard_.compare_exchange_weak(before, nudges)) {
  }
  if (before < 0 || nudges <= before) return;
  act_on_nudge(get_string_or(member, kTakeHintAttr));
}

// A nudge, heard with a heartbeat or from this worker's own feed reader:
// the next reconcile starts now and reads the desired state; `take` (if
// any) is tried without waiting its turn by rank.
void Worker::Impl::act_on_nudge(const std::string& take) {
  nudge_heard_ = true;
  ++nudges_acted_;
  {
    MutexLock lock(mu_);
    const MonoTime now = clock_.mono_now();
    next_attempt_ = now;
    std::erase_if(take_hints_, [&](const auto& hint) { return hint.second <= now; });
    if (!take.empty()) take_hints_.insert_or_assign(take, now + kNudgeFollow);
  }
  control_cv_.notify_all();
}

Duration Worker::Impl::session_renew_every() const {
  if (options_.session_renew_every > Duration::zero()) return options_.session_renew_every;
  return default_renew_every(options_.lease, options_.session_ttl);
}

// Where reads are local (SQLite) the control loop looks at the store's
// change stamp instead (react_now()).
bool Worker::Impl::reads_nudges() const {
  return sessions() && !store_.reads_are_local() && nudge_read_every() < session_renew_every();
}

Duration Worker::Impl::nudge_read_every() const {
  if (options_.nudge_read_every > Duration::zero()) return options_.nudge_read_every;
  return session_renew_every() * 3 / 5;
}

std::optional<Worker::Impl::SessionNow> Worker::Impl::current_session() {
  SessionNow s;
  std::optional<Renewer::Id> id;
  {
    MutexLock lock(session_mu_);
    s.gen = session_gen_;
    s.token = session_token_;
    id = session_id_;
  }
  if (!id) return std::nullopt;
  const std::optional<Lease> lease = member_renewer_.get(*id);
  if (!lease || !lease->valid_at(clock_.mono_now())) return std::nullopt;
  s.valid_until = lease->valid_until;
  return s;
}

MonoTime Worker::Impl::session_valid_until(uint64_t gen) {
  std::optional<Renewer::Id> id;
  {
    MutexLock lock(session_mu_);
    if (gen != session_gen_) return MonoTime::min();
    id = session_id_;
  }
  // A renewer entry is never reused: once lost, it stays lost.
  const std::optional<Lease> lease = id ? member_renewer_.get(*id) : std::nullopt;
  return lease ? lease->valid_until : MonoTime::min();
}

MonoTime Worker::Impl::deadline_of(const Stream& stream, const Lease& lease) {
  if (stream.session_gen == 0) return lease.valid_until;
  return std::min(lease.valid_until, session_valid_until(stream.session_gen));
}

// Every stream belongs to the session: none may be trusted any more, and
// none is written to the store again (their leases move to whoever ends the
// session, or back to this worker, which names it when it starts a new
// one). The control loop starts a new session. A stream added after the
// snapshot below finds the session gone itself (acquire()).
void Worker::Impl::on_session_lost(const Status& why) {
  {
    MutexLock lock(session_mu_);
    session_id_.reset();
  }
  for (const std::shared_ptr<Stream>& s : snapshot()) {
    lose_with_session(s, failed_precondition("its session was lost: " + why.message()));
  }
}

void Worker::Impl::lose_with_session(const std::shared_ptr<Stream>& stream, const Status& why) {
  lose(stream, why);
  // Nor is its own lease renewed again: a renewal falling due just after a
  // pause would be a write past the session's deadline.
  (void)renewer_.remove(stream->renew_id);
}

// ---------------------------------------------------------------- dead sessions

// The sessions that have ended: each member's, once it has expired by this
// clock (ended here first, so that no renewal its worker sent lands after),
// the earlier ones each member names, and this worker's own earlier ones.
void Worker::Impl::note_dead_sessions(const std::vector<Member>& members) {
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  const MonoTime now = clock_.mono_now();
  const auto note = [&](const std::string& owner, const std::string& token) {
    auto [it, added] = dead_sessions_.try_emplace(token, DeadSession{owner, now, now, now});
    it->second.named_at = now;
    it->second.named = true;
  };
  for (const Member& m : members) {
    for (const std::string& token : m.previous_sessions) note(m.id, token);
    if (m.id == options_.id || m.session_ttl_ms <= 0 || m.session.empty() ||
        m.expires_at_ms >= now_ms) {
      continue;
    }
    if (m.expires_at_ms != 0 && !dead_sessions_.contains(m.session)) {
      const Status ended = member_leases_.end_session(
          LeaseRef{worker_key(m.id), std::string(kDefaultSlot), m.id, m.session});
      if (!ended.ok()) {  // renewed meanwhile, or the store failed: next time
        log_to(options_.logger, LogLevel::kDebug, "ending the session of {}: {}", m.id,
               ended.message());
        continue;
      }
      ++sessions_ended_;
      log_to(options_.logger, LogLevel::kInfo, "ended the expired session of worker {}", m.id);
    }
    note(m.id, m.session);
  }
  for (const std::string& token : previous_sessions_) note(options_.id, token);
  // Forgotten once nobody has named one for a while (its member is gone,
  // or has found none of its connections left); the longest unnamed first
  // past the bound.
  const Duration keep = std::max<Duration>(member_keep(), kDeadSessionKeepMin);
  std::erase_if(dead_sessions_, [&](const auto& entry) {
    return now - entry.second.named_at > keep && entry.second.empty_sweeps > 0;
  });
  while (dead_sessions_.size() > kDeadSessionsMax) {
    dead_sessions_.erase(std::min_element(
        dead_sessions_.begin(), dead_sessions_.end(),
        [](const auto& a, const auto& b) { return a.second.named_at < b.second.named_at; }));
  }
}

std::vector<Connection> Worker::Impl::dead_session_orphans(
    const std::vector<Member>& members, std::set<std::string, std::less<>>& owner_back) {
  note_dead_sessions(members);
  const MonoTime now = clock_.mono_now();
  const Duration backoff_max = kSweepBackoffPeriodsMax * options_.reconcile_every;
  std::vector<Connection> out;
  for (auto& entry : dead_sessions_) {
    const std::string& token = entry.first;
    DeadSession& d = entry.second;
    if (now < d.next_sweep) continue;
    const size_t before = out.size();
    size_t held = 0;
    const Status swept = sweep_session(token, d, members, out, held);
    if (!swept.ok()) {
      log_to(options_.logger, LogLevel::kWarn, "finding the connections of {}'s session: {}",
             d.owner, swept.message());
      continue;  // swept again next reconcile
    }
    if (held > 0) {
      d.empty_sweeps = 0;
      d.backoff = Duration::zero();
      d.next_sweep = now;
    } else {
      // Nothing names the session any more, twice: its positions have
      // nobody left to tell (a lease the index shows late had its item told
      // where it resumed, when taken).
      if (++d.empty_sweeps == 2) {
        const Status removed = remove_positions(store_, token);
        if (!removed.ok()) {
          log_to(options_.logger, LogLevel::kWarn, "{} of {}", removed.message(), d.owner);
        }
      }
      d.backoff = d.backoff == Duration::zero() ? options_.reconcile_every
                                                : std::min(2 * d.backoff, backoff_max);
      d.next_sweep = now + d.backoff;
    }
    // Its owner joined again since, in another session: it takes them first.
    const bool back = std::any_of(members.begin(), members.end(), [&](const Member& m) {
      return m.alive && m.id == d.owner && m.session != token;
    });
    for (size_t i = before; back && i < out.size(); ++i) owner_back.insert(out[i].id);
  }
  drop_swept_previous_sessions();
  return out;
}

// The connections still held under the session (its owner and token, not
// released) that this worker does not stream: the STARTED ones into `out`,
// the others released (retire()). `held` counts them all.
Status Worker::Impl::sweep_session(const std::string& token, const DeadSession& dead,
                                   const std::vector<Member>& members, std::vector<Connection>& out,
                                   size_t& held) {
  return each_in_session(token, [&](const Item& item) {
    Result<Connection> c = parse_connection(item);
    if (!c.ok() || c->owner != dead.owner || c->session != token || c->expires_at_ms == 0) {
      return;
    }
    ++held;
    if (find(c->id) != nullptr) return;
    if (c->desired_state == DesiredState::kStarted) {
      out.push_back(std::move(*c));
    } else {
      retire(*c, token, dead, members);
    }
  });
}

Status Worker::Impl::each_in_session(const std::string& token,
                                     const std::function<void(const Item&)>& each) {
  QueryOptions q;
  q.limit = kQueryLimitMax;
  do {
    Result<Page> page =
        store_.query_index(kConnectionsTable, kSessionIndex, token, KeyRange::all(), q);
    if (!page.ok()) return page.status();
    for (const Item& item : page->items) each(item);
    q.cursor = page->next_cursor;
  } while (!q.cursor.empty());
  return {};
}

// A stopped or removed connection still held under a dead session is taken
// by nobody, so its lease is released on the dead holder's behalf: started
// again, it is free at once, and a removed ID may be added again. One member
// does it, the live one with a session that ranks first for it, unless only
// this worker knows of the session (the reaper found it). Should that one
// not know of the session, the connection, once started, is found like any
// other of a dead session's.
void Worker::Impl::retire(const Connection& connection, const std::string& token,
                          const DeadSession& dead, const std::vector<Member>& members) {
  if (dead.named) {
    const uint64_t mine = rendezvous_weight(options_.id, connection.id);
    for (const Member& m : members) {
      // Of the members that sweep (those with sessions).
      if (m.alive && m.session_ttl_ms > 0 && m.id != options_.id &&
          rendezvous_weight(m.id, connection.id) > mine) {
        return;
      }
    }
  }
  // Where the dead holder had got to goes to the item with the release: the
  // item no longer names the session whose positions say it.
  Update last;
  const int64_t seq = prior_position(token, connection.id, connection.epoch).seq;
  if (seq > 0) last.set(kLastSeqAttr, seq);
  const Status released = conn_leases_.release_ended(
      connection_key(connection.id), AcquireOptions::SessionRef{connection.owner, token},
      kDefaultSlot, last);
  if (released.ok()) {
    log_to(options_.logger, LogLevel::kInfo,
           "released {} ({}), which the ended session of {} still held", connection.id,
           desired_state_name(connection.desired_state), connection.owner);
  } else if (released.code() != Code::kFailedPrecondition) {
    log_to(options_.logger, LogLevel::kWarn, "releasing {} of {}'s ended session: {}",
           connection.id, connection.owner, released.message());
  }
}

// This worker's earlier sessions stop being named on its item once it has
// found none of their connections left in two sweeps, a reconcile period or
// more apart (the figures write says so). They stay in sight, and swept,
// until forgotten.
void Worker::Impl::drop_swept_previous_sessions() {
  std::erase_if(previous_sessions_, [&](const std::string& token) {
    const auto it = dead_sessions_.find(token);
    return it != dead_sessions_.end() && it->second.empty_sweeps >= 2;
  });
}

}  // namespace leasehold::fleet
