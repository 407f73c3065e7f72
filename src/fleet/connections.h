// The stream fleet's connections: one item each in the table `connections`
// (fleet/schema.h), Pk = "CONN#<id>". This file checks what a user gives for
// a connection, reads a connection out of an item, and adds, changes,
// starts, stops, removes and lists connections on an ItemStore.
//
// Who writes what: Connections (the `conn` commands) writes what a user
// decides, desired_state, ws_url and seq_field, and on add the starting
// values created_at_ms, last_seq = 0 and lease_expires_at_ms = 0 (so that
// the orphan index, desired_state-lease_expires_at_ms-index, finds a new
// connection at once). The lease slot "lease" belongs to the lease layer,
// and last_seq, last_error, last_error_at_ms and the holder's figures
// (messages, reconnects, last_message_at_ms) to the worker holding the
// lease, which writes them with fenced writes. Nothing here touches them
// between an add and a removal.
//
// A removed connection leaves a *tombstone*: the item stays, with
// desired_state = REMOVED and removed_at_ms, and keeps its lease slot. Its
// holder reads REMOVED at its next desired-state read and lets go (a release
// conditioned on its owner and token, which still match); no worker takes a
// tombstone, since workers take only STARTED connections. Keeping the slot
// keeps lease_epoch, so that a connection added again under the same ID is
// leased under a higher epoch than every earlier holder, and keeping the
// lease lets add() refuse the ID until the old holder has let go, so that
// two workers never stream one connection. get(), set(), set_desired(),
// remove() and list() treat a tombstone as missing; add() takes it over
// once its lease is free, and removes the old holder's token in the same
// write, so that no late write of the old holder lands on the new one.
//
// The validation functions, expand_url() and parse_connection() are pure and
// safe from any thread. A Connections object holds nothing but references
// and is safe for concurrent use; every call blocks on the store (call it
// from a blocking pool, never on an event loop).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
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
// The writes Connections::add_many() hands the store at once: enough for
// DynamoDB's parallel writes and SQLite's transactions to pay off, few
// enough that what a chunk holds stays small whatever the input's size.
inline constexpr size_t kAddManyChunk = 100;

// The connection's attributes other than its key and its lease slot.
inline constexpr char kDesiredStateAttr[] = "desired_state";
inline constexpr char kWsUrlAttr[] = "ws_url";
inline constexpr char kSeqFieldAttr[] = "seq_field";
inline constexpr char kLastSeqAttr[] = "last_seq";
inline constexpr char kLastErrorAttr[] = "last_error";
inline constexpr char kLastErrorAtMsAttr[] = "last_error_at_ms";
inline constexpr char kCreatedAtMsAttr[] = "created_at_ms";
inline constexpr char kRemovedAtMsAttr[] = "removed_at_ms";  // on a tombstone only
// The holder's figures for the connection, written by the worker holding it;
// add() clears them when it takes a tombstone over.
inline constexpr char kMessagesAttr[] = "messages";
inline constexpr char kReconnectsAttr[] = "reconnects";
inline constexpr char kLastMessageAtMsAttr[] = "last_message_at_ms";

// The placeholders a URL template may hold.
inline constexpr char kNextSeqPlaceholder[] = "{next_seq}";
inline constexpr char kLastSeqPlaceholder[] = "{last_seq}";

// kRemoved marks a tombstone (see the file comment): a connection that was
// removed, which no worker takes and every call but add() treats as missing.
enum class DesiredState { kStarted, kStopped, kRemoved };

// "STARTED", "STOPPED" or "REMOVED", as stored.
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
  // lease_session: the token of the holder's session (fleet/members.h) the
  // lease belongs to; empty: none. Never shown to others either.
  std::string session;
  int64_t epoch = 0;
  int64_t expires_at_ms = 0;
  int64_t heartbeat_at_ms = 0;
  int64_t last_seq = 0;  // the last checkpointed sequence number; 0: none yet
  std::string last_error;
  int64_t last_error_at_ms = 0;
  int64_t created_at_ms = 0;  // 0 for an item written by another tool
  int64_t removed_at_ms = 0;  // a tombstone's removal (wall ms); 0 otherwise
  // The holder's figures since it took the connection, as of its last
  // checkpoint: messages written, upstream reconnects, and when the last
  // message was written (wall ms; 0: none yet).
  int64_t messages = 0;
  int64_t reconnects = 0;
  int64_t last_message_at_ms = 0;

  bool operator==(const Connection&) const = default;
};

// A worker holds the connection's lease at wall time `now_ms`: an owner, and
// a lease neither released (expires_at_ms 0) nor expired (expires_at_ms <
// now_ms, the acquisition condition). Of a tombstone: its holder has not
// let go yet, and add() refuses the ID.
bool lease_held(const Connection& connection, int64_t now_ms);

// A holder with a session checkpoints to its session's positions
// (fleet/positions.h), not to the connection's item: what they say of the
// lease each item shows is put in its last_seq and figures, as the item's
// would be. A released lease's last checkpoint is on its item already.
Status show_positions(ItemStore& store, std::span<Connection> connections, bool consistent);

// "2026-12-01T09:30:00.123Z": a wall time (Unix ms, >= 0) in UTC, for
// messages that say when a lease ends.
std::string format_utc_ms(int64_t unix_ms);

// The key of connection `id`: Pk = "CONN#<id>".
Key connection_key(std::string_view id);

// Reads a connection out of an item of the table. kInvalidArgument if the
// item is not one: no string Pk starting with "CONN#" and a valid ID, a
// desired_state other than STARTED, STOPPED or REMOVED, no string ws_url, an
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

// What Connections::add_many() did, connection by connection.
struct AddedConnections {
  // One per connection given, in the order given: OK if it was added;
  // kAlreadyExists as add() says it (a connection has the ID, or its
  // tombstone's lease is still held); kUnavailable if it was never written
  // (an earlier write failed, or the ID was removed and added again by
  // others while it was being added); or the store's failure.
  std::vector<Status> results;
  size_t added = 0;     // results that are OK
  size_t existing = 0;  // results that are kAlreadyExists
};

// What Connections::set() changes: each field given replaces the stored one.
struct ConnectionChange {
  std::optional<std::string> url;        // a template (validate_url_template)
  std::optional<std::string> seq_field;  // validate_seq_field
};

// What a page of the list holds (Connections::list_page()).
inline constexpr size_t kListPageMax = 500;
struct ListQuery {
  std::optional<DesiredState> state;  // STARTED or STOPPED; nullopt: both
  std::string prefix;                 // only IDs that start with it
  std::string owner;                  // only those a worker holds in its sessions
  std::string after;                  // only IDs after it: the last of the page before
  size_t limit = 100;                 // 1..kListPageMax
};
struct ConnectionPage {
  std::vector<Connection> items;  // by ID
  std::string next_after;         // the last ID, when more may follow; empty: none do
};

// kInvalidArgument naming the parameter when `query` cannot be answered:
// a limit out of range, a state that is neither STARTED nor STOPPED, a
// prefix, owner or `after` that no ID or worker ID could be.
Status validate_list_query(const ListQuery& query);

class Connections {
 public:
  // REQUIRES: store and clock outlive this object.
  Connections(ItemStore& store, Clock& clock);
  Connections(const Connections&) = delete;
  Connections& operator=(const Connections&) = delete;

  // Creates the table and its orphan index if missing (ItemStore::ensure_table).
  Status ensure_table();

  // Adds the connection if no connection has its ID, and returns it as
  // written. An ID whose connection was removed is taken over once the old
  // holder's lease is free (released, or expired by this process's wall
  // clock): the tombstone's lease_epoch stays, so the next acquisition's
  // epoch is above every earlier one, and everything else the old
  // connection had (its checkpoint, error, figures, and the lease's owner
  // and token) is removed, so it starts from last_seq 0. kInvalidArgument
  // for bad input; kAlreadyExists naming the ID if a connection has it, or
  // if its tombstone's lease is still held (naming the holder and when its
  // lease ends); nothing is written in these cases. A refusal is explained
  // by a consistent read after it; should that read find the ID freed
  // meanwhile, the write is tried again, a few times at most (then
  // kUnavailable).
  Result<Connection> add(const NewConnection& connection);

  // Adds many connections as add() adds each (the same write, under the
  // same condition, with the same refusals), kAddManyChunk writes at a time
  // through ItemStore::update_each(), and then changes the counts once, by
  // the number added: a fleet of thousands in a few round trips per
  // hundred, and one write of the counts rather than one per connection.
  // Every connection is checked before anything is written:
  // kInvalidArgument naming the first bad one (its ID, when that is short,
  // printable text), or an ID given twice, and nothing is written. Otherwise
  // each connection has its own outcome (AddedConnections). Once a write
  // fails for a reason other than a refusal, no further chunk is written,
  // and the connections of those chunks are kUnavailable: a store that
  // fails one write is unlikely to take the next.
  Result<AddedConnections> add_many(std::span<const NewConnection> connections);

  // Replaces ws_url and/or seq_field and nothing else: last_seq stays, so
  // the stream resumes from its checkpoint at the new URL. Returns the
  // connection after the write. kInvalidArgument for bad input or a change
  // that gives neither field, kNotFound for an unknown or removed ID;
  // nothing is written in these cases.
  Result<Connection> set(std::string_view id, const ConnectionChange& change);

  // Sets desired_state and nothing else; setting the state it already has
  // succeeds. Returns the connection after the write. kInvalidArgument for a
  // malformed ID, kNotFound for an unknown or removed one (nothing is
  // written). REQUIRES: state is not kRemoved (remove() makes tombstones).
  Result<Connection> set_desired(std::string_view id, DesiredState state);

  // Removes the connection, whoever holds its lease, by turning it into a
  // tombstone (desired_state REMOVED, removed_at_ms now) in one write; the
  // rest of the item stays. Returns the tombstone as written: its owner and
  // expires_at_ms say whether a worker still holds it, which it does until
  // it reads REMOVED and lets go. kInvalidArgument for a malformed ID,
  // kNotFound for an unknown or already removed one (nothing is written).
  Result<Connection> remove(std::string_view id);

  // The connection (a consistent read); kNotFound if unknown or removed.
  Result<Connection> get(std::string_view id);

  // The item as stored, a tombstone included (a consistent read), for a
  // caller that waits for a removed connection's holder to let go.
  // kNotFound only if there is no item.
  Result<Connection> inspect(std::string_view id);

  // Every connection, sorted by ID. Read from the orphan index (the store has
  // no scan), page by page, for both desired states, so it is a listing, not
  // a snapshot: eventually consistent on DynamoDB, and a connection whose
  // state or lease changes meanwhile is shown at most once, as last read (or
  // missed). Tombstones are not listed (only STARTED and STOPPED are
  // queried). An item without lease_expires_at_ms (a lease released in `clear`
  // mode, which the fleet never uses) is not in the index and not listed.
  // An item the index holds that is not a connection is kInternal, naming
  // its key.
  Result<std::vector<Connection>> list();

  // One page of the list, by ID, from the index desired_state-Pk-index: at
  // most `limit` connections after `after` that match the query, read in
  // one query of the index per desired state (limit + 1 items each, so
  // that the cost of a page does not grow with the fleet), with what their
  // holders' positions say (as list() does). With `owner`: the connections
  // held under that worker's sessions, from the session index (what the
  // worker holds, not the fleet). kInvalidArgument for a bad query
  // (validate_list_query()); kNotFound if the table has no list index yet
  // (`store init` adds it).
  Result<ConnectionPage> list_page(const ListQuery& query);

  // The connections named, in the order named, with what their holders'
  // positions say; those unknown or removed are left out. One batch read.
  Result<std::vector<Connection>> get_many(std::span<const std::string> ids);

 private:
  Status list_state(DesiredState state, std::vector<Connection>& out);
  Status page_state(const ListQuery& query, DesiredState state,
                    const std::optional<std::string>& upto, std::vector<Connection>& out,
                    bool& more);
  Status page_owned(const ListQuery& query, std::vector<Connection>& out, bool& more);
  Status explain_refused_add(std::string_view id);
  Status add_chunk(std::span<const NewConnection> chunk, std::vector<Status>& results);
  Result<Connection> update_live(std::string_view id, const Update& update, std::string_view what,
                                 Condition also = Condition(), bool refused_is_gone = true);
  Result<Connection> change_state(std::string_view id, DesiredState state, const Update& update,
                                  std::string_view what);
  void count(DesiredState state, int64_t delta);

  ItemStore& store_;
  Clock& clock_;
};

}  // namespace leasehold::fleet
