#include "store/eval.h"

#include <algorithm>
#include <set>

namespace leasehold::store {
namespace {

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
// Every backend must hand strings back exactly (SQLite's JSON and DynamoDB
// both require UTF-8), so anything else is refused at the door.
bool is_utf8(std::string_view s) {
  static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xe0) == 0xc0)
      n = 1, cp = c & 0x1f;
    else if ((c & 0xf0) == 0xe0)
      n = 2, cp = c & 0x0f;
    else if ((c & 0xf8) == 0xf0)
      n = 3, cp = c & 0x07;
    else
      return false;
    if (s.size() - i <= n) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n + 1;
  }
  return true;
}

Status validate_string_value(std::string_view attr, const Value& v) {
  const auto* s = std::get_if<std::string>(&v);
  if (s != nullptr && !is_utf8(*s))
    return invalid_argument("value of " + std::string(attr) + " is not valid UTF-8");
  return {};
}

// Compares two values of the same type: <0, 0, >0. Bools only know equality.
int compare_same_type(const Value& a, const Value& b) {
  switch (type_of(a)) {
    case AttrType::kString: {
      const int c = std::get<std::string>(a).compare(std::get<std::string>(b));
      return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    case AttrType::kInt: {
      const int64_t x = std::get<int64_t>(a), y = std::get<int64_t>(b);
      return x < y ? -1 : (x > y ? 1 : 0);
    }
    case AttrType::kBool:
      return std::get<bool>(a) == std::get<bool>(b) ? 0 : 2;
  }
  return 2;
}

bool compare(const Value* actual, CompareOp op, const Value& expected) {
  if (actual == nullptr || actual->index() != expected.index()) return op == CompareOp::kNe;
  const int c = compare_same_type(*actual, expected);
  const bool ordered = type_of(expected) != AttrType::kBool;
  switch (op) {
    case CompareOp::kEq:
      return c == 0;
    case CompareOp::kNe:
      return c != 0;
    case CompareOp::kLt:
      return ordered && c < 0;
    case CompareOp::kLe:
      return ordered && c <= 0;
    case CompareOp::kGt:
      return ordered && c > 0;
    case CompareOp::kGe:
      return ordered && c >= 0;
  }
  return false;
}

const Value* find(const Item* item, std::string_view attr) {
  if (item == nullptr) return nullptr;
  const auto it = item->find(attr);
  return it == item->end() ? nullptr : &it->second;
}

Status validate_condition_at(const Condition& c, int depth, size_t& nodes) {
  if (depth > kConditionDepthMax) return invalid_argument("condition nested too deeply");
  if (++nodes > kConditionNodesMax) return invalid_argument("condition has too many terms");
  switch (c.kind) {
    case Condition::Kind::kTrue:
      return {};
    case Condition::Kind::kExists:
    case Condition::Kind::kNotExists:
    case Condition::Kind::kCompare:
      LEASEHOLD_RETURN_IF_ERROR(validate_attr_name(c.attr));
      return c.kind == Condition::Kind::kCompare ? validate_string_value(c.attr, c.value)
                                                 : Status();
    case Condition::Kind::kNot:
      if (c.children.size() != 1) return invalid_argument("'not' takes one condition");
      return validate_condition_at(c.children[0], depth + 1, nodes);
    case Condition::Kind::kAnd:
    case Condition::Kind::kOr:
      if (c.children.size() < 2) return invalid_argument("'and'/'or' take two or more conditions");
      for (const auto& child : c.children) {
        LEASEHOLD_RETURN_IF_ERROR(validate_condition_at(child, depth + 1, nodes));
      }
      return {};
  }
  return invalid_argument("unknown condition kind");
}

bool is_key_attr(const TableSpec& spec, std::string_view attr) {
  return attr == spec.pk_attr || (!spec.sk_attr.empty() && attr == spec.sk_attr);
}

}  // namespace

bool evaluate(const Condition& c, const Item* item) {
  switch (c.kind) {
    case Condition::Kind::kTrue:
      return true;
    case Condition::Kind::kExists:
      return find(item, c.attr) != nullptr;
    case Condition::Kind::kNotExists:
      return find(item, c.attr) == nullptr;
    case Condition::Kind::kCompare:
      return compare(find(item, c.attr), c.op, c.value);
    case Condition::Kind::kNot:
      return !evaluate(c.children.at(0), item);
    case Condition::Kind::kAnd:
      for (const auto& child : c.children) {
        if (!evaluate(child, item)) return false;
      }
      return true;
    case Condition::Kind::kOr:
      for (const auto& child : c.children) {
        if (evaluate(child, item)) return true;
      }
      return false;
  }
  return false;
}

Status apply_update(const Update& update, Item& item) {
  for (const auto& a : update.actions()) {
    switch (a.kind) {
      case UpdateAction::Kind::kSet:
        item.insert_or_assign(a.attr, a.value);
        break;
      case UpdateAction::Kind::kSetIfAbsent:
        item.try_emplace(a.attr, a.value);
        break;
      case UpdateAction::Kind::kRemove:
        item.erase(a.attr);
        break;
      case UpdateAction::Kind::kAdd: {
        auto [it, inserted] = item.try_emplace(a.attr, int64_t{0});
        auto* current = std::get_if<int64_t>(&it->second);
        if (current == nullptr) {
          return invalid_argument("add(" + a.attr + "): the attribute is a " +
                                  std::string(type_name(type_of(it->second))) + ", not an int");
        }
        const int64_t delta = std::get<int64_t>(a.value);
        if (__builtin_add_overflow(*current, delta, current)) {
          return invalid_argument("add(" + a.attr + "): int64 overflow");
        }
        break;
      }
    }
  }
  return {};
}

bool in_range(const Value& v, const KeyRange& r) {
  switch (r.kind) {
    case KeyRange::Kind::kAll:
      return true;
    case KeyRange::Kind::kEq:
      return compare(&v, CompareOp::kEq, r.lo);
    case KeyRange::Kind::kLt:
      return compare(&v, CompareOp::kLt, r.lo);
    case KeyRange::Kind::kLe:
      return compare(&v, CompareOp::kLe, r.lo);
    case KeyRange::Kind::kGt:
      return compare(&v, CompareOp::kGt, r.lo);
    case KeyRange::Kind::kGe:
      return compare(&v, CompareOp::kGe, r.lo);
    case KeyRange::Kind::kBetween:
      return compare(&v, CompareOp::kGe, r.lo) && compare(&v, CompareOp::kLe, r.hi);
    case KeyRange::Kind::kBeginsWith: {
      const auto* s = std::get_if<std::string>(&v);
      return s != nullptr && s->starts_with(std::get<std::string>(r.lo));
    }
  }
  return false;
}

size_t item_bytes(const Item& item) {
  size_t n = 0;
  for (const auto& [name, value] : item) {
    n += name.size();
    if (const auto* s = std::get_if<std::string>(&value))
      n += s->size();
    else
      n += 8;
  }
  return n;
}

Status validate_attr_name(std::string_view name) {
  if (name.empty()) return invalid_argument("attribute name is empty");
  if (name.size() > kAttrNameBytesMax) {
    return invalid_argument("attribute name longer than " + std::to_string(kAttrNameBytesMax) +
                            " bytes");
  }
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f) return invalid_argument("attribute name has a control character");
  }
  if (!is_utf8(name)) return invalid_argument("attribute name is not valid UTF-8");
  return {};
}

Status validate_table_spec(const TableSpec& spec) {
  if (spec.name.empty() || spec.name.size() > 200) {
    return invalid_argument("table name must be 1..200 characters");
  }
  for (char c : spec.name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-' || c == '.';
    if (!ok)
      return invalid_argument("table name '" + spec.name +
                              "' has characters outside [A-Za-z0-9_.-]");
  }
  LEASEHOLD_RETURN_IF_ERROR(validate_attr_name(spec.pk_attr));
  if (!spec.sk_attr.empty()) LEASEHOLD_RETURN_IF_ERROR(validate_attr_name(spec.sk_attr));
  std::set<std::string_view> names;
  for (const auto& index : spec.indexes) {
    if (!names.insert(index.name).second) return invalid_argument("duplicate index " + index.name);
    if (index.name.empty()) return invalid_argument("index name is empty");
    LEASEHOLD_RETURN_IF_ERROR(validate_attr_name(index.hash_attr));
    LEASEHOLD_RETURN_IF_ERROR(validate_attr_name(index.range_attr));
    if (index.range_type == AttrType::kBool)
      return invalid_argument("an index cannot range over bools");
    if (index.projects_all && !index.projected.empty()) {
      return invalid_argument("index " + index.name + " projects all attributes and a list");
    }
    std::set<std::string_view> projected;
    for (const std::string& attr : index.projected) {
      LEASEHOLD_RETURN_IF_ERROR(validate_attr_name(attr));
      if (attr == spec.pk_attr || attr == spec.sk_attr || attr == index.hash_attr ||
          attr == index.range_attr) {
        return invalid_argument("index " + index.name + " projects a key attribute, " + attr +
                                ": keys are always there");
      }
      if (!projected.insert(attr).second) {
        return invalid_argument("index " + index.name + " projects " + attr + " twice");
      }
    }
  }
  return {};
}

Status validate_key(const TableSpec& spec, const Key& key) {
  if (key.pk.empty()) return invalid_argument("partition key is empty");
  if (!is_utf8(key.pk) || !is_utf8(key.sk)) return invalid_argument("key is not valid UTF-8");
  if (key.pk.size() > kPartitionKeyBytesMax) {
    return invalid_argument("partition key longer than " + std::to_string(kPartitionKeyBytesMax) +
                            " bytes");
  }
  if (spec.sk_attr.empty()) {
    if (!key.sk.empty()) return invalid_argument("table " + spec.name + " has no sort key");
    return {};
  }
  if (key.sk.empty()) return invalid_argument("sort key is empty");
  if (key.sk.size() > kSortKeyBytesMax) {
    return invalid_argument("sort key longer than " + std::to_string(kSortKeyBytesMax) + " bytes");
  }
  return {};
}

Status validate_condition(const Condition& condition) {
  size_t nodes = 0;
  return validate_condition_at(condition, 0, nodes);
}

Status validate_update(const TableSpec& spec, const Update& update) {
  if (update.actions().size() > kUpdateActionsMax)
    return invalid_argument("update has too many actions");
  std::set<std::string_view> seen;
  for (const auto& a : update.actions()) {
    LEASEHOLD_RETURN_IF_ERROR(validate_attr_name(a.attr));
    if (is_key_attr(spec, a.attr))
      return invalid_argument("update may not change key attribute " + a.attr);
    if (!seen.insert(a.attr).second) return invalid_argument("update names " + a.attr + " twice");
    LEASEHOLD_RETURN_IF_ERROR(validate_string_value(a.attr, a.value));
    if (a.kind == UpdateAction::Kind::kAdd && type_of(a.value) != AttrType::kInt) {
      return invalid_argument("add(" + a.attr + ") needs an int delta");
    }
  }
  return {};
}

Status validate_item(const TableSpec& spec, const Item& item) {
  Key key;
  const auto* pk = get_string(item, spec.pk_attr);
  if (pk == nullptr) return invalid_argument("item lacks string key attribute " + spec.pk_attr);
  key.pk = *pk;
  if (!spec.sk_attr.empty()) {
    const auto* sk = get_string(item, spec.sk_attr);
    if (sk == nullptr) return invalid_argument("item lacks string key attribute " + spec.sk_attr);
    key.sk = *sk;
  }
  LEASEHOLD_RETURN_IF_ERROR(validate_key(spec, key));
  for (const auto& [name, value] : item) {
    LEASEHOLD_RETURN_IF_ERROR(validate_attr_name(name));
    LEASEHOLD_RETURN_IF_ERROR(validate_string_value(name, value));
  }
  if (item_bytes(item) > kItemBytesMax) return invalid_argument("item larger than 400 KiB");
  return {};
}

Status validate_index_attrs(const TableSpec& spec, const Item& item) {
  const auto check = [&](const IndexSpec& index, const std::string& attr, AttrType type) -> Status {
    const auto it = item.find(attr);
    if (it == item.end()) return {};
    const auto* s = std::get_if<std::string>(&it->second);
    if (type_of(it->second) != type || (s != nullptr && s->empty())) {
      return invalid_argument("attribute " + attr + " is a key of index " + index.name +
                              " and must be a" +
                              (type == AttrType::kInt ? "n int" : " non-empty string"));
    }
    return {};
  };
  for (const auto& index : spec.indexes) {
    LEASEHOLD_RETURN_IF_ERROR(check(index, index.hash_attr, AttrType::kString));
    LEASEHOLD_RETURN_IF_ERROR(check(index, index.range_attr, index.range_type));
  }
  return {};
}

Status validate_update_index_attrs(const TableSpec& spec, const Update& update) {
  Item set;
  for (const UpdateAction& a : update.actions()) {
    if (a.kind == UpdateAction::Kind::kSet) set.insert_or_assign(a.attr, a.value);
    // An add leaves an int: a string key cannot take one.
    if (a.kind == UpdateAction::Kind::kAdd) set.insert_or_assign(a.attr, int64_t{0});
  }
  return validate_index_attrs(spec, set);
}

Status validate_range(const KeyRange& range, AttrType type) {
  const auto check = [&](const Value& v) -> Status {
    if (type_of(v) != type) {
      return invalid_argument("key range compares a " + std::string(type_name(type_of(v))) +
                              " with a " + std::string(type_name(type)) + " key");
    }
    return {};
  };
  switch (range.kind) {
    case KeyRange::Kind::kAll:
      return {};
    case KeyRange::Kind::kBetween:
      LEASEHOLD_RETURN_IF_ERROR(check(range.lo));
      LEASEHOLD_RETURN_IF_ERROR(check(range.hi));
      if (compare_same_type(range.lo, range.hi) > 0)
        return invalid_argument("between: lower bound above upper bound");
      return {};
    case KeyRange::Kind::kBeginsWith:
      if (type != AttrType::kString) return invalid_argument("begins_with needs a string key");
      return check(range.lo);
    default:
      return check(range.lo);
  }
}

Status validate_query_options(const QueryOptions& options) {
  if (options.limit < 1 || options.limit > kQueryLimitMax) {
    return invalid_argument("query limit must be 1.." + std::to_string(kQueryLimitMax));
  }
  return {};
}

Status check_same_index(const IndexSpec& existing, const IndexSpec& requested) {
  if (existing.hash_attr == requested.hash_attr && existing.range_attr == requested.range_attr &&
      existing.range_type == requested.range_type) {
    return {};
  }
  return invalid_argument("index " + existing.name + " exists over other attributes (" +
                          existing.hash_attr + ", " + existing.range_attr + ")");
}

void project(const TableSpec& spec, const IndexSpec& index, Item& item) {
  if (index.projects_all) return;
  std::erase_if(item, [&](const auto& attr) {
    const std::string& a = attr.first;
    return a != spec.pk_attr && a != spec.sk_attr && a != index.hash_attr &&
           a != index.range_attr &&
           std::find(index.projected.begin(), index.projected.end(), a) == index.projected.end();
  });
}

Key key_of(const TableSpec& spec, const Item& item) {
  Key key{*get_string(item, spec.pk_attr), {}};
  if (!spec.sk_attr.empty()) key.sk = *get_string(item, spec.sk_attr);
  return key;
}

void set_key(const TableSpec& spec, const Key& key, Item& item) {
  item.insert_or_assign(spec.pk_attr, key.pk);
  if (!spec.sk_attr.empty()) item.insert_or_assign(spec.sk_attr, key.sk);
}

}  // namespace leasehold::store
