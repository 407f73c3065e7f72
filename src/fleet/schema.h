// The stream fleet's table: one item per upstream connection, in the
// reference pattern's schema so that DynamoDB items are exactly the ones it
// describes (docs/schema.md).
//
//   Pk                   string  "CONN#<id>" (partition key)
//   desired_state        string  STARTED | STOPPED | REMOVED (a tombstone: connections.h)
//   ws_url               string  the upstream URL, a template ({next_seq}, {last_seq})
//   seq_field            string  where a message's sequence number is ("seq")
//   created_at_ms        int
//   removed_at_ms        int     on a tombstone: when it was removed
//   lease_owner, lease_token, lease_epoch, lease_expires_at_ms, ...
//                                the default lease slot (include/leasehold/lease.h)
//   last_seq             int     the last checkpointed sequence number
//   last_error, last_error_at_ms string, int: the holder's last error
//
// fleet/connections.h names these attributes and reads and writes the items.
//
// The index desired_state-lease_expires_at_ms-index finds STARTED
// connections whose lease has expired (the orphans a worker may take);
// lease_session-lease_epoch-index those of a worker's session;
// desired_state-Pk-index lists them by ID, a page at a time (the API).
#pragma once

#include <string>

#include "leasehold/store.h"

namespace leasehold::fleet {

inline constexpr char kConnectionsTable[] = "connections";
inline constexpr char kConnectionsKeyAttr[] = "Pk";
inline constexpr char kOrphanIndex[] = "desired_state-lease_expires_at_ms-index";
// The connections of one worker's session (fleet/worker.h), for whoever
// takes them once that session has ended. Sparse: only leases taken in a
// session carry lease_session.
inline constexpr char kSessionIndex[] = "lease_session-lease_epoch-index";
// The connections by ID, for a page of the list (fleet/connections.h,
// Connections::list_page()). It projects what the list shows, none of
// which a checkpoint writes, so that on DynamoDB it costs a write only when
// a connection is added, changed, moves or fails.
inline constexpr char kListIndex[] = "desired_state-Pk-index";

TableSpec connections_table_spec();
// What a worker needs of the table: every index but the list's, which only
// the API reads, so that a worker runs on a table to which `store init`
// has not yet added it.
TableSpec connections_worker_spec();

}  // namespace leasehold::fleet
