// Balance: how many connections each worker of the fleet should own.
//
// The connections (owned and orphaned) are shared out as evenly as the
// workers' capacities allow: water-filling, each worker's share the same
// level except where its capacity is lower. A worker above its share hands
// the excess over; one below takes orphans up to it. Shares are rounded up,
// so a fleet whose counts are within one of each other moves nothing. When
// the connections outnumber the fleet's capacity, every worker's share is its
// capacity. Pure function, safe from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace leasehold::fleet {

// The share of the worker whose capacity is capacities[me] when `total`
// connections are shared among workers of these capacities: min(capacity,
// L) for the least level L at which the shares cover `total`, or the
// capacity if no level does.
// REQUIRES: me < capacities.size().
int64_t fair_share(int64_t total, const std::vector<int64_t>& capacities, size_t me);

}  // namespace leasehold::fleet
