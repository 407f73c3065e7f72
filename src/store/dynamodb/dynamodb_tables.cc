// DynamoDbStore's table lifecycle: DescribeTable and the schema cache,
// ensure_table() (create the table, add missing indexes, turn its stream on
// for a change feed, wait until ACTIVE) and require_table() (check, create
// nothing).
#include <algorithm>

#include "store/dynamodb/dynamodb_store_impl.h"
#include "store/eval.h"

namespace leasehold::store::dynamodb {

using namespace std::chrono_literals;

Result<json::object> DynamoDbStore::describe(std::string_view logical, MonoTime deadline) {
  if (!valid_table_name(physical(logical))) {
    return not_found("no table " + std::string(logical));
  }
  LEASEHOLD_ASSIGN_OR_RETURN(
      json::object reply,
      call("DescribeTable", {{"TableName", physical(logical)}}, true, {}, deadline));
  const json::object* table = object_field(reply, "Table");
  if (table == nullptr) return internal_error("DescribeTable: reply without Table");
  return *table;
}

Result<DynamoDbStore::KnownPtr> DynamoDbStore::known(std::string_view logical, MonoTime deadline) {
  {
    MutexLock lock(mu_);
    const auto it = tables_.find(logical);
    if (it != tables_.end()) return it->second;
  }
  Result<json::object> table = describe(logical, deadline);
  if (!table.ok()) {
    if (table.status().code() == Code::kNotFound)
      return not_found("no table " + std::string(logical));
    return table.status();
  }
  return cache(spec_from_description(logical, *table), *table);
}

// The spec alone, sharing the cached entry's ownership.
Result<DynamoDbStore::SpecPtr> DynamoDbStore::spec_of(std::string_view logical, MonoTime deadline) {
  LEASEHOLD_ASSIGN_OR_RETURN(KnownPtr table, known(logical, deadline));
  return SpecPtr(table, &table->spec);
}

DynamoDbStore::KnownPtr DynamoDbStore::cache(TableSpec spec, const json::object& table) {
  // The spec asked for may say change_feed where the endpoint ignored it
  // (dynalite): what counts is the stream the table has.
  StreamState stream = stream_of(table);
  spec.change_feed = stream.serves_feed();
  std::string arn = spec.change_feed ? std::move(stream.arn) : std::string();
  auto entry = std::make_shared<const KnownTable>(KnownTable{std::move(spec), std::move(arn)});
  MutexLock lock(mu_);
  tables_[entry->spec.name] = entry;
  return entry;
}

Status DynamoDbStore::create_table(const TableSpec& spec) {
  LEASEHOLD_ASSIGN_OR_RETURN(const json::object body, create_table_json(spec, physical(spec.name)));
  // Safe to send again: a CreateTable that had applied is then refused with
  // ResourceInUseException, which ensure_table() takes as "created".
  return call("CreateTable", body, true).status();
}

Result<std::string> create_table_request(const TableSpec& spec, const std::string& table_name) {
  LEASEHOLD_RETURN_IF_ERROR(validate_table_spec(spec));
  LEASEHOLD_ASSIGN_OR_RETURN(const json::object body, create_table_json(spec, table_name));
  return json::serialize(body);
}

Status DynamoDbStore::add_index(TableSpec& have, const IndexSpec& index) {
  TableSpec grown = have;
  grown.indexes.push_back(index);
  LEASEHOLD_ASSIGN_OR_RETURN(json::array definitions, attribute_definitions(grown));
  json::array updates{json::object{{"Create", gsi_json(index)}}};
  json::object body{{"TableName", physical(have.name)},
                    {"AttributeDefinitions", std::move(definitions)},
                    {"GlobalSecondaryIndexUpdates", std::move(updates)}};
  LEASEHOLD_RETURN_IF_ERROR(call("UpdateTable", body, false).status());
  LEASEHOLD_RETURN_IF_ERROR(wait_active(have.name, {index.name}).status());
  have = std::move(grown);
  return {};
}

// Polls DescribeTable, with a growing pause, until the table and `indexes`
// are ACTIVE or table_active_timeout has passed.
Result<json::object> DynamoDbStore::wait_active(std::string_view logical,
                                                const std::vector<std::string>& indexes) {
  const MonoTime deadline = options_.clock->mono_now() + options_.table_active_timeout;
  Duration pause = 5ms;
  while (true) {
    LEASEHOLD_ASSIGN_OR_RETURN(json::object table, describe(logical));
    if (is_active(table, indexes)) return table;
    if (options_.clock->mono_now() >= deadline) {
      return unavailable("table " + std::string(logical) +
                         " or its new index is not ACTIVE after " +
                         std::to_string(to_ms(options_.table_active_timeout)) + " ms");
    }
    sleep_for(*options_.clock, pause);
    pause = std::min<Duration>(pause * 2, 1s);
  }
}

// Whether the endpoint serves DynamoDB Streams. AWS does; an endpoint given
// in the options (an emulator) is asked once, with ListStreams, which only a
// server without the API refuses as a bad request (dynalite answers
// UnknownOperationException). Where it does not, tables keep no feed.
Result<bool> DynamoDbStore::serves_streams() {
  if (options_.endpoint.empty()) return true;
  {
    MutexLock lock(mu_);
    if (serves_streams_) return *serves_streams_;
  }
  const Result<json::object> listed =
      call("ListStreams", {{"Limit", 1}}, true, {}, kNoDeadline, Api::kStreams);
  if (!listed.ok() && listed.status().code() != Code::kInvalidArgument) return listed.status();
  MutexLock lock(mu_);
  serves_streams_ = listed.ok();
  return listed.ok();
}

// Turns on the stream of a table that asks for a change feed and has none,
// unless the endpoint has no Streams (dynalite, which also drops
// CreateTable's StreamSpecification): the table is then left as it is, so
// that ensure_table() works there as everywhere, and has no feed.
Status DynamoDbStore::enable_stream(const TableSpec& have) {
  LEASEHOLD_ASSIGN_OR_RETURN(const bool streams, serves_streams());
  if (!streams) return {};
  const json::object body{{"TableName", physical(have.name)},
                          {"StreamSpecification", feed_stream_json()}};
  const Status sent = call("UpdateTable", body, false).status();
  // Another process may have turned it on first: DynamoDB then refuses this
  // one (the table already has a stream, or is being updated). What counts
  // is that the table has it once ACTIVE.
  if (!sent.ok() && sent.code() != Code::kInvalidArgument && sent.code() != Code::kAlreadyExists) {
    return sent;
  }
  LEASEHOLD_ASSIGN_OR_RETURN(json::object table, wait_active(have.name, {}));
  if (!sent.ok() && !stream_of(table).serves_feed()) return sent;
  cache(have, table);
  return {};
}

Status DynamoDbStore::reconcile(const TableSpec& wanted, const json::object& table) {
  TableSpec have = spec_from_description(wanted.name, table);
  cache(have, table);
  // Check every index and the stream first, so that a refused call changes
  // nothing.
  LEASEHOLD_ASSIGN_OR_RETURN(const std::vector<IndexSpec> added,
                             missing_indexes(wanted, have, wanted.name));
  TableSpec all = have;
  all.indexes.insert(all.indexes.end(), added.begin(), added.end());
  LEASEHOLD_RETURN_IF_ERROR(attribute_definitions(all).status());
  LEASEHOLD_ASSIGN_OR_RETURN(const bool stream_wanted, needs_stream(wanted, table, wanted.name));
  // DynamoDB creates one index per UpdateTable call.
  for (const auto& index : added) {
    Status status = add_index(have, index);
    cache(have, table);
    LEASEHOLD_RETURN_IF_ERROR(status);
  }
  if (stream_wanted) return enable_stream(have);
  return {};
}

Status DynamoDbStore::ensure_table(const TableSpec& spec) {
  LEASEHOLD_RETURN_IF_ERROR(validate_table_spec(spec));
  if (!valid_table_name(physical(spec.name))) {
    return invalid_argument("table name " + physical(spec.name) + " is not 3..255 characters");
  }
  LEASEHOLD_RETURN_IF_ERROR(attribute_definitions(spec).status());
  Result<json::object> table = describe(spec.name);
  if (!table.ok() && table.status().code() == Code::kNotFound) {
    const Status created = create_table(spec);
    if (created.ok()) {
      std::vector<std::string> names;
      for (const auto& index : spec.indexes) names.push_back(index.name);
      LEASEHOLD_ASSIGN_OR_RETURN(const json::object described, wait_active(spec.name, names));
      cache(spec, described);
      return {};
    }
    if (created.code() != Code::kAlreadyExists) return created;
    table = describe(spec.name);  // another process created it first
  }
  if (!table.ok()) return table.status();
  if (!is_active(*table, {})) table = wait_active(spec.name, {});
  if (!table.ok()) return table.status();
  return reconcile(spec, *table);
}

// Like ensure_table(), but creates nothing: what is missing is kNotFound,
// naming the physical table (what the user sees in the AWS console).
Status DynamoDbStore::require_table(const TableSpec& spec) {
  LEASEHOLD_RETURN_IF_ERROR(validate_table_spec(spec));
  Result<json::object> table = describe(spec.name);
  if (!table.ok() && table.status().code() == Code::kNotFound) {
    return not_found("table " + physical(spec.name) + " does not exist");
  }
  if (!table.ok()) return table.status();
  const TableSpec have = spec_from_description(spec.name, *table);
  LEASEHOLD_ASSIGN_OR_RETURN(const std::vector<IndexSpec> missing,
                             missing_indexes(spec, have, physical(spec.name)));
  if (!missing.empty()) {
    return not_found("table " + physical(spec.name) + " has no index " + missing.front().name);
  }
  std::vector<std::string> names;
  for (const auto& index : spec.indexes) names.push_back(index.name);
  if (!is_active(*table, names)) LEASEHOLD_RETURN_IF_ERROR(wait_active(spec.name, names).status());
  cache(have, *table);
  return {};
}

}  // namespace leasehold::store::dynamodb
