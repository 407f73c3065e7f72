// The fleet summary and the counts of connections by desired state.
#include "fleet/summary.h"

#include <algorithm>

#include "fleet/connections.h"
#include "fleet/schema.h"

namespace leasehold::fleet {
namespace {

constexpr char kStartedAttr[] = "started";
constexpr char kStoppedAttr[] = "stopped";
constexpr char kGenAttr[] = "gen";
constexpr char kCountedAtMsAttr[] = "counted_at_ms";

Key counts_key() { return Key{kCountsPk, ""}; }

// When a free connection became free, as near as its item says: its
// lease's end; a lease released or never taken has none (0), so its last
// heartbeat, or its creation.
int64_t free_since(const Connection& c) {
  if (c.expires_at_ms > 0) return c.expires_at_ms;
  return c.heartbeat_at_ms > 0 ? c.heartbeat_at_ms : c.created_at_ms;
}

// Counts the connections of one desired state, page by page.
Result<int64_t> count_state(ItemStore& store, DesiredState state) {
  int64_t n = 0;
  QueryOptions q;
  q.limit = kQueryLimitMax;
  do {
    LEASEHOLD_ASSIGN_OR_RETURN(
        Page page, store.query_index(kConnectionsTable, kOrphanIndex, desired_state_name(state),
                                     KeyRange::all(), q));
    for (const Item& item : page.items) {
      if (parse_connection(item).ok()) ++n;
    }
    q.cursor = page.next_cursor;
  } while (!q.cursor.empty());
  return n;
}

// The STARTED connections whose lease has ended (the orphan index, the
// longest ended first) and those held under the sessions of members that
// are not alive (which a live worker would have ended and swept), at most
// `max` of both.
Status find_free(ItemStore& store, const std::vector<Member>& members, int64_t now_ms, size_t max,
                 FleetSummary& out) {
  QueryOptions q;
  q.limit = static_cast<int>(std::min<size_t>(max + 1, kQueryLimitMax));
  LEASEHOLD_ASSIGN_OR_RETURN(
      Page page,
      store.query_index(kConnectionsTable, kOrphanIndex, desired_state_name(DesiredState::kStarted),
                        KeyRange::le(now_ms), q));
  for (const Item& item : page.items) {
    Result<Connection> c = parse_connection(item);
    if (c.ok()) out.free.push_back({c->id, free_since(*c), c->last_error});
  }
  out.more_free = !page.next_cursor.empty();
  for (const Member& m : members) {
    if (m.alive || m.session.empty()) continue;
    QueryOptions s;
    s.limit = q.limit;
    Result<Page> held =
        store.query_index(kConnectionsTable, kSessionIndex, m.session, KeyRange::all(), s);
    if (!held.ok()) return held.status();
    for (const Item& item : held->items) {
      Result<Connection> c = parse_connection(item);
      if (!c.ok() || c->desired_state != DesiredState::kStarted || c->expires_at_ms <= now_ms) {
        continue;  // not STARTED, or found above
      }
      out.free.push_back({c->id, m.expires_at_ms, c->last_error});
    }
    out.more_free = out.more_free || !held->next_cursor.empty();
  }
  std::stable_sort(out.free.begin(), out.free.end(),
                   [](const FreeConnection& a, const FreeConnection& b) {
                     return a.free_since_ms < b.free_since_ms;
                   });
  if (out.free.size() > max) {
    out.free.resize(max);
    out.more_free = true;
  }
  return {};
}

// What each live worker whose figures count connections not streaming or
// stalled says of them in its attention item, if it wrote it in its live
// session; longest in trouble first.
Status find_troubled(ItemStore& store, const std::vector<Member>& members,
                     std::vector<HeldTrouble>& out) {
  for (const Member& m : members) {
    if (!m.alive || !m.streams || (m.streams->streaming >= m.owned && m.streams->stalled == 0)) {
      continue;
    }
    Result<Item> item = store.get(kWorkersTable, attention_key(m.id), /*consistent=*/false);
    if (item.status().code() == Code::kNotFound) continue;
    if (!item.ok()) return item.status().with_context("reading what needs attention");
    if (get_string_or(*item, "session") != m.session) continue;  // an earlier session's
    for (Trouble& t : parse_troubles(get_string_or(*item, "attention"))) {
      out.push_back({m.id, std::move(t)});
    }
  }
  std::stable_sort(out.begin(), out.end(), [](const HeldTrouble& a, const HeldTrouble& b) {
    return a.trouble.since_ms < b.trouble.since_ms;
  });
  return {};
}

}  // namespace

Status count_change(ItemStore& store, int64_t started, int64_t stopped) {
  Update u;
  u.add(kStartedAttr, started).add(kStoppedAttr, stopped).add(kGenAttr, 1).returning_updated_only();
  return store.update(kWorkersTable, counts_key(), u, Condition()).status();
}

Result<ConnectionCounts> read_counts(ItemStore& store, bool consistent) {
  Result<Item> item = store.get(kWorkersTable, counts_key(), consistent);
  if (item.status().code() == Code::kNotFound) return ConnectionCounts{};
  if (!item.ok()) return item.status().with_context("reading the connection counts");
  return ConnectionCounts{get_int_or(*item, kStartedAttr), get_int_or(*item, kStoppedAttr),
                          get_int_or(*item, kGenAttr), get_int_or(*item, kCountedAtMsAttr)};
}

Result<ConnectionCounts> count_connections(ItemStore& store) {
  ConnectionCounts counted;
  LEASEHOLD_ASSIGN_OR_RETURN(counted.started, count_state(store, DesiredState::kStarted));
  LEASEHOLD_ASSIGN_OR_RETURN(counted.stopped, count_state(store, DesiredState::kStopped));
  return counted;
}

Status write_recount(ItemStore& store, const ConnectionCounts& before,
                     const ConnectionCounts& counted, int64_t now_ms) {
  Update u;
  u.set(kStartedAttr, counted.started)
      .set(kStoppedAttr, counted.stopped)
      .set(kCountedAtMsAttr, now_ms)
      .add(kGenAttr, 1)
      .returning_updated_only();
  const Condition unchanged =
      before.gen == 0 ? cond::not_exists(kGenAttr) : cond::eq(kGenAttr, before.gen);
  Result<Item> written = store.update(kWorkersTable, counts_key(), u, unchanged);
  if (written.status().code() == Code::kConditionFailed) {
    return failed_precondition("the connection counts changed while they were counted");
  }
  return written.status();
}

Status recount_connections(ItemStore& store, Clock& clock) {
  LEASEHOLD_ASSIGN_OR_RETURN(ConnectionCounts before, read_counts(store, /*consistent=*/true));
  LEASEHOLD_ASSIGN_OR_RETURN(ConnectionCounts counted, count_connections(store));
  return write_recount(store, before, counted, to_unix_ms(clock.wall_now()));
}

Result<FleetSummary> read_summary(ItemStore& store, Clock& clock, size_t free_max) {
  FleetSummary s;
  s.now_ms = to_unix_ms(clock.wall_now());
  LEASEHOLD_ASSIGN_OR_RETURN(s.members, list_members(store, clock, /*alive_only=*/false));
  LEASEHOLD_ASSIGN_OR_RETURN(s.counts, read_counts(store, /*consistent=*/false));
  for (const Member& m : s.members) {
    if (!m.alive) continue;
    s.owned += m.owned;
    if (!m.streams) {
      s.streams_known = false;
      continue;
    }
    s.streams.streaming += m.streams->streaming;
    s.streams.reconnecting += m.streams->reconnecting;
    s.streams.stalled += m.streams->stalled;
    s.streams.erroring += m.streams->erroring;
  }
  if (free_max > 0) {
    LEASEHOLD_RETURN_IF_ERROR(find_free(store, s.members, s.now_ms, free_max, s)
                                  .with_context("finding free connections"));
  }
  LEASEHOLD_RETURN_IF_ERROR(find_troubled(store, s.members, s.troubled));
  return s;
}

}  // namespace leasehold::fleet
