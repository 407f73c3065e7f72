// The SQLite item store (see sqlite_store.h).
//
// Storage layout (the full contract is in sqlite_schema.h): logical table T is
// the SQLite table "items_T"(pk TEXT, sk TEXT, data TEXT) WITHOUT ROWID with
// PRIMARY KEY(pk, sk); sk is '' when T has no sort key; data is the whole item
// as one JSON object keyed by attribute name ({"pk":"CONN#1",
// "lease_token":"…","lease_expires_at_ms":1700000000000}). Table specs live in
// leasehold_tables(name, spec). So a lease renew through this store does the
// same work as this raw statement on the same file:
//
//   UPDATE "items_leases" SET data = json_set(data, '$.lease_expires_at_ms', ?,
//       '$.lease_heartbeat_at_ms', ?) WHERE pk = ? AND sk = ''
//       AND json_extract(data, '$.lease_owner') = ?
//       AND json_extract(data, '$.lease_token') = ?
//       AND json_extract(data, '$.lease_expires_at_ms') > ?
//       AND json_extract(data, '$.lease_heartbeat_at_ms') <= ?
//
// Every write is one SQL statement (sqlite_functions.h runs the shared
// evaluator inside it), so it is atomic across processes; inputs are checked
// with the shared validators before any statement runs.
#include "store/sqlite/sqlite_store.h"

#include <algorithm>
#include <map>
#include <optional>

#include "store/eval.h"
#include "store/item_json.h"
#include "store/sqlite/sqlite_db.h"
#include "store/sqlite/sqlite_functions.h"
#include "store/sqlite/sqlite_schema.h"
#include "store/sqlite/wal_index.h"

namespace leasehold::store {
namespace {

using sqlite::Connection;
using sqlite::ConnectionPool;
using sqlite::StatementReset;
using sqlite::TableSql;
using sqlite::WriteOp;

// update_each() commits this many writes per transaction: enough to amortise
// the commit, short enough not to hold the write lock for long.
constexpr size_t kUpdateEachChunkMax = 1000;

// Binds text without copying. The caller keeps `v` alive until the statement
// is reset. An empty view must still bind '' (a null pointer would bind NULL).
void bind_text(sqlite3_stmt* s, int i, std::string_view v) {
  sqlite3_bind_text(s, i, v.data() != nullptr ? v.data() : "", static_cast<int>(v.size()),
                    SQLITE_STATIC);
}

void bind_value(sqlite3_stmt* s, int i, const Value& v) {
  switch (type_of(v)) {
    case AttrType::kString:
      bind_text(s, i, std::get<std::string>(v));
      break;
    case AttrType::kInt:
      sqlite3_bind_int64(s, i, std::get<int64_t>(v));
      break;
    case AttrType::kBool:
      sqlite3_bind_int(s, i, std::get<bool>(v) ? 1 : 0);
      break;
  }
}

void bind_op(sqlite3_stmt* s, int i, WriteOp* op) {
  sqlite3_bind_pointer(s, i, op, sqlite::kWriteOpPointerType, nullptr);
}

std::string_view column_text(sqlite3_stmt* s, int i) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(s, i));
  return {text != nullptr ? text : "", static_cast<size_t>(sqlite3_column_bytes(s, i))};
}

// The SQLite error of a write, unless one of our SQL functions failed it for
// a reason of its own (a bad `add`, an oversized item). A write outside a
// transaction commits as it runs, so an I/O error leaves its outcome unknown.
Status write_error(Connection& c, int rc, const WriteOp& op, std::string_view what) {
  if (!op.error.ok()) return op.error;
  return sqlite::commit_error_status(c.db(), rc, what);
}

Status condition_false(const Condition& condition) {
  return condition_failed("condition " + condition.to_string() + " is false");
}

// A cursor is the last returned item's position (range value, pk, sk) as a
// small JSON item, the same form the memory store uses.
std::string make_cursor(const Value* range, const Key& key) {
  Item c{{"pk", key.pk}, {"sk", key.sk}};
  if (range != nullptr) c.emplace("r", *range);
  return encode_item(c);
}

// `range_type`: the index's range type, or nullopt for a table query.
Result<Item> decode_cursor(const std::string& cursor, std::optional<AttrType> range_type) {
  auto c = decode_item(cursor);
  if (!c.ok() || !get_string(*c, "pk") || !get_string(*c, "sk")) {
    return invalid_argument("malformed query cursor");
  }
  if (range_type) {
    const auto r = c->find("r");
    if (r == c->end() || type_of(r->second) != *range_type) {
      return invalid_argument("malformed query cursor");
    }
  }
  return c;
}

// The exclusive end of the strings that begin with `prefix`, or nullopt if
// there is none (an empty prefix, or one of 0xff bytes only).
std::optional<std::string> prefix_end(const KeyRange& range) {
  if (range.kind != KeyRange::Kind::kBeginsWith) return std::nullopt;
  std::string end = std::get<std::string>(range.lo);
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (end.empty()) return std::nullopt;
  end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;
}

void bind_range(sqlite3_stmt* s, const KeyRange& range, const std::optional<std::string>& end) {
  if (range.kind == KeyRange::Kind::kAll) return;
  bind_value(s, sqlite::kParamLo, range.lo);
  if (range.kind == KeyRange::Kind::kBetween) bind_value(s, sqlite::kParamHi, range.hi);
  if (end) bind_text(s, sqlite::kParamHi, *end);
}

// Reads up to `limit` items of a query statement that fetches limit + 1 rows
// (column 0 is data); the extra row only says that there is another page.
Result<Page> read_page(Connection& c, sqlite3_stmt* s, const TableSpec& spec, int limit,
                       const IndexSpec* index) {
  Page page;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    if (static_cast<int>(page.items.size()) == limit) {
      const Item& last = page.items.back();
      page.next_cursor =
          make_cursor(index ? &last.at(index->range_attr) : nullptr, key_of(spec, last));
      return page;
    }
    LEASEHOLD_ASSIGN_OR_RETURN(Item item, decode_item(column_text(s, 0)));
    if (index != nullptr) project(spec, *index, item);
    page.items.push_back(std::move(item));
  }
  if (rc != SQLITE_DONE) return sqlite::error_status(c.db(), rc, "query");
  return page;
}

Status validate_request(const TableSpec& spec, const Key& key, const Update& update,
                        const Condition& condition) {
  LEASEHOLD_RETURN_IF_ERROR(validate_key(spec, key));
  LEASEHOLD_RETURN_IF_ERROR(validate_update(spec, update));
  return validate_condition(condition);
}

class SqliteStore final : public ItemStore {
 public:
  // `wal_index` may be null: change_stamp() then says nothing.
  SqliteStore(SqliteOptions options, std::unique_ptr<Connection> first,
              std::unique_ptr<sqlite::WalIndexHeader> wal_index)
      : busy_timeout_(options.busy_timeout),
        pool_(options, options.connections_max, std::move(first)),
        read_pool_(options, options.read_connections_max, nullptr),
        wal_index_(std::move(wal_index)) {}

  Status ensure_table(const TableSpec& spec) override;
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
  std::string_view backend_name() const override { return "sqlite"; }
  // WAL mode: a read never waits for a writer, and reads have connections
  // of their own.
  bool reads_are_local() const override { return true; }
  // The wal-index header: it moves with every commit, from any process.
  std::optional<ChangeStamp> change_stamp() const override {
    return wal_index_ ? wal_index_->stamp() : std::nullopt;
  }

 private:
  using Table = std::shared_ptr<const TableSql>;

  // The table's spec and statements: cached, else loaded from
  // leasehold_tables (another process may have created or extended it).
  Result<Table> table(Connection& c, std::string_view name, bool reload = false);
  Table remember(TableSpec spec);
  Result<std::optional<TableSpec>> load_spec(Connection& c, std::string_view name);
  Result<TableSpec> ensure_table_in_transaction(Connection& c, const TableSpec& spec);
  Result<std::optional<Item>> read_item(Connection& c, const TableSql& t, const Key& key);
  Result<std::vector<Item>> read_two(Connection& c, const TableSql& t,
                                     std::span<const Key, 2> keys);
  // REQUIRES: the inputs passed validate_request().
  Result<Item> write_update(Connection& c, const TableSql& t, const Key& key, const Update& update,
                            const Condition& condition);
  void update_chunk(Connection& c, const TableSql& t, std::span<const UpdateRequest> requests,
                    std::span<const size_t> chunk, std::vector<Result<Item>>& out);

  const Duration busy_timeout_;
  RealClock clock_;           // to share one timeout between the waits of a call
  ConnectionPool pool_;       // writes and table changes
  ConnectionPool read_pool_;  // get, batch_get, query, query_index
  // SQLite's mapping: valid while the pools' connections are open.
  const std::unique_ptr<sqlite::WalIndexHeader> wal_index_;
  Mutex tables_mu_;
  std::map<std::string, Table, std::less<>> tables_ GUARDED_BY(tables_mu_);
};

Result<SqliteStore::Table> SqliteStore::table(Connection& c, std::string_view name, bool reload) {
  if (!reload) {
    MutexLock lock(tables_mu_);
    const auto it = tables_.find(name);
    if (it != tables_.end()) return it->second;
  }
  LEASEHOLD_ASSIGN_OR_RETURN(std::optional<TableSpec> spec, load_spec(c, name));
  if (!spec) return not_found("no table " + std::string(name));
  return remember(std::move(*spec));
}

SqliteStore::Table SqliteStore::remember(TableSpec spec) {
  auto t = std::make_shared<const TableSql>(std::move(spec));
  MutexLock lock(tables_mu_);
  tables_.insert_or_assign(t->spec.name, t);
  return t;
}

Result<std::optional<TableSpec>> SqliteStore::load_spec(Connection& c, std::string_view name) {
  static const std::string kSql = sqlite::kSelectSpec;
  LEASEHOLD_ASSIGN_OR_RETURN(sqlite3_stmt * s, c.prepare(kSql));
  StatementReset reset(s);
  bind_text(s, 1, name);
  const int rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) return std::optional<TableSpec>();
  if (rc != SQLITE_ROW) return sqlite::error_status(c.db(), rc, "reading table specs");
  LEASEHOLD_ASSIGN_OR_RETURN(TableSpec spec, sqlite::spec_from_json(column_text(s, 0)));
  return std::optional<TableSpec>(std::move(spec));
}

Status SqliteStore::ensure_table(const TableSpec& spec) {
  LEASEHOLD_RETURN_IF_ERROR(validate_table_spec(spec));
  LEASEHOLD_RETURN_IF_ERROR(sqlite::validate_sql_names(spec));
  LEASEHOLD_ASSIGN_OR_RETURN(auto c, pool_.acquire());
  LEASEHOLD_RETURN_IF_ERROR(c->exec("BEGIN IMMEDIATE").with_context("ensure_table " + spec.name));
  Result<TableSpec> stored = ensure_table_in_transaction(*c, spec);
  if (!stored.ok()) {
    c->abandon_transaction();
    return stored.status();
  }
  LEASEHOLD_RETURN_IF_ERROR(c->exec("COMMIT").with_context("ensure_table " + spec.name));
  remember(std::move(stored).value());
  return {};
}

// Creates the table, or adds the indexes it lacks, and records the spec.
// Runs inside the caller's write transaction, so concurrent callers in other
// processes see either none or all of it.
Result<TableSpec> SqliteStore::ensure_table_in_transaction(Connection& c, const TableSpec& spec) {
  LEASEHOLD_ASSIGN_OR_RETURN(std::optional<TableSpec> found, load_spec(c, spec.name));
  if (found && (found->pk_attr != spec.pk_attr || found->sk_attr != spec.sk_attr)) {
    return invalid_argument("table " + spec.name + " exists with another key schema");
  }
  bool changed = !found;
  TableSpec stored =
      found ? std::move(*found) : TableSpec{spec.name, spec.pk_attr, spec.sk_attr, {}};
  if (changed) LEASEHOLD_RETURN_IF_ERROR(c.exec(sqlite::create_items_ddl(stored)));
  for (const auto& index : spec.indexes) {
    const auto same_name = [&](const IndexSpec& i) { return i.name == index.name; };
    const auto existing = std::find_if(stored.indexes.begin(), stored.indexes.end(), same_name);
    if (existing != stored.indexes.end()) {
      LEASEHOLD_RETURN_IF_ERROR(check_same_index(*existing, index));
      continue;
    }
    stored.indexes.push_back(index);
    for (const auto& ddl : sqlite::add_index_ddl(stored, stored.indexes.size() - 1)) {
      LEASEHOLD_RETURN_IF_ERROR(c.exec(ddl));
    }
    changed = true;
  }
  if (!changed) return stored;
  static const std::string kSql = sqlite::kUpsertSpec;
  LEASEHOLD_ASSIGN_OR_RETURN(sqlite3_stmt * s, c.prepare(kSql));
  StatementReset reset(s);
  const std::string json = sqlite::spec_to_json(stored);
  bind_text(s, 1, stored.name);
  bind_text(s, 2, json);
  const int rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return sqlite::error_status(c.db(), rc, "recording table spec");
  return stored;
}

Result<std::optional<Item>> SqliteStore::read_item(Connection& c, const TableSql& t,
                                                   const Key& key) {
  LEASEHOLD_ASSIGN_OR_RETURN(sqlite3_stmt * s, c.prepare(t.get));
  StatementReset reset(s);
  bind_text(s, 1, key.pk);
  bind_text(s, 2, key.sk);
  const int rc = sqlite3_step(s);
  if (rc == SQLITE_DONE) return std::optional<Item>();
  if (rc != SQLITE_ROW) return sqlite::error_status(c.db(), rc, "get");
  LEASEHOLD_ASSIGN_OR_RETURN(Item item, decode_item(column_text(s, 0)));
  return std::optional<Item>(std::move(item));
}

// The most frequent batch (an item and the item it names: the token check
// of every authenticated request) in one statement, which SQLite runs in a
// read transaction of its own: half the statements of BEGIN, two reads and
// COMMIT.
Result<std::vector<Item>> SqliteStore::read_two(Connection& c, const TableSql& t,
                                                std::span<const Key, 2> keys) {
  LEASEHOLD_ASSIGN_OR_RETURN(sqlite3_stmt * s, c.prepare(t.get_two));
  StatementReset reset(s);
  for (int i = 0; i < 2; ++i) {
    bind_text(s, 2 * i + 1, keys[i].pk);
    bind_text(s, 2 * i + 2, keys[i].sk);
  }
  std::optional<Item> found[2];
  for (int rc = sqlite3_step(s); rc != SQLITE_DONE; rc = sqlite3_step(s)) {
    if (rc != SQLITE_ROW) return sqlite::error_status(c.db(), rc, "batch_get");
    LEASEHOLD_ASSIGN_OR_RETURN(Item item, decode_item(column_text(s, 1)));
    found[sqlite3_column_int(s, 0) == 0 ? 0 : 1] = std::move(item);
  }
  std::vector<Item> out;
  out.reserve(2);
  for (std::optional<Item>& item : found) {
    if (item) out.push_back(std::move(*item));
  }
  return out;
}

Result<Item> SqliteStore::get(std::string_view table_name, const Key& key, bool) {
  LEASEHOLD_ASSIGN_OR_RETURN(auto c, read_pool_.acquire());
  LEASEHOLD_ASSIGN_OR_RETURN(Table t, table(*c, table_name));
  LEASEHOLD_RETURN_IF_ERROR(validate_key(t->spec, key));
  LEASEHOLD_ASSIGN_OR_RETURN(std::optional<Item> item, read_item(*c, *t, key));
  if (!item) return not_found("no item " + key.pk);
  return std::move(*item);
}

Result<std::vector<Item>> SqliteStore::batch_get(std::string_view table_name,
                                                 std::span<const Key> keys) {
  LEASEHOLD_ASSIGN_OR_RETURN(auto c, read_pool_.acquire());
  LEASEHOLD_ASSIGN_OR_RETURN(Table t, table(*c, table_name));
  for (const auto& key : keys) LEASEHOLD_RETURN_IF_ERROR(validate_key(t->spec, key));
  std::vector<Item> out;
  if (keys.empty()) return out;
  if (keys.size() == 2) return read_two(*c, *t, keys.first<2>());
  // One read transaction: every key is read from the same snapshot.
  static const std::string kBegin = "BEGIN", kCommit = "COMMIT";
  LEASEHOLD_RETURN_IF_ERROR(c->exec_cached(kBegin).with_context("batch_get"));
  for (const auto& key : keys) {
    LEASEHOLD_ASSIGN_OR_RETURN(std::optional<Item> item, read_item(*c, *t, key));
    if (item) out.push_back(std::move(*item));
  }
  LEASEHOLD_RETURN_IF_ERROR(c->exec_cached(kCommit).with_context("batch_get"));
  return out;
}

Status SqliteStore::put(std::string_view table_name, const Item& item, const Condition& condition) {
  LEASEHOLD_ASSIGN_OR_RETURN(auto c, pool_.acquire());
  LEASEHOLD_ASSIGN_OR_RETURN(Table t, table(*c, table_name));
  LEASEHOLD_RETURN_IF_ERROR(validate_item(t->spec, item));
  LEASEHOLD_RETURN_IF_ERROR(validate_index_attrs(t->spec, item));
  LEASEHOLD_RETURN_IF_ERROR(validate_condition(condition));
  const Key key = key_of(t->spec, item);
  const std::string json = encode_item(item);
  WriteOp op;
  op.spec = &t->spec;
  op.key = &key;
  op.condition = &condition;
  // Whether a missing item may be written is known before the statement runs;
  // when it may not, a plain UPDATE does all the work.
  const bool may_create = evaluate(condition, nullptr);
  LEASEHOLD_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                             c->prepare(may_create ? t->put_upsert : t->put_update));
  StatementReset reset(s);
  bind_text(s, 1, key.pk);
  bind_text(s, 2, key.sk);
  bind_text(s, 3, json);
  bind_op(s, 4, &op);
  const int rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return write_error(*c, rc, op, "put");
  if (sqlite3_changes(c->db()) == 0) return condition_false(condition);
  return {};
}

Result<Item> SqliteStore::update(std::string_view table_name, const Key& key, const Update& update,
                                 const Condition& condition) {
  LEASEHOLD_ASSIGN_OR_RETURN(auto c, pool_.acquire());
  LEASEHOLD_ASSIGN_OR_RETURN(Table t, table(*c, table_name));
  LEASEHOLD_RETURN_IF_ERROR(validate_request(t->spec, key, update, condition));
  return write_update(*c, *t, key, update, condition);
}

Result<Item> SqliteStore::write_update(Connection& c, const TableSql& t, const Key& key,
                                       const Update& update, const Condition& condition) {
  WriteOp op;
  op.spec = &t.spec;
  op.key = &key;
  op.update = &update;
  op.condition = &condition;
  // The item a missing key would get depends on the request alone, so it is
  // built here; when the condition rules creation out (a renew), a plain
  // UPDATE runs instead of an upsert.
  // A fresh item that would be refused (too big, or an index attribute of
  // the wrong type) is not inserted; the refusal is reported only if there
  // was no row to update instead.
  Item fresh;
  std::string fresh_json;
  bool may_create = evaluate(condition, nullptr);
  Status fresh_refused;
  if (may_create) {
    set_key(t.spec, key, fresh);
    LEASEHOLD_RETURN_IF_ERROR(apply_update(update, fresh));
    if (item_bytes(fresh) > kItemBytesMax) {
      fresh_refused = invalid_argument("item larger than 400 KiB");
    } else {
      fresh_refused = validate_index_attrs(t.spec, fresh);
    }
    may_create = fresh_refused.ok();
    if (may_create) fresh_json = encode_item(fresh);
  }
  LEASEHOLD_ASSIGN_OR_RETURN(sqlite3_stmt * s,
                             c.prepare(may_create ? t.update_upsert : t.update_update));
  StatementReset reset(s);
  bind_text(s, 1, key.pk);
  bind_text(s, 2, key.sk);
  bind_op(s, 3, &op);
  if (may_create) bind_text(s, 4, fresh_json);
  const int rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return write_error(c, rc, op, "update");
  // One row changed: lh_apply ran on the existing row and holds the item it
  // wrote, or it never ran and the fresh item was inserted.
  if (sqlite3_changes(c.db()) > 0) return op.applied ? std::move(op.result) : std::move(fresh);
  if (!fresh_refused.ok() && !op.row_seen) return fresh_refused;
  return condition_false(condition);
}

Status SqliteStore::remove(std::string_view table_name, const Key& key,
                           const Condition& condition) {
  LEASEHOLD_ASSIGN_OR_RETURN(auto c, pool_.acquire());
  LEASEHOLD_ASSIGN_OR_RETURN(Table t, table(*c, table_name));
  LEASEHOLD_RETURN_IF_ERROR(validate_key(t->spec, key));
  LEASEHOLD_RETURN_IF_ERROR(validate_condition(condition));
  WriteOp op;
  op.spec = &t->spec;
  op.key = &key;
  op.condition = &condition;
  LEASEHOLD_ASSIGN_OR_RETURN(sqlite3_stmt * s, c->prepare(t->remove));
  StatementReset reset(s);
  bind_text(s, 1, key.pk);
  bind_text(s, 2, key.sk);
  bind_op(s, 3, &op);
  const int rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return write_error(*c, rc, op, "remove");
  if (sqlite3_changes(c->db()) > 0) return {};
  // lh_check only runs on the row the primary key found: if it never ran,
  // the item was missing when the statement ran, and the condition is judged
  // on no item.
  if (!op.row_seen && evaluate(condition, nullptr)) return {};
  return condition_false(condition);
}

Result<Page> SqliteStore::query(std::string_view table_name, std::string_view pk,
                                const KeyRange& range, const QueryOptions& options) {
  LEASEHOLD_ASSIGN_OR_RETURN(auto c, read_pool_.acquire());
  LEASEHOLD_ASSIGN_OR_RETURN(Table t, table(*c, table_name));
  const TableSpec& spec = t->spec;
  LEASEHOLD_RETURN_IF_ERROR(validate_query_options(options));
  LEASEHOLD_RETURN_IF_ERROR(validate_key(spec, {std::string(pk), spec.sk_attr.empty() ? "" : "x"}));
  if (spec.sk_attr.empty() && range.kind != KeyRange::Kind::kAll) {
    return invalid_argument("table " + spec.name + " has no sort key to range over");
  }
  LEASEHOLD_RETURN_IF_ERROR(validate_range(range, AttrType::kString));
  std::optional<Item> cursor;
  if (!options.cursor.empty()) {
    LEASEHOLD_ASSIGN_OR_RETURN(cursor, decode_cursor(options.cursor, std::nullopt));
  }
  const std::optional<std::string> end = prefix_end(range);
  const std::string sql =
      sqlite::query_sql(spec, range.kind, cursor.has_value(), end.has_value(), options.descending);
  LEASEHOLD_ASSIGN_OR_RETURN(sqlite3_stmt * s, c->prepare(sql));
  StatementReset reset(s);
  bind_text(s, sqlite::kParamKey, pk);
  sqlite3_bind_int(s, sqlite::kParamLimit, options.limit + 1);
  if (cursor) bind_value(s, sqlite::kParamAfterRange, cursor->at("sk"));
  bind_range(s, range, end);
  return read_page(*c, s, spec, options.limit, nullptr);
}

Result<Page> SqliteStore::query_index(std::string_view table_name, std::string_view index_name,
                                      std::string_view hash_value, const KeyRange& range,
                                      const QueryOptions& options) {
  LEASEHOLD_ASSIGN_OR_RETURN(auto c, read_pool_.acquire());
  LEASEHOLD_ASSIGN_OR_RETURN(Table t, table(*c, table_name));
  LEASEHOLD_RETURN_IF_ERROR(validate_query_options(options));
  const auto named = [&](const IndexSpec& i) { return i.name == index_name; };
  if (std::none_of(t->spec.indexes.begin(), t->spec.indexes.end(), named)) {
    LEASEHOLD_ASSIGN_OR_RETURN(t, table(*c, table_name, /*reload=*/true));  // added elsewhere?
  }
  const auto& indexes = t->spec.indexes;
  const auto index = std::find_if(indexes.begin(), indexes.end(), named);
  if (index == indexes.end()) {
    return not_found("table " + t->spec.name + " has no index " + std::string(index_name));
  }
  LEASEHOLD_RETURN_IF_ERROR(validate_range(range, index->range_type));
  std::optional<Item> cursor;
  if (!options.cursor.empty()) {
    LEASEHOLD_ASSIGN_OR_RETURN(cursor, decode_cursor(options.cursor, index->range_type));
  }
  const std::optional<std::string> end = prefix_end(range);
  const size_t ordinal = static_cast<size_t>(index - indexes.begin());
  const std::string sql = sqlite::query_index_sql(t->spec, ordinal, range.kind, cursor.has_value(),
                                                  end.has_value(), options.descending);
  LEASEHOLD_ASSIGN_OR_RETURN(sqlite3_stmt * s, c->prepare(sql));
  StatementReset reset(s);
  bind_text(s, sqlite::kParamKey, hash_value);
  sqlite3_bind_int(s, sqlite::kParamLimit, options.limit + 1);
  if (cursor) {
    bind_value(s, sqlite::kParamAfterRange, cursor->at("r"));
    bind_value(s, sqlite::kParamAfterPk, cursor->at("pk"));
    bind_value(s, sqlite::kParamAfterSk, cursor->at("sk"));
  }
  bind_range(s, range, end);
  return read_page(*c, s, t->spec, options.limit, &*index);
}

// Sets a connection's busy timeout for one call and restores the configured
// one afterwards, so that the next borrower of the connection gets it back.
class BusyTimeoutFor {
 public:
  BusyTimeoutFor(Connection& c, Duration call, Duration configured)
      : c_(c), configured_(configured), changed_(call < configured) {
    if (changed_) c_.set_busy_timeout(call);
  }
  ~BusyTimeoutFor() {
    if (changed_) c_.set_busy_timeout(configured_);
  }
  BusyTimeoutFor(const BusyTimeoutFor&) = delete;
  BusyTimeoutFor& operator=(const BusyTimeoutFor&) = delete;

 private:
  Connection& c_;
  Duration configured_;
  bool changed_;
};

// The waits of one call (for a free connection, then for the write lock)
// share `timeout`: the lock wait gets what the connection wait left.
std::vector<Result<Item>> SqliteStore::update_each(std::string_view table_name,
                                                   std::span<const UpdateRequest> requests,
                                                   Duration timeout) {
  std::vector<Result<Item>> out(requests.size(), Result<Item>(internal_error("not attempted")));
  if (requests.empty()) return out;
  const MonoTime start = clock_.mono_now();
  auto c = pool_.acquire(timeout);
  std::optional<BusyTimeoutFor> busy;
  if (c.ok() && timeout != kNoTimeout) {
    const Duration left = std::max(timeout - (clock_.mono_now() - start), Duration(1));
    busy.emplace(**c, left, busy_timeout_);
  }
  auto t = c.ok() ? table(**c, table_name) : Result<Table>(c.status());
  if (!t.ok()) {
    std::fill(out.begin(), out.end(), Result<Item>(t.status()));
    return out;
  }
  // Bad requests are refused one by one before anything is written.
  std::vector<size_t> valid;
  valid.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const UpdateRequest& r = requests[i];
    Status checked = validate_request((*t)->spec, r.key, r.update, r.condition);
    if (checked.ok())
      valid.push_back(i);
    else
      out[i] = std::move(checked);
  }
  const std::span<const size_t> all(valid);
  for (size_t begin = 0; begin < all.size(); begin += kUpdateEachChunkMax) {
    update_chunk(**c, **t, requests,
                 all.subspan(begin, std::min(kUpdateEachChunkMax, all.size() - begin)), out);
  }
  return out;
}

// One transaction for many writes: a failed condition fails only its own
// entry (its statement changed nothing), while an error that makes SQLite
// roll the transaction back, or a failed commit, undoes every entry.
void SqliteStore::update_chunk(Connection& c, const TableSql& t,
                               std::span<const UpdateRequest> requests,
                               std::span<const size_t> chunk, std::vector<Result<Item>>& out) {
  const Status begun = c.exec("BEGIN IMMEDIATE").with_context("update_each");
  if (!begun.ok()) {
    for (size_t i : chunk) out[i] = begun;
    return;
  }
  for (size_t n = 0; n < chunk.size(); ++n) {
    const UpdateRequest& r = requests[chunk[n]];
    out[chunk[n]] = write_update(c, t, r.key, r.update, r.condition);
    if (sqlite3_get_autocommit(c.db()) != 0) {
      const Status lost = unavailable("update_each: the transaction was rolled back: " +
                                      out[chunk[n]].status().message());
      for (size_t m = 0; m < chunk.size(); ++m) {
        if (m > n || (m < n && out[chunk[m]].ok())) out[chunk[m]] = lost;
      }
      return;
    }
  }
  const Status committed = c.commit("update_each");
  if (!committed.ok()) {
    c.abandon_transaction();
    for (size_t i : chunk) {
      if (out[i].ok()) out[i] = committed;
    }
  }
}

}  // namespace

Result<std::unique_ptr<ItemStore>> open_sqlite_store(const SqliteOptions& options) {
  if (options.path.empty() || options.path == ":memory:" || options.path.starts_with("file:")) {
    return invalid_argument("the SQLite store needs a file path that other processes can open");
  }
  if (options.connections_max < 1 || options.read_connections_max < 1) {
    return invalid_argument("connections_max and read_connections_max must be at least 1");
  }
  if (options.busy_timeout < Duration::zero()) return invalid_argument("busy_timeout is negative");
  // The pool hands connections between threads (each used by one at a time).
  if (sqlite3_threadsafe() == 0) return unavailable("SQLite was built without thread support");
  LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<Connection> first, Connection::open(options));
  LEASEHOLD_RETURN_IF_ERROR(
      first->exec(sqlite::kCreateMetaTable)
          .with_context("cannot prepare SQLite database '" + options.path + "'"));
  // The first connection has read and written the database in WAL mode, so
  // the wal-index is mapped; it stays so while the pool keeps a connection
  // open, which is for as long as the store lives.
  auto wal_index = sqlite::WalIndexHeader::map(first->db());
  return std::unique_ptr<ItemStore>(std::make_unique<SqliteStore>(
      options, std::move(first), wal_index.ok() ? std::move(*wal_index) : nullptr));
}

}  // namespace leasehold::store
