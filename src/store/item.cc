// Value helpers and the Condition / Update builders of leasehold/store.h.

#include "leasehold/store.h"

namespace leasehold {

std::string_view type_name(AttrType type) {
  switch (type) {
    case AttrType::kString:
      return "string";
    case AttrType::kInt:
      return "int";
    case AttrType::kBool:
      return "bool";
  }
  return "?";
}

std::string describe(const Value& v) {
  switch (type_of(v)) {
    case AttrType::kString:
      return "\"" + std::get<std::string>(v) + "\"";
    case AttrType::kInt:
      return std::to_string(std::get<int64_t>(v));
    case AttrType::kBool:
      return std::get<bool>(v) ? "true" : "false";
  }
  return "?";
}

const std::string* get_string(const Item& item, std::string_view attr) {
  const auto it = item.find(attr);
  return it == item.end() ? nullptr : std::get_if<std::string>(&it->second);
}

const int64_t* get_int(const Item& item, std::string_view attr) {
  const auto it = item.find(attr);
  return it == item.end() ? nullptr : std::get_if<int64_t>(&it->second);
}

std::string get_string_or(const Item& item, std::string_view attr, std::string_view fallback) {
  const std::string* v = get_string(item, attr);
  return v != nullptr ? *v : std::string(fallback);
}

int64_t get_int_or(const Item& item, std::string_view attr, int64_t fallback) {
  const int64_t* v = get_int(item, attr);
  return v != nullptr ? *v : fallback;
}

std::string_view op_symbol(CompareOp op) {
  switch (op) {
    case CompareOp::kEq:
      return "=";
    case CompareOp::kNe:
      return "<>";
    case CompareOp::kLt:
      return "<";
    case CompareOp::kLe:
      return "<=";
    case CompareOp::kGt:
      return ">";
    case CompareOp::kGe:
      return ">=";
  }
  return "?";
}

std::string Condition::to_string() const {
  switch (kind) {
    case Kind::kTrue:
      return "true";
    case Kind::kExists:
      return "exists(" + attr + ")";
    case Kind::kNotExists:
      return "not_exists(" + attr + ")";
    case Kind::kCompare:
      return attr + " " + std::string(op_symbol(op)) + " " + describe(value);
    case Kind::kNot:
      return "not (" + children.at(0).to_string() + ")";
    case Kind::kAnd:
    case Kind::kOr: {
      std::string out = "(";
      for (size_t i = 0; i < children.size(); ++i) {
        if (i) out += kind == Kind::kAnd ? " and " : " or ";
        out += children[i].to_string();
      }
      return out + ")";
    }
  }
  return "?";
}

namespace cond {
Condition exists(std::string attr) {
  Condition c;
  c.kind = Condition::Kind::kExists;
  c.attr = std::move(attr);
  return c;
}
Condition not_exists(std::string attr) {
  Condition c;
  c.kind = Condition::Kind::kNotExists;
  c.attr = std::move(attr);
  return c;
}
Condition compare(std::string attr, CompareOp op, Value v) {
  Condition c;
  c.kind = Condition::Kind::kCompare;
  c.attr = std::move(attr);
  c.op = op;
  c.value = std::move(v);
  return c;
}
}  // namespace cond

namespace {
Condition combine(Condition::Kind kind, Condition a, Condition b) {
  Condition c;
  c.kind = kind;
  for (Condition* part : {&a, &b}) {
    // Flatten (x and y) and z into one node: shallower trees, shorter SQL.
    if (part->kind == kind) {
      for (auto& child : part->children) c.children.push_back(std::move(child));
    } else {
      c.children.push_back(std::move(*part));
    }
  }
  return c;
}
}  // namespace

Condition operator&&(Condition a, Condition b) {
  if (a.is_true()) return b;
  if (b.is_true()) return a;
  return combine(Condition::Kind::kAnd, std::move(a), std::move(b));
}

Condition operator||(Condition a, Condition b) {
  if (a.is_true() || b.is_true()) return Condition();
  return combine(Condition::Kind::kOr, std::move(a), std::move(b));
}

Condition operator!(Condition a) {
  Condition c;
  c.kind = Condition::Kind::kNot;
  c.children.push_back(std::move(a));
  return c;
}

Update& Update::set(std::string attr, Value v) {
  actions_.push_back({UpdateAction::Kind::kSet, std::move(attr), std::move(v)});
  return *this;
}
Update& Update::set_if_absent(std::string attr, Value v) {
  actions_.push_back({UpdateAction::Kind::kSetIfAbsent, std::move(attr), std::move(v)});
  return *this;
}
Update& Update::add(std::string attr, int64_t delta) {
  actions_.push_back({UpdateAction::Kind::kAdd, std::move(attr), Value(delta)});
  return *this;
}
Update& Update::remove(std::string attr) {
  actions_.push_back({UpdateAction::Kind::kRemove, std::move(attr), Value()});
  return *this;
}
Update& Update::append(const Update& other) {
  actions_.insert(actions_.end(), other.actions_.begin(), other.actions_.end());
  return *this;
}

std::string Update::to_string() const {
  std::string out;
  for (const auto& a : actions_) {
    if (!out.empty()) out += ", ";
    switch (a.kind) {
      case UpdateAction::Kind::kSet:
        out += "set(" + a.attr + ", " + describe(a.value) + ")";
        break;
      case UpdateAction::Kind::kSetIfAbsent:
        out += "set_if_absent(" + a.attr + ", " + describe(a.value) + ")";
        break;
      case UpdateAction::Kind::kAdd:
        out += "add(" + a.attr + ", " + describe(a.value) + ")";
        break;
      case UpdateAction::Kind::kRemove:
        out += "remove(" + a.attr + ")";
        break;
    }
  }
  return out;
}

// The writes go one by one, unbounded: a backend whose calls can block
// overrides this and honours `timeout`.
std::vector<Result<Item>> ItemStore::update_each(std::string_view table,
                                                 std::span<const UpdateRequest> requests,
                                                 Duration /*timeout*/) {
  std::vector<Result<Item>> results;
  results.reserve(requests.size());
  for (const auto& r : requests) results.push_back(update(table, r.key, r.update, r.condition));
  return results;
}

}  // namespace leasehold
