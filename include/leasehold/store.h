// The item store: DynamoDB's data model as the common denominator of every
// backend (SQLite, DynamoDB, and an in-memory store for tests; PostgreSQL is
// planned).
//
// A table holds items keyed by a partition key and an optional sort key, both
// strings. Attributes are typed: string, int64 or bool. Writes may carry a
// Condition; a write whose condition is false fails with kConditionFailed and
// changes nothing. Atomicity is per item: there are no multi-item
// transactions.
//
// Errors every backend reports the same way:
//   kConditionFailed  the condition was false; nothing was written
//   kNotFound         get() of a missing item, or a table that does not exist
//   kInvalidArgument  a malformed key, attribute, update or limit
//   kUnavailable      the store could not be reached; nothing was applied
//   kUnknownOutcome   a write was sent and no reply came; it may have applied
//
// An ItemStore is safe for concurrent use by many threads. Backends built for
// many processes (SQLite, DynamoDB) are also safe across processes.
//
// Every call is synchronous: it blocks its thread until the store has
// answered or given up, which for a remote store means one or more network
// round trips, bounded only by the backend's timeouts. A caller on an event loop
// (an HTTP server's or a WebSocket client's I/O threads) must never call a
// store on the loop's own threads, where one slow call would stall every
// connection: it hands the call to a bounded pool of threads, provided once
// by the process's wiring (src/runtime/) rather than by each caller, and
// resumes with the result. The one exception is a read from a store whose
// reads_are_local(). No store call starts a thread; the threads a
// backend owns, and their number, are in its header.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "leasehold/clock.h"
#include "leasehold/status.h"

namespace leasehold {

// ---------------------------------------------------------------- values

enum class AttrType { kString, kInt, kBool };

// Index 0 string, 1 int64, 2 bool (the same order as AttrType).
using Value = std::variant<std::string, int64_t, bool>;

inline AttrType type_of(const Value& v) { return static_cast<AttrType>(v.index()); }
std::string_view type_name(AttrType type);
// A short human form: "abc" (quoted), 42, true.
std::string describe(const Value& v);

// An item: attribute name -> value. Key attributes are ordinary attributes.
using Item = std::map<std::string, Value, std::less<>>;

// A string attribute of `item`, or nullptr if absent or of another type.
const std::string* get_string(const Item& item, std::string_view attr);
// An int attribute of `item`, or nullptr if absent or of another type.
const int64_t* get_int(const Item& item, std::string_view attr);
// The same, or `fallback` if absent or of another type.
std::string get_string_or(const Item& item, std::string_view attr, std::string_view fallback = {});
int64_t get_int_or(const Item& item, std::string_view attr, int64_t fallback = 0);

struct Key {
  std::string pk;
  std::string sk;  // empty for tables without a sort key
  bool operator==(const Key&) const = default;
};

// Limits shared by all backends (DynamoDB's, so that every backend accepts
// exactly the same items).
inline constexpr size_t kPartitionKeyBytesMax = 2048;
inline constexpr size_t kSortKeyBytesMax = 1024;
inline constexpr size_t kAttrNameBytesMax = 255;
inline constexpr size_t kItemBytesMax = 400 * 1024;
inline constexpr int kQueryLimitMax = 1000;

// ---------------------------------------------------------------- schema

struct IndexSpec {
  IndexSpec() = default;
  IndexSpec(std::string name_, std::string hash_attr_, std::string range_attr_,
            AttrType range_type_ = AttrType::kInt)
      : name(std::move(name_)),
        hash_attr(std::move(hash_attr_)),
        range_attr(std::move(range_attr_)),
        range_type(range_type_) {}

  std::string name;        // e.g. "desired_state-lease_expires_at_ms-index"
  std::string hash_attr;   // string attribute
  std::string range_attr;  // attribute the index is sorted by
  AttrType range_type = AttrType::kInt;
  // What a query of the index returns of each item besides the table's key
  // and the index's own: every attribute (DynamoDB's ALL), or only those in
  // `projected` (INCLUDE; KEYS_ONLY if none, DynamoDB's terms). On DynamoDB
  // a write that changes no attribute an index holds does not write the
  // index at all, so this is what an index costs. An index created earlier
  // with a wider projection keeps it (DynamoDB cannot change it in place)
  // and returns more; callers read only what they asked for.
  bool projects_all = true;
  std::vector<std::string> projected;  // neither a key of the table nor of the index
};

struct TableSpec {
  std::string name;
  std::string pk_attr = "pk";
  std::string sk_attr;  // empty: the table has no sort key
  std::vector<IndexSpec> indexes;
  // Keep a change feed of the table (ItemStore::change_feed()) where the
  // backend has one: DynamoDB Streams, with each write's old and new image.
  bool change_feed = false;
};

// ---------------------------------------------------------------- conditions

enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe };
std::string_view op_symbol(CompareOp op);

// A small typed AST. The default-constructed Condition is always true.
//
// Semantics (DynamoDB's): a comparison with an absent attribute, or with an
// attribute of another type, is false, except `<>` which is then true.
// Strings compare by their UTF-8 bytes, ints numerically; `<` on bools is
// always false. A missing item has no attributes.
struct Condition {
  enum class Kind { kTrue, kExists, kNotExists, kCompare, kAnd, kOr, kNot };
  Kind kind = Kind::kTrue;
  std::string attr;
  CompareOp op = CompareOp::kEq;
  Value value;
  std::vector<Condition> children;

  bool is_true() const { return kind == Kind::kTrue; }
  std::string to_string() const;
};

namespace cond {
Condition exists(std::string attr);
Condition not_exists(std::string attr);
Condition compare(std::string attr, CompareOp op, Value v);
inline Condition eq(std::string a, Value v) {
  return compare(std::move(a), CompareOp::kEq, std::move(v));
}
inline Condition ne(std::string a, Value v) {
  return compare(std::move(a), CompareOp::kNe, std::move(v));
}
inline Condition lt(std::string a, Value v) {
  return compare(std::move(a), CompareOp::kLt, std::move(v));
}
inline Condition le(std::string a, Value v) {
  return compare(std::move(a), CompareOp::kLe, std::move(v));
}
inline Condition gt(std::string a, Value v) {
  return compare(std::move(a), CompareOp::kGt, std::move(v));
}
inline Condition ge(std::string a, Value v) {
  return compare(std::move(a), CompareOp::kGe, std::move(v));
}
}  // namespace cond

// `a && b` where a true operand is dropped, so conditions compose cheaply.
Condition operator&&(Condition a, Condition b);
Condition operator||(Condition a, Condition b);
Condition operator!(Condition a);

// ---------------------------------------------------------------- updates

struct UpdateAction {
  enum class Kind { kSet, kSetIfAbsent, kAdd, kRemove };
  Kind kind;
  std::string attr;
  Value value;  // kAdd: an int64 delta; kRemove: unused
};

// A list of actions applied to one item. Each attribute may appear at most
// once; key attributes may not appear at all. `add` treats an absent
// attribute as 0 and fails with kInvalidArgument on a non-int one.
class Update {
 public:
  Update& set(std::string attr, Value v);
  Update& set_if_absent(std::string attr, Value v);
  Update& add(std::string attr, int64_t delta);
  Update& remove(std::string attr);
  Update& append(const Update& other);

  // Asks update() to return only the key and the attributes this update
  // sets or adds, when the caller knows the rest: a store that talks to a
  // server then sends and decodes less. Stores may return the whole item.
  Update& returning_updated_only() {
    updated_only_ = true;
    return *this;
  }
  bool returns_updated_only() const { return updated_only_; }

  const std::vector<UpdateAction>& actions() const { return actions_; }
  bool empty() const { return actions_.empty(); }
  std::string to_string() const;

 private:
  std::vector<UpdateAction> actions_;
  bool updated_only_ = false;
};

// ---------------------------------------------------------------- queries

// A condition on a sort key (query) or on an index's range attribute.
struct KeyRange {
  enum class Kind { kAll, kEq, kLt, kLe, kGt, kGe, kBetween, kBeginsWith };
  Kind kind = Kind::kAll;
  Value lo;  // the operand; for kBetween the lower bound (inclusive)
  Value hi;  // kBetween only: the upper bound (inclusive)

  static KeyRange all() { return {}; }
  static KeyRange eq(Value v) { return {Kind::kEq, std::move(v), {}}; }
  static KeyRange lt(Value v) { return {Kind::kLt, std::move(v), {}}; }
  static KeyRange le(Value v) { return {Kind::kLe, std::move(v), {}}; }
  static KeyRange gt(Value v) { return {Kind::kGt, std::move(v), {}}; }
  static KeyRange ge(Value v) { return {Kind::kGe, std::move(v), {}}; }
  static KeyRange between(Value lo, Value hi) {
    return {Kind::kBetween, std::move(lo), std::move(hi)};
  }
  // Strings only.
  static KeyRange begins_with(std::string prefix) {
    return {Kind::kBeginsWith, std::move(prefix), {}};
  }
};

struct QueryOptions {
  int limit = 100;          // 1..kQueryLimitMax items per page
  std::string cursor;       // from a previous Page; empty for the first page
  bool consistent = false;  // table queries only; index queries are eventual
  // From the highest key down (DynamoDB's ScanIndexForward false), so that
  // the newest of a time-ordered range come first without reading the rest.
  // A cursor is a position: the next page goes on downwards from it.
  bool descending = false;
};

struct Page {
  std::vector<Item> items;
  std::string next_cursor;  // empty when there are no more items
};

// One write of update_each(). Each runs with its own condition.
struct UpdateRequest {
  Key key;
  Update update;
  Condition condition;
};

// ---------------------------------------------------------------- the store

// A call with no bound of its own (the backend's own timeouts still apply).
inline constexpr Duration kNoTimeout = Duration::max();

// What a store can tell, without a read, of whether anything in it changed:
// see ItemStore::change_stamp(). Only equality means something.
struct ChangeStamp {
  uint64_t high = 0;
  uint64_t low = 0;
  bool operator==(const ChangeStamp&) const = default;
};

// ---------------------------------------------------------------- change feeds

// A table's change feed (DynamoDB Streams): a record of every write to the
// table, in shards. A shard holds the records of some of the table's keys in
// the order they were written. It ends (closes) at some point, and the
// records after that are in its child shards, which name it as their parent;
// a key's records are in order only when a shard is read to its end before
// its children. Records are kept for a while (24 hours on DynamoDB), then
// trimmed, and a shard with them.
struct FeedShard {
  std::string id;
  std::string parent_id;  // empty: none, or one already trimmed
  bool closed = false;    // ended: nothing more will be added to it
};

// One write: the item's key, and the item before and after it (absent: the
// item did not exist then, or held what the store cannot read).
struct FeedRecord {
  std::string sequence;  // its place in its shard: opaque, for FeedStart::kAfter
  Key key;
  std::optional<Item> old_image;
  std::optional<Item> new_image;
};

// Where a read of a shard starts.
enum class FeedStart {
  kOldest,  // at the oldest record it still holds
  kAfter,   // just after the record with a given sequence
  kLatest,  // after the newest record: only what is written from now on
};

struct FeedPage {
  std::vector<FeedRecord> records;
  // Where to read on: a position for the next read. Empty: the shard has
  // ended and everything in it has been read.
  std::string next;
};

// Reads a table's change feed. Thread-safe; every call blocks its caller
// until the store answers or the call gives up.
class ChangeFeed {
 public:
  virtual ~ChangeFeed() = default;

  // Every shard the feed holds, open and closed, parents before children.
  virtual Result<std::vector<FeedShard>> shards() = 0;
  // A position in `shard` (`sequence` is for kAfter only). kNotFound for a
  // shard the feed no longer holds, or a sequence trimmed from it.
  virtual Result<std::string> position(std::string_view shard, FeedStart start,
                                       std::string_view sequence = {}) = 0;
  // Up to `limit` records (1..1000) from `position`, and where to read on.
  // kFailedPrecondition when the position has expired (DynamoDB's last 15
  // minutes): take a new one after the last record handled. kNotFound when
  // the records it points at have been trimmed: read on from kOldest.
  virtual Result<FeedPage> read(std::string_view position, int limit) = 0;
};

// Capacity consumed on one table, or one of its indexes (`index` empty: the
// table itself), in the units AWS bills: read units by reads, write units by
// writes (a write also costs units on each index it changes).
struct CapacityUse {
  std::string table;  // as the caller names it, without a backend's prefix
  std::string index;
  double read_units = 0;
  double write_units = 0;
};

class ItemStore {
 public:
  virtual ~ItemStore() = default;

  // Creates the table and its indexes if missing; idempotent. A table that
  // exists with another key schema is kInvalidArgument.
  virtual Status ensure_table(const TableSpec& spec) = 0;

  // Makes sure the table is there, ready, with the spec's keys and indexes,
  // for a process that only uses it. Stores whose tables are local and cost
  // nothing (memory, SQLite) create what is missing, as ensure_table() does;
  // a remote store whose tables are provisioned resources (DynamoDB) never
  // creates anything here: a missing table or index is kNotFound, so that
  // provisioning stays a deliberate step (`leasehold store init`).
  virtual Status require_table(const TableSpec& spec) { return ensure_table(spec); }

  // The item, or kNotFound. `consistent` asks for a strongly consistent read
  // (always so on SQLite).
  virtual Result<Item> get(std::string_view table, const Key& key, bool consistent) = 0;

  // The items that exist among `keys`, in the order of `keys`; missing keys
  // are skipped. Consistent reads. Any number of keys: backends chunk.
  virtual Result<std::vector<Item>> batch_get(std::string_view table,
                                              std::span<const Key> keys) = 0;

  // Writes `item` whole (it must contain the key attributes) if `condition`
  // holds on the current item (absent attributes if there is none).
  virtual Status put(std::string_view table, const Item& item, const Condition& condition) = 0;

  // Applies `update` to the item at `key` (creating it if absent) if
  // `condition` holds, and returns the item after the write (at least its
  // key and the updated attributes, if update.returns_updated_only()).
  virtual Result<Item> update(std::string_view table, const Key& key, const Update& update,
                              const Condition& condition) = 0;

  // Deletes the item if `condition` holds. Deleting a missing item whose
  // condition holds succeeds.
  virtual Status remove(std::string_view table, const Key& key, const Condition& condition) = 0;

  // Items with partition key `pk` whose sort key is in `range`, by sort key
  // (highest first if options.descending).
  virtual Result<Page> query(std::string_view table, std::string_view pk, const KeyRange& range,
                             const QueryOptions& options) = 0;

  // Items whose index hash attribute equals `hash_value` and whose range
  // attribute is in `range`, ordered by the range attribute (highest first
  // if options.descending); items with equal range values come in an order
  // of the backend's choosing, each exactly once across pages. Items lacking
  // either attribute are not in the index. Where an item has an index
  // attribute, it must be of the index's type (a non-empty string for the
  // hash, range_type for the range): a write that breaks this fails with
  // kInvalidArgument and changes nothing, as on DynamoDB.
  virtual Result<Page> query_index(std::string_view table, std::string_view index,
                                   std::string_view hash_value, const KeyRange& range,
                                   const QueryOptions& options) = 0;

  // Several independent conditional updates; NOT a transaction: each succeeds
  // or fails on its own, and results[i] belongs to requests[i]. Backends that
  // can amortise a commit over many writes (SQLite) override this; the
  // default issues them one by one. Heartbeats of many leases go through here.
  //
  // `timeout` bounds the whole call, retries and waits for locks included,
  // because a heartbeat that returns after its lease's deadline is worthless
  // and must not hold back the next attempt: once it has passed, a write not
  // yet sent is kUnavailable and a write sent without a reply is
  // kUnknownOutcome. Backends whose calls cannot block (memory) ignore it.
  virtual std::vector<Result<Item>> update_each(std::string_view table,
                                                std::span<const UpdateRequest> requests,
                                                Duration timeout);
  std::vector<Result<Item>> update_each(std::string_view table,
                                        std::span<const UpdateRequest> requests) {
    return update_each(table, requests, kNoTimeout);
  }

  // A stamp of the store's whole content, for caches of what was read: if two
  // calls return equal stamps, no write became visible in between, from any
  // thread or process, so a read begun after the first call is still what a
  // read would return at the second. Different stamps say nothing (a store
  // may change its stamp without a write). Cheap: no round trip, no lock
  // another process holds. nullopt if the store cannot tell (DynamoDB: only
  // a read can), and callers read as usual.
  virtual std::optional<ChangeStamp> change_stamp() const { return std::nullopt; }

  // A name for messages and benchmarks: "sqlite", "memory", "dynamodb", ...
  virtual std::string_view backend_name() const = 0;

  // True if a read (get, batch_get, query, query_index) waits on nothing but
  // local work: no network round trip, no other process's lock, no
  // connection held by a write (memory; SQLite, in WAL mode). Only then may
  // an event loop read the store on its own threads, as it would do any
  // other short work; writes, and every call to a store that says false,
  // still go to its pool. False unless a backend says otherwise.
  virtual bool reads_are_local() const { return false; }

  // The capacity a store that bills by it says its calls consumed
  // (DynamoDB's ConsumedCapacity), by table and index, since it was opened:
  // what the bill counts, the table's units and each index's apart. Empty
  // for a store that reports none. Thread-safe.
  virtual std::vector<CapacityUse> consumed_capacity() const { return {}; }

  // The change feed of `table` (made with TableSpec::change_feed), owned by
  // the store; null where the backend keeps none (SQLite, memory: their
  // change_stamp() serves instead) or the table has none.
  virtual ChangeFeed* change_feed(std::string_view table) {
    (void)table;
    return nullptr;
  }
};

// Opens a store from a URI:
//   sqlite:PATH        (sqlite::memory: is refused: it cannot be shared)
//   dynamodb://REGION/TABLE_PREFIX[?endpoint=URL]
//                      Amazon DynamoDB (or a compatible endpoint); table T is
//                      TABLE_PREFIX + T. Without endpoint=, the environment's
//                      AWS_ENDPOINT_URL_DYNAMODB, else AWS_ENDPOINT_URL, else
//                      AWS's own
//   memory:            an in-process store for tests
// A malformed URI or unknown scheme is kInvalidArgument (nothing is created);
// a store that cannot be opened is kUnavailable.
Result<std::unique_ptr<ItemStore>> open_store(std::string_view uri);

// Checks `uri` as open_store() does, with the same kInvalidArgument errors,
// without opening, creating or contacting anything: a configuration can be
// checked before it is used. What only opening can tell (a file that cannot
// be created, missing credentials, an unreachable endpoint) is not checked.
Status validate_store_uri(std::string_view uri);

}  // namespace leasehold
