#include "cli/lease_table.h"

#include "leasehold/lease.h"

namespace leasehold::cli {

TableSpec lease_table_spec(std::string name) {
  const SlotNames names(kDefaultSlot);
  return TableSpec{std::move(name),
                   "pk",
                   "",
                   {IndexSpec{std::string(kLeaseIndex), std::string(kLeaseKindAttr),
                              names.expires_at_ms, AttrType::kInt}}};
}

}  // namespace leasehold::cli
