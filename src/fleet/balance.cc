// Water-filling shares.
#include "fleet/balance.h"

#include <algorithm>
#include <cassert>

namespace leasehold::fleet {

int64_t fair_share(int64_t total, const std::vector<int64_t>& capacities, size_t me) {
  assert(me < capacities.size());
  std::vector<int64_t> sorted = capacities;
  std::sort(sorted.begin(), sorted.end());
  int64_t remaining = std::max<int64_t>(total, 0);
  for (size_t i = 0; i < sorted.size(); ++i) {
    const int64_t left = static_cast<int64_t>(sorted.size() - i);
    const int64_t level = (remaining + left - 1) / left;  // rounded up
    if (sorted[i] >= level) return std::min(capacities[me], level);
    remaining -= sorted[i];  // this worker is full; share the rest
  }
  // More than the fleet holds: every worker is full. (Returning the
  // overflow here once left a full worker with a share below what it held,
  // so it took nothing more and handed nothing over.)
  return capacities[me];
}

}  // namespace leasehold::fleet
