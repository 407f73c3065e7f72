#include "fleet/schema.h"

#include "fleet/connections.h"

namespace leasehold::fleet {

TableSpec connections_table_spec() {
  // The list shows these; the lease's token never.
  IndexSpec list{kListIndex, kDesiredStateAttr, kConnectionsKeyAttr, AttrType::kString};
  list.projects_all = false;
  list.projected = {kWsUrlAttr,
                    kSeqFieldAttr,
                    kLastSeqAttr,
                    kLastErrorAttr,
                    kLastErrorAtMsAttr,
                    kCreatedAtMsAttr,
                    kMessagesAttr,
                    kReconnectsAttr,
                    kLastMessageAtMsAttr,
                    "lease_owner",
                    "lease_epoch",
                    "lease_expires_at_ms",
                    "lease_heartbeat_at_ms",
                    "lease_session"};
  TableSpec spec = connections_worker_spec();
  spec.indexes.push_back(std::move(list));
  return spec;
}

TableSpec connections_worker_spec() {
  // The session index holds what a sweep of a dead session, and its holder's
  // desired-state read, need of each of its connections, and none of what a
  // checkpoint writes (last_seq and the figures): on DynamoDB a checkpoint
  // then writes that index not at all.
  IndexSpec session{kSessionIndex, "lease_session", "lease_epoch", AttrType::kInt};
  session.projects_all = false;
  session.projected = {kDesiredStateAttr, kWsUrlAttr,    kSeqFieldAttr,
                       "lease_owner",     "lease_token", "lease_expires_at_ms"};
  // Its change feed (DynamoDB Streams) is read by one worker of the fleet,
  // which tells the others what they must act on (fleet/feed_reader.h).
  return TableSpec{kConnectionsTable,
                   kConnectionsKeyAttr,
                   "",
                   {IndexSpec{kOrphanIndex, "desired_state", "lease_expires_at_ms", AttrType::kInt},
                    std::move(session)},
                   /*change_feed=*/true};
}

}  // namespace leasehold::fleet
