// The meaning of conditions, updates and key ranges, written once.
//
// Backends that cannot push a condition down to their engine (the in-memory
// store, and SQLite through its registered SQL functions) evaluate it here,
// so that every backend agrees with DynamoDB's semantics by construction.
// The validators are shared too: every backend refuses the same bad input
// with the same kInvalidArgument message, before touching storage.
// All functions are pure and thread-safe.
#pragma once

#include "leasehold/store.h"

namespace leasehold::store {

// Nesting and size limits for conditions and updates.
inline constexpr int kConditionDepthMax = 16;
inline constexpr size_t kConditionNodesMax = 128;
inline constexpr size_t kUpdateActionsMax = 64;

// `item` may be null (no item: every attribute is absent).
bool evaluate(const Condition& condition, const Item* item);

// Applies `update` to `item` in place. Fails with kInvalidArgument (and
// leaves `item` unspecified) when `add` meets a non-int attribute.
Status apply_update(const Update& update, Item& item);

// True if `v` satisfies `range` (same typing rules as conditions).
bool in_range(const Value& v, const KeyRange& range);

// Approximate stored size, as DynamoDB counts it: names plus values.
size_t item_bytes(const Item& item);

Status validate_attr_name(std::string_view name);
Status validate_table_spec(const TableSpec& spec);
Status validate_key(const TableSpec& spec, const Key& key);
Status validate_condition(const Condition& condition);
// Refuses key attributes, duplicate attributes and non-int deltas.
Status validate_update(const TableSpec& spec, const Update& update);
// The item must carry the key attributes as strings and fit kItemBytesMax.
Status validate_item(const TableSpec& spec, const Item& item);
// DynamoDB's rule for index keys: an item may lack an index's attributes
// (it is then not in that index), but where it has them they must be of the
// index's types, and strings must not be empty. Checked on every write's
// resulting item, on every backend.
Status validate_index_attrs(const TableSpec& spec, const Item& item);
// The same rule, on what an update sets, for a store that sends the update
// without the item (DynamoDB): a set of an index key to a value of another
// type (or an empty string), or an add to a string key, whatever the item
// holds. DynamoDB refuses such an update itself; DynamoDB Local does not
// always, so the backend checks before sending. A set_if_absent is not
// checked: whether it applies depends on the item.
Status validate_update_index_attrs(const TableSpec& spec, const Update& update);
Status validate_range(const KeyRange& range, AttrType type);
Status validate_query_options(const QueryOptions& options);
// An index that exists keeps its definition: asking for the same name over
// other attributes is kInvalidArgument, not a silent no-op.
Status check_same_index(const IndexSpec& existing, const IndexSpec& requested);
// Leaves in `item` what a query of `index` returns: the table's key, the
// index's key and its projected attributes.
void project(const TableSpec& spec, const IndexSpec& index, Item& item);

// The key of a whole item. REQUIRES: validate_item(spec, item).ok().
Key key_of(const TableSpec& spec, const Item& item);

// `item` with the key attributes of `key` filled in.
void set_key(const TableSpec& spec, const Key& key, Item& item);

}  // namespace leasehold::store
