// DynamoDB's JSON for values, items, keys, expressions, key ranges and
// cursors. Pure; see wire.h.
#include "store/dynamodb/wire.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include "store/item_json.h"

namespace leasehold::store::dynamodb {
namespace {

namespace json = boost::json;

Status unsupported(std::string_view attr, std::string_view why) {
  return internal_error("attribute " + std::string(attr) + " " + std::string(why) +
                        " (leasehold stores strings, integers and booleans)");
}

// DynamoDB refuses `<` and friends on a BOOL operand, where the item store
// says they are false.
bool is_bool_inequality(const Condition& c) {
  return c.kind == Condition::Kind::kCompare && type_of(c.value) == AttrType::kBool &&
         c.op != CompareOp::kEq && c.op != CompareOp::kNe;
}

bool has_bool_inequality(const Condition& c) {
  if (is_bool_inequality(c)) return true;
  return std::any_of(c.children.begin(), c.children.end(), has_bool_inequality);
}

Condition rewrite_bool_inequalities(const Condition& c, const std::string& pk_attr) {
  if (is_bool_inequality(c)) return cond::exists(pk_attr) && cond::not_exists(pk_attr);
  Condition out;
  out.kind = c.kind;
  out.attr = c.attr;
  out.op = c.op;
  out.value = c.value;
  out.children.reserve(c.children.size());
  for (const auto& child : c.children) {
    out.children.push_back(rewrite_bool_inequalities(child, pk_attr));
  }
  return out;
}

bool empty_string(const Value& v) {
  const auto* s = std::get_if<std::string>(&v);
  return s != nullptr && s->empty();
}

}  // namespace

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

bool valid_table_name(std::string_view name) {
  return name.size() >= 3 && name.size() <= kTableNameBytesMax &&
         std::all_of(name.begin(), name.end(), is_name_char);
}

std::string string_field(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->get_string()) : std::string();
}

const json::array* array_field(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_array() ? &v->get_array() : nullptr;
}

const json::object* object_field(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v && v->is_object() ? &v->get_object() : nullptr;
}

boost::json::object encode_value(const Value& value, boost::json::storage_ptr storage) {
  boost::json::object out(std::move(storage));
  switch (type_of(value)) {
    case AttrType::kString:
      out.emplace("S", std::get<std::string>(value));
      break;
    case AttrType::kInt: {
      char digits[24];  // an int64 in decimal, with its sign
      const auto end = std::to_chars(digits, digits + sizeof digits, std::get<int64_t>(value)).ptr;
      out.emplace("N", std::string_view(digits, static_cast<size_t>(end - digits)));
      break;
    }
    case AttrType::kBool:
      out.emplace("BOOL", std::get<bool>(value));
      break;
  }
  return out;
}

Result<Value> decode_value(std::string_view attr, const boost::json::value& value) {
  const auto* object = value.if_object();
  if (object == nullptr || object->size() != 1)
    return unsupported(attr, "is not an AttributeValue");
  const auto& [type, body] = *object->begin();
  if (type == "S" && body.is_string()) return Value(std::string(body.get_string()));
  if (type == "BOOL" && body.is_bool()) return Value(body.get_bool());
  if (type == "N" && body.is_string()) {
    const std::string_view text = body.get_string();
    int64_t n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || end != text.data() + text.size()) {
      return unsupported(attr, "is a number that is not a 64-bit integer");
    }
    return Value(n);
  }
  return unsupported(attr, "has DynamoDB type " + std::string(type));
}

boost::json::object encode_item(const Item& item) {
  boost::json::object out;
  out.reserve(item.size());
  for (const auto& [name, value] : item) out.emplace(name, encode_value(value));
  return out;
}

Result<Item> decode_item(const boost::json::object& item) {
  Item out;
  for (const auto& [name, value] : item) {
    LEASEHOLD_ASSIGN_OR_RETURN(Value v, decode_value(name, value));
    out.emplace(std::string(name), std::move(v));
  }
  return out;
}

boost::json::object encode_key(const TableSpec& spec, const Key& key,
                               boost::json::storage_ptr storage) {
  boost::json::object out(storage);
  out.emplace(spec.pk_attr, encode_value(key.pk, storage));
  if (!spec.sk_attr.empty()) out.emplace(spec.sk_attr, encode_value(key.sk, storage));
  return out;
}

void append_value_json(const Value& value, std::string& out) {
  switch (type_of(value)) {
    case AttrType::kString:
      out += R"({"S":)";
      append_json_string(std::get<std::string>(value), out);
      out += '}';
      break;
    case AttrType::kInt:
      out += R"({"N":")";
      out += std::to_string(std::get<int64_t>(value));
      out += R"("})";
      break;
    case AttrType::kBool:
      out += std::get<bool>(value) ? R"({"BOOL":true})" : R"({"BOOL":false})";
      break;
  }
}

void append_key_json(const TableSpec& spec, const Key& key, std::string& out) {
  out += '{';
  append_json_string(spec.pk_attr, out);
  out += ':';
  append_value_json(key.pk, out);
  if (!spec.sk_attr.empty()) {
    out += ',';
    append_json_string(spec.sk_attr, out);
    out += ':';
    append_value_json(key.sk, out);
  }
  out += '}';
}

std::string ExpressionBuilder::name(const std::string& attr) {
  std::string out;
  append_name(attr, out);
  return out;
}

std::string ExpressionBuilder::value(const Value& v) {
  std::string out;
  append_value(v, out);
  return out;
}

void ExpressionBuilder::append_name(const std::string& attr, std::string& out) {
  size_t i = std::find(names_.begin(), names_.end(), attr) - names_.begin();
  if (i == names_.size()) names_.push_back(attr);
  out += "#n";
  out += std::to_string(i);
}

void ExpressionBuilder::append_value(const Value& v, std::string& out) {
  out += ":v";
  out += std::to_string(values_.size());
  values_.push_back(v);
}

json::object ExpressionBuilder::names() const {
  json::object out;
  for (size_t i = 0; i < names_.size(); ++i) out.emplace("#n" + std::to_string(i), names_[i]);
  return out;
}

json::object ExpressionBuilder::values() const {
  json::object out;
  for (size_t i = 0; i < values_.size(); ++i) {
    out.emplace(":v" + std::to_string(i), encode_value(values_[i]));
  }
  return out;
}

void ExpressionBuilder::append_placeholders_json(std::string& body) const {
  for (size_t i = 0; i < names_.size(); ++i) {
    body += i == 0 ? R"(,"ExpressionAttributeNames":{"#n)" : R"(,"#n)";
    body += std::to_string(i);
    body += R"(":)";
    append_json_string(names_[i], body);
  }
  if (!names_.empty()) body += '}';
  for (size_t i = 0; i < values_.size(); ++i) {
    body += i == 0 ? R"(,"ExpressionAttributeValues":{":v)" : R"(,":v)";
    body += std::to_string(i);
    body += R"(":)";
    append_value_json(values_[i], body);
  }
  if (!values_.empty()) body += '}';
}

std::string ExpressionBuilder::condition(const Condition& c) {
  std::string out;
  render(c, nullptr, out);
  return out;
}

std::string ExpressionBuilder::condition_term(const Condition& c) {
  Condition conjunction;
  conjunction.kind = Condition::Kind::kAnd;
  std::string out;
  render(c, &conjunction, out);
  return out;
}

// DynamoDB refuses "redundant parentheses" (around the whole expression, or
// around a term that needs none), so a term is parenthesised only where
// precedence or the grammar demands it: an AND or OR inside another
// operator, and any operand of NOT but a single comparison or function.
void ExpressionBuilder::render(const Condition& c, const Condition* parent, std::string& out) {
  switch (c.kind) {
    case Condition::Kind::kTrue:
      return;
    case Condition::Kind::kExists:
    case Condition::Kind::kNotExists:
      out += c.kind == Condition::Kind::kExists ? "attribute_exists(" : "attribute_not_exists(";
      append_name(c.attr, out);
      out += ')';
      return;
    case Condition::Kind::kCompare:
      append_name(c.attr, out);
      out += ' ';
      out += op_symbol(c.op);
      out += ' ';
      append_value(c.value, out);
      return;
    case Condition::Kind::kNot: {
      // The grammar wants a parenthesised operand after NOT unless it is a
      // single comparison or function.
      const Condition& operand = c.children.at(0);
      const bool simple = operand.kind == Condition::Kind::kCompare ||
                          operand.kind == Condition::Kind::kExists ||
                          operand.kind == Condition::Kind::kNotExists;
      out += simple ? "NOT " : "NOT (";
      render(operand, simple ? &c : nullptr, out);
      if (!simple) out += ')';
      return;
    }
    case Condition::Kind::kAnd:
    case Condition::Kind::kOr: {
      const bool nested = parent != nullptr && parent->kind != c.kind;
      if (nested) out += '(';
      for (size_t i = 0; i < c.children.size(); ++i) {
        if (i > 0) out += c.kind == Condition::Kind::kAnd ? " AND " : " OR ";
        render(c.children[i], &c, out);
      }
      if (nested) out += ')';
      return;
    }
  }
}

std::string ExpressionBuilder::update(const Update& update) {
  std::string set, add, remove;
  // Each action is appended to its clause, ", " between two.
  const auto next = [](std::string& clause) -> std::string& {
    if (!clause.empty()) clause += ", ";
    return clause;
  };
  for (const auto& a : update.actions()) {
    switch (a.kind) {
      case UpdateAction::Kind::kSet:
        append_name(a.attr, next(set));
        set += " = ";
        append_value(a.value, set);
        break;
      case UpdateAction::Kind::kSetIfAbsent:
        append_name(a.attr, next(set));
        set += " = if_not_exists(";
        append_name(a.attr, set);
        set += ", ";
        append_value(a.value, set);
        set += ')';
        break;
      case UpdateAction::Kind::kAdd:
        append_name(a.attr, next(add));
        add += ' ';
        append_value(a.value, add);
        break;
      case UpdateAction::Kind::kRemove:
        append_name(a.attr, next(remove));
        break;
    }
  }
  std::string out;
  for (const auto& [keyword, clause] : {std::pair<std::string_view, std::string*>{"SET ", &set},
                                        {"ADD ", &add},
                                        {"REMOVE ", &remove}}) {
    if (clause->empty()) continue;
    if (!out.empty()) out += ' ';
    out += keyword;
    out += *clause;
  }
  return out;
}

const Condition& portable(const Condition& c, const std::string& pk_attr, Condition& storage) {
  if (!has_bool_inequality(c)) return c;
  storage = rewrite_bool_inequalities(c, pk_attr);
  return storage;
}

std::string overflow_guards(const Update& update, ExpressionBuilder& b) {
  std::string out;
  for (const auto& a : update.actions()) {
    if (a.kind != UpdateAction::Kind::kAdd) continue;
    const int64_t delta = std::get<int64_t>(a.value);
    if (delta == 0) continue;
    const int64_t limit = delta > 0 ? std::numeric_limits<int64_t>::max() - delta
                                    : std::numeric_limits<int64_t>::min() - delta;
    const std::string n = b.name(a.attr);
    out += out.empty() ? "" : " AND ";
    out += "(attribute_not_exists(" + n + ") OR NOT attribute_type(" + n + ", " +
           b.value(std::string("N")) + ") OR " + n + (delta > 0 ? " <= " : " >= ") +
           b.value(limit) + ")";
  }
  return out;
}

void add_placeholders(json::object& body, const ExpressionBuilder& b) {
  json::object names = b.names();
  json::object values = b.values();
  if (!names.empty()) body["ExpressionAttributeNames"] = std::move(names);
  if (!values.empty()) body["ExpressionAttributeValues"] = std::move(values);
}

RangeText range_text(ExpressionBuilder& b, const std::string& attr, const KeyRange& r) {
  using K = KeyRange::Kind;
  if (r.kind == K::kAll) return {};
  if (empty_string(r.lo)) {
    if (r.kind == K::kGt || r.kind == K::kGe || r.kind == K::kBeginsWith) return {};
    if (r.kind == K::kBetween && !empty_string(r.hi))
      return range_text(b, attr, KeyRange::le(r.hi));
    return {true, ""};
  }
  const std::string n = b.name(attr);
  switch (r.kind) {
    case K::kEq:
      return {false, n + " = " + b.value(r.lo)};
    case K::kLt:
      return {false, n + " < " + b.value(r.lo)};
    case K::kLe:
      return {false, n + " <= " + b.value(r.lo)};
    case K::kGt:
      return {false, n + " > " + b.value(r.lo)};
    case K::kGe:
      return {false, n + " >= " + b.value(r.lo)};
    case K::kBetween: {
      const std::string lo = b.value(r.lo);
      return {false, n + " BETWEEN " + lo + " AND " + b.value(r.hi)};
    }
    case K::kBeginsWith:
      return {false, "begins_with(" + n + ", " + b.value(r.lo) + ")"};
    case K::kAll:
      break;
  }
  return {};
}

std::optional<std::string> key_condition(ExpressionBuilder& b, const std::string& hash_attr,
                                         std::string_view hash, const std::string& range_attr,
                                         const KeyRange& range) {
  std::string expression = b.name(hash_attr) + " = " + b.value(std::string(hash));
  const RangeText r = range_text(b, range_attr, range);
  if (r.none) return std::nullopt;
  if (!r.text.empty()) expression += " AND " + r.text;
  return expression;
}

CursorShape table_cursor_shape(const TableSpec& spec) {
  CursorShape shape{{spec.pk_attr, AttrType::kString}};
  if (!spec.sk_attr.empty()) shape.emplace(spec.sk_attr, AttrType::kString);
  return shape;
}

Result<json::object> decode_cursor(const std::string& cursor, const CursorShape& shape) {
  const Status malformed = invalid_argument("malformed query cursor");
  Result<Item> item = store::decode_item(cursor);
  if (!item.ok() || item->size() != shape.size()) return malformed;
  for (const auto& [attr, type] : shape) {
    const auto it = item->find(attr);
    if (it == item->end() || type_of(it->second) != type || empty_string(it->second)) {
      return malformed;
    }
  }
  return encode_item(*item);
}

}  // namespace leasehold::store::dynamodb
