// The `leasehold conn ...` commands: add, set, start, stop, rm and list, on
// the stream fleet's connections (fleet/connections.h).
//
// As the lease and user commands do, each comes in two halves: make_*()
// checks the arguments before any store is opened (bad input exits 2 and
// writes nothing), and run_*() does the work on an open Context whose table
// is the connections table. The commands write only what a user decides
// (desired_state, ws_url, seq_field); the lease slot and the checkpoint
// belong to the workers, until `conn add` takes over the ID of a removed
// connection whose worker has let go (fleet/connections.h).
//
// Exit codes (cli/common.h): 0 done, 1 the store failed, 2 bad input or a
// connection that does not exist, 3 an ID that is taken (or removed and
// still held by its worker), or a removed connection whose worker did not
// let go within `conn rm --wait`.
#pragma once

#include <optional>
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
  // conn set: the fields to replace; nullopt leaves a field as it is.
  std::optional<std::string> new_url;
  std::optional<std::string> new_seq_field;
  // conn rm: how long to wait for the holder to let go; "0": not at all.
  std::string wait = "30s";
};

// The longest `conn rm --wait`, and how often it reads the connection.
inline constexpr Duration kConnRmWaitMax = std::chrono::hours(1);
inline constexpr Duration kConnRmPollEvery = std::chrono::milliseconds(200);

struct ConnSetRequest {
  std::string id;
  fleet::ConnectionChange change;
};

struct ConnRmRequest {
  std::string id;
  Duration wait{};  // zero: return once the tombstone is written
};

// The connections table the `conn` commands require (fleet::connections_table_spec()).
TableSpec conn_table_spec();

Result<fleet::NewConnection> make_conn_add(const ConnArgs& args);
// At least one of --url and --seq-field, each checked as `conn add` does.
Result<ConnSetRequest> make_conn_set(const ConnArgs& args);
// ID and --wait: "0" or a duration of at most kConnRmWaitMax.
Result<ConnRmRequest> make_conn_rm(const ConnArgs& args);
// ID alone (conn start, stop).
Result<std::string> make_conn_id(const ConnArgs& args);

// A connection as `conn list` prints it: id, desired_state, ws_url (the
// template as stored), owner ("" if never leased), expires_at_ms, last_seq,
// epoch (0 if never leased) and last_error ("" if none). Never the token.
std::string connection_json(const fleet::Connection& connection);

// Prints the connection added; exit 3 if the ID is taken, or was removed and
// its worker still holds it (the message names the worker).
int run_conn_add(Context& ctx, const fleet::NewConnection& connection);
// Prints the connection after replacing its URL and/or sequence field; exit
// 2 if there is none with this ID.
int run_conn_set(Context& ctx, const ConnSetRequest& request);
// Print the connection after setting its desired state (STARTED, STOPPED);
// exit 2 if there is none with this ID.
int run_conn_start(Context& ctx, const std::string& id);
int run_conn_stop(Context& ctx, const std::string& id);
// Removes the connection (leaving a tombstone), then, if a worker holds it,
// waits up to request.wait for the worker to let go, reading the item every
// kConnRmPollEvery and saying once on stderr whom it waits for. Prints
// {"id","removed":true} once nobody holds it (or at once with no wait);
// exit 3, printing nothing, if the worker still holds it at the deadline
// (the removal stays); exit 2 if there is no connection with this ID.
int run_conn_rm(Context& ctx, const ConnRmRequest& request);
// Prints every connection, one per line, by ID.
int run_conn_list(Context& ctx);

}  // namespace leasehold::cli
