// Placement: shares, rendezvous ranks, and the plan of one reconcile.
#include "fleet/placement.h"

#include <algorithm>
#include <cassert>
#include <cstdint>

#include "fleet/balance.h"

namespace leasehold::fleet {
namespace {

// What decides whether a member may take an orphan.
struct Candidate {
  std::string_view id;
  int64_t owned = 0;
  int64_t capacity = 0;
  int64_t share = 0;
  bool taking = true;
};

bool may_take(const Candidate& m, const OrphanSeen& orphan, bool stranded) {
  if (!m.taking) return false;
  if (stranded) return m.owned < m.capacity;
  if (orphan.crashed) {
    return (orphan.owner_back || m.id != orphan.last_owner) && m.owned < m.capacity;
  }
  return m.owned < m.share;
}

// A member's weight for an orphan: its rendezvous weight, or the highest of
// all for the orphan's owner, back from a crash.
uint64_t weight(std::string_view member, const OrphanSeen& orphan) {
  if (orphan.owner_back && member == orphan.last_owner) return UINT64_MAX;
  return rendezvous_weight(member, orphan.id);
}

// Ahead of `me` for this connection: a higher weight, or an equal one and a
// smaller ID (so that every worker orders the members alike).
bool ranks_before(std::string_view other, uint64_t other_weight, std::string_view me,
                  uint64_t my_weight) {
  return other_weight > my_weight || (other_weight == my_weight && other < me);
}

}  // namespace

uint64_t rendezvous_weight(std::string_view member, std::string_view connection) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a, 64 bits
  const auto mix = [&h](std::string_view s) {
    for (const char c : s) {
      h ^= static_cast<unsigned char>(c);
      h *= 1099511628211ull;
    }
  };
  mix(member);
  h ^= 0xff;  // a byte no ID holds, between the two
  h *= 1099511628211ull;
  mix(connection);
  // MurmurHash3's finaliser: FNV alone barely moves its top bits between
  // IDs that differ only at their end ("w1", "w2"), and ranks compare those.
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

Placement place(std::string_view me, int64_t owned, int64_t capacity,
                std::span<const MemberFigures> others, std::span<const OrphanSeen> orphans,
                bool may_hand_over, const PlacementOptions& options) {
  // A member that does not take connections counts as full at what it owns.
  std::vector<int64_t> capacities{capacity};
  int64_t total = owned + static_cast<int64_t>(orphans.size());
  for (const MemberFigures& m : others) {
    assert(m.id != me);
    capacities.push_back(m.taking ? std::max<int64_t>(m.capacity, 0) : m.owned);
    total += m.owned;
  }
  std::vector<Candidate> members;
  members.reserve(others.size());
  for (size_t i = 0; i < others.size(); ++i) {
    const MemberFigures& m = others[i];
    members.push_back(
        {m.id, m.owned, capacities[i + 1], fair_share(total, capacities, i + 1), m.taking});
  }
  Placement plan;
  plan.share = fair_share(total, capacities, 0);

  if (may_hand_over && orphans.empty() && owned > plan.share &&
      std::any_of(members.begin(), members.end(),
                  [](const Candidate& m) { return m.taking && m.owned < m.share; })) {
    plan.hand_over = owned - plan.share;
    return plan;
  }

  const Candidate self{me, owned, capacity, plan.share, true};
  std::vector<std::pair<Duration, size_t>> due_now;
  for (size_t j = 0; j < orphans.size(); ++j) {
    const OrphanSeen& orphan = orphans[j];
    const bool stranded = orphan.free_for >= options.stranded_after;
    // A hinted one was placed here by the reader, by every member's
    // figures as it read them: this member takes it if it has room at all.
    const bool hinted = orphan.hinted && owned < capacity;
    if (!hinted && !may_take(self, orphan, stranded)) continue;
    const uint64_t my_weight = weight(me, orphan);
    int64_t rank = 0;
    for (const Candidate& m : members) {
      if (may_take(m, orphan, stranded) &&
          ranks_before(m.id, weight(m.id, orphan), me, my_weight)) {
        ++rank;
      }
    }
    const Duration due = orphan.hinted ? Duration::zero() : options.stagger * rank;
    if (orphan.free_for >= due) {
      due_now.push_back({due, j});
    } else {
      plan.next_due = std::min(plan.next_due, due - orphan.free_for);
    }
  }
  std::sort(due_now.begin(), due_now.end());
  for (const auto& [due, j] : due_now) {
    const bool stranded = orphans[j].free_for >= options.stranded_after;
    plan.attempts.push_back({j, orphans[j].crashed || stranded || orphans[j].hinted});
  }
  return plan;
}

}  // namespace leasehold::fleet
