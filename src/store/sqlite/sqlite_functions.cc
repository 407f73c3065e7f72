// lh_check and lh_apply: the shared evaluator as SQL functions (see
// sqlite_functions.h).
#include "store/sqlite/sqlite_functions.h"

#include <string_view>

#include "store/eval.h"
#include "store/item_json.h"
#include "store/sqlite/sqlite_db.h"

namespace leasehold::store::sqlite {
namespace {

WriteOp* write_op(sqlite3_context* ctx, sqlite3_value* arg) {
  auto* op = static_cast<WriteOp*>(sqlite3_value_pointer(arg, kWriteOpPointerType));
  if (op == nullptr) sqlite3_result_error(ctx, "leasehold: no write is bound to this call", -1);
  return op;
}

std::string_view text_of(sqlite3_value* v) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_value_text(v));
  return {text, static_cast<size_t>(sqlite3_value_bytes(v))};
}

// Fails the statement with `status`, which the caller reads from op.error.
void fail(sqlite3_context* ctx, WriteOp& op, Status status) {
  op.error = std::move(status);
  sqlite3_result_error(ctx, op.error.message().c_str(), -1);
}

void lh_check(sqlite3_context* ctx, int, sqlite3_value** argv) {
  WriteOp* op = write_op(ctx, argv[1]);
  if (op == nullptr) return;
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
    sqlite3_result_int(ctx, evaluate(*op->condition, nullptr) ? 1 : 0);
    return;
  }
  op->row_seen = true;
  // An unconditional put or remove needs nothing from the stored item.
  if (op->condition->is_true() && op->update == nullptr) {
    sqlite3_result_int(ctx, 1);
    return;
  }
  const std::string_view json = text_of(argv[0]);
  Result<Item> item = decode_item(json);
  if (!item.ok()) return fail(ctx, *op, item.status());
  op->seen = std::move(item).value();
  op->seen_json.assign(json);
  op->seen_valid = true;
  sqlite3_result_int(ctx, evaluate(*op->condition, &op->seen) ? 1 : 0);
}

void lh_apply(sqlite3_context* ctx, int, sqlite3_value** argv) {
  WriteOp* op = write_op(ctx, argv[1]);
  if (op == nullptr) return;
  Item item;
  if (sqlite3_value_type(argv[0]) != SQLITE_NULL) {
    const std::string_view json = text_of(argv[0]);
    if (op->seen_valid && op->seen_json == json) {
      item = std::move(op->seen);
      op->seen_valid = false;
    } else {
      Result<Item> decoded = decode_item(json);
      if (!decoded.ok()) return fail(ctx, *op, decoded.status());
      item = std::move(decoded).value();
    }
  }
  set_key(*op->spec, *op->key, item);
  Status applied = apply_update(*op->update, item);
  if (applied.ok() && item_bytes(item) > kItemBytesMax) {
    applied = invalid_argument("item larger than 400 KiB");
  }
  if (applied.ok()) applied = validate_index_attrs(*op->spec, item);
  if (!applied.ok()) return fail(ctx, *op, std::move(applied));
  op->result_json = encode_item(item);
  op->result = std::move(item);
  op->applied = true;
  sqlite3_result_text(ctx, op->result_json.data(), static_cast<int>(op->result_json.size()),
                      SQLITE_TRANSIENT);
}

}  // namespace

Status register_functions(sqlite3* db) {
  // DIRECTONLY: the functions take a pointer only a bound parameter can
  // supply, and must never run from a schema another process wrote.
  const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY;
  int rc = sqlite3_create_function_v2(db, "lh_check", 2, flags, nullptr, lh_check, nullptr, nullptr,
                                      nullptr);
  if (rc == SQLITE_OK) {
    rc = sqlite3_create_function_v2(db, "lh_apply", 2, flags, nullptr, lh_apply, nullptr, nullptr,
                                    nullptr);
  }
  if (rc != SQLITE_OK) return error_status(db, rc, "registering SQL functions");
  return {};
}

}  // namespace leasehold::store::sqlite
