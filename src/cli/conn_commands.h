// The `leasehold conn ...` commands: add, start, stop, rm and list, on the
// stream fleet's connections (fleet/connections.h).
//
// As the lease and user commands do, each comes in two halves: make_*()
// checks the arguments before any store is opened (bad input exits 2 and
// writes nothing), and run_*() does the work on an open Session whose table
// is the connections table. The commands write only what a user decides
// (desired_state, ws_url, seq_field); the lease slot and the checkpoint
// belong to the workers.
//
// Exit codes (cli/common.h): 0 done, 1 the store failed, 2 bad input or a
// connection that does not exist, 3 an ID that is taken.
#pragma once

#include <string>

#include "cli/common.h"
#include "fleet/connections.h"

namespace leasehold::cli {

// The arguments of every `conn` subcommand, as CLI11 parsed them.
struct ConnArgs {
  std::string id;
  std::string url;
  std::string seq_field = fleet::kDefaultSeqField;
  bool stopped = false;
};

// The connections table the `conn` commands require (fleet::connections_table_spec()).
TableSpec conn_table_spec();

Result<fleet::NewConnection> make_conn_add(const ConnArgs& args);
// ID alone (conn start, stop, rm).
Result<std::string> make_conn_id(const ConnArgs& args);

// A connection as `conn list` prints it: id, desired_state, ws_url (the
// template as stored), owner ("" if never leased), expires_at_ms, last_seq,
// epoch (0 if never leased) and last_error ("" if none). Never the token.
std::string connection_json(const fleet::Connection& connection);

// Prints the connection added; exit 3 if the ID is taken.
int run_conn_add(Session& session, const fleet::NewConnection& connection);
// Print the connection after setting its desired state (STARTED, STOPPED);
// exit 2 if there is none with this ID.
int run_conn_start(Session& session, const std::string& id);
int run_conn_stop(Session& session, const std::string& id);
// Prints {"id","removed":true}; exit 2 if there is none with this ID.
int run_conn_rm(Session& session, const std::string& id);
// Prints every connection, one per line, by ID.
int run_conn_list(Session& session);

}  // namespace leasehold::cli
