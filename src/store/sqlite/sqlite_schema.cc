// TableSpec <-> JSON, DDL and statement text of the SQLite backend (see
// sqlite_schema.h).
#include "store/sqlite/sqlite_schema.h"

#include <boost/json.hpp>

#include "store/eval.h"

namespace leasehold::store::sqlite {
namespace {

std::string items_table(const TableSpec& spec) { return "\"items_" + spec.name + "\""; }

std::string hash_column(size_t ordinal) { return "ix" + std::to_string(ordinal) + "_hash"; }
std::string range_column(size_t ordinal) { return "ix" + std::to_string(ordinal) + "_range"; }

bool is_sql_name(std::string_view name) {
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  return !name.empty();
}

// The attribute's value when it has JSON type `json_type`, else NULL: an
// attribute of another type is absent from the index, as in DynamoDB.
std::string typed_extract(std::string_view attr, std::string_view json_type) {
  const std::string path = "'$.\"" + std::string(attr) + "\"'";
  return "CASE WHEN json_type(data, " + path + ") = '" + std::string(json_type) +
         "' THEN json_extract(data, " + path + ") END";
}

// `column` against the range operands ?4 (and ?5). With a cursor, equality
// is written as a closed range: given `c = ?` and the cursor's row-value
// bound, SQLite 3.40 picks the row value and then sorts (pk, sk) in a
// temporary B-tree; as a range it walks the index in order.
std::string range_terms(std::string_view column, KeyRange::Kind kind, bool has_cursor,
                        bool bounded_prefix) {
  const std::string c(column);
  switch (kind) {
    case KeyRange::Kind::kAll:
      return "";
    case KeyRange::Kind::kEq:
      return has_cursor ? " AND " + c + " >= ?4 AND " + c + " <= ?4" : " AND " + c + " = ?4";
    case KeyRange::Kind::kLt:
      return " AND " + c + " < ?4";
    case KeyRange::Kind::kLe:
      return " AND " + c + " <= ?4";
    case KeyRange::Kind::kGt:
      return " AND " + c + " > ?4";
    case KeyRange::Kind::kGe:
      return " AND " + c + " >= ?4";
    case KeyRange::Kind::kBetween:
      return " AND " + c + " >= ?4 AND " + c + " <= ?5";
    case KeyRange::Kind::kBeginsWith:
      return " AND " + c + " >= ?4" + (bounded_prefix ? " AND " + c + " < ?5" : "");
  }
  return "";
}

Result<AttrType> range_type_from(std::string_view name) {
  if (name == "int") return AttrType::kInt;
  if (name == "string") return AttrType::kString;
  return internal_error("stored table spec has an unknown index range type");
}

}  // namespace

Status validate_sql_names(const TableSpec& spec) {
  for (const auto& index : spec.indexes) {
    for (const std::string* attr : {&index.hash_attr, &index.range_attr}) {
      if (!is_sql_name(*attr)) {
        return invalid_argument("index " + index.name + ": attribute name '" + *attr +
                                "' must match [A-Za-z0-9_] on the SQLite backend");
      }
    }
  }
  return {};
}

std::string spec_to_json(const TableSpec& spec) {
  boost::json::array indexes;
  for (const auto& index : spec.indexes) {
    boost::json::object entry{{"name", index.name},
                              {"hash_attr", index.hash_attr},
                              {"range_attr", index.range_attr},
                              {"range_type", type_name(index.range_type)}};
    // Written only when not all: what older files hold means all.
    if (!index.projects_all) {
      boost::json::array projected;
      for (const std::string& attr : index.projected)
        projected.push_back(boost::json::string(attr));
      entry["projected"] = std::move(projected);
    }
    indexes.push_back(std::move(entry));
  }
  return boost::json::serialize(boost::json::object{{"name", spec.name},
                                                    {"pk_attr", spec.pk_attr},
                                                    {"sk_attr", spec.sk_attr},
                                                    {"indexes", std::move(indexes)}});
}

Result<TableSpec> spec_from_json(std::string_view json) {
  const auto bad = [] { return internal_error("stored table spec is malformed"); };
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(json, ec);
  if (ec || !v.is_object()) return bad();
  const auto& o = v.get_object();
  const auto text = [&](const boost::json::object& from, std::string_view name, std::string& out) {
    const auto* s = from.if_contains(name);
    if (s == nullptr || !s->is_string()) return false;
    out = std::string(s->get_string());
    return true;
  };
  TableSpec spec;
  const auto* indexes = o.if_contains("indexes");
  if (!text(o, "name", spec.name) || !text(o, "pk_attr", spec.pk_attr) ||
      !text(o, "sk_attr", spec.sk_attr) || indexes == nullptr || !indexes->is_array()) {
    return bad();
  }
  for (const auto& entry : indexes->get_array()) {
    if (!entry.is_object()) return bad();
    IndexSpec index;
    std::string type;
    if (!text(entry.get_object(), "name", index.name) ||
        !text(entry.get_object(), "hash_attr", index.hash_attr) ||
        !text(entry.get_object(), "range_attr", index.range_attr) ||
        !text(entry.get_object(), "range_type", type)) {
      return bad();
    }
    LEASEHOLD_ASSIGN_OR_RETURN(index.range_type, range_type_from(type));
    if (const auto* projected = entry.get_object().if_contains("projected")) {
      if (!projected->is_array()) return bad();
      index.projects_all = false;
      for (const auto& attr : projected->get_array()) {
        if (!attr.is_string()) return bad();
        index.projected.emplace_back(attr.get_string());
      }
    }
    spec.indexes.push_back(std::move(index));
  }
  // What is spliced into SQL must be as safe as when it was first written.
  if (!validate_table_spec(spec).ok() || !validate_sql_names(spec).ok()) return bad();
  return spec;
}

std::string create_items_ddl(const TableSpec& spec) {
  return "CREATE TABLE " + items_table(spec) +
         "(pk TEXT NOT NULL, sk TEXT NOT NULL DEFAULT '', data TEXT NOT NULL, "
         "PRIMARY KEY(pk, sk)) WITHOUT ROWID";
}

std::vector<std::string> add_index_ddl(const TableSpec& spec, size_t ordinal) {
  const IndexSpec& index = spec.indexes.at(ordinal);
  const bool int_range = index.range_type == AttrType::kInt;
  const std::string table = items_table(spec);
  const std::string h = hash_column(ordinal), r = range_column(ordinal);
  return {
      "ALTER TABLE " + table + " ADD COLUMN " + h + " TEXT GENERATED ALWAYS AS (" +
          typed_extract(index.hash_attr, "text") + ") VIRTUAL",
      "ALTER TABLE " + table + " ADD COLUMN " + r + (int_range ? " INTEGER" : " TEXT") +
          " GENERATED ALWAYS AS (" +
          typed_extract(index.range_attr, int_range ? "integer" : "text") + ") VIRTUAL",
      "CREATE INDEX \"items_" + spec.name + "__ix" + std::to_string(ordinal) + "\" ON " + table +
          "(" + h + ", " + r + ", pk, sk) WHERE " + h + " IS NOT NULL AND " + r + " IS NOT NULL",
  };
}

TableSql::TableSql(TableSpec s) : spec(std::move(s)) {
  const std::string t = items_table(spec);
  const std::string where = " WHERE pk = ?1 AND sk = ?2";
  get = "SELECT data FROM " + t + where;
  get_two = "SELECT 0, data FROM " + t + where + " UNION ALL SELECT 1, data FROM " + t +
            " WHERE pk = ?3 AND sk = ?4";
  put_upsert = "INSERT INTO " + t +
               "(pk, sk, data) VALUES(?1, ?2, ?3) ON CONFLICT(pk, sk) DO UPDATE "
               "SET data = excluded.data WHERE lh_check(data, ?4)";
  put_update = "UPDATE " + t + " SET data = ?3" + where + " AND lh_check(data, ?4)";
  update_upsert = "INSERT INTO " + t +
                  "(pk, sk, data) VALUES(?1, ?2, ?4) ON CONFLICT(pk, sk) DO UPDATE "
                  "SET data = lh_apply(data, ?3) WHERE lh_check(data, ?3)";
  update_update =
      "UPDATE " + t + " SET data = lh_apply(data, ?3)" + where + " AND lh_check(data, ?3)";
  remove = "DELETE FROM " + t + where + " AND lh_check(data, ?3)";
}

std::string query_sql(const TableSpec& spec, KeyRange::Kind kind, bool has_cursor,
                      bool bounded_prefix, bool descending) {
  const std::string past = descending ? " < " : " > ";
  return "SELECT data, pk, sk FROM " + items_table(spec) + " WHERE pk = ?1" +
         (has_cursor ? " AND sk" + past + "?3" : "") +
         range_terms("sk", kind, has_cursor, bounded_prefix) + " ORDER BY sk" +
         (descending ? " DESC" : "") + " LIMIT ?2";
}

// Descending, every column of the ORDER BY goes down, so that SQLite walks
// the same index backwards rather than sorting.
std::string query_index_sql(const TableSpec& spec, size_t ordinal, KeyRange::Kind kind,
                            bool has_cursor, bool bounded_prefix, bool descending) {
  const std::string h = hash_column(ordinal), r = range_column(ordinal);
  const std::string past = descending ? " < " : " > ";
  const std::string down = descending ? " DESC" : "";
  return "SELECT data, " + r + ", pk, sk FROM " + items_table(spec) + " WHERE " + h + " = ?1 AND " +
         r + " IS NOT NULL" +
         (has_cursor ? " AND (" + r + ", pk, sk)" + past + "(?3, ?6, ?7)" : "") +
         range_terms(r, kind, has_cursor, bounded_prefix) + " ORDER BY " + r + down + ", pk" +
         down + ", sk" + down + " LIMIT ?2";
}

}  // namespace leasehold::store::sqlite
