// DynamoDB's table schemas: CreateTable's key schema, attribute definitions,
// indexes and stream, and a TableSpec read back from DescribeTable. Pure;
// see wire.h.
#include <algorithm>

#include "store/dynamodb/wire.h"
#include "store/eval.h"

namespace leasehold::store::dynamodb {
namespace {

namespace json = boost::json;

// HASH and RANGE attribute names of a KeySchema array.
std::pair<std::string, std::string> key_schema(const json::object& o) {
  std::pair<std::string, std::string> out;
  if (const json::array* schema = array_field(o, "KeySchema")) {
    for (const auto& k : *schema) {
      if (!k.is_object()) continue;
      const std::string type = string_field(k.get_object(), "KeyType");
      (type == "HASH" ? out.first : out.second) = string_field(k.get_object(), "AttributeName");
    }
  }
  return out;
}

}  // namespace

json::array key_schema_json(const std::string& hash, const std::string& range) {
  json::array out{json::object{{"AttributeName", hash}, {"KeyType", "HASH"}}};
  if (!range.empty()) out.push_back(json::object{{"AttributeName", range}, {"KeyType", "RANGE"}});
  return out;
}

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
  LEASEHOLD_RETURN_IF_ERROR(define(spec.pk_attr, "S"));
  if (!spec.sk_attr.empty()) LEASEHOLD_RETURN_IF_ERROR(define(spec.sk_attr, "S"));
  for (const auto& index : spec.indexes) {
    LEASEHOLD_RETURN_IF_ERROR(define(index.hash_attr, "S"));
    LEASEHOLD_RETURN_IF_ERROR(
        define(index.range_attr, index.range_type == AttrType::kInt ? "N" : "S"));
  }
  json::array out;
  for (const auto& [attr, type] : types) {
    out.push_back(json::object{{"AttributeName", attr}, {"AttributeType", type}});
  }
  return out;
}

json::object gsi_json(const IndexSpec& index) {
  json::object projection{{"ProjectionType", index.projects_all        ? "ALL"
                                             : index.projected.empty() ? "KEYS_ONLY"
                                                                       : "INCLUDE"}};
  if (!index.projects_all && !index.projected.empty()) {
    json::array attrs;
    for (const std::string& attr : index.projected) attrs.push_back(json::string(attr));
    projection["NonKeyAttributes"] = std::move(attrs);
  }
  return {{"IndexName", index.name},
          {"KeySchema", key_schema_json(index.hash_attr, index.range_attr)},
          {"Projection", std::move(projection)}};
}

Result<json::object> create_table_json(const TableSpec& spec, const std::string& table_name) {
  LEASEHOLD_ASSIGN_OR_RETURN(json::array definitions, attribute_definitions(spec));
  json::object body{{"TableName", table_name},
                    {"BillingMode", "PAY_PER_REQUEST"},
                    {"AttributeDefinitions", std::move(definitions)},
                    {"KeySchema", key_schema_json(spec.pk_attr, spec.sk_attr)}};
  if (!spec.indexes.empty()) {
    json::array gsis;
    for (const auto& index : spec.indexes) gsis.push_back(gsi_json(index));
    body["GlobalSecondaryIndexes"] = std::move(gsis);
  }
  if (spec.change_feed) body["StreamSpecification"] = feed_stream_json();
  return body;
}

TableSpec spec_from_description(std::string_view logical, const json::object& table) {
  std::map<std::string, std::string> types;
  if (const json::array* defs = array_field(table, "AttributeDefinitions")) {
    for (const auto& d : *defs) {
      if (d.is_object())
        types[string_field(d.get_object(), "AttributeName")] =
            string_field(d.get_object(), "AttributeType");
    }
  }
  TableSpec spec;
  spec.name = std::string(logical);
  std::tie(spec.pk_attr, spec.sk_attr) = key_schema(table);
  spec.change_feed = stream_of(table).serves_feed();
  if (const json::array* gsis = array_field(table, "GlobalSecondaryIndexes")) {
    for (const auto& g : *gsis) {
      if (!g.is_object()) continue;
      IndexSpec index;
      index.name = string_field(g.get_object(), "IndexName");
      std::tie(index.hash_attr, index.range_attr) = key_schema(g.get_object());
      index.range_type = types[index.range_attr] == "N" ? AttrType::kInt : AttrType::kString;
      if (const json::object* projection = object_field(g.get_object(), "Projection")) {
        const std::string type = string_field(*projection, "ProjectionType");
        index.projects_all = type.empty() || type == "ALL";
        if (const json::array* attrs = array_field(*projection, "NonKeyAttributes")) {
          for (const auto& a : *attrs) {
            if (a.is_string()) index.projected.emplace_back(a.get_string());
          }
        }
      }
      spec.indexes.push_back(std::move(index));
    }
  }
  return spec;
}

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
      LEASEHOLD_RETURN_IF_ERROR(check_same_index(*same, index));
    }
  }
  return missing;
}

bool is_active(const json::object& table, const std::vector<std::string>& indexes) {
  if (string_field(table, "TableStatus") != "ACTIVE") return false;
  const json::array* gsis = array_field(table, "GlobalSecondaryIndexes");
  return std::all_of(indexes.begin(), indexes.end(), [&](const std::string& name) {
    if (gsis == nullptr) return false;
    return std::any_of(gsis->begin(), gsis->end(), [&](const json::value& g) {
      return g.is_object() && string_field(g.get_object(), "IndexName") == name &&
             string_field(g.get_object(), "IndexStatus") == "ACTIVE";
    });
  });
}

json::object feed_stream_json() {
  return {{"StreamEnabled", true}, {"StreamViewType", kFeedStreamViewType}};
}

// A table whose stream was turned off still shows its LatestStreamArn (that
// stream stays readable for a day), so only StreamEnabled says it has one.
StreamState stream_of(const json::object& table) {
  const json::object* spec = object_field(table, "StreamSpecification");
  const json::value* enabled = spec != nullptr ? spec->if_contains("StreamEnabled") : nullptr;
  if (enabled == nullptr || !enabled->is_bool() || !enabled->get_bool()) return {};
  return {string_field(*spec, "StreamViewType"), string_field(table, "LatestStreamArn")};
}

Result<bool> needs_stream(const TableSpec& wanted, const json::object& table,
                          const std::string& shown) {
  if (!wanted.change_feed) return false;
  const StreamState stream = stream_of(table);
  if (stream.view_type.empty()) return true;
  if (stream.view_type != kFeedStreamViewType) {
    return invalid_argument("table " + shown + " has a stream of view type " + stream.view_type +
                            "; a change feed needs " + std::string(kFeedStreamViewType));
  }
  return false;
}

}  // namespace leasehold::store::dynamodb
