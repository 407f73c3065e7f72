// DynamoDB's JSON wire format: the item store's values, items, conditions,
// updates, key ranges and query cursors (wire.cc); table schemas as
// CreateTable takes them and DescribeTable shows them, streams included
// (wire_tables.cc); DynamoDB Streams' shards and records (wire_streams.cc);
// and what a reply, or a failure to get one, means for a request: the error
// table that decides what is sent again (wire_errors.cc).
//
// Values map one to one: string <-> {"S": ...}, int64 <-> {"N": "..."},
// bool <-> {"BOOL": ...}. An item read back with any other type (a number
// with a fraction, a list, a map, a set, NULL), as another program might
// write, is refused with kInternal naming the attribute, never misread.
//
// Conditions and updates are rendered as ConditionExpression and
// UpdateExpression text that refers to attributes and values only through
// placeholders (#n0, :v0): no attribute name or value is ever spliced into
// an expression, so none can change its meaning.
//
// Internal to the DynamoDB backend (it includes Boost.JSON). Pure functions:
// nothing here sends a request, reads a clock or keeps state between calls,
// so all of it is tested without a server (wire_test.cc). An
// ExpressionBuilder is used by one request on one thread.
#pragma once

#include <boost/json.hpp>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/retry.h"
#include "base/text.h"
#include "leasehold/store.h"

namespace leasehold::store::dynamodb {

// ---------------------------------------------------------------- names

inline constexpr size_t kTableNameBytesMax = 255;  // DynamoDB's table name limit

// [A-Za-z0-9_.-]: the characters of table names and of leasehold's prefixes.
bool is_name_char(char c);
// 3..kTableNameBytesMax name characters.
bool valid_table_name(std::string_view name);

// ---------------------------------------------------------------- JSON fields

// The field `key` of `o` if it has that type: "" or nullptr otherwise.
std::string string_field(const boost::json::object& o, std::string_view key);
const boost::json::array* array_field(const boost::json::object& o, std::string_view key);
const boost::json::object* object_field(const boost::json::object& o, std::string_view key);

// ---------------------------------------------------------------- values

// The encoders allocate from `storage` (the default heap unless given): a
// caller that serialises the result at once passes a stack arena.
boost::json::object encode_value(const Value& value, boost::json::storage_ptr storage = {});
// `attr` names the attribute in error messages.
Result<Value> decode_value(std::string_view attr, const boost::json::value& value);

boost::json::object encode_item(const Item& item);
Result<Item> decode_item(const boost::json::object& item);

// {"<pk_attr>": {"S": pk}[, "<sk_attr>": {"S": sk}]}
boost::json::object encode_key(const TableSpec& spec, const Key& key,
                               boost::json::storage_ptr storage = {});

// ---------------------------------------------------------------- JSON text

// The same encodings appended as JSON text, for the request that goes out on
// every heartbeat (UpdateItem): writing its body as text costs a fraction of
// building a JSON tree and serialising it.

// Strings are written by append_json_string (base/text.h).

// encode_value(value) and encode_key(spec, key) as text.
void append_value_json(const Value& value, std::string& out);
void append_key_json(const TableSpec& spec, const Key& key, std::string& out);

// ---------------------------------------------------------------- expressions

// Collects the placeholders of one request's expressions.
class ExpressionBuilder {
 public:
  ExpressionBuilder() {
    names_.reserve(kPlaceholdersReserved);
    values_.reserve(kPlaceholdersReserved);
  }

  // "#n<i>"; the same attribute always gets the same placeholder.
  std::string name(const std::string& attr);
  // ":v<i>"; a new placeholder for every value.
  std::string value(const Value& v);

  // "" for an always-true condition (send no ConditionExpression then).
  std::string condition(const Condition& condition);
  // The same, to be one operand of an AND the caller writes (parenthesised
  // only if it is an OR).
  std::string condition_term(const Condition& condition);
  // "SET #n0 = :v0, #n1 = if_not_exists(#n1, :v1) ADD #n2 :v2 REMOVE #n3".
  // REQUIRES: !update.empty().
  std::string update(const Update& update);

  // ExpressionAttributeNames / ExpressionAttributeValues; omit when empty.
  boost::json::object names() const;
  boost::json::object values() const;
  // The same two members as JSON text, for a body written as text:
  // `,"ExpressionAttributeNames":{...},"ExpressionAttributeValues":{...}`,
  // each only when it is not empty.
  void append_placeholders_json(std::string& body) const;

 private:
  // Appends to `out`: one string grows instead of one per term.
  void render(const Condition& condition, const Condition* parent, std::string& out);
  void append_name(const std::string& attr, std::string& out);
  void append_value(const Value& v, std::string& out);

  // Room for the names and the values of a lease's writes, which have a few
  // of each: a vector searched in order beats a map.
  static constexpr size_t kPlaceholdersReserved = 8;
  std::vector<std::string> names_;  // names_[i] is the attribute of #n<i>
  std::vector<Value> values_;       // values_[i] is the value of :v<i>
};

// `c` as DynamoDB takes it. DynamoDB refuses `<` and friends on a BOOL
// operand, where the item store says they are false, so such comparisons
// become an always-false condition on `pk_attr`. Nearly every condition has
// none, and is returned as it is; one that has is rewritten into `storage`.
const Condition& portable(const Condition& c, const std::string& pk_attr, Condition& storage);

// DynamoDB numbers hold 38 digits, so an ADD past int64 would succeed there
// and leave a number leasehold cannot read. Each add() gets a guard that
// fails the write instead; "" when there are no adds.
std::string overflow_guards(const Update& update, ExpressionBuilder& b);

// Adds the builder's placeholders to the request.
void add_placeholders(boost::json::object& body, const ExpressionBuilder& b);

// ---------------------------------------------------------------- queries

// A key condition on one attribute; `none` when nothing can match (DynamoDB
// refuses empty strings as key operands, and no key is empty).
struct RangeText {
  bool none = false;
  std::string text;  // "" means no condition on the range attribute
};

// `r` on `attr` as KeyConditionExpression text, its placeholders in `b`.
RangeText range_text(ExpressionBuilder& b, const std::string& attr, const KeyRange& r);

// A Query's KeyConditionExpression: `hash_attr` = `hash`, and `range` on
// `range_attr` if it is not kAll; nullopt when nothing can match.
std::optional<std::string> key_condition(ExpressionBuilder& b, const std::string& hash_attr,
                                         std::string_view hash, const std::string& range_attr,
                                         const KeyRange& range);

// The attributes (and their types) of a LastEvaluatedKey, i.e. of a cursor.
using CursorShape = std::map<std::string, AttrType, std::less<>>;

// A table query's cursor: the table's key attributes, all strings.
CursorShape table_cursor_shape(const TableSpec& spec);

// A cursor is the LastEvaluatedKey as an item in item_json form: opaque to
// callers, and checked against the expected shape when it comes back.
// kInvalidArgument ("malformed query cursor") for any other text.
Result<boost::json::object> decode_cursor(const std::string& cursor, const CursorShape& shape);

// ---------------------------------------------------------------- tables

// [{"AttributeName": hash, "KeyType": "HASH"}, (range, "RANGE")].
boost::json::array key_schema_json(const std::string& hash, const std::string& range);

// The AttributeDefinitions of every key attribute of `spec` (table and
// indexes), sorted by name; an attribute used with two types is refused
// with kInvalidArgument.
Result<boost::json::array> attribute_definitions(const TableSpec& spec);

// A GlobalSecondaryIndexes entry: `index`'s keys and projection.
boost::json::object gsi_json(const IndexSpec& index);

// The body of the CreateTable request that makes `spec` as the table
// `table_name`: on-demand, its keys, every index a GSI, and the stream of a
// change feed if it asks for one. kInvalidArgument as attribute_definitions().
Result<boost::json::object> create_table_json(const TableSpec& spec, const std::string& table_name);

// The spec of a table as DescribeTable's "Table" shows it, named `logical`;
// change_feed when it has a stream a change feed can read (stream_of()).
// Parts that are missing or malformed are left empty, for the caller's
// comparison with the spec it wants to fail on.
TableSpec spec_from_description(std::string_view logical, const boost::json::object& table);

// The indexes `wanted` has and `have` lacks. kInvalidArgument, naming the
// table as `shown`, if the keys differ or an index both have differs.
Result<std::vector<IndexSpec>> missing_indexes(const TableSpec& wanted, const TableSpec& have,
                                               const std::string& shown);

// True when the described table and each index in `indexes` are ACTIVE.
bool is_active(const boost::json::object& table, const std::vector<std::string>& indexes);

// ---------------------------------------------------------------- streams

// The stream a change feed reads: each write's key, old and new image.
inline constexpr std::string_view kFeedStreamViewType = "NEW_AND_OLD_IMAGES";

// CreateTable's and UpdateTable's StreamSpecification turning such a stream on.
boost::json::object feed_stream_json();

// The stream a described table has (StreamSpecification, LatestStreamArn).
struct StreamState {
  std::string view_type;  // empty when no stream is enabled
  std::string arn;        // the enabled stream's; empty when none is

  // An enabled stream a change feed can read.
  bool serves_feed() const { return view_type == kFeedStreamViewType && !arn.empty(); }
};
StreamState stream_of(const boost::json::object& table);

// Whether the described table needs its stream turned on for `wanted`: it
// asks for a change feed and the table has no stream. A stream of another
// view type cannot be changed in place (it would have to be turned off, and
// its records lost), so that is kInvalidArgument, naming the table as
// `shown`.
Result<bool> needs_stream(const TableSpec& wanted, const boost::json::object& table,
                          const std::string& shown);

// DescribeStream's Shards[] entry; EndingSequenceNumber is there once the
// shard has closed.
FeedShard decode_shard(const boost::json::object& shard);

// `shards` with each parent before its children, as the change feed
// promises and DynamoDB does not, otherwise in the order DescribeStream
// listed them. A parent that is not listed has been trimmed, and is
// forgotten (its parent_id cleared).
std::vector<FeedShard> parents_first(std::vector<FeedShard> shards);

// One of GetRecords' Records[] of a table keyed by `pk_attr` (and `sk_attr`,
// unless empty). kInternal for a record without its sequence number or the
// table's keys; an image holding what the store cannot read is left out.
Result<FeedRecord> decode_record(const boost::json::value& value, const std::string& pk_attr,
                                 const std::string& sk_attr);

// ---------------------------------------------------------------- errors

inline constexpr size_t kErrorMessageBytesMax = 300;  // DynamoDB's own message, truncated
// An exception's name in a Status, truncated: DynamoDB's are short, but a
// proxy's or an emulator's reply may carry anything in __type.
inline constexpr size_t kErrorTypeBytesMax = 128;

// What one attempt at a request says about the request's effect. DynamoDB
// documents that a request answered with a 500 may have been applied all the
// same; only throttling promises that nothing was.
enum class Verdict {
  kAnswered,        // a definite answer: success, a false condition, bad input, a refusal
  kNothingApplied,  // throttled, or never sent
  kMayHaveApplied,  // a 5xx, or a reply that never came: the server may have acted
  kUnrecognised,    // an answer leasehold does not know, so cannot say what it means
};

// What the store does after an attempt, for a read (any request that may be
// repeated without harm) and for a write:
//
//   verdict            read         write
//   kAnswered          return it    return it
//   kNothingApplied    send again   send again
//   kMayHaveApplied    send again   kUnknownOutcome: never sent again
//   kUnrecognised      return it    kUnknownOutcome: it may have applied for all we know
//
// So a write is sent again only after attempts that applied nothing, and a
// write that gives up is kUnavailable truthfully. The lease layer resolves a
// kUnknownOutcome by reading the item back.
enum class Next { kReturn, kSendAgain, kUnknownOutcome };

Next next_step(Verdict verdict, bool idempotent);

// One row of the error table.
struct ErrorRule {
  std::string_view type;  // DynamoDB's exception name (after '#' in __type)
  Verdict verdict;
  Code code;                   // of the Status returned (or the last one, on giving up)
  std::string_view note = "";  // added to the message
};

// The error table, for tests that check every row.
std::span<const ErrorRule> error_rules();

struct Judged {
  Status status;
  Verdict verdict;
};

// Judges a non-200 reply to `op` by the error table (wire_errors.cc): every
// exception leasehold tells apart, by DynamoDB's exception name `type` (after
// '#' in __type). Any other one, and a reply that is not DynamoDB's JSON
// (`type` empty: a load balancer's page), is judged by its HTTP status alone:
// kMayHaveApplied (kUnavailable) from 500 up, else kUnrecognised
// (kInvalidArgument). `message` is DynamoDB's, cut to kErrorMessageBytesMax,
// and the name shown is cut to kErrorTypeBytesMax.
Judged classify(std::string_view op, int http_status, std::string_view type, std::string message);

// DynamoDB's exception name in a __type ("com.amazonaws...#Name" -> "Name").
std::string exception_name(std::string_view type);

// What an error reply says of itself: DynamoDB's exception name (after '#'
// in __type) and its message, each empty when the body does not say.
struct ErrorDetail {
  std::string type;
  std::string message;
};

// A whole reply to `op`: a 200 with a JSON object is that object (allocated
// from `storage`), kAnswered; a 200 that is not is kInternal, kUnrecognised
// (it applied, but cannot be read); anything else is classify()'s, and its
// exception name and message go to *detail, if given (whole: the Status's
// message cuts it).
Result<boost::json::object> interpret_reply(std::string_view op, int http_status,
                                            std::string_view body, Verdict* verdict,
                                            boost::json::storage_ptr storage = {},
                                            ErrorDetail* detail = nullptr);

// What a request the HTTP client could not complete with a `code` failure
// applied: kUnavailable means no byte was sent (kNothingApplied),
// kUnknownOutcome that some were (kMayHaveApplied); others are kAnswered.
Verdict judge_send_failure(Code code);

// Why the store stopped sending `op` after `attempts` attempts (0: it sent
// none, the deadline having passed): the attempts ran out, the retry quota
// did, or the deadline came (`why`); `last` is the last attempt's failure.
// Either way every attempt applied nothing, or the request is a read:
// kUnavailable.
Status gave_up(std::string_view op, int attempts, const Status& last, RetryStop why);

}  // namespace leasehold::store::dynamodb
