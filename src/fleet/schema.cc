#include "fleet/schema.h"

namespace leasehold::fleet {

TableSpec connections_table_spec() {
  return TableSpec{
      kConnectionsTable,
      kConnectionsKeyAttr,
      "",
      {IndexSpec{kOrphanIndex, "desired_state", "lease_expires_at_ms", AttrType::kInt},
       IndexSpec{kSessionIndex, "lease_session", "lease_epoch", AttrType::kInt}}};
}

}  // namespace leasehold::fleet
