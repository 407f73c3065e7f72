// DynamoDbStore's item operations: GetItem, BatchGetItem, PutItem,
// UpdateItem (alone and in update_each()), DeleteItem and Query.
#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

#include "store/dynamodb/dynamodb_store_impl.h"
#include "store/eval.h"
#include "store/item_json.h"

namespace leasehold::store::dynamodb {
namespace {

constexpr size_t kBatchGetKeysMax = 100;   // DynamoDB's BatchGetItem limit
constexpr int kUnprocessedRoundsMax = 10;  // BatchGetItem rounds for UnprocessedKeys

// A GSI returns items with equal range values in no particular order; within
// one page they are put in key order (descending: its reverse), as the other
// backends return them. (Across pages DynamoDB's order stands: the cursor is
// its LastEvaluatedKey.)
void sort_ties(const TableSpec& spec, const IndexSpec& index, bool descending,
               std::vector<Item>& items) {
  const auto position = [&](const Item& item) {
    const auto r = item.find(index.range_attr);
    const std::string* pk = get_string(item, spec.pk_attr);
    const std::string* sk = spec.sk_attr.empty() ? nullptr : get_string(item, spec.sk_attr);
    return std::make_tuple(r == item.end() ? Value() : r->second, pk ? *pk : "", sk ? *sk : "");
  };
  std::stable_sort(items.begin(), items.end(), [&](const Item& a, const Item& b) {
    return descending ? position(b) < position(a) : position(a) < position(b);
  });
}

// UpdateItem's body, written as JSON text (see wire.h). `guarded` tells
// whether the condition carries overflow guards: a failed condition then
// needs a read-back to tell which part failed.
std::string update_item_body(const std::string& table, const TableSpec& spec, const Key& key,
                             const Update& update, const Condition& condition, bool& guarded) {
  // Room for a heartbeat's body, so that it is written without growing.
  constexpr size_t kBodyBytesReserved = 1024;
  std::string body;
  body.reserve(kBodyBytesReserved);
  ExpressionBuilder b;
  body += R"({"TableName":)";
  append_json_string(table, body);
  body += R"(,"Key":)";
  append_key_json(spec, key, body);
  body += update.returns_updated_only() ? R"(,"ReturnValues":"UPDATED_NEW")"
                                        : R"(,"ReturnValues":"ALL_NEW")";
  // With no UpdateExpression, UpdateItem still creates the item (key only).
  if (!update.empty()) {
    body += R"(,"UpdateExpression":)";
    append_json_string(b.update(update), body);
  }
  // Each placeholder must be used exactly once: render the condition once,
  // as a whole or as an operand of the AND with the overflow guards.
  Condition rewritten;
  const Condition& portable_condition = portable(condition, spec.pk_attr, rewritten);
  const std::string guards = overflow_guards(update, b);
  guarded = !guards.empty();
  std::string expression;
  if (guards.empty()) {
    expression = b.condition(portable_condition);
  } else if (portable_condition.is_true()) {
    expression = guards;
  } else {
    expression = b.condition_term(portable_condition) + " AND " + guards;
  }
  if (!expression.empty()) {
    body += R"(,"ConditionExpression":)";
    append_json_string(expression, body);
  }
  b.append_placeholders_json(body);
  body += '}';
  return body;
}

}  // namespace

Result<Item> DynamoDbStore::get(std::string_view table, const Key& key, bool consistent) {
  return get_until(table, key, consistent, kNoDeadline);
}

Result<Item> DynamoDbStore::get_until(std::string_view table, const Key& key, bool consistent,
                                      MonoTime deadline) {
  LEASEHOLD_ASSIGN_OR_RETURN(SpecPtr spec, spec_of(table, deadline));
  LEASEHOLD_RETURN_IF_ERROR(validate_key(*spec, key));
  const json::object body{{"TableName", physical(table)},
                          {"Key", encode_key(*spec, key)},
                          {"ConsistentRead", consistent}};
  unsigned char arena[8192];
  json::monotonic_resource reply_memory(arena, sizeof(arena));
  LEASEHOLD_ASSIGN_OR_RETURN(json::object reply,
                             call("GetItem", body, true, &reply_memory, deadline));
  const json::object* item = object_field(reply, "Item");
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
    // DynamoDB leaves keys unprocessed when the table's throughput or the
    // reply's size ran out, and asks for a backoff before the rest are asked
    // for again (BatchGetItem's documentation); the base is the transient
    // one, as the reply's size needs no more, and the rounds are bounded.
    if (round > 0) retrier_->pause(RetryCause::kTransient, round);
    json::object request;
    request[name] = json::object{{"Keys", std::move(pending)}, {"ConsistentRead", true}};
    LEASEHOLD_ASSIGN_OR_RETURN(json::object reply,
                               call("BatchGetItem", {{"RequestItems", std::move(request)}}, true));
    pending = json::array();
    const json::object* responses = object_field(reply, "Responses");
    const json::array* items = responses ? array_field(*responses, name) : nullptr;
    for (const auto& v : items ? *items : json::array()) {
      if (!v.is_object()) return internal_error("BatchGetItem: malformed item");
      LEASEHOLD_ASSIGN_OR_RETURN(Item item, decode_item(v.get_object()));
      const std::string* pk = get_string(item, spec.pk_attr);
      const std::string* sk = spec.sk_attr.empty() ? nullptr : get_string(item, spec.sk_attr);
      if (pk == nullptr) return internal_error("BatchGetItem: item without its key");
      found[{*pk, sk ? *sk : ""}] = std::move(item);
    }
    const json::object* unprocessed = object_field(reply, "UnprocessedKeys");
    const json::object* left = unprocessed ? object_field(*unprocessed, name) : nullptr;
    if (const json::array* keys_left = left ? array_field(*left, "Keys") : nullptr)
      pending = *keys_left;
  }
  return {};
}

Result<std::vector<Item>> DynamoDbStore::batch_get(std::string_view table,
                                                   std::span<const Key> keys) {
  LEASEHOLD_ASSIGN_OR_RETURN(SpecPtr spec, spec_of(table));
  for (const auto& key : keys) LEASEHOLD_RETURN_IF_ERROR(validate_key(*spec, key));
  // BatchGetItem refuses duplicate keys: ask for each key once.
  std::vector<Key> unique;
  std::set<KeyTuple> seen;
  for (const auto& key : keys) {
    if (seen.emplace(key.pk, key.sk).second) unique.push_back(key);
  }
  std::map<KeyTuple, Item> found;
  for (size_t i = 0; i < unique.size(); i += kBatchGetKeysMax) {
    const size_t n = std::min(kBatchGetKeysMax, unique.size() - i);
    LEASEHOLD_RETURN_IF_ERROR(
        batch_get_chunk(*spec, std::span<const Key>(unique).subspan(i, n), found));
  }
  std::vector<Item> out;
  for (const auto& key : keys) {
    const auto it = found.find({key.pk, key.sk});
    if (it != found.end()) out.push_back(it->second);
  }
  return out;
}

Status DynamoDbStore::put(std::string_view table, const Item& item, const Condition& condition) {
  LEASEHOLD_ASSIGN_OR_RETURN(SpecPtr spec, spec_of(table));
  LEASEHOLD_RETURN_IF_ERROR(validate_item(*spec, item));
  LEASEHOLD_RETURN_IF_ERROR(validate_index_attrs(*spec, item));
  LEASEHOLD_RETURN_IF_ERROR(validate_condition(condition));
  return conditional_write("PutItem", {{"TableName", physical(table)}, {"Item", encode_item(item)}},
                           *spec, condition);
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
  LEASEHOLD_RETURN_IF_ERROR(apply_update(update, next));
  return failed;  // the item changed in between; the caller's condition decides
}

Result<Item> DynamoDbStore::update(std::string_view table, const Key& key, const Update& update,
                                   const Condition& condition) {
  return update_until(table, key, update, condition, kNoDeadline);
}

Result<Item> DynamoDbStore::update_until(std::string_view table, const Key& key,
                                         const Update& update, const Condition& condition,
                                         MonoTime deadline) {
  LEASEHOLD_ASSIGN_OR_RETURN(SpecPtr spec, spec_of(table, deadline));
  LEASEHOLD_RETURN_IF_ERROR(validate_key(*spec, key));
  LEASEHOLD_RETURN_IF_ERROR(validate_update(*spec, update));
  LEASEHOLD_RETURN_IF_ERROR(validate_update_index_attrs(*spec, update));
  LEASEHOLD_RETURN_IF_ERROR(validate_condition(condition));
  bool guarded = false;
  const std::string body =
      update_item_body(physical(table), *spec, key, update, condition, guarded);
  // The reply is decoded into an Item right here: parse it on the stack.
  unsigned char arena[8192];
  json::monotonic_resource reply_memory(arena, sizeof(arena));
  Result<json::object> reply = call_text("UpdateItem", body, false, &reply_memory, deadline);
  if (!reply.ok()) {
    if (reply.status().code() == Code::kConditionFailed && guarded) {
      return explain_failed_update(table, *spec, key, update, condition, deadline);
    }
    return reply.status();
  }
  const json::object* attributes = object_field(*reply, "Attributes");
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

// Each write is its own conditional UpdateItem; they run on this thread and
// the store's writers (parallel_writes at once), each on a connection of the
// pool. Once the deadline has passed no write is taken, and those left stay
// unsent and kUnavailable: a heartbeat that would land after its lease's
// deadline is worthless, and must not hold back the next round.
std::vector<Result<Item>> DynamoDbStore::update_each(std::string_view table,
                                                     std::span<const UpdateRequest> requests,
                                                     Duration timeout) {
  const MonoTime deadline = deadline_after(timeout);
  std::vector<Result<Item>> results(requests.size(), Result<Item>(internal_error("not run")));
  const size_t taken = writers_.run(
      requests.size(),
      [&](size_t i) {
        const UpdateRequest& r = requests[i];
        results[i] = update_until(table, r.key, r.update, r.condition, deadline);
      },
      [&] { return time_left(deadline) > Duration::zero(); });
  for (size_t i = taken; i < requests.size(); ++i) {
    results[i] = gave_up("UpdateItem", 0, {}, RetryStop::kDeadline);
  }
  return results;
}

Status DynamoDbStore::remove(std::string_view table, const Key& key, const Condition& condition) {
  LEASEHOLD_ASSIGN_OR_RETURN(SpecPtr spec, spec_of(table));
  LEASEHOLD_RETURN_IF_ERROR(validate_key(*spec, key));
  LEASEHOLD_RETURN_IF_ERROR(validate_condition(condition));
  return conditional_write("DeleteItem",
                           {{"TableName", physical(table)}, {"Key", encode_key(*spec, key)}}, *spec,
                           condition);
}

Status DynamoDbStore::conditional_write(std::string_view op, json::object body,
                                        const TableSpec& spec, const Condition& condition) {
  ExpressionBuilder b;
  Condition rewritten;
  const std::string expression = b.condition(portable(condition, spec.pk_attr, rewritten));
  if (!expression.empty()) body["ConditionExpression"] = expression;
  add_placeholders(body, b);
  return call(op, body, false).status();
}

// ---------------------------------------------------------------- queries

// Fetches pages until `limit` items are collected or the query ends; a page
// may come back short (1 MB) with more to come.
Result<Page> DynamoDbStore::run_query(json::object body, const CursorShape& shape,
                                      const QueryOptions& options, const TableSpec& spec,
                                      const IndexSpec* index) {
  if (!options.cursor.empty()) {
    LEASEHOLD_ASSIGN_OR_RETURN(body["ExclusiveStartKey"], decode_cursor(options.cursor, shape));
  }
  // Descending, ExclusiveStartKey is still where the last page ended: the
  // next page goes on below it.
  if (options.descending) body["ScanIndexForward"] = false;
  Page page;
  const size_t limit = static_cast<size_t>(options.limit);
  while (true) {
    body["Limit"] = limit - page.items.size();
    LEASEHOLD_ASSIGN_OR_RETURN(json::object reply, call("Query", body, true));
    if (const json::array* items = array_field(reply, "Items")) {
      for (const auto& v : *items) {
        if (!v.is_object()) return internal_error("Query: malformed item");
        LEASEHOLD_ASSIGN_OR_RETURN(Item item, decode_item(v.get_object()));
        page.items.push_back(std::move(item));
      }
    }
    const json::object* last = object_field(reply, "LastEvaluatedKey");
    if (last == nullptr || last->empty()) {
      if (index) sort_ties(spec, *index, options.descending, page.items);
      return page;
    }
    if (page.items.size() >= limit) {
      LEASEHOLD_ASSIGN_OR_RETURN(Item position, decode_item(*last));
      page.next_cursor = store::encode_item(position);
      if (index) sort_ties(spec, *index, options.descending, page.items);
      return page;
    }
    body["ExclusiveStartKey"] = *last;
  }
}

Result<Page> DynamoDbStore::query(std::string_view table, std::string_view pk,
                                  const KeyRange& range, const QueryOptions& options) {
  LEASEHOLD_ASSIGN_OR_RETURN(SpecPtr spec, spec_of(table));
  LEASEHOLD_RETURN_IF_ERROR(validate_query_options(options));
  LEASEHOLD_RETURN_IF_ERROR(
      validate_key(*spec, {std::string(pk), spec->sk_attr.empty() ? "" : "x"}));
  if (spec->sk_attr.empty() && range.kind != KeyRange::Kind::kAll) {
    return invalid_argument("table " + spec->name + " has no sort key to range over");
  }
  LEASEHOLD_RETURN_IF_ERROR(validate_range(range, AttrType::kString));
  const CursorShape shape = table_cursor_shape(*spec);
  if (!options.cursor.empty())
    LEASEHOLD_RETURN_IF_ERROR(decode_cursor(options.cursor, shape).status());
  ExpressionBuilder b;
  const std::optional<std::string> expression =
      key_condition(b, spec->pk_attr, pk, spec->sk_attr, range);
  if (!expression) return Page{};
  json::object body{{"TableName", physical(table)},
                    {"KeyConditionExpression", *expression},
                    {"ConsistentRead", options.consistent}};
  add_placeholders(body, b);
  return run_query(std::move(body), shape, options, *spec, nullptr);
}

Result<Page> DynamoDbStore::query_index(std::string_view table, std::string_view index,
                                        std::string_view hash_value, const KeyRange& range,
                                        const QueryOptions& options) {
  LEASEHOLD_ASSIGN_OR_RETURN(SpecPtr spec, spec_of(table));
  LEASEHOLD_RETURN_IF_ERROR(validate_query_options(options));
  const auto found = std::find_if(spec->indexes.begin(), spec->indexes.end(),
                                  [&](const IndexSpec& i) { return i.name == index; });
  if (found == spec->indexes.end()) {
    return not_found("table " + spec->name + " has no index " + std::string(index));
  }
  LEASEHOLD_RETURN_IF_ERROR(validate_range(range, found->range_type));
  CursorShape shape = table_cursor_shape(*spec);
  shape.emplace(found->hash_attr, AttrType::kString);
  shape.emplace(found->range_attr, found->range_type);
  if (!options.cursor.empty())
    LEASEHOLD_RETURN_IF_ERROR(decode_cursor(options.cursor, shape).status());
  if (hash_value.empty()) return Page{};  // DynamoDB indexes no empty key values
  ExpressionBuilder b;
  const std::optional<std::string> expression =
      key_condition(b, found->hash_attr, hash_value, found->range_attr, range);
  if (!expression) return Page{};
  json::object body{{"TableName", physical(table)},
                    {"IndexName", found->name},
                    {"KeyConditionExpression", *expression}};
  add_placeholders(body, b);
  return run_query(std::move(body), shape, options, *spec, &*found);
}

}  // namespace leasehold::store::dynamodb
