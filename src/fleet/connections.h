// The stream fleet's connections: one item each in the table `connections`
// (fleet/schema.h), Pk = "CONN#<id>". This file checks what a user gives for
// a connection, reads a connection out of an item, and adds, starts, stops,
// removes and lists connections on an ItemStore.
//
// Who writes what: Connections (the `conn` commands) writes what a user
// decides, desired_state, ws_url and seq_field, and on add the starting
// values created_at_ms, last_seq = 0 and lease_expires_at_ms = 0 (so that
// the orphan index, desired_state-lease_expires_at_ms-index, finds a new
// connection at once). The lease slot "lease" belongs to the lease layer,
// and last_seq, last_error and last_error_at_ms to the worker holding the
// lease, which writes them with fenced writes. Nothing here touches them
// after add.
//
// The validation functions, expand_url() and parse_connection() are pure and
// safe from any thread. A Connections object holds nothing but references
// and is safe for concurrent use; every call blocks on the store (call it
// from a blocking pool, never on an event loop).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/clock.h"
#include "leasehold/status.h"
#include "leasehold/store.h"

namespace leasehold::fleet {

inline constexpr char kConnectionKeyPrefix[] = "CONN#";
inline constexpr size_t kConnectionIdBytesMax = 128;
inline constexpr size_t kSeqFieldBytesMax = 256;
inline constexpr size_t kSeqFieldSegmentsMax = 8;
inline constexpr char kDefaultSeqField[] = "seq";

// The connection's attributes other than its key and its lease slot.
inline constexpr char kDesiredStateAttr[] = "desired_state";
inline constexpr char kWsUrlAttr[] = "ws_url";
inline constexpr char kSeqFieldAttr[] = "seq_field";
inline constexpr char kLastSeqAttr[] = "last_seq";
inline constexpr char kLastErrorAttr[] = "last_error";
inline constexpr char kLastErrorAtMsAttr[] = "last_error_at_ms";
inline constexpr char kCreatedAtMsAttr[] = "created_at_ms";

// The placeholders a URL template may hold.
inline constexpr char kNextSeqPlaceholder[] = "{next_seq}";
inline constexpr char kLastSeqPlaceholder[] = "{last_seq}";

enum class DesiredState { kStarted, kStopped };

// "STARTED" or "STOPPED", as stored.
std::string_view desired_state_name(DesiredState state);

// 1 to kConnectionIdBytesMax bytes of [A-Za-z0-9._~-], the characters a URL
// path carries unescaped, other than "." and "..", which a URL path resolves
// away. kInvalidArgument naming the ID (when it is short, printable text)
// and what is accepted.
Status validate_connection_id(std::string_view id);

// A ws:// or wss:// URL in which `{next_seq}` and `{last_seq}` stand for
// sequence numbers. Any other `{...}`, and a brace outside a placeholder, is
// refused (a literal brace is written %7B or %7D). With the placeholders
// replaced by the longest numbers they can take, the URL must pass
// net::parse_ws_url. kInvalidArgument saying what is wrong; the URL itself,
// which may carry a credential in its query, is never quoted.
Status validate_url_template(std::string_view url_template);

// A dotted path into an upstream message's JSON ("seq", "data.header.seq"):
// 1 to kSeqFieldSegmentsMax segments of [A-Za-z0-9_-]+ joined by '.', at most
// kSeqFieldBytesMax bytes.
Status validate_seq_field(std::string_view seq_field);

// `url_template` with `{last_seq}` replaced by last_seq and `{next_seq}` by
// last_seq + 1, in decimal; everything else is kept as it is.
// REQUIRES: 0 <= last_seq < INT64_MAX (parse_connection() ensures it for a
// stored connection).
std::string expand_url(std::string_view url_template, int64_t last_seq);

// A connection as stored. The lease fields are those of the default slot
// (include/leasehold/lease.h): empty or 0 when the connection was never
// leased.
struct Connection {
  std::string id;
  DesiredState desired_state = DesiredState::kStarted;
  std::string ws_url;  // the template as stored; expand_url() before use
  std::string seq_field = kDefaultSeqField;
  std::string owner;  // lease_owner
  std::string token;  // lease_token: the holder's capability, never shown to others
  int64_t epoch = 0;
  int64_t expires_at_ms = 0;
  int64_t heartbeat_at_ms = 0;
  int64_t last_seq = 0;  // the last checkpointed sequence number; 0: none yet
  std::string last_error;
  int64_t last_error_at_ms = 0;
  int64_t created_at_ms = 0;  // 0 for an item written by another tool

  bool operator==(const Connection&) const = default;
};

// The key of connection `id`: Pk = "CONN#<id>".
Key connection_key(std::string_view id);

// Reads a connection out of an item of the table. kInvalidArgument if the
// item is not one: no string Pk starting with "CONN#" and a valid ID, a
// desired_state other than STARTED or STOPPED, no string ws_url, an
// attribute of the wrong type, or a last_seq outside 0..INT64_MAX-1. Absent
// optional attributes take their defaults (seq_field "seq", the rest empty
// or 0), so that items written by other tools of the reference pattern read.
Result<Connection> parse_connection(const Item& item);

// A connection to add.
struct NewConnection {
  std::string id;
  std::string url;  // a template (validate_url_template)
  std::string seq_field = kDefaultSeqField;
  bool stopped = false;  // added STOPPED rather than STARTED
};

class Connections {
 public:
  // REQUIRES: store and clock outlive this object.
  Connections(ItemStore& store, Clock& clock);
  Connections(const Connections&) = delete;
  Connections& operator=(const Connections&) = delete;

  // Creates the table and its orphan index if missing (ItemStore::ensure_table).
  Status ensure_table();

  // Adds the connection if no connection has its ID, and returns it as
  // written. kInvalidArgument for bad input, kAlreadyExists naming the ID if
  // the ID is taken; nothing is written in either case.
  Result<Connection> add(const NewConnection& connection);

  // Sets desired_state and nothing else; setting the state it already has
  // succeeds. Returns the connection after the write. kInvalidArgument for a
  // malformed ID, kNotFound for an unknown one (nothing is written).
  Result<Connection> set_desired(std::string_view id, DesiredState state);

  // Removes the connection, whoever holds its lease: the holder finds it gone
  // at its next heartbeat or checkpoint and closes it. kInvalidArgument for a
  // malformed ID, kNotFound for an unknown one.
  Status remove(std::string_view id);

  // The connection (a consistent read); kNotFound if unknown.
  Result<Connection> get(std::string_view id);

  // Every connection, sorted by ID. Read from the orphan index (the store has
  // no scan), page by page, for both desired states, so it is a listing, not
  // a snapshot: eventually consistent on DynamoDB, and a connection whose
  // state or lease changes meanwhile is shown at most once, as last read (or
  // missed). An item without lease_expires_at_ms (a lease released in `clear`
  // mode, which the fleet never uses) is not in the index and not listed.
  // An item the index holds that is not a connection is kInternal, naming
  // its key.
  Result<std::vector<Connection>> list();

 private:
  Status list_state(DesiredState state, std::vector<Connection>& out);

  ItemStore& store_;
  Clock& clock_;
};

}  // namespace leasehold::fleet
