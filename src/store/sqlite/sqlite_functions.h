// The SQL functions through which a conditional write of the SQLite backend
// runs the shared evaluator (store/eval.h) inside ONE SQL statement:
//
//   lh_check(data, op)  1 if op's condition holds on the stored item `data`
//                       (NULL: no item), else 0
//   lh_apply(data, op)  the stored item `data` with op's update applied, as
//                       JSON; fails the statement (op.error says why) when
//                       `add` meets a non-int or the item outgrows 400 KiB
//
// `op` is a WriteOp bound with sqlite3_bind_pointer, so nothing is
// serialised. The functions also record what they saw in the WriteOp: the
// caller learns whether the row existed, and the item lh_check decoded is
// reused by lh_apply and handed back as the write's result, so a renew
// decodes and encodes the item once.
//
// The functions are registered per connection and are used by one statement
// at a time; a WriteOp belongs to the one statement it is bound to.
#pragma once

#include <sqlite3.h>

#include <string>

#include "leasehold/store.h"

namespace leasehold::store::sqlite {

// The pointer type tag of sqlite3_bind_pointer for WriteOp.
inline constexpr char kWriteOpPointerType[] = "leasehold.WriteOp";

struct WriteOp {
  // Inputs. `update` is null for statements that do not call lh_apply.
  const TableSpec* spec = nullptr;
  const Key* key = nullptr;
  const Update* update = nullptr;
  const Condition* condition = nullptr;

  // Filled in while the statement runs.
  bool row_seen = false;    // lh_check was called on an existing row
  bool applied = false;     // lh_apply produced `result`
  Status error;             // why lh_check / lh_apply failed the statement
  Item seen;                // the item lh_check decoded ...
  std::string seen_json;    // ... from this text
  bool seen_valid = false;  // `seen` is usable (not yet moved into `result`)
  Item result;              // the item lh_apply wrote ...
  std::string result_json;  // ... as this text
};

// Registers lh_check and lh_apply on `db`.
Status register_functions(sqlite3* db);

}  // namespace leasehold::store::sqlite
