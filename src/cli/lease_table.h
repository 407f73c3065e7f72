// The table the CLI's leases live in (`lease acquire`, `lease list`, ...):
// key attribute "pk", and an index over every item's lease expiry (hash
// attribute "kind" = "lease", which `lease acquire` sets) for `lease list`.
// Services keep their leases in tables of their own (fleet/schema.h).
// Plain values and pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "leasehold/store.h"

namespace leasehold::cli {

inline constexpr std::string_view kLeaseTable = "leases";
inline constexpr std::string_view kLeaseIndex = "kind-lease_expires_at_ms-index";
inline constexpr std::string_view kLeaseKindAttr = "kind";
// The value of kLeaseKindAttr on every item `lease acquire` writes.
inline constexpr std::string_view kLeaseKindValue = "lease";

TableSpec lease_table_spec(std::string name = std::string(kLeaseTable));

}  // namespace leasehold::cli
