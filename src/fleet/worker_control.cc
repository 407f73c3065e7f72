// The worker's control loop: the desired state of what it owns, placement
// (orphans to take, connections to hand over to balance) and its membership.
#include <algorithm>
#include <map>
#include <set>

#include "base/logging.h"
#include "fleet/schema.h"
#include "fleet/worker_impl.h"

namespace leasehold::fleet {
namespace {

// DynamoDB's BatchGetItem limit.
constexpr size_t kBatchGetMax = 100;

// A live member's session is read again this long after it would expire,
// if it has not been renewed by then.
constexpr std::chrono::milliseconds kSessionLookAfter{50};

// How often a worker without a membership (lost to a store outage) tries to
// join again.
constexpr std::chrono::milliseconds kRejoinEvery{200};
// How often a worker on SQLite looks whether the store changed (react_now()).
constexpr std::chrono::milliseconds kReactEvery{100};
constexpr int kReactOrphansMax = 100;

// Whether `seen` (as the index showed it) was held by a worker that did
// not hand it over: an owner and a lease that was never released.
bool taken_over(const Connection& seen) { return !seen.owner.empty() && seen.expires_at_ms != 0; }

}  // namespace

using std::chrono::milliseconds;
using worker_parts::kFiguresEvery;
using worker_parts::State;
using worker_parts::Stream;

// ---------------------------------------------------------------- control loop

// Between reconciles, on a store whose reads cost nothing and that can tell
// when it changed (SQLite), the worker looks every kReactEvery: when the
// store changed and what changed is for it (react_now()), it reconciles at
// once rather than at the period's end. On a store whose reads cost
// (DynamoDB), with a session, it reads its member item for nudges between
// heartbeats instead (read_nudges()); a nudge heard makes the next
// reconcile due at once.
void Worker::Impl::control_loop() {
  const bool reacts = store_.reads_are_local() && store_.change_stamp().has_value();
  const bool listens = reads_nudges();
  while (true) {
    control_step();
    while (true) {
      if (listens && clock_.mono_now() >= nudge_read_due()) read_nudges();
      const MonoTime now = clock_.mono_now();
      {
        MutexLock lock(mu_);
        if (stopping_) return;
        const MonoTime due = std::min(next_reconcile_, next_attempt_);
        if (now >= due) break;
        MonoTime wake = reacts ? std::min(due, now + kReactEvery) : due;
        if (listens) wake = std::min(wake, nudges_looked_at_ + nudge_read_every());
        control_cv_.wait_until(mu_, clock_, wake);
        if (stopping_) return;
        if (clock_.mono_now() >= std::min(next_reconcile_, next_attempt_)) break;
      }
      if (reacts && react_now()) break;
    }
  }
}

MonoTime Worker::Impl::nudge_read_due() {
  MutexLock lock(mu_);
  return nudges_looked_at_ + nudge_read_every();
}

// One eventually consistent read of its member item: half a read unit.
// A failed read, or none without a membership, waits for the next period.
void Worker::Impl::read_nudges() {
  {
    MutexLock lock(mu_);
    nudges_looked_at_ = clock_.mono_now();
    if (!member_id_) return;
  }
  Result<Item> me = store_.get(kWorkersTable, worker_key(options_.id), /*consistent=*/false);
  if (me.ok()) hear_nudges(*me);
}

// Whether something written since the last look is for this worker: a
// nudge on its member item (conn stop, set, rm), or a STARTED connection
// free that it has not seen free before (conn add, start, a release). Two
// local reads, made only when the store's change stamp moved.
bool Worker::Impl::react_now() {
  const std::optional<ChangeStamp> stamp = store_.change_stamp();
  if (!stamp || (stamp_seen_ && *stamp == *stamp_seen_)) return false;
  stamp_seen_ = stamp;
  Result<Item> me = store_.get(kWorkersTable, worker_key(options_.id), /*consistent=*/false);
  if (me.ok() && nudges_seen_ >= 0 && get_int_or(*me, kNudgesAttr) != nudges_seen_) return true;
  QueryOptions q;
  q.limit = kReactOrphansMax;
  Result<Page> page = store_.query_index(kConnectionsTable, kOrphanIndex,
                                         std::string(desired_state_name(DesiredState::kStarted)),
                                         KeyRange::lt(to_unix_ms(clock_.wall_now())), q);
  if (!page.ok()) return false;
  std::set<std::string, std::less<>> free;
  bool fresh = false;
  for (const Item& item : page->items) {
    // By epoch too: free again after another took it and let it go between
    // two looks is news as well.
    std::string seen = get_string_or(item, kConnectionsKeyAttr) + " " +
                       std::to_string(get_int_or(item, SlotNames(kDefaultSlot).epoch));
    fresh = fresh || !free_seen_.contains(seen);
    free.insert(std::move(seen));
  }
  free_seen_ = std::move(free);
  return fresh;
}

MonoTime Worker::Impl::control_due() {
  MutexLock lock(mu_);
  return std::min(next_reconcile_, next_attempt_);
}

void Worker::Impl::control_step() {
  {
    MutexLock lock(mu_);
    next_attempt_ = MonoTime::max();
  }
  const MonoTime started = clock_.mono_now();
  reconcile();
  m_.reconcile_seconds.observe(std::chrono::duration<double>(clock_.mono_now() - started).count());
  Duration period = jittered(options_.reconcile_every, 0.2);
  MutexLock lock(mu_);
  // Without a membership (a store outage took it) the next try comes soon,
  // so that the fleet is back moments after the store is.
  if (!member_id_) period = std::min<Duration>(period, kRejoinEvery);
  next_reconcile_ = started + period;
}

void Worker::Impl::reconcile() {
  positions_read_.clear();
  rejoin_if_lost();
  check_watched();
  retry_releases();
  Result<std::vector<Member>> members = list_members(store_, clock_, /*alive_only=*/!sessions());
  read_desired_state(members.ok() ? &*members : nullptr);
  balance_and_acquire(std::move(members));
  write_figures();
  write_attention();
  const RenewerStats rs = renewer_.stats();
  if (rs.failures > renew_failures_seen_) {
    m_.renew_failures.inc(static_cast<double>(rs.failures - renew_failures_seen_));
    renew_failures_seen_ = rs.failures;
  }
}

// A membership lost to a store outage is taken again once the store answers.
void Worker::Impl::rejoin_if_lost() {
  {
    MutexLock lock(mu_);
    if (member_id_) return;
  }
  const Status joined = join();
  if (joined.ok()) {
    log_to(options_.logger, LogLevel::kInfo, "joined the fleet again in a new session");
    return;
  }
  // Its own lost session, until it expires by the store's clocks: expected.
  log_to(options_.logger,
         joined.code() == Code::kAlreadyExists ? LogLevel::kDebug : LogLevel::kWarn,
         "rejoining the fleet: {}", joined.message());
}

// What this worker owns, read for its desired state: STOPPED or removed
// connections are handed over, one that another owner holds is lost at once,
// and one whose URL or sequence field changed is handed over too. With a
// session, one query of the session's index reads most of it: DynamoDB
// bills a query by the size of all it returns, a batch read by the item.
// What the index does not show under this lease (taken since it was written
// to the index, or by another, or deleted) is read item by item. The same
// query is what the audit of the session looks at (session_view_), so it is
// made, when the audit is due, even for a worker that owns nothing. With a
// session on a store whose reads cost, it is read only when due
// (desired_state_due()): after a nudge, every poll period, for the audit.
void Worker::Impl::read_desired_state(const std::vector<Member>* members) {
  session_view_.reset();
  if (!desired_state_due(members)) return;
  std::vector<std::shared_ptr<Stream>> streams = snapshot();
  const std::optional<SessionNow> session = sessions() ? current_session() : std::nullopt;
  if (session && (!streams.empty() || clock_.mono_now() >= next_audit_)) {
    SessionView view{session->token, {}};
    const Status read =
        each_in_session(session->token, [&](const Item& item) { view.items.push_back(item); });
    if (!read.ok()) {
      log_to(options_.logger, LogLevel::kWarn, "reading desired state: {}", read.message());
      next_poll_ = MonoTime{};  // again next reconcile
      return;
    }
    judge_shown(view, streams);
    session_view_ = std::move(view);
  }
  for (size_t at = 0; at < streams.size(); at += kBatchGetMax) {
    std::vector<Key> keys;
    std::map<std::string, std::shared_ptr<Stream>> by_pk;
    for (size_t i = at; i < std::min(streams.size(), at + kBatchGetMax); ++i) {
      keys.push_back(connection_key(streams[i]->id));
      by_pk[keys.back().pk] = streams[i];
    }
    Result<std::vector<Item>> items = store_.batch_get(kConnectionsTable, keys);
    if (!items.ok()) {
      log_to(options_.logger, LogLevel::kWarn, "reading desired state: {}",
             items.status().message());
      return;
    }
    Judged judged;
    for (const Item& item : *items) {
      Result<Connection> c = parse_connection(item);
      if (!c.ok()) continue;
      auto found = by_pk.find(connection_key(c->id).pk);
      if (found == by_pk.end()) continue;
      judge_desired(found->second, *c, judged);
      by_pk.erase(found);
    }
    for (auto& [pk, stream] : by_pk) judged.stop.push_back(stream);  // deleted
    act_on(judged);
  }
}

bool Worker::Impl::desired_state_due(const std::vector<Member>* members) {
  const MonoTime now = clock_.mono_now();
  if (members != nullptr) {
    for (const Member& m : *members) {
      if (m.id != options_.id) continue;
      if (m.nudges != nudges_seen_) {
        if (nudges_seen_ >= 0) follow_nudge_until_ = now + kNudgeFollow;
        nudges_seen_ = m.nudges;
      }
      break;
    }
  }
  if (nudge_heard_.exchange(false)) follow_nudge_until_ = now + kNudgeFollow;
  const bool audit_due = sessions() && now >= next_audit_;
  if (now < follow_nudge_until_ || now >= next_poll_ || audit_due) {
    next_poll_ = now + poll_every();
    return true;
  }
  return false;
}

Duration Worker::Impl::poll_every() const {
  if (options_.poll_every > Duration::zero()) return options_.poll_every;
  if (!sessions() || store_.reads_are_local()) return Duration::zero();
  return kPollEveryDefault;
}

// Judges, and takes out of `streams`, each stream the session's index shows
// under the lease this worker holds.
void Worker::Impl::judge_shown(const SessionView& view,
                               std::vector<std::shared_ptr<Stream>>& streams) {
  std::map<std::string, Connection, std::less<>> shown;
  for (const Item& item : view.items) {
    // An index made without the sequence field in its projection cannot
    // tell a changed one: such items are read whole instead.
    if (!item.contains(kSeqFieldAttr)) continue;
    Result<Connection> c = parse_connection(item);
    if (c.ok()) shown.insert_or_assign(c->id, std::move(*c));
  }
  Judged judged;
  std::erase_if(streams, [&](const std::shared_ptr<Stream>& s) {
    const auto it = shown.find(s->id);
    if (it == shown.end() || it->second.owner != options_.id) return false;
    {
      MutexLock l(s->mu);
      if (it->second.epoch != s->epoch) return false;  // an older lease of it
    }
    judge_desired(s, it->second, judged);
    return true;
  });
  act_on(judged);
}

void Worker::Impl::judge_desired(const std::shared_ptr<Stream>& stream, const Connection& c,
                                 Judged& judged) {
  if (c.owner != options_.id) {
    lose(stream, failed_precondition("connection " + c.id + " is now owned by " + c.owner));
  } else if (c.desired_state != DesiredState::kStarted) {
    judged.stop.push_back(stream);  // stopped, or removed (a tombstone)
  } else if (c.ws_url != stream->url_template || split_seq_field(c.seq_field) != stream->seq_path) {
    // Handed over, so that the new URL is streamed under a new epoch,
    // after this stream has closed and checkpointed.
    judged.changed.push_back(stream);
  }
}

void Worker::Impl::act_on(const Judged& judged) {
  hand_over(judged.stop, "stopped or removed");
  hand_over(judged.changed, "its URL or sequence field changed");
}

// Takes orphans as placement says (fleet/placement.h), or hands the excess
// over to balance the fleet.
void Worker::Impl::balance_and_acquire(Result<std::vector<Member>> members) {
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  const MonoTime now = clock_.mono_now();
  const Duration skew = options_.lease.max_clock_skew;
  const int64_t horizon_ms = now_ms + to_ms(options_.reconcile_every + skew);
  QueryOptions q;
  q.limit = kQueryLimitMax;
  Result<Page> page = store_.query_index(kConnectionsTable, kOrphanIndex,
                                         std::string(desired_state_name(DesiredState::kStarted)),
                                         KeyRange::lt(horizon_ms), q);
  taking_ = page.ok();
  if (!page.ok()) {
    log_to(options_.logger, LogLevel::kWarn, "finding orphaned connections: {}",
           page.status().message());
    return;
  }
  store_read_at_ns_ = now.time_since_epoch().count();
  std::vector<Connection> orphans;
  MonoTime soonest = MonoTime::max();
  for (const Item& item : page->items) {
    Result<Connection> c = parse_connection(item);
    if (!c.ok() || find(c->id) != nullptr) continue;
    if (c->expires_at_ms < now_ms) {
      orphans.push_back(std::move(*c));
    } else {  // due to expire before the next reconcile: try then
      soonest = std::min(soonest, now + milliseconds(c->expires_at_ms - now_ms) + skew);
    }
  }
  std::set<std::string, std::less<>> owner_back;
  if (sessions() && members.ok()) {
    add_session_orphans(*members, orphans, owner_back, soonest);
    std::erase_if(*members, [](const Member& m) { return !m.alive; });
  }
  if (sessions()) audit_own_session();
  const std::vector<OrphanSeen> seen = note_orphans(orphans, owner_back);
  const std::vector<MemberFigures> others =
      members.ok() ? note_members(*members) : std::vector<MemberFigures>{};
  // Free connections seen now, or left to others at the last reconcile, may
  // have been taken by members whose figures do not count them yet: the
  // share would come out too small and hand over what they need not take.
  // Balancing waits, as after a handover, until each has written its
  // figures again.
  if ((!seen.empty() || left_orphans_) && members.ok()) remember_figures(*members);
  left_orphans_ = false;
  const int64_t owned = static_cast<int64_t>(snapshot().size());
  const int64_t capacity = static_cast<int64_t>(options_.max_connections);
  const Placement plan = place(options_.id, owned, capacity, others, seen,
                               may_balance(others, seen), placement_options());
  if (plan.next_due != Duration::max()) soonest = std::min(soonest, now + plan.next_due);
  {
    MutexLock lock(mu_);
    next_attempt_ = std::min(next_attempt_, soonest);
  }
  if (plan.hand_over > 0) {
    std::vector<std::shared_ptr<Stream>> excess = snapshot();
    excess.resize(static_cast<size_t>(plan.hand_over));
    hand_over(excess, "balancing the fleet");
    balanced_away_.clear();
    for (const auto& s : excess) balanced_away_.push_back(s->id);
    balanced_at_ = now;
    note_figures_at_balance(members.ok() ? &*members : nullptr);
    return;
  }
  // Up to the share; beyond it, up to capacity, only orphans whose owner
  // died or that waited past stranded: recovery first, balance after.
  int64_t room = plan.share - owned;
  int64_t spare = capacity - std::max(owned, plan.share);
  for (const Attempt& a : plan.attempts) {
    if (room > 0) {
      if (acquire(orphans[a.orphan])) --room;
    } else if (a.beyond_share && spare > 0) {
      if (acquire(orphans[a.orphan])) --spare;
    }
  }
  left_orphans_ = std::any_of(seen.begin(), seen.end(),
                              [this](const OrphanSeen& o) { return find(o.id) == nullptr; });
}

// With sessions, every member is read, the dead ones too (until they are
// pruned): their sessions' connections are orphans (added to `orphans`;
// `owner_back` gets those whose owner has joined again), the leader reaps
// and prunes, and a live member's session is looked at again just after it
// would expire (`soonest`).
void Worker::Impl::add_session_orphans(const std::vector<Member>& members,
                                       std::vector<Connection>& orphans,
                                       std::set<std::string, std::less<>>& owner_back,
                                       MonoTime& soonest) {
  std::set<std::string, std::less<>> listed;
  for (const Connection& o : orphans) listed.insert(o.id);
  for (Connection& c : dead_session_orphans(members, owner_back)) {
    if (listed.insert(c.id).second) orphans.push_back(std::move(c));
  }
  // What the reaper finds is swept from the next reconcile on.
  if (leads(members)) {
    reap(members);
    prune_members(members);
    recount();
  }
  // Not for one that says it owns nothing (a worker that comes and goes
  // idle): the next reconcile finds what it may have held all the same,
  // and a fleet through which many such pass reads its members once per
  // reconcile period, not once per member that dies.
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  const MonoTime now = clock_.mono_now();
  for (const Member& m : members) {
    if (m.id != options_.id && m.alive && m.session_ttl_ms > 0 &&
        (m.owned > 0 || !m.previous_sessions.empty())) {
      soonest = std::min(soonest, now + milliseconds(m.expires_at_ms - now_ms) + kSessionLookAfter);
    }
  }
}

std::vector<OrphanSeen> Worker::Impl::note_orphans(
    const std::vector<Connection>& orphans, const std::set<std::string, std::less<>>& owner_back) {
  const MonoTime now = clock_.mono_now();
  std::map<std::string, MonoTime, std::less<>> first_seen;
  std::vector<OrphanSeen> out;
  out.reserve(orphans.size());
  for (const Connection& c : orphans) {
    const auto it = orphan_first_seen_.find(c.id);
    const MonoTime first = it == orphan_first_seen_.end() ? now : it->second;
    first_seen.emplace(c.id, first);
    out.push_back({c.id, c.owner, /*crashed=*/c.expires_at_ms != 0, now - first,
                   owner_back.contains(c.id), hinted(c.id)});
  }
  orphan_first_seen_ = std::move(first_seen);  // forgets those no longer free
  return out;
}

std::vector<MemberFigures> Worker::Impl::note_members(const std::vector<Member>& members) {
  const MonoTime now = clock_.mono_now();
  // Figures are written every kFiguresEvery reconciles at least: unchanged
  // for twice that and two more, the member has stopped reconciling (it
  // crashed, or its control loop is stuck) and takes nothing, whatever they
  // say.
  const Duration stale_after = (2 * kFiguresEvery + 2) * options_.reconcile_every;
  std::map<std::string, FiguresSeen, std::less<>> seen;
  std::vector<MemberFigures> out;
  for (const Member& m : members) {
    if (m.id == options_.id) continue;
    const auto it = figures_seen_.find(m.id);
    const FiguresSeen f = it == figures_seen_.end() || it->second.updated_at_ms != m.updated_at_ms
                              ? FiguresSeen{m.updated_at_ms, now}
                              : it->second;
    seen.emplace(m.id, f);
    out.push_back({m.id, m.owned,
                   m.capacity > 0 ? m.capacity : static_cast<int64_t>(kMaxConnectionsDefault),
                   m.taking && now - f.changed_at < stale_after});
  }
  figures_seen_ = std::move(seen);
  return out;
}

// Whether this worker may hand connections over to balance the fleet now:
// not while the members that take connections may not have counted what it
// handed over last (until each has written its figures again, its count
// leaves that out and the share comes out too small), and not for a while
// after a handover that nobody took.
bool Worker::Impl::may_balance(const std::vector<MemberFigures>& others,
                               const std::vector<OrphanSeen>& orphans) {
  const MonoTime now = clock_.mono_now();
  if (!balanced_away_.empty()) {
    bool stranded = false, waiting = false;
    for (const OrphanSeen& o : orphans) {
      if (std::find(balanced_away_.begin(), balanced_away_.end(), o.id) == balanced_away_.end()) {
        continue;
      }
      (o.free_for >= placement_options().stranded_after ? stranded : waiting) = true;
    }
    if (stranded) {
      const Duration first = 10 * options_.reconcile_every;
      balance_backoff_ =
          std::min(balance_backoff_ == Duration::zero() ? first : 2 * balance_backoff_, 64 * first);
      no_balance_until_ = now + balance_backoff_;
      balanced_away_.clear();
      log_to(
          options_.logger, LogLevel::kWarn,
          "connections handed over to balance the fleet were not taken; balancing again in {} ms",
          to_ms(balance_backoff_));
    } else if (!waiting && now - balanced_at_ >= options_.reconcile_every) {
      balanced_away_.clear();  // taken
      balance_backoff_ = Duration::zero();
    }
  }
  if (now < no_balance_until_) return false;
  // A member that takes nothing (note_members) holds nothing back.
  return std::none_of(others.begin(), others.end(), [&](const MemberFigures& m) {
    const auto at_balance = figures_at_balance_.find(m.id);
    return m.taking && at_balance != figures_at_balance_.end() &&
           at_balance->second == figures_seen_.at(m.id).updated_at_ms;
  });
}

// Half a reconcile period between ranks; stranded after four.
PlacementOptions Worker::Impl::placement_options() const {
  return {options_.reconcile_every / 2, 4 * options_.reconcile_every};
}

// Acquires `seen` (as the index showed it), reads it back consistently (the
// index may lag the checkpoint), and starts streaming from last_seq. With a
// session, the lease belongs to it, and one of a session that has ended is
// taken on that session's owner and token.
bool Worker::Impl::acquire(const Connection& seen, bool own_session) {
  AcquireOptions o;
  o.owner = options_.id;
  o.holder = options_.id;
  o.ttl = options_.lease_ttl;
  // A token of its own: should the outcome stay unknown, the lease it may
  // have taken can be released by name.
  o.token = fresh_token();
  o.extra_condition =
      cond::eq(kDesiredStateAttr, std::string(desired_state_name(DesiredState::kStarted)));
  std::optional<SessionNow> session;
  if (sessions()) {
    session = current_session();
    if (!session) return false;  // none to trust: the control loop starts one
    o.session = session->token;
    const auto dead = dead_sessions_.find(seen.session);
    if (own_session) {
      // Its own session's lease, lost track of: only while it is that lease.
      const SlotNames lease_names(kDefaultSlot);
      o.ended_session = AcquireOptions::SessionRef{options_.id, session->token};
      o.extra_condition = std::move(o.extra_condition) && cond::eq(lease_names.token, seen.token) &&
                          cond::gt(lease_names.expires_at_ms, int64_t{0});
    } else if (!seen.session.empty() && dead != dead_sessions_.end() &&
               dead->second.owner == seen.owner) {
      o.ended_session = AcquireOptions::SessionRef{seen.owner, seen.session};
    }
  }
  bool late = false;
  Result<Lease> lease = conn_leases_.acquire(connection_key(seen.id), o, &late);
  if (!lease.ok()) {
    if (lease.status().code() == Code::kAlreadyExists) {
      ++conflicts_;  // another worker took it first (or it was stopped)
      m_.conflicts.inc();
    } else {
      log_to(options_.logger, LogLevel::kWarn, "acquiring {}: {}", seen.id,
             lease.status().message());
    }
    // No answer came: the write may land yet, and take a lease this worker
    // would not know it holds. It is watched for, by its token.
    if (late) {
      Lease attempt;
      attempt.key = connection_key(seen.id);
      attempt.slot = o.slot;
      attempt.owner = o.owner;
      attempt.token = o.token;
      watch_acquisition(seen.id, std::move(attempt));
    }
    return false;
  }
  return adopt(seen, *lease, session, o.ended_session.has_value());
}

// Starts streaming a lease just acquired, from its checkpoint read back
// consistently (the index may lag it). A lease it cannot stream is given
// back.
bool Worker::Impl::adopt(const Connection& seen, const Lease& lease,
                         const std::optional<SessionNow>& session, bool from_session) {
  Result<Item> item = store_.get(kConnectionsTable, connection_key(seen.id), /*consistent=*/true);
  Result<Connection> now = item.ok() ? parse_connection(*item) : Result<Connection>(item.status());
  if (!now.ok() || now->owner != options_.id || now->token != lease.token) {
    log_to(options_.logger, LogLevel::kWarn,
           "connection {} could not be read after it was acquired{}", seen.id,
           now.ok() ? " (it changed)" : ": " + now.status().message());
    const Status released = conn_leases_.release(lease, ReleaseMode::kExpire);
    if (!released.ok() && released.code() != Code::kFailedPrecondition) {
      release_later(seen.id, lease, Update());
    }
    return false;
  }
  auto stream = std::make_shared<Stream>(now->id, now->ws_url, split_seq_field(now->seq_field));
  if (session) stream->session_gen = session->gen;
  const MonoTime deadline = deadline_of(*stream, lease);
  if (clock_.mono_now() >= deadline) {  // the session ended while acquiring
    log_to(options_.logger, LogLevel::kWarn, "acquired {} after its session's deadline", seen.id);
    return false;  // nothing is written after it; the lease goes with the session
  }
  // The lease before this one (epoch - 1, as the index showed it) may have
  // got further than the item says: its session's positions tell. Where it
  // did, the item is told before anything is streamed, so that whoever takes
  // the connection next finds at least that.
  int64_t from = now->last_seq;
  // Taken over: where the holder before recorded its last message (its
  // positions, or without a session the item), for the takeover's gap.
  int64_t prior_message_at_ms = seen.session.empty() ? now->last_message_at_ms : 0;
  if (!seen.session.empty() && seen.epoch == lease.epoch - 1) {
    const Position prior = prior_position(seen.session, seen.id, seen.epoch);
    from = std::max(from, prior.seq);
    prior_message_at_ms = prior.last_message_at_ms;
  }
  if (from > now->last_seq) {
    const Result<Item> told =
        conn_leases_.fenced_write(lease, Update().set(kLastSeqAttr, from),
                                  cond::lt(kLastSeqAttr, from) || cond::not_exists(kLastSeqAttr));
    if (!told.ok() && told.status().code() != Code::kConditionFailed) {
      log_to(options_.logger, LogLevel::kWarn, "writing where {} resumes: {}", seen.id,
             told.status().message());
    }
  }
  {
    MutexLock l(stream->mu);
    stream->epoch = lease.epoch;
    stream->valid_until = deadline;
    stream->written_seq = stream->checkpointed_seq = stream->resume_seq = from;
    stream->last_error = now->last_error;
    stream->acquired_at = clock_.mono_now();
    stream->taken_after_message_at_ms = taken_over(seen) ? prior_message_at_ms : 0;
  }
  std::weak_ptr<Stream> weak = stream;
  stream->renew_id = renewer_.add(lease, [this, weak](const Lease&, const Status& why) {
    if (auto s = weak.lock()) lose(s, why);
  });
  sync("acquire:before_insert");
  {
    MutexLock lock(mu_);
    streams_[stream->id] = stream;
  }
  // A session lost since the check above took its snapshot of the streams
  // (on_session_lost()) before this one was in it: it is lost here instead.
  if (session && session_valid_until(stream->session_gen) <= clock_.mono_now()) {
    lose_with_session(stream, failed_precondition("its session was lost while it was acquired"));
    return false;
  }
  note_acquired(seen, stream->id, lease.epoch, from, from_session);
  connect(stream);
  return true;
}

void Worker::Impl::note_acquired(const Connection& seen, const std::string& id, int64_t epoch,
                                 int64_t from_seq, bool from_session) {
  ++acquired_;
  const bool takeover = taken_over(seen);
  if (takeover) {
    ++takeovers_;
    m_.takeovers.inc();
  }
  m_.owned.set(static_cast<double>(snapshot().size()));
  log_to(options_.logger, LogLevel::kInfo, "acquired {} (epoch {}, from seq {}{}{})", id, epoch,
         from_seq, takeover ? ", taken over from " + seen.owner : "",
         from_session ? " after its session ended" : "");
}

Position Worker::Impl::prior_position(const std::string& session, const std::string& id,
                                      int64_t epoch) {
  auto it = positions_read_.find(session);
  if (it == positions_read_.end()) {
    Result<Positions> read = read_positions(store_, session, /*consistent=*/true);
    if (!read.ok()) {
      // Not remembered: the next acquisition reads again.
      log_to(options_.logger, LogLevel::kWarn, "{}", read.status().message());
      return Position{};
    }
    it = positions_read_.emplace(session, *std::move(read)).first;
  }
  const Position* p = find_position(it->second, id, epoch);
  return p != nullptr ? *p : Position{};
}

std::string Worker::Impl::fresh_token() {
  MutexLock lock(random_mu_);
  return random_token(random_);
}

// This worker's figures on its membership item, for the others' balancing
// and for the fleet API.
void Worker::Impl::write_figures() {
  // With a session, the figures go out with its next heartbeat, whatever
  // else it writes: every reconcile, at no cost. Without one they are a
  // write of their own, which is spared when it can be. Early reconciles (a
  // lease about to expire) write none: the others read the figures about
  // once a reconcile period.
  const MonoTime at = clock_.mono_now();
  if (!sessions() && figures_written_at_ != MonoTime{} &&
      at - figures_written_at_ < options_.reconcile_every * 7 / 10) {
    return;
  }
  // What the others act on (what it owns, whether it takes, its earlier
  // sessions) goes out in the reconcile it changes; otherwise the figures
  // are written every kFiguresEvery reconcile periods: each write is a
  // write unit on the table and one on the index of members, on DynamoDB.
  const std::string shown = std::to_string(snapshot().size()) + (taking_ ? " taking " : " ") +
                            join_sessions(previous_sessions_);
  if (!sessions() && figures_written_at_ != MonoTime{} && shown == figures_shown_ &&
      at - figures_written_at_ < options_.reconcile_every * (10 * kFiguresEvery - 3) / 10) {
    return;
  }
  figures_shown_ = shown;
  figures_written_at_ = at;
  std::optional<Renewer::Id> member;
  double rate = 0;
  const uint64_t messages = messages_.load();
  {
    MutexLock lock(mu_);
    member = member_id_;
    const MonoTime now = clock_.mono_now();
    const double seconds = std::chrono::duration<double>(now - last_figures_at_).count();
    if (seconds > 0) rate = static_cast<double>(messages - messages_at_last_figures_) / seconds;
    messages_at_last_figures_ = messages;
    last_figures_at_ = now;
  }
  if (!member) return;
  std::optional<Lease> lease = member_renewer_.get(*member);
  if (!lease) return;
  Update figures = member_figures(
      static_cast<int64_t>(snapshot().size()), static_cast<int64_t>(options_.max_connections),
      static_cast<int64_t>(messages), rate, to_unix_ms(clock_.wall_now()), taking_);
  figures.append(stream_figures(stream_counts()));
  // Its earlier sessions, less those it has found nothing left of.
  if (previous_sessions_.empty()) {
    figures.remove(kPreviousSessionsAttr);
  } else {
    figures.set(kPreviousSessionsAttr, join_sessions(previous_sessions_));
  }
  if (sessions()) {
    // With its heartbeat, within a session renew period: no write of its own.
    member_renewer_.carry(*member, std::move(figures));
    return;
  }
  Result<Item> written = member_leases_.fenced_write(*lease, figures);
  if (!written.ok()) {
    log_to(options_.logger, LogLevel::kDebug, "writing membership figures: {}",
           written.status().message());
  }
}

// The connections it holds that need attention (fleet/members.h): not
// streaming for kAttentionAfter or more, or stalled; longest first. Each
// keeps the time it was first seen so, so that the item is written only
// when what it says changes.
void Worker::Impl::write_attention() {
  const MonoTime now = clock_.mono_now();
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  const auto wall_of = [&](MonoTime t) { return now_ms - to_ms(now - t); };
  std::map<std::string, Trouble, std::less<>> found;
  for (const auto& s : snapshot()) {
    MutexLock l(s->mu);
    if (s->state == State::kClosing || s->state == State::kLost) continue;
    Trouble t{s->id, "", 0};
    if (s->state != State::kStreaming) {
      const MonoTime since = std::max(s->acquired_at, s->closed_at);
      if (now - since < options_.attention_after) continue;
      t.reason = "not_streaming";
      t.since_ms = wall_of(since);
    } else if (stalled(*s, now)) {
      t.reason = "stalled";
      t.since_ms = wall_of(std::max(s->acquired_at, s->last_message_mono));
    } else {
      continue;
    }
    const auto seen = troubles_seen_.find(s->id);
    if (seen != troubles_seen_.end() && seen->second.reason == t.reason) t = seen->second;
    found.emplace(s->id, std::move(t));
  }
  troubles_seen_ = found;
  std::vector<Trouble> troubles;
  for (auto& [id, t] : found) troubles.push_back(std::move(t));
  std::stable_sort(troubles.begin(), troubles.end(),
                   [](const Trouble& a, const Trouble& b) { return a.since_ms < b.since_ms; });
  if (troubles.size() > kAttentionMax) troubles.resize(kAttentionMax);
  const std::string text = format_troubles(troubles);
  std::optional<Renewer::Id> member;
  {
    MutexLock lock(mu_);
    member = member_id_;
  }
  const std::optional<Lease> lease = member ? member_renewer_.get(*member) : std::nullopt;
  if (!lease ||
      (text == attention_written_ && (text.empty() || lease->token == attention_session_))) {
    return;
  }
  Status written;
  if (text.empty()) {
    written = store_.remove(kWorkersTable, attention_key(options_.id), Condition());
    if (written.code() == Code::kNotFound) written = {};
  } else {
    Item item{{"Pk", attention_key(options_.id).pk},
              {"session", lease->token},
              {"attention", text},
              {"written_at_ms", now_ms}};
    written = store_.put(kWorkersTable, item, Condition());
  }
  if (!written.ok()) {
    log_to(options_.logger, LogLevel::kDebug, "writing what needs attention: {}",
           written.message());
    return;  // again next reconcile
  }
  attention_written_ = text;
  attention_session_ = lease->token;
}

// After a handover to balance: the other members' figures as they stand
// now, so that the next balancing waits until each has written them again
// (as read before the handover if they cannot be read now).
void Worker::Impl::note_figures_at_balance(const std::vector<Member>* before) {
  const Result<std::vector<Member>> now = list_members(store_, clock_, /*alive_only=*/true);
  const std::vector<Member>* members = now.ok() ? &*now : before;
  if (members != nullptr) {
    remember_figures(*members);
  } else {
    figures_at_balance_.clear();
  }
}

// The next balancing waits until each of `members` has written figures
// newer than these.
void Worker::Impl::remember_figures(const std::vector<Member>& members) {
  figures_at_balance_.clear();
  for (const Member& m : members) {
    if (m.id != options_.id) figures_at_balance_.insert_or_assign(m.id, m.updated_at_ms);
  }
}

}  // namespace leasehold::fleet
