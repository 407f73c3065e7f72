// DynamoDB's JSON wire format for the item store's values, items, conditions
// and updates.
//
// Values map one to one: string <-> {"S": ...}, int64 <-> {"N": "..."},
// bool <-> {"BOOL": ...}. An item read back with any other type (a number
// with a fraction, a list, a map, a set, NULL), as another program might
// write, is refused with kInternal naming the attribute, never misread.
//
// Conditions and updates are rendered as ConditionExpression and
// UpdateExpression text that refers to attributes and values only through
// placeholders (#n0, :v0): no attribute name or value is ever spliced into
// an expression, so none can change its meaning.
//
// Internal to the DynamoDB backend (it includes Boost.JSON). Pure functions;
// an ExpressionBuilder is used by one request on one thread.
#pragma once

#include <boost/json.hpp>
#include <map>
#include <string>

#include "leasehold/store.h"

namespace leasehold::store::dynamodb {

// The encoders allocate from `storage` (the default heap unless given): a
// caller that serialises the result at once passes a stack arena.
boost::json::object encode_value(const Value& value, boost::json::storage_ptr storage = {});
// `attr` names the attribute in error messages.
Result<Value> decode_value(std::string_view attr, const boost::json::value& value);

boost::json::object encode_item(const Item& item);
Result<Item> decode_item(const boost::json::object& item);

// {"<pk_attr>": {"S": pk}[, "<sk_attr>": {"S": sk}]}
boost::json::object encode_key(const TableSpec& spec, const Key& key,
                               boost::json::storage_ptr storage = {});

// Collects the placeholders of one request's expressions.
class ExpressionBuilder {
 public:
  // The placeholders' JSON lives in `storage` (see encode_value).
  explicit ExpressionBuilder(boost::json::storage_ptr storage = {})
      : names_(storage), values_(storage) {}

  // "#n<i>"; the same attribute always gets the same placeholder.
  std::string name(const std::string& attr);
  // ":v<i>"; a new placeholder for every value.
  std::string value(const Value& v);

  // "" for an always-true condition (send no ConditionExpression then).
  std::string condition(const Condition& condition);
  // The same, to be one operand of an AND the caller writes (parenthesised
  // only if it is an OR).
  std::string condition_term(const Condition& condition);
  // "SET #n0 = :v0, #n1 = if_not_exists(#n1, :v1) ADD #n2 :v2 REMOVE #n3".
  // REQUIRES: !update.empty().
  std::string update(const Update& update);

  // ExpressionAttributeNames / ExpressionAttributeValues; omit when empty.
  const boost::json::object& names() const { return names_; }
  const boost::json::object& values() const { return values_; }
  // The same, moved out: the builder is done with them.
  boost::json::object take_names() { return std::move(names_); }
  boost::json::object take_values() { return std::move(values_); }

 private:
  // Appends to `out`: one string grows instead of one per term.
  void render(const Condition& condition, const Condition* parent, std::string& out);
  void append_name(const std::string& attr, std::string& out);
  void append_value(const Value& v, std::string& out);

  std::map<std::string, std::string, std::less<>> name_of_;
  boost::json::object names_;
  boost::json::object values_;
};

}  // namespace leasehold::store::dynamodb
