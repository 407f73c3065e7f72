#include "store/item_json.h"

#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>
#include <cstdint>
#include <optional>
#include <utility>

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

namespace {

// Builds an Item straight from the events of Boost.JSON's parser (its SAX
// interface), with none of the tree boost::json::parse would build first
// and the Item would then be copied from: every item a SQLite read returns
// is decoded here. Anything encode_item() would not write stops the parse:
// a document that is not one object (`not_object`), or an attribute that is
// not a string, a bool or an integer that fits int64 (`unsupported`).
class ItemHandler {
 public:
  static constexpr size_t max_object_size = static_cast<size_t>(-1);
  static constexpr size_t max_array_size = static_cast<size_t>(-1);
  static constexpr size_t max_key_size = static_cast<size_t>(-1);
  static constexpr size_t max_string_size = static_cast<size_t>(-1);
  using string_view = boost::json::string_view;
  using error_code = boost::system::error_code;

  Item item;
  std::optional<std::string> unsupported;  // the attribute that stopped the parse
  bool not_object = false;

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_object_begin(error_code& ec) {
    if (depth_ != 0) return refuse_value(ec);  // a nested object
    depth_ = 1;
    return true;
  }
  bool on_object_end(size_t, error_code&) {
    --depth_;
    return true;
  }
  bool on_array_begin(error_code& ec) { return refuse_value(ec); }
  bool on_array_end(size_t, error_code&) { return true; }
  bool on_key_part(string_view s, size_t, error_code&) {
    key_.append(s.data(), s.size());
    return true;
  }
  bool on_key(string_view s, size_t, error_code&) {
    key_.append(s.data(), s.size());
    return true;
  }
  bool on_string_part(string_view s, size_t, error_code&) {
    string_.append(s.data(), s.size());
    return true;
  }
  bool on_string(string_view s, size_t, error_code& ec) {
    string_.append(s.data(), s.size());
    return take(Value(std::exchange(string_, {})), ec);
  }
  bool on_number_part(string_view, error_code&) { return true; }
  bool on_int64(int64_t i, string_view, error_code& ec) { return take(Value(i), ec); }
  bool on_uint64(uint64_t u, string_view, error_code& ec) {
    if (u > static_cast<uint64_t>(INT64_MAX)) return refuse_value(ec);
    return take(Value(static_cast<int64_t>(u)), ec);
  }
  bool on_double(double, string_view, error_code& ec) { return refuse_value(ec); }
  bool on_bool(bool b, error_code& ec) { return take(Value(b), ec); }
  bool on_null(error_code& ec) { return refuse_value(ec); }
  bool on_comment_part(string_view, error_code&) { return true; }
  bool on_comment(string_view, error_code&) { return true; }

 private:
  // An attribute's value; encode_item() writes them in the Item's order, so
  // the end is the right place for each (and the hint makes that cheap). A
  // name seen twice keeps its last value, as boost::json::parse does.
  bool take(Value value, error_code& ec) {
    if (depth_ != 1) return fail(ec);
    if (!item.empty() && item.rbegin()->first < key_) {
      item.emplace_hint(item.end(), std::exchange(key_, {}), std::move(value));
    } else {
      item.insert_or_assign(std::exchange(key_, {}), std::move(value));
    }
    return true;
  }
  bool refuse_value(error_code& ec) {
    if (depth_ != 1) return fail(ec);
    unsupported = key_;
    ec = boost::json::error::syntax;
    return false;
  }
  bool fail(error_code& ec) {
    not_object = true;
    ec = boost::json::error::syntax;
    return false;
  }

  int depth_ = 0;
  std::string key_;
  std::string string_;
};

}  // namespace

Result<Item> decode_item(std::string_view json) {
  boost::json::basic_parser<ItemHandler> parser(boost::json::parse_options{});
  boost::system::error_code ec;
  const size_t used = parser.write_some(false, json.data(), json.size(), ec);
  ItemHandler& handler = parser.handler();
  if (handler.unsupported) {
    return internal_error("stored attribute " + *handler.unsupported + " has an unsupported type");
  }
  if (ec || used != json.size() || handler.not_object) {
    return internal_error("stored item is not a JSON object");
  }
  return std::move(handler.item);
}

}  // namespace leasehold::store
