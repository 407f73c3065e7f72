// Placement: which orphaned connections a worker tries to take, and when,
// and how many of its own it hands over to balance the fleet. The worker's
// reconcile gathers what it read (the other members' figures, the orphans it
// found) and acts on the plan; nothing here reads a clock or a store.
//
// Shares come from fair_share() (fleet/balance.h). On top of them:
//
//   - Takeovers are spread by rendezvous hashing. For each orphan, the
//     members that may take it are ranked by a hash of (member, connection)
//     that every worker computes alike; the first tries at once, the r-th
//     only once the orphan has been free for r staggers in its own sight.
//     So after a crash each orphan is tried by one worker, not by every
//     worker in the same order at the same instant, and failed conditional
//     writes stay O(orphans) rather than O(workers x orphans).
//   - Who may take an orphan: a member that takes connections (its figures
//     are fresh and it says it can), other than the orphan's last owner when
//     that owner died, and below its share for a connection handed over (or
//     new), or below its capacity for one whose owner died (recovery first,
//     balance after).
//   - An orphan whose owner died and is back (it joined again under the
//     same ID, in a new session) goes back to it first: it ranks ahead of
//     every other member, so a worker that restarts takes its connections
//     back at once, and the others are there if it does not.
//   - An orphan free for `stranded_after` is taken by any member with room
//     below its capacity, whatever the shares say: a member that was handed
//     connections and never takes them (it crashed after joining, or cannot
//     read the index) holds nothing up for longer than that.
//
// Pure functions, safe from any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/clock.h"

namespace leasehold::fleet {

// Another live member, as its figures say.
struct MemberFigures {
  std::string id;
  int64_t owned = 0;
  int64_t capacity = 0;
  // Its figures are fresh and it can take connections. One that cannot is
  // given nothing: its capacity counts as what it owns.
  bool taking = true;
};

// A connection this worker found free in the orphan index.
struct OrphanSeen {
  std::string id;
  std::string last_owner;  // "" if it was never leased
  bool crashed = false;    // its lease expired; it was not handed over
  Duration free_for{};     // how long this worker has seen it free; 0 at first sight
  // Crashed, and its last owner is a live member again, in a newer session.
  bool owner_back = false;
  // The change feed's reader named it to this member (fleet/feed_reader.h):
  // its turn is now, whatever its rank, and it may be taken beyond the share
  // (up to capacity). The one reader placed it by the members' figures,
  // counting its own worker as it is, while each member counts the others
  // by figures that lag: a member that waited until its own count agreed
  // would leave it free for a reconcile period or more.
  bool hinted = false;
};

struct PlacementOptions {
  Duration stagger{};         // between one rank's turn and the next
  Duration stranded_after{};  // free this long: anyone with room takes it
};

// One orphan to try now.
struct Attempt {
  size_t orphan = 0;  // index into the orphans given
  // May be taken beyond the share, up to capacity: its owner died, it has
  // waited past stranded_after, or the reader named it to this member.
  bool beyond_share = false;
};

struct Placement {
  int64_t share = 0;              // this worker's fair share
  std::vector<Attempt> attempts;  // in order: earliest due first
  // Connections to hand over to balance the fleet (0 unless allowed, no
  // orphan waits, and a member that takes connections is below its share).
  int64_t hand_over = 0;
  // How long until an orphan not tried now falls due; Duration::max() if none.
  Duration next_due = Duration::max();
};

// The plan of worker `me`, which owns `owned` of at most `capacity`, given the
// other live members and the orphans it found. `may_hand_over` is false while
// the others' figures may leave out what it handed over last.
// REQUIRES: no member in `others` is named `me`.
Placement place(std::string_view me, int64_t owned, int64_t capacity,
                std::span<const MemberFigures> others, std::span<const OrphanSeen> orphans,
                bool may_hand_over, const PlacementOptions& options);

// Where `member` ranks for `connection` against the others (higher first):
// a 64-bit FNV-1a hash, the same on every machine and build.
uint64_t rendezvous_weight(std::string_view member, std::string_view connection);

}  // namespace leasehold::fleet
