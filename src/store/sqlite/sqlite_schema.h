// Everything that turns a TableSpec into SQL text for the SQLite backend.
//
// Naming (the contract other processes and the benchmarks rely on):
//   leasehold_tables(name TEXT PRIMARY KEY, spec TEXT NOT NULL)
//       one row per logical table; `spec` is the TableSpec as JSON
//   "items_<T>"(pk TEXT NOT NULL, sk TEXT NOT NULL DEFAULT '',
//               data TEXT NOT NULL, PRIMARY KEY(pk, sk)) WITHOUT ROWID
//       the items of logical table T; `data` is the whole item as JSON
//       (store/item_json.h), key attributes included; sk is '' without a
//       sort key
//   ix<N>_hash, ix<N>_range
//       VIRTUAL generated columns of "items_<T>" for the N-th index of the
//       stored spec (indexes are only ever appended, so N is stable): the
//       attribute's value when it has the index's type, else NULL
//   "items_<T>__ix<N>" ON "items_<T>"(ix<N>_hash, ix<N>_range, pk, sk)
//       a partial index over the rows that have both values, which is what
//       makes index queries sparse and range scans
//
// Table names are restricted to [A-Za-z0-9_.-] by validate_table_spec() and
// index attribute names to [A-Za-z0-9_] by validate_sql_names(), so both may
// be spliced into DDL. Nothing else ever is. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "leasehold/store.h"

namespace leasehold::store::sqlite {

inline constexpr char kCreateMetaTable[] =
    "CREATE TABLE IF NOT EXISTS leasehold_tables(name TEXT PRIMARY KEY, spec TEXT NOT NULL)";
inline constexpr char kSelectSpec[] = "SELECT spec FROM leasehold_tables WHERE name = ?1";
inline constexpr char kUpsertSpec[] =
    "INSERT INTO leasehold_tables(name, spec) VALUES(?1, ?2) "
    "ON CONFLICT(name) DO UPDATE SET spec = excluded.spec";

// Index attribute names end up in DDL: refuse anything outside [A-Za-z0-9_].
Status validate_sql_names(const TableSpec& spec);

std::string spec_to_json(const TableSpec& spec);
// kInternal for anything spec_to_json() would not produce.
Result<TableSpec> spec_from_json(std::string_view json);

// DDL creating the items table of `spec` (without indexes).
std::string create_items_ddl(const TableSpec& spec);
// DDL adding index `ordinal` (its position in the stored spec).
std::vector<std::string> add_index_ddl(const TableSpec& spec, size_t ordinal);

// The fixed statements of one table, built once per loaded spec. Parameters:
// ?1 pk, ?2 sk, then as noted.
struct TableSql {
  TableSpec spec;
  std::string get;  // -> data
  // Two items (?1 ?2, then ?3 ?4) in one statement, so from one snapshot
  // without a transaction around it: -> 0 or 1 (which key), data.
  std::string get_two;
  std::string put_upsert;  // ?3 data, ?4 WriteOp
  std::string put_update;  // ?3 data, ?4 WriteOp
  // No RETURNING: it costs an ephemeral table per run, and the WriteOp
  // already holds the item written (see SqliteStore::write_update).
  std::string update_upsert;  // ?3 WriteOp, ?4 data of a new item
  std::string update_update;  // ?3 WriteOp
  std::string remove;         // ?3 WriteOp

  explicit TableSql(TableSpec spec);
};

// Parameters shared by both query forms.
enum QueryParam : int {
  kParamKey = 1,         // pk (query) or hash value (query_index)
  kParamLimit = 2,       // rows to fetch
  kParamAfterRange = 3,  // cursor: last sort key (query) or range value (index)
  kParamLo = 4,          // the range's operand / lower bound
  kParamHi = 5,          // kBetween's upper bound; begins_with's exclusive end
  kParamAfterPk = 6,     // index cursor
  kParamAfterSk = 7,     // index cursor
  kQueryParamsMax = 7,
};

// A page of items of one partition: SELECT data, pk, sk ... ORDER BY sk
// (DESC if `descending`, the cursor ?3 then an upper bound).
// `bounded_prefix`: kBeginsWith has an exclusive end bound (?5).
std::string query_sql(const TableSpec& spec, KeyRange::Kind kind, bool has_cursor,
                      bool bounded_prefix, bool descending);
// A page of index `ordinal`: SELECT data, ix<N>_range, pk, sk ... ORDER BY
// ix<N>_range, pk, sk (each DESC if `descending`).
std::string query_index_sql(const TableSpec& spec, size_t ordinal, KeyRange::Kind kind,
                            bool has_cursor, bool bounded_prefix, bool descending);

}  // namespace leasehold::store::sqlite
