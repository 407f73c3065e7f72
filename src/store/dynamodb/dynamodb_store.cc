#include "store/dynamodb/dynamodb_store.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "base/duration.h"
#include "net/http_client.h"
#include "store/dynamodb/credentials.h"
#include "store/dynamodb/wire.h"
#include "store/eval.h"
#include "store/item_json.h"

namespace leasehold::store::dynamodb {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr size_t kBatchGetKeysMax = 100;       // DynamoDB's BatchGetItem limit
constexpr int kUnprocessedRoundsMax = 10;      // BatchGetItem rounds for UnprocessedKeys
constexpr size_t kTableNameBytesMax = 255;     // DynamoDB's table name limit
constexpr size_t kErrorMessageBytesMax = 300;  // DynamoDB's own message, truncated
constexpr std::string_view kContentType = "application/x-amz-json-1.0";
// The deadline of a call that has none: only request_timeout bounds each attempt.
constexpr MonoTime kNoDeadline = MonoTime::max();

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

bool valid_table_name(std::string_view name) {
  return name.size() >= 3 && name.size() <= kTableNameBytesMax &&
         std::all_of(name.begin(), name.end(), is_name_char);
}

std::string str(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

const json::array* array_of(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_array() ? &v->get_array() : nullptr;
}

const json::object* object_of(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_object() ? &v->get_object() : nullptr;
}

// HASH and RANGE attribute names of a KeySchema array.
std::pair<std::string, std::string> key_schema(const json::object& o) {
  std::pair<std::string, std::string> out;
  if (const json::array* schema = array_of(o, "KeySchema")) {
    for (const auto& k : *schema) {
      if (!k.is_object()) continue;
      const std::string type = str(k.get_object(), "KeyType");
      (type == "HASH" ? out.first : out.second) = str(k.get_object(), "AttributeName");
    }
  }
  return out;
}

json::array key_schema_json(const std::string& hash, const std::string& range) {
  json::array out{json::object{{"AttributeName", hash}, {"KeyType", "HASH"}}};
  if (!range.empty()) out.push_back(json::object{{"AttributeName", range}, {"KeyType", "RANGE"}});
  return out;
}

// The AttributeDefinitions of every key attribute of `spec`; an attribute
// used with two types is refused.
Result<json::array> attribute_definitions(const TableSpec& spec) {
  std::map<std::string, std::string> types;
  const auto define = [&](const std::string& attr, const char* type) -> Status {
    const auto [it, fresh] = types.emplace(attr, type);
    if (!fresh && it->second != type) {
      return invalid_argument("attribute " + attr + " is a key of type " + it->second +
                              " and of type " + type + " in table " + spec.name);
    }
    return {};
  };
  RETURN_IF_ERROR(define(spec.pk_attr, "S"));
  if (!spec.sk_attr.empty()) RETURN_IF_ERROR(define(spec.sk_attr, "S"));
  for (const auto& index : spec.indexes) {
    RETURN_IF_ERROR(define(index.hash_attr, "S"));
    RETURN_IF_ERROR(define(index.range_attr, index.range_type == AttrType::kInt ? "N" : "S"));
  }
  json::array out;
  for (const auto& [attr, type] : types) {
    out.push_back(json::object{{"AttributeName", attr}, {"AttributeType", type}});
  }
  return out;
}

json::object gsi_json(const IndexSpec& index) {
  return {{"IndexName", index.name},
          {"KeySchema", key_schema_json(index.hash_attr, index.range_attr)},
          {"Projection", json::object{{"ProjectionType", "ALL"}}}};
}

// The spec of a table as DescribeTable shows it.
TableSpec spec_from_description(std::string_view logical, const json::object& table) {
  std::map<std::string, std::string> types;
  if (const json::array* defs = array_of(table, "AttributeDefinitions")) {
    for (const auto& d : *defs) {
      if (d.is_object())
        types[str(d.get_object(), "AttributeName")] = str(d.get_object(), "AttributeType");
    }
  }
  TableSpec spec;
  spec.name = std::string(logical);
  std::tie(spec.pk_attr, spec.sk_attr) = key_schema(table);
  if (const json::array* gsis = array_of(table, "GlobalSecondaryIndexes")) {
    for (const auto& g : *gsis) {
      if (!g.is_object()) continue;
      IndexSpec index;
      index.name = str(g.get_object(), "IndexName");
      std::tie(index.hash_attr, index.range_attr) = key_schema(g.get_object());
      index.range_type = types[index.range_attr] == "N" ? AttrType::kInt : AttrType::kString;
      spec.indexes.push_back(std::move(index));
    }
  }
  return spec;
}

// The indexes `wanted` has and `have` lacks. kInvalidArgument, naming the
// table as `shown`, if the keys differ or an index both have differs.
Result<std::vector<IndexSpec>> missing_indexes(const TableSpec& wanted, const TableSpec& have,
                                               const std::string& shown) {
  if (have.pk_attr != wanted.pk_attr || have.sk_attr != wanted.sk_attr) {
    return invalid_argument("table " + shown + " exists with another key schema");
  }
  std::vector<IndexSpec> missing;
  for (const auto& index : wanted.indexes) {
    const auto same = std::find_if(have.indexes.begin(), have.indexes.end(),
                                   [&](const IndexSpec& i) { return i.name == index.name; });
    if (same == have.indexes.end()) {
      missing.push_back(index);
    } else {
      RETURN_IF_ERROR(check_same_index(*same, index));
    }
  }
  return missing;
}

// True when the table and each index in `indexes` are ACTIVE.
bool is_active(const json::object& table, const std::vector<std::string>& indexes) {
  if (str(table, "TableStatus") != "ACTIVE") return false;
  const json::array* gsis = array_of(table, "GlobalSecondaryIndexes");
  return std::all_of(indexes.begin(), indexes.end(), [&](const std::string& name) {
    if (gsis == nullptr) return false;
    return std::any_of(gsis->begin(), gsis->end(), [&](const json::value& g) {
      return g.is_object() && str(g.get_object(), "IndexName") == name &&
             str(g.get_object(), "IndexStatus") == "ACTIVE";
    });
  });
}

// DynamoDB refuses `<` and friends on a BOOL operand, where the item store
// says they are false.
bool is_bool_inequality(const Condition& c) {
  return c.kind == Condition::Kind::kCompare && type_of(c.value) == AttrType::kBool &&
         c.op != CompareOp::kEq && c.op != CompareOp::kNe;
}

bool has_bool_inequality(const Condition& c) {
  if (is_bool_inequality(c)) return true;
  return std::any_of(c.children.begin(), c.children.end(), has_bool_inequality);
}

Condition rewrite_bool_inequalities(const Condition& c, const std::string& pk_attr) {
  if (is_bool_inequality(c)) return cond::exists(pk_attr) && cond::not_exists(pk_attr);
  Condition out;
  out.kind = c.kind;
  out.attr = c.attr;
  out.op = c.op;
  out.value = c.value;
  out.children.reserve(c.children.size());
  for (const auto& child : c.children) {
    out.children.push_back(rewrite_bool_inequalities(child, pk_attr));
  }
  return out;
}

// `c` as DynamoDB takes it: such comparisons become an always-false
// condition. Nearly every condition has none, and is returned as it is; one
// that has is rewritten into `storage`.
const Condition& portable(const Condition& c, const std::string& pk_attr, Condition& storage) {
  if (!has_bool_inequality(c)) return c;
  storage = rewrite_bool_inequalities(c, pk_attr);
  return storage;
}

// DynamoDB numbers hold 38 digits, so an ADD past int64 would succeed there
// and leave a number leasehold cannot read. Each add() gets a guard that
// fails the write instead; "" when there are no adds.
std::string overflow_guards(const Update& update, ExpressionBuilder& b) {
  std::string out;
  for (const auto& a : update.actions()) {
    if (a.kind != UpdateAction::Kind::kAdd) continue;
    const int64_t delta = std::get<int64_t>(a.value);
    if (delta == 0) continue;
    const int64_t limit = delta > 0 ? std::numeric_limits<int64_t>::max() - delta
                                    : std::numeric_limits<int64_t>::min() - delta;
    const std::string n = b.name(a.attr);
    out += out.empty() ? "" : " AND ";
    out += "(attribute_not_exists(" + n + ") OR NOT attribute_type(" + n + ", " +
           b.value(std::string("N")) + ") OR " + n + (delta > 0 ? " <= " : " >= ") +
           b.value(limit) + ")";
  }
  return out;
}

// Moves the builder's placeholders into the request: it is done with them.
void add_placeholders(json::object& body, ExpressionBuilder& b) {
  if (!b.names().empty()) body["ExpressionAttributeNames"] = b.take_names();
  if (!b.values().empty()) body["ExpressionAttributeValues"] = b.take_values();
}

bool empty_string(const Value& v) {
  const auto* s = std::get_if<std::string>(&v);
  return s != nullptr && s->empty();
}

// A key condition on `attr`; `none` when nothing can match (DynamoDB refuses
// empty strings as key operands, and no key is empty).
struct RangeText {
  bool none = false;
  std::string text;  // "" means no condition on the range attribute
};

RangeText range_text(ExpressionBuilder& b, const std::string& attr, const KeyRange& r) {
  using K = KeyRange::Kind;
  if (r.kind == K::kAll) return {};
  if (empty_string(r.lo)) {
    if (r.kind == K::kGt || r.kind == K::kGe || r.kind == K::kBeginsWith) return {};
    if (r.kind == K::kBetween && !empty_string(r.hi))
      return range_text(b, attr, KeyRange::le(r.hi));
    return {true, ""};
  }
  const std::string n = b.name(attr);
  switch (r.kind) {
    case K::kEq:
      return {false, n + " = " + b.value(r.lo)};
    case K::kLt:
      return {false, n + " < " + b.value(r.lo)};
    case K::kLe:
      return {false, n + " <= " + b.value(r.lo)};
    case K::kGt:
      return {false, n + " > " + b.value(r.lo)};
    case K::kGe:
      return {false, n + " >= " + b.value(r.lo)};
    case K::kBetween: {
      const std::string lo = b.value(r.lo);
      return {false, n + " BETWEEN " + lo + " AND " + b.value(r.hi)};
    }
    case K::kBeginsWith:
      return {false, "begins_with(" + n + ", " + b.value(r.lo) + ")"};
    case K::kAll:
      break;
  }
  return {};
}

// The attributes (and their types) of a LastEvaluatedKey, i.e. of a cursor.
using CursorShape = std::map<std::string, AttrType, std::less<>>;

CursorShape table_cursor_shape(const TableSpec& spec) {
  CursorShape shape{{spec.pk_attr, AttrType::kString}};
  if (!spec.sk_attr.empty()) shape.emplace(spec.sk_attr, AttrType::kString);
  return shape;
}

// A cursor is the LastEvaluatedKey as an item in item_json form: opaque to
// callers, and checked against the expected shape when it comes back.
Result<json::object> decode_cursor(const std::string& cursor, const CursorShape& shape) {
  const Status malformed = invalid_argument("malformed query cursor");
  Result<Item> item = store::decode_item(cursor);
  if (!item.ok() || item->size() != shape.size()) return malformed;
  for (const auto& [attr, type] : shape) {
    const auto it = item->find(attr);
    if (it == item->end() || type_of(it->second) != type || empty_string(it->second)) {
      return malformed;
    }
  }
  return encode_item(*item);
}

std::string exception_name(std::string_view type) {
  const size_t hash = type.rfind('#');
  return std::string(hash == std::string_view::npos ? type : type.substr(hash + 1));
}

// ---------------------------------------------------------------- errors

// What one attempt at a request says about the request's effect. DynamoDB
// documents that a request answered with a 500 may have been applied all the
// same; only throttling promises that nothing was.
enum class Verdict {
  kAnswered,        // a definite answer: success, a false condition, bad input, a refusal
  kNothingApplied,  // throttled, or never sent
  kMayHaveApplied,  // a 5xx, or a reply that never came: the server may have acted
  kUnrecognised,    // an answer leasehold does not know, so cannot say what it means
};

// What call() does after an attempt, for a read (any request that may be
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

Next next_step(Verdict verdict, bool idempotent) {
  switch (verdict) {
    case Verdict::kAnswered:
      return Next::kReturn;
    case Verdict::kNothingApplied:
      return Next::kSendAgain;
    case Verdict::kMayHaveApplied:
      return idempotent ? Next::kSendAgain : Next::kUnknownOutcome;
    case Verdict::kUnrecognised:
      return idempotent ? Next::kReturn : Next::kUnknownOutcome;
  }
  return Next::kUnknownOutcome;
}

struct ErrorRule {
  std::string_view type;  // DynamoDB's exception name (after '#' in __type)
  Verdict verdict;
  Code code;                   // of the Status returned (or the last one, on giving up)
  std::string_view note = "";  // added to the message
};

constexpr std::string_view kRefused = " (DynamoDB refused the credentials)";

// Every exception leasehold tells apart. Any other one, and a reply that is
// not DynamoDB's JSON (a load balancer's page), is judged by its HTTP status
// alone: kMayHaveApplied from 500 up, else kUnrecognised (kInvalidArgument).
constexpr ErrorRule kErrorRules[] = {
    {"ConditionalCheckFailedException", Verdict::kAnswered, Code::kConditionFailed},
    {"ResourceNotFoundException", Verdict::kAnswered, Code::kNotFound},
    {"ValidationException", Verdict::kAnswered, Code::kInvalidArgument},
    {"SerializationException", Verdict::kAnswered, Code::kInvalidArgument},
    {"ResourceInUseException", Verdict::kAnswered, Code::kAlreadyExists},
    // Refused credentials: nothing was applied, and sending again cannot help.
    {"UnrecognizedClientException", Verdict::kAnswered, Code::kUnavailable, kRefused},
    {"InvalidSignatureException", Verdict::kAnswered, Code::kUnavailable, kRefused},
    {"MissingAuthenticationToken", Verdict::kAnswered, Code::kUnavailable, kRefused},
    {"MissingAuthenticationTokenException", Verdict::kAnswered, Code::kUnavailable, kRefused},
    {"AccessDeniedException", Verdict::kAnswered, Code::kUnavailable, kRefused},
    {"ExpiredTokenException", Verdict::kAnswered, Code::kUnavailable, kRefused},
    {"IncompleteSignatureException", Verdict::kAnswered, Code::kUnavailable, kRefused},
    {"InvalidClientTokenId", Verdict::kAnswered, Code::kUnavailable, kRefused},
    {"SignatureDoesNotMatch", Verdict::kAnswered, Code::kUnavailable, kRefused},
    // Throttling: refused before it had any effect.
    {"ProvisionedThroughputExceededException", Verdict::kNothingApplied, Code::kUnavailable},
    {"ThrottlingException", Verdict::kNothingApplied, Code::kUnavailable},
    {"RequestLimitExceeded", Verdict::kNothingApplied, Code::kUnavailable},
    {"LimitExceededException", Verdict::kNothingApplied, Code::kUnavailable},
    // The server failed while handling the request, perhaps after applying it.
    {"InternalServerError", Verdict::kMayHaveApplied, Code::kUnavailable},
    {"ServiceUnavailable", Verdict::kMayHaveApplied, Code::kUnavailable},
};

struct Judged {
  Status status;
  Verdict verdict;
};

// Judges a non-200 reply by kErrorRules; `type` is empty when the body is not
// DynamoDB's JSON.
Judged classify(std::string_view op, int http_status, std::string_view type, std::string message) {
  if (message.size() > kErrorMessageBytesMax) message.resize(kErrorMessageBytesMax);
  const std::string what =
      std::string(op) + ": " +
      (type.empty() ? "HTTP " + std::to_string(http_status) : std::string(type)) +
      (message.empty() ? "" : ": " + message);
  const auto rule = std::find_if(std::begin(kErrorRules), std::end(kErrorRules),
                                 [&](const ErrorRule& r) { return r.type == type; });
  if (rule == std::end(kErrorRules)) {
    if (http_status >= 500) return {unavailable(what), Verdict::kMayHaveApplied};
    return {invalid_argument(what), Verdict::kUnrecognised};
  }
  if (rule->code == Code::kConditionFailed) {
    return {condition_failed("the condition is false"), rule->verdict};
  }
  return {Status(rule->code, what + std::string(rule->note)), rule->verdict};
}

// The HTTP client says whether any byte of a request it could not complete
// was sent: nothing sent applied nothing.
Verdict judge_send_failure(Code code) {
  switch (code) {
    case Code::kUnavailable:
      return Verdict::kNothingApplied;
    case Code::kUnknownOutcome:
      return Verdict::kMayHaveApplied;
    default:
      return Verdict::kAnswered;
  }
}

class DynamoDbStore final : public ItemStore {
 public:
  DynamoDbStore(DynamoDbOptions options, std::unique_ptr<net::HttpClient> http)
      : options_(std::move(options)), http_(std::move(http)) {
    if (options_.clock == nullptr) options_.clock = &real_clock_;
    if (options_.random == nullptr) options_.random = &system_random_;
    if (!options_.sleep) options_.sleep = [](Duration d) { std::this_thread::sleep_for(d); };
  }

  Status ensure_table(const TableSpec& spec) override;
  Status require_table(const TableSpec& spec) override;
  Result<Item> get(std::string_view table, const Key& key, bool consistent) override;
  Result<std::vector<Item>> batch_get(std::string_view table, std::span<const Key> keys) override;
  Status put(std::string_view table, const Item& item, const Condition& condition) override;
  Result<Item> update(std::string_view table, const Key& key, const Update& update,
                      const Condition& condition) override;
  Status remove(std::string_view table, const Key& key, const Condition& condition) override;
  Result<Page> query(std::string_view table, std::string_view pk, const KeyRange& range,
                     const QueryOptions& options) override;
  Result<Page> query_index(std::string_view table, std::string_view index,
                           std::string_view hash_value, const KeyRange& range,
                           const QueryOptions& options) override;
  using ItemStore::update_each;
  std::vector<Result<Item>> update_each(std::string_view table,
                                        std::span<const UpdateRequest> requests,
                                        Duration timeout) override;
  std::string_view backend_name() const override { return "dynamodb"; }

 private:
  using SpecPtr = std::shared_ptr<const TableSpec>;
  using KeyTuple = std::pair<std::string, std::string>;

  std::string physical(std::string_view logical) const {
    return options_.table_prefix + std::string(logical);
  }

  // The reply's JSON lives in `storage` (the default heap unless given): a
  // caller that decodes the reply at once passes a stack arena. A request is
  // `idempotent` when sending it twice does no harm (reads); no attempt is
  // sent, and no pause taken, that would end past `deadline`.
  Result<json::object> call(std::string_view op, const json::object& body, bool idempotent,
                            json::storage_ptr storage = {}, MonoTime deadline = kNoDeadline);
  Result<json::object> send_once(std::string_view op, const std::string& body, Duration timeout,
                                 json::storage_ptr storage, Verdict* verdict);
  Result<net::HttpRequest> make_request(std::string_view op, std::string body);
  Result<json::object> interpret(std::string_view op, const net::HttpResponse& response,
                                 Verdict* verdict, json::storage_ptr storage);
  Duration backoff_pause(int attempt);
  // The time left until `deadline`; Duration::max() for kNoDeadline.
  Duration time_left(MonoTime deadline) const;
  MonoTime deadline_after(Duration timeout) const;

  Result<json::object> describe(std::string_view logical, MonoTime deadline = kNoDeadline);
  Result<SpecPtr> spec_of(std::string_view logical, MonoTime deadline = kNoDeadline);
  void cache(const TableSpec& spec);
  Status create_table(const TableSpec& spec);
  Status add_index(TableSpec& have, const IndexSpec& index);
  Status wait_active(std::string_view logical, const std::vector<std::string>& indexes);
  Status reconcile(const TableSpec& wanted, TableSpec have);

  Status batch_get_chunk(const TableSpec& spec, std::span<const Key> keys,
                         std::map<KeyTuple, Item>& found);
  Result<Item> get_until(std::string_view table, const Key& key, bool consistent,
                         MonoTime deadline);
  Result<Item> update_until(std::string_view table, const Key& key, const Update& update,
                            const Condition& condition, MonoTime deadline);
  Result<Item> explain_failed_update(std::string_view table, const TableSpec& spec, const Key& key,
                                     const Update& update, const Condition& condition,
                                     MonoTime deadline);
  Result<Page> run_query(json::object body, const CursorShape& shape, const QueryOptions& options,
                         const TableSpec& spec, const IndexSpec* index);

  DynamoDbOptions options_;
  std::unique_ptr<net::HttpClient> http_;
  SigningKeyCache signing_keys_;
  RealClock real_clock_;
  SystemRandom system_random_;
  std::mutex random_mu_;

  std::mutex mu_;  // guards specs_
  std::map<std::string, SpecPtr, std::less<>> specs_;
};

// ---------------------------------------------------------------- requests

Result<net::HttpRequest> DynamoDbStore::make_request(std::string_view op, std::string body) {
  HttpRequestToSign to_sign;
  to_sign.host = http_->host_header();
  to_sign.headers = {{"Content-Type", std::string(kContentType)},
                     {"X-Amz-Target", "DynamoDB_20120810." + std::string(op)}};
  to_sign.body = std::move(body);
  Credentials fetched;
  if (options_.credentials_source) {
    ASSIGN_OR_RETURN(fetched, options_.credentials_source->get());
  }
  const Credentials& credentials = options_.credentials_source ? fetched : options_.credentials;
  ASSIGN_OR_RETURN(SigV4Result signature, sign_v4(to_sign, credentials, options_.region, "dynamodb",
                                                  options_.clock->wall_now(), &signing_keys_));
  net::HttpRequest request;
  request.method = "POST";
  request.target = "/";
  request.headers = std::move(to_sign.headers);
  request.headers.emplace_back("X-Amz-Date", signature.amz_date);
  request.headers.emplace_back("Authorization", signature.authorization);
  if (!signature.security_token.empty()) {
    request.headers.emplace_back("X-Amz-Security-Token", signature.security_token);
  }
  request.body = std::move(to_sign.body);
  return request;
}

Result<json::object> DynamoDbStore::interpret(std::string_view op,
                                              const net::HttpResponse& response, Verdict* verdict,
                                              json::storage_ptr storage) {
  boost::system::error_code ec;
  json::value parsed = json::parse(response.body, ec, std::move(storage));
  if (response.status == 200) {
    if (!ec && parsed.is_object()) {
      *verdict = Verdict::kAnswered;
      return std::move(parsed.get_object());
    }
    // A write answered 200 has applied, but a reply that cannot be read tells
    // the caller no more than a lost one.
    *verdict = Verdict::kUnrecognised;
    return internal_error(std::string(op) + ": malformed JSON reply");
  }
  std::string type, message;
  if (!ec && parsed.is_object()) {
    type = exception_name(str(parsed.get_object(), "__type"));
    message = str(parsed.get_object(), "message");
    if (message.empty()) message = str(parsed.get_object(), "Message");
  }
  Judged judged = classify(op, response.status, type, std::move(message));
  *verdict = judged.verdict;
  return std::move(judged.status);
}

// Capped exponential backoff with full jitter, before attempt `attempt` >= 1.
Duration DynamoDbStore::backoff_pause(int attempt) {
  const int64_t base = options_.backoff_base.count();
  const int64_t cap =
      std::min<int64_t>(options_.backoff_max.count(), base << std::min(attempt - 1, 20));
  std::lock_guard lock(random_mu_);
  return Duration(options_.random->uniform(0, std::max<int64_t>(cap, 0)));
}

Duration DynamoDbStore::time_left(MonoTime deadline) const {
  if (deadline == kNoDeadline) return Duration::max();
  return deadline - options_.clock->mono_now();
}

MonoTime DynamoDbStore::deadline_after(Duration timeout) const {
  const MonoTime now = options_.clock->mono_now();
  // kNoTimeout, and any timeout too long to add to the clock, is no bound.
  if (timeout >= kNoDeadline - now) return kNoDeadline;
  return now + timeout;
}

Result<json::object> DynamoDbStore::send_once(std::string_view op, const std::string& body,
                                              Duration timeout, json::storage_ptr storage,
                                              Verdict* verdict) {
  *verdict = Verdict::kAnswered;
  ASSIGN_OR_RETURN(net::HttpRequest request, make_request(op, body));
  Result<net::HttpResponse> response = http_->send(request, timeout);
  if (response.ok()) return interpret(op, *response, verdict, std::move(storage));
  *verdict = judge_send_failure(response.status().code());
  return response.status().with_context(op);
}

// Why call() stopped sending: the attempts ran out, or the deadline came.
// Either way every attempt applied nothing, or the request is a read.
Status gave_up(std::string_view op, int attempts, const Status& last, bool at_deadline) {
  if (attempts == 0) return unavailable(std::string(op) + ": not sent before the deadline");
  return unavailable(std::string(op) + ": gave up " + (at_deadline ? "at the deadline " : "") +
                     "after " + std::to_string(attempts) + " attempts: " + last.message());
}

// Sends one request, and sends it again (after a pause) when next_step()
// says so, up to attempts_max times and never past `deadline`.
Result<json::object> DynamoDbStore::call(std::string_view op, const json::object& body,
                                         bool idempotent, json::storage_ptr storage,
                                         MonoTime deadline) {
  const std::string text = json::serialize(body);
  const int attempts_max = std::max(options_.attempts_max, 1);
  Status last;
  for (int attempt = 0; attempt < attempts_max; ++attempt) {
    if (attempt > 0) {
      const Duration pause = backoff_pause(attempt);
      if (pause >= time_left(deadline)) return gave_up(op, attempt, last, true);
      options_.sleep(pause);
    }
    const Duration left = time_left(deadline);
    if (left <= Duration::zero()) return gave_up(op, attempt, last, true);
    Verdict verdict;
    Result<json::object> reply =
        send_once(op, text, std::min(options_.request_timeout, left), storage, &verdict);
    switch (next_step(verdict, idempotent)) {
      case Next::kReturn:
        return reply;
      case Next::kUnknownOutcome:
        if (reply.status().code() == Code::kUnknownOutcome) return reply.status();
        return unknown_outcome(reply.status().message() + "; the write may have been applied");
      case Next::kSendAgain:
        break;
    }
    assert((idempotent || verdict == Verdict::kNothingApplied) &&
           "a write that may have applied is never sent again");
    last = reply.status();
  }
  return gave_up(op, attempts_max, last, false);
}

// ---------------------------------------------------------------- tables

Result<json::object> DynamoDbStore::describe(std::string_view logical, MonoTime deadline) {
  if (!valid_table_name(physical(logical))) {
    return not_found("no table " + std::string(logical));
  }
  ASSIGN_OR_RETURN(json::object reply,
                   call("DescribeTable", {{"TableName", physical(logical)}}, true, {}, deadline));
  const json::object* table = object_of(reply, "Table");
  if (table == nullptr) return internal_error("DescribeTable: reply without Table");
  return *table;
}

Result<DynamoDbStore::SpecPtr> DynamoDbStore::spec_of(std::string_view logical, MonoTime deadline) {
  {
    std::lock_guard lock(mu_);
    const auto it = specs_.find(logical);
    if (it != specs_.end()) return it->second;
  }
  Result<json::object> table = describe(logical, deadline);
  if (!table.ok()) {
    if (table.status().code() == Code::kNotFound)
      return not_found("no table " + std::string(logical));
    return table.status();
  }
  auto spec = std::make_shared<const TableSpec>(spec_from_description(logical, *table));
  std::lock_guard lock(mu_);
  specs_[spec->name] = spec;
  return spec;
}

void DynamoDbStore::cache(const TableSpec& spec) {
  std::lock_guard lock(mu_);
  specs_[spec.name] = std::make_shared<const TableSpec>(spec);
}

Status DynamoDbStore::create_table(const TableSpec& spec) {
  ASSIGN_OR_RETURN(json::array definitions, attribute_definitions(spec));
  json::object body{{"TableName", physical(spec.name)},
                    {"BillingMode", "PAY_PER_REQUEST"},
                    {"AttributeDefinitions", std::move(definitions)},
                    {"KeySchema", key_schema_json(spec.pk_attr, spec.sk_attr)}};
  if (!spec.indexes.empty()) {
    json::array gsis;
    for (const auto& index : spec.indexes) gsis.push_back(gsi_json(index));
    body["GlobalSecondaryIndexes"] = std::move(gsis);
  }
  // Safe to send again: a CreateTable that had applied is then refused with
  // ResourceInUseException, which ensure_table() takes as "created".
  return call("CreateTable", body, true).status();
}

Status DynamoDbStore::add_index(TableSpec& have, const IndexSpec& index) {
  TableSpec grown = have;
  grown.indexes.push_back(index);
  ASSIGN_OR_RETURN(json::array definitions, attribute_definitions(grown));
  json::array updates{json::object{{"Create", gsi_json(index)}}};
  json::object body{{"TableName", physical(have.name)},
                    {"AttributeDefinitions", std::move(definitions)},
                    {"GlobalSecondaryIndexUpdates", std::move(updates)}};
  RETURN_IF_ERROR(call("UpdateTable", body, false).status());
  RETURN_IF_ERROR(wait_active(have.name, {index.name}));
  have = std::move(grown);
  return {};
}

// Polls DescribeTable, with a growing pause, until the table and `indexes`
// are ACTIVE or table_active_timeout has passed.
Status DynamoDbStore::wait_active(std::string_view logical,
                                  const std::vector<std::string>& indexes) {
  const MonoTime deadline = options_.clock->mono_now() + options_.table_active_timeout;
  Duration pause = 5ms;
  while (true) {
    ASSIGN_OR_RETURN(json::object table, describe(logical));
    if (is_active(table, indexes)) return {};
    if (options_.clock->mono_now() >= deadline) {
      return unavailable("table " + std::string(logical) +
                         " or its new index is not ACTIVE after " +
                         std::to_string(to_ms(options_.table_active_timeout)) + " ms");
    }
    options_.sleep(pause);
    pause = std::min<Duration>(pause * 2, 1s);
  }
}

Status DynamoDbStore::reconcile(const TableSpec& wanted, TableSpec have) {
  cache(have);
  // Check every index first, so that a refused call changes nothing.
  ASSIGN_OR_RETURN(const std::vector<IndexSpec> added, missing_indexes(wanted, have, wanted.name));
  TableSpec all = have;
  all.indexes.insert(all.indexes.end(), added.begin(), added.end());
  RETURN_IF_ERROR(attribute_definitions(all).status());
  // DynamoDB creates one index per UpdateTable call.
  for (const auto& index : added) {
    Status status = add_index(have, index);
    cache(have);
    RETURN_IF_ERROR(status);
  }
  return {};
}

Status DynamoDbStore::ensure_table(const TableSpec& spec) {
  RETURN_IF_ERROR(validate_table_spec(spec));
  if (!valid_table_name(physical(spec.name))) {
    return invalid_argument("table name " + physical(spec.name) + " is not 3..255 characters");
  }
  RETURN_IF_ERROR(attribute_definitions(spec).status());
  Result<json::object> table = describe(spec.name);
  if (!table.ok() && table.status().code() == Code::kNotFound) {
    const Status created = create_table(spec);
    if (created.ok()) {
      std::vector<std::string> names;
      for (const auto& index : spec.indexes) names.push_back(index.name);
      RETURN_IF_ERROR(wait_active(spec.name, names));
      cache(spec);
      return {};
    }
    if (created.code() != Code::kAlreadyExists) return created;
    table = describe(spec.name);  // another process created it first
  }
  if (!table.ok()) return table.status();
  if (!is_active(*table, {})) RETURN_IF_ERROR(wait_active(spec.name, {}));
  return reconcile(spec, spec_from_description(spec.name, *table));
}

// Like ensure_table(), but creates nothing: what is missing is kNotFound,
// naming the physical table (what the user sees in the AWS console).
Status DynamoDbStore::require_table(const TableSpec& spec) {
  RETURN_IF_ERROR(validate_table_spec(spec));
  Result<json::object> table = describe(spec.name);
  if (!table.ok() && table.status().code() == Code::kNotFound) {
    return not_found("table " + physical(spec.name) + " does not exist");
  }
  if (!table.ok()) return table.status();
  const TableSpec have = spec_from_description(spec.name, *table);
  ASSIGN_OR_RETURN(const std::vector<IndexSpec> missing,
                   missing_indexes(spec, have, physical(spec.name)));
  if (!missing.empty()) {
    return not_found("table " + physical(spec.name) + " has no index " + missing.front().name);
  }
  std::vector<std::string> names;
  for (const auto& index : spec.indexes) names.push_back(index.name);
  if (!is_active(*table, names)) RETURN_IF_ERROR(wait_active(spec.name, names));
  cache(have);
  return {};
}

// ---------------------------------------------------------------- items

Result<Item> DynamoDbStore::get(std::string_view table, const Key& key, bool consistent) {
  return get_until(table, key, consistent, kNoDeadline);
}

Result<Item> DynamoDbStore::get_until(std::string_view table, const Key& key, bool consistent,
                                      MonoTime deadline) {
  ASSIGN_OR_RETURN(SpecPtr spec, spec_of(table, deadline));
  RETURN_IF_ERROR(validate_key(*spec, key));
  const json::object body{{"TableName", physical(table)},
                          {"Key", encode_key(*spec, key)},
                          {"ConsistentRead", consistent}};
  unsigned char arena[8192];
  json::monotonic_resource reply_memory(arena, sizeof(arena));
  ASSIGN_OR_RETURN(json::object reply, call("GetItem", body, true, &reply_memory, deadline));
  const json::object* item = object_of(reply, "Item");
  if (item == nullptr) return not_found("no item with that key in table " + std::string(table));
  return decode_item(*item);
}

Status DynamoDbStore::batch_get_chunk(const TableSpec& spec, std::span<const Key> keys,
                                      std::map<KeyTuple, Item>& found) {
  const std::string name = physical(spec.name);
  json::array pending;
  for (const auto& key : keys) pending.push_back(encode_key(spec, key));
  for (int round = 0; !pending.empty(); ++round) {
    if (round >= kUnprocessedRoundsMax) {
      return unavailable("BatchGetItem: keys still unprocessed after " +
                         std::to_string(kUnprocessedRoundsMax) + " rounds");
    }
    if (round > 0) options_.sleep(backoff_pause(round));
    json::object request;
    request[name] = json::object{{"Keys", std::move(pending)}, {"ConsistentRead", true}};
    ASSIGN_OR_RETURN(json::object reply,
                     call("BatchGetItem", {{"RequestItems", std::move(request)}}, true));
    pending = json::array();
    const json::object* responses = object_of(reply, "Responses");
    const json::array* items = responses ? array_of(*responses, name) : nullptr;
    for (const auto& v : items ? *items : json::array()) {
      if (!v.is_object()) return internal_error("BatchGetItem: malformed item");
      ASSIGN_OR_RETURN(Item item, decode_item(v.get_object()));
      const std::string* pk = get_string(item, spec.pk_attr);
      const std::string* sk = spec.sk_attr.empty() ? nullptr : get_string(item, spec.sk_attr);
      if (pk == nullptr) return internal_error("BatchGetItem: item without its key");
      found[{*pk, sk ? *sk : ""}] = std::move(item);
    }
    const json::object* unprocessed = object_of(reply, "UnprocessedKeys");
    const json::object* left = unprocessed ? object_of(*unprocessed, name) : nullptr;
    if (const json::array* keys_left = left ? array_of(*left, "Keys") : nullptr)
      pending = *keys_left;
  }
  return {};
}

Result<std::vector<Item>> DynamoDbStore::batch_get(std::string_view table,
                                                   std::span<const Key> keys) {
  ASSIGN_OR_RETURN(SpecPtr spec, spec_of(table));
  for (const auto& key : keys) RETURN_IF_ERROR(validate_key(*spec, key));
  // BatchGetItem refuses duplicate keys: ask for each key once.
  std::vector<Key> unique;
  std::set<KeyTuple> seen;
  for (const auto& key : keys) {
    if (seen.emplace(key.pk, key.sk).second) unique.push_back(key);
  }
  std::map<KeyTuple, Item> found;
  for (size_t i = 0; i < unique.size(); i += kBatchGetKeysMax) {
    const size_t n = std::min(kBatchGetKeysMax, unique.size() - i);
    RETURN_IF_ERROR(batch_get_chunk(*spec, std::span<const Key>(unique).subspan(i, n), found));
  }
  std::vector<Item> out;
  for (const auto& key : keys) {
    const auto it = found.find({key.pk, key.sk});
    if (it != found.end()) out.push_back(it->second);
  }
  return out;
}

Status DynamoDbStore::put(std::string_view table, const Item& item, const Condition& condition) {
  ASSIGN_OR_RETURN(SpecPtr spec, spec_of(table));
  RETURN_IF_ERROR(validate_item(*spec, item));
  RETURN_IF_ERROR(validate_index_attrs(*spec, item));
  RETURN_IF_ERROR(validate_condition(condition));
  ExpressionBuilder b;
  json::object body{{"TableName", physical(table)}, {"Item", encode_item(item)}};
  Condition rewritten;
  const std::string expression = b.condition(portable(condition, spec->pk_attr, rewritten));
  if (!expression.empty()) body["ConditionExpression"] = expression;
  add_placeholders(body, b);
  return call("PutItem", body, false).status();
}

// A guarded update failed its condition: either the caller's condition is
// false, or an add() would have overflowed. Reads the item back to tell.
Result<Item> DynamoDbStore::explain_failed_update(std::string_view table, const TableSpec& spec,
                                                  const Key& key, const Update& update,
                                                  const Condition& condition, MonoTime deadline) {
  const Status failed = condition_failed("the condition is false");
  Result<Item> current = get_until(table, key, true, deadline);
  if (!current.ok() && current.status().code() != Code::kNotFound) return failed;
  if (!evaluate(condition, current.ok() ? &*current : nullptr)) return failed;
  Item next = current.ok() ? *current : Item{};
  set_key(spec, key, next);
  RETURN_IF_ERROR(apply_update(update, next));
  return failed;  // the item changed in between; the caller's condition decides
}

Result<Item> DynamoDbStore::update(std::string_view table, const Key& key, const Update& update,
                                   const Condition& condition) {
  return update_until(table, key, update, condition, kNoDeadline);
}

Result<Item> DynamoDbStore::update_until(std::string_view table, const Key& key,
                                         const Update& update, const Condition& condition,
                                         MonoTime deadline) {
  ASSIGN_OR_RETURN(SpecPtr spec, spec_of(table, deadline));
  RETURN_IF_ERROR(validate_key(*spec, key));
  RETURN_IF_ERROR(validate_update(*spec, update));
  RETURN_IF_ERROR(validate_condition(condition));
  // The request is built, serialised and dropped right here, on every
  // heartbeat: its JSON lives on a stack arena.
  unsigned char request_arena[4096];
  json::monotonic_resource request_memory(request_arena, sizeof(request_arena));
  const json::storage_ptr storage(&request_memory);
  ExpressionBuilder b(storage);
  json::object body(storage);
  body.reserve(8);
  body.emplace("TableName", physical(table));
  body.emplace("Key", encode_key(*spec, key, storage));
  body.emplace("ReturnValues", update.returns_updated_only() ? "UPDATED_NEW" : "ALL_NEW");
  // With no UpdateExpression, UpdateItem still creates the item (key only).
  if (!update.empty()) body["UpdateExpression"] = b.update(update);
  // Each placeholder must be used exactly once: render the condition once,
  // as a whole or as an operand of the AND with the overflow guards.
  Condition rewritten;
  const Condition& portable_condition = portable(condition, spec->pk_attr, rewritten);
  const std::string guards = overflow_guards(update, b);
  std::string expression;
  if (guards.empty()) {
    expression = b.condition(portable_condition);
  } else if (portable_condition.is_true()) {
    expression = guards;
  } else {
    expression = b.condition_term(portable_condition) + " AND " + guards;
  }
  if (!expression.empty()) body["ConditionExpression"] = expression;
  add_placeholders(body, b);
  // The reply is decoded into an Item right here: parse it on the stack.
  unsigned char arena[8192];
  json::monotonic_resource reply_memory(arena, sizeof(arena));
  Result<json::object> reply = call("UpdateItem", body, false, &reply_memory, deadline);
  if (!reply.ok()) {
    if (reply.status().code() == Code::kConditionFailed && !guards.empty()) {
      return explain_failed_update(table, *spec, key, update, condition, deadline);
    }
    return reply.status();
  }
  const json::object* attributes = object_of(*reply, "Attributes");
  if (attributes == nullptr) {
    Item bare;
    set_key(*spec, key, bare);
    return bare;
  }
  Result<Item> item = decode_item(*attributes);
  // UPDATED_NEW omits the key.
  if (item.ok() && update.returns_updated_only()) set_key(*spec, key, *item);
  return item;
}

// Each write is its own conditional UpdateItem; they run on up to
// parallel_writes threads at once, each on a connection of the pool. Once the
// deadline has passed a writer takes no new request, which stays unsent and
// kUnavailable: a heartbeat that would land after its lease's deadline is
// worthless, and must not hold back the next round.
std::vector<Result<Item>> DynamoDbStore::update_each(std::string_view table,
                                                     std::span<const UpdateRequest> requests,
                                                     Duration timeout) {
  const MonoTime deadline = deadline_after(timeout);
  std::vector<Result<Item>> results(requests.size(), Result<Item>(internal_error("not run")));
  const auto in_time = [&] { return time_left(deadline) > Duration::zero(); };
  const auto run = [&](size_t i) {
    const UpdateRequest& r = requests[i];
    results[i] = update_until(table, r.key, r.update, r.condition, deadline);
  };
  const size_t workers =
      std::min(requests.size(), static_cast<size_t>(std::max(options_.parallel_writes, 1)));
  std::atomic<size_t> next{0};  // the next request to take; requests are taken in order
  const auto work = [&] {
    for (size_t i; in_time() && (i = next.fetch_add(1)) < requests.size();) run(i);
  };
  if (workers <= 1) {
    work();
  } else {
    std::vector<std::jthread> threads;
    threads.reserve(workers - 1);
    for (size_t t = 1; t < workers; ++t) threads.emplace_back(work);
    work();  // this thread is one of the workers
  }
  for (size_t i = std::min(next.load(), requests.size()); i < requests.size(); ++i) {
    results[i] = gave_up("UpdateItem", 0, {}, true);
  }
  return results;
}

Status DynamoDbStore::remove(std::string_view table, const Key& key, const Condition& condition) {
  ASSIGN_OR_RETURN(SpecPtr spec, spec_of(table));
  RETURN_IF_ERROR(validate_key(*spec, key));
  RETURN_IF_ERROR(validate_condition(condition));
  ExpressionBuilder b;
  json::object body{{"TableName", physical(table)}, {"Key", encode_key(*spec, key)}};
  Condition rewritten;
  const std::string expression = b.condition(portable(condition, spec->pk_attr, rewritten));
  if (!expression.empty()) body["ConditionExpression"] = expression;
  add_placeholders(body, b);
  return call("DeleteItem", body, false).status();
}

// ---------------------------------------------------------------- queries

// A GSI returns items with equal range values in no particular order; within
// one page they are put in key order, as the other backends return them.
// (Across pages DynamoDB's order stands: the cursor is its LastEvaluatedKey.)
void sort_ties(const TableSpec& spec, const IndexSpec& index, std::vector<Item>& items) {
  const auto position = [&](const Item& item) {
    const auto r = item.find(index.range_attr);
    const std::string* pk = get_string(item, spec.pk_attr);
    const std::string* sk = spec.sk_attr.empty() ? nullptr : get_string(item, spec.sk_attr);
    return std::make_tuple(r == item.end() ? Value() : r->second, pk ? *pk : "", sk ? *sk : "");
  };
  std::stable_sort(items.begin(), items.end(),
                   [&](const Item& a, const Item& b) { return position(a) < position(b); });
}

// Fetches pages until `limit` items are collected or the query ends; a page
// may come back short (1 MB) with more to come.
Result<Page> DynamoDbStore::run_query(json::object body, const CursorShape& shape,
                                      const QueryOptions& options, const TableSpec& spec,
                                      const IndexSpec* index) {
  if (!options.cursor.empty()) {
    ASSIGN_OR_RETURN(body["ExclusiveStartKey"], decode_cursor(options.cursor, shape));
  }
  Page page;
  const size_t limit = static_cast<size_t>(options.limit);
  while (true) {
    body["Limit"] = limit - page.items.size();
    ASSIGN_OR_RETURN(json::object reply, call("Query", body, true));
    if (const json::array* items = array_of(reply, "Items")) {
      for (const auto& v : *items) {
        if (!v.is_object()) return internal_error("Query: malformed item");
        ASSIGN_OR_RETURN(Item item, decode_item(v.get_object()));
        page.items.push_back(std::move(item));
      }
    }
    const json::object* last = object_of(reply, "LastEvaluatedKey");
    if (last == nullptr || last->empty()) {
      if (index) sort_ties(spec, *index, page.items);
      return page;
    }
    if (page.items.size() >= limit) {
      ASSIGN_OR_RETURN(Item position, decode_item(*last));
      page.next_cursor = store::encode_item(position);
      if (index) sort_ties(spec, *index, page.items);
      return page;
    }
    body["ExclusiveStartKey"] = *last;
  }
}

Result<Page> DynamoDbStore::query(std::string_view table, std::string_view pk,
                                  const KeyRange& range, const QueryOptions& options) {
  ASSIGN_OR_RETURN(SpecPtr spec, spec_of(table));
  RETURN_IF_ERROR(validate_query_options(options));
  RETURN_IF_ERROR(validate_key(*spec, {std::string(pk), spec->sk_attr.empty() ? "" : "x"}));
  if (spec->sk_attr.empty() && range.kind != KeyRange::Kind::kAll) {
    return invalid_argument("table " + spec->name + " has no sort key to range over");
  }
  RETURN_IF_ERROR(validate_range(range, AttrType::kString));
  const CursorShape shape = table_cursor_shape(*spec);
  if (!options.cursor.empty()) RETURN_IF_ERROR(decode_cursor(options.cursor, shape).status());
  ExpressionBuilder b;
  std::string expression = b.name(spec->pk_attr) + " = " + b.value(std::string(pk));
  const RangeText r = range_text(b, spec->sk_attr, range);
  if (r.none) return Page{};
  if (!r.text.empty()) expression += " AND " + r.text;
  json::object body{{"TableName", physical(table)},
                    {"KeyConditionExpression", expression},
                    {"ConsistentRead", options.consistent}};
  add_placeholders(body, b);
  return run_query(std::move(body), shape, options, *spec, nullptr);
}

Result<Page> DynamoDbStore::query_index(std::string_view table, std::string_view index,
                                        std::string_view hash_value, const KeyRange& range,
                                        const QueryOptions& options) {
  ASSIGN_OR_RETURN(SpecPtr spec, spec_of(table));
  RETURN_IF_ERROR(validate_query_options(options));
  const auto found = std::find_if(spec->indexes.begin(), spec->indexes.end(),
                                  [&](const IndexSpec& i) { return i.name == index; });
  if (found == spec->indexes.end()) {
    return not_found("table " + spec->name + " has no index " + std::string(index));
  }
  RETURN_IF_ERROR(validate_range(range, found->range_type));
  CursorShape shape = table_cursor_shape(*spec);
  shape.emplace(found->hash_attr, AttrType::kString);
  shape.emplace(found->range_attr, found->range_type);
  if (!options.cursor.empty()) RETURN_IF_ERROR(decode_cursor(options.cursor, shape).status());
  if (hash_value.empty()) return Page{};  // DynamoDB indexes no empty key values
  ExpressionBuilder b;
  std::string expression = b.name(found->hash_attr) + " = " + b.value(std::string(hash_value));
  const RangeText r = range_text(b, found->range_attr, range);
  if (r.none) return Page{};
  if (!r.text.empty()) expression += " AND " + r.text;
  json::object body{{"TableName", physical(table)},
                    {"IndexName", found->name},
                    {"KeyConditionExpression", expression}};
  add_placeholders(body, b);
  return run_query(std::move(body), shape, options, *spec, &*found);
}

}  // namespace

// ---------------------------------------------------------------- opening

Result<std::unique_ptr<ItemStore>> open_dynamodb_store(DynamoDbOptions options) {
  if (options.region.empty() ||
      !std::all_of(options.region.begin(), options.region.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
      })) {
    return invalid_argument("DynamoDB region must be like us-east-1");
  }
  if (options.table_prefix.empty() ||
      !std::all_of(options.table_prefix.begin(), options.table_prefix.end(), is_name_char)) {
    return invalid_argument("DynamoDB table prefix must be non-empty [A-Za-z0-9_.-]");
  }
  if (!options.credentials_source && (options.credentials.access_key_id.empty() ||
                                      options.credentials.secret_access_key.empty())) {
    return invalid_argument("DynamoDB needs credentials (an access key id and a secret key)");
  }
  if (options.endpoint.empty()) {
    options.endpoint = "https://dynamodb." + options.region + ".amazonaws.com";
  }
  net::HttpClientOptions http;
  ASSIGN_OR_RETURN(http.endpoint, net::parse_http_endpoint(options.endpoint));
  ASSIGN_OR_RETURN(std::unique_ptr<net::HttpClient> client, net::HttpClient::open(std::move(http)));
  return std::unique_ptr<ItemStore>(
      std::make_unique<DynamoDbStore>(std::move(options), std::move(client)));
}

Result<DynamoDbOptions> parse_dynamodb_uri(std::string_view rest) {
  const Status malformed = invalid_argument(
      "malformed DynamoDB URI (expected "
      "dynamodb://REGION/TABLE_PREFIX[?endpoint=URL][&table_wait=DURATION])");
  if (!rest.starts_with("//")) return malformed;
  rest.remove_prefix(2);
  const size_t q = rest.find('?');
  const std::string_view path = rest.substr(0, q);
  const size_t slash = path.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == path.size()) return malformed;
  DynamoDbOptions options;
  options.region = std::string(path.substr(0, slash));
  options.table_prefix = std::string(path.substr(slash + 1));
  std::string_view query = q == std::string_view::npos ? "" : rest.substr(q + 1);
  if (q != std::string_view::npos && query.empty()) return malformed;
  std::set<std::string_view> seen;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view param = query.substr(0, amp);
    query = amp == std::string_view::npos ? "" : query.substr(amp + 1);
    const size_t eq = param.find('=');
    const std::string_view name = param.substr(0, eq);
    const std::string_view value = eq == std::string_view::npos ? "" : param.substr(eq + 1);
    if (value.empty() || !seen.insert(name).second ||
        (name != "endpoint" && name != "table_wait")) {
      return invalid_argument("unknown, repeated or empty DynamoDB URI parameter '" +
                              std::string(param) + "' (known: endpoint=URL, table_wait=DURATION)");
    }
    if (name == "endpoint") {
      options.endpoint = std::string(value);
      RETURN_IF_ERROR(net::parse_http_endpoint(options.endpoint).status());
    } else {
      ASSIGN_OR_RETURN(options.table_active_timeout, parse_duration(value));
    }
  }
  return options;
}

Result<std::unique_ptr<ItemStore>> open_dynamodb_store_from_uri(std::string_view rest) {
  ASSIGN_OR_RETURN(DynamoDbOptions options, parse_dynamodb_uri(rest));
  // Check everything but the credentials first, so that a malformed URI is
  // reported as such even on a machine without credentials.
  options.credentials = {"unchecked", "unchecked", ""};
  RETURN_IF_ERROR(open_dynamodb_store(options).status());
  options.credentials = {};
  ASSIGN_OR_RETURN(options.credentials_source, default_credentials(process_env()));
  return open_dynamodb_store(std::move(options));
}

}  // namespace leasehold::store::dynamodb
