// The fleet at a glance, at a cost that does not grow with its connections
// (GET /api/fleet/summary): how many connections there are by desired
// state, how the live workers' connections stream (their figures,
// fleet/members.h), and the STARTED connections no live worker holds, the
// longest free first.
//
// The counts by desired state are an item of fleet_workers, so that
// nobody reads every connection to know them:
//
//   Pk              "COUNTS#connections"
//   started         connections whose desired state is STARTED
//   stopped         ... STOPPED (tombstones are not counted)
//   gen             raised with every change of the counts
//   counted_at_ms   when the connections were last counted all (0: never)
//
// Connections (fleet/connections.h) adds to them after each write that
// changes them: add, start, stop, rm; and once after the writes of a bulk
// add (add_many), by the number it added. A process that dies between its
// write and the count's, or another tool that writes items itself, leaves
// them off: the fleet's leader counts every connection every kRecountEvery
// (and a server that finds them never counted does once), and writes what
// it counted only if no change came while it read (`gen`), so that a count
// never undoes a change it did not see.
//
// Thread-safe: plain functions on a store.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "fleet/members.h"
#include "leasehold/clock.h"
#include "leasehold/status.h"
#include "leasehold/store.h"

namespace leasehold::fleet {

inline constexpr char kCountsPk[] = "COUNTS#connections";
inline constexpr std::chrono::minutes kRecountEvery{10};

struct ConnectionCounts {
  int64_t started = 0;
  int64_t stopped = 0;
  int64_t gen = 0;
  int64_t counted_at_ms = 0;  // 0: never counted (the item may not exist)
};

// Adds `started` and `stopped` to the counts (any amounts, negative to
// take away): one write, whatever they are, so that a change of many
// connections (Connections::add_many) writes the counts once.
Status count_change(ItemStore& store, int64_t started, int64_t stopped);

// The counts as stored; zero, never counted, without an item.
Result<ConnectionCounts> read_counts(ItemStore& store, bool consistent);

// Every connection by desired state, read from the orphan index (both
// states): what a recount writes. Costs what listing them all does.
Result<ConnectionCounts> count_connections(ItemStore& store);

// Writes `counted` (its started and stopped) as the counts at `now_ms`, if
// the counts have not changed since `before` was read (a consistent read):
// kFailedPrecondition if they have.
Status write_recount(ItemStore& store, const ConnectionCounts& before,
                     const ConnectionCounts& counted, int64_t now_ms);

// Counts every connection and writes the counts, once: read, count, write.
// kFailedPrecondition if a change came meanwhile (try again later).
Status recount_connections(ItemStore& store, Clock& clock);

// A STARTED connection that no live worker holds.
struct FreeConnection {
  std::string id;
  int64_t free_since_ms = 0;  // its lease's end, or its creation if never leased
  std::string last_error;
};

// A connection a live worker holds that needs attention (its attention
// item, fleet/members.h).
struct HeldTrouble {
  std::string owner;
  Trouble trouble;
};

struct FleetSummary {
  int64_t now_ms = 0;
  ConnectionCounts counts;
  std::vector<Member> members;  // alive or not, by ID
  // Over the live members: what they own, and how it streams (from those
  // whose figures say: streams_known is false if one does not).
  int64_t owned = 0;
  StreamCounts streams;
  bool streams_known = true;
  // The STARTED connections no live worker holds, longest free first, at
  // most the number asked for; more_free: there are more.
  std::vector<FreeConnection> free;
  bool more_free = false;
  // What the live workers whose figures count trouble say of it, longest
  // first (each worker names its kAttentionMax longest).
  std::vector<HeldTrouble> troubled;
};

// The members, the counts (eventually consistent), the first `free_max`
// free connections, and what the live workers hold that needs attention: a
// query of the members' index, one read, a query of the orphan index that
// stops after `free_max`, and a read of the attention item of each live
// worker whose figures count connections not streaming or stalled.
Result<FleetSummary> read_summary(ItemStore& store, Clock& clock, size_t free_max);

}  // namespace leasehold::fleet
