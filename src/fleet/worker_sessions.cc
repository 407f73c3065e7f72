// The worker's session (fleet/worker.h): what it may trust of its own, and
// the connections of the sessions of others that have ended.
#include "base/logging.h"
#include "fleet/schema.h"
#include "fleet/worker_impl.h"

namespace leasehold::fleet {

using worker_parts::Stream;

Duration Worker::Impl::session_renew_every() const {
  if (options_.session_renew_every > Duration::zero()) return options_.session_renew_every;
  return default_renew_every(options_.lease, options_.session_ttl);
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
// session). The control loop starts a new session.
void Worker::Impl::on_session_lost(const Status& why) {
  {
    MutexLock lock(session_mu_);
    session_id_.reset();
  }
  for (const std::shared_ptr<Stream>& s : snapshot()) {
    lose(s, failed_precondition("its session was lost: " + why.message()));
    // Nor is its own lease renewed again: a renewal falling due just after
    // a pause would be a write past the session's deadline.
    (void)renewer_.remove(s->renew_id);
  }
}

// The sessions that have ended: each member's, once it has expired by this
// clock (ended here first, so that no renewal its worker sent lands after),
// and the one each member held before its current one. Each is swept until
// its index shows none of its STARTED connections left with their lease.
std::vector<Connection> Worker::Impl::dead_session_orphans(const std::vector<Member>& members) {
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  const MonoTime now = clock_.mono_now();
  std::vector<Connection> out;
  struct Dead {
    const std::string* owner;
    const std::string* token;
    bool to_end;  // expired, not yet zeroed: ended by this worker
  };
  std::vector<Dead> dead;
  for (const Member& m : members) {
    if (m.id != options_.id && m.session_ttl_ms > 0 && !m.session.empty() &&
        m.expires_at_ms < now_ms) {
      dead.push_back({&m.id, &m.session, m.expires_at_ms != 0});
    }
    if (!m.previous_session.empty()) dead.push_back({&m.id, &m.previous_session, false});
  }
  for (const Dead& d : dead) {
    auto it = dead_sessions_.find(*d.token);
    if (it != dead_sessions_.end() && it->second.swept) continue;
    if (it == dead_sessions_.end()) {
      if (d.to_end) {
        const Status ended = member_leases_.end_session(
            LeaseRef{worker_key(*d.owner), std::string(kDefaultSlot), *d.owner, *d.token});
        if (!ended.ok()) {  // renewed meanwhile, or the store failed: next time
          log_to(options_.logger, LogLevel::kDebug, "ending the session of {}: {}", *d.owner,
                 ended.message());
          continue;
        }
        ++sessions_ended_;
        log_to(options_.logger, LogLevel::kInfo, "ended the expired session of worker {}",
               *d.owner);
      }
      it = dead_sessions_.emplace(*d.token, DeadSession{*d.owner, now}).first;
    }
    const size_t before = out.size();
    const Status swept = sweep_session(*d.owner, *d.token, out);
    if (!swept.ok()) {
      log_to(options_.logger, LogLevel::kWarn, "finding the connections of {}'s session: {}",
             *d.owner, swept.message());
      continue;
    }
    // The index may lag a lease taken just before the session died: it is
    // read again for two reconcile periods before the session counts as swept.
    if (out.size() == before && now - it->second.first_seen >= 2 * options_.reconcile_every) {
      it->second.swept = true;
    }
  }
  return out;
}

// The STARTED connections still held under the session (its owner and
// token, not released), which this worker does not own.
Status Worker::Impl::sweep_session(const std::string& owner, const std::string& token,
                                   std::vector<Connection>& out) {
  QueryOptions q;
  q.limit = kQueryLimitMax;
  do {
    Result<Page> page =
        store_.query_index(kConnectionsTable, kSessionIndex, token, KeyRange::all(), q);
    if (!page.ok()) return page.status();
    for (const Item& item : page->items) {
      Result<Connection> c = parse_connection(item);
      if (!c.ok() || c->owner != owner || c->session != token || c->expires_at_ms == 0 ||
          c->desired_state != DesiredState::kStarted || find(c->id) != nullptr) {
        continue;
      }
      out.push_back(std::move(*c));
    }
    q.cursor = page->next_cursor;
  } while (!q.cursor.empty());
  return {};
}

}  // namespace leasehold::fleet
