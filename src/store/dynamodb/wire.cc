#include "store/dynamodb/wire.h"

#include <charconv>

namespace leasehold::store::dynamodb {
namespace {

Status unsupported(std::string_view attr, std::string_view why) {
  return internal_error("attribute " + std::string(attr) + " " + std::string(why) +
                        " (leasehold stores strings, integers and booleans)");
}

}  // namespace

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
    ASSIGN_OR_RETURN(Value v, decode_value(name, value));
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
  const auto it = name_of_.find(attr);
  if (it != name_of_.end()) {
    out += it->second;
    return;
  }
  std::string placeholder = "#n" + std::to_string(name_of_.size());
  out += placeholder;
  names_.emplace(placeholder, attr);
  name_of_.emplace(attr, std::move(placeholder));
}

void ExpressionBuilder::append_value(const Value& v, std::string& out) {
  std::string placeholder = ":v" + std::to_string(values_.size());
  out += placeholder;
  values_.emplace(std::move(placeholder), encode_value(v, values_.storage()));
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
  const auto append = [](std::string& clause, const std::string& part) {
    clause += clause.empty() ? part : ", " + part;
  };
  for (const auto& a : update.actions()) {
    const std::string n = name(a.attr);
    switch (a.kind) {
      case UpdateAction::Kind::kSet:
        append(set, n + " = " + value(a.value));
        break;
      case UpdateAction::Kind::kSetIfAbsent:
        append(set, n + " = if_not_exists(" + n + ", " + value(a.value) + ")");
        break;
      case UpdateAction::Kind::kAdd:
        append(add, n + " " + value(a.value));
        break;
      case UpdateAction::Kind::kRemove:
        append(remove, n);
        break;
    }
  }
  std::string out;
  for (const auto& [keyword, clause] :
       {std::pair<const char*, std::string*>{"SET ", &set}, {"ADD ", &add}, {"REMOVE ", &remove}}) {
    if (clause->empty()) continue;
    if (!out.empty()) out += " ";
    out += keyword + *clause;
  }
  return out;
}

}  // namespace leasehold::store::dynamodb
