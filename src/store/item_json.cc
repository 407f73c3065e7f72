#include "store/item_json.h"

#include <boost/json.hpp>

namespace leasehold::store {

std::string encode_item(const Item& item) {
  boost::json::object object;
  object.reserve(item.size());
  for (const auto& [name, value] : item) {
    switch (type_of(value)) {
      case AttrType::kString:
        object.emplace(name, std::get<std::string>(value));
        break;
      case AttrType::kInt:
        object.emplace(name, std::get<int64_t>(value));
        break;
      case AttrType::kBool:
        object.emplace(name, std::get<bool>(value));
        break;
    }
  }
  return boost::json::serialize(object);
}

Result<Item> decode_item(std::string_view json) {
  // The parsed tree lives only until it is copied into the Item: a stack
  // buffer spares it a heap allocation per node (this is on every write).
  unsigned char buffer[4096];
  boost::json::monotonic_resource resource(buffer, sizeof buffer);
  boost::system::error_code ec;
  const boost::json::value parsed = boost::json::parse(json, ec, &resource);
  if (ec || !parsed.is_object()) return internal_error("stored item is not a JSON object");
  Item item;
  for (const auto& [name, v] : parsed.get_object()) {
    Value value;
    if (v.is_string()) {
      value = std::string(v.get_string());
    } else if (v.is_int64()) {
      value = v.get_int64();
    } else if (v.is_uint64() && v.get_uint64() <= static_cast<uint64_t>(INT64_MAX)) {
      value = static_cast<int64_t>(v.get_uint64());
    } else if (v.is_bool()) {
      value = v.get_bool();
    } else {
      return internal_error("stored attribute " + std::string(name) + " has an unsupported type");
    }
    item.emplace(std::string(name), std::move(value));
  }
  return item;
}

}  // namespace leasehold::store
