// The store's item JSON (store/item_json.h): what the SQLite backend reads
// back as every item, and what query cursors carry; and the table spec it
// keeps beside each table as JSON (spec_from_json, store/sqlite/
// sqlite_schema.h), whose names go into SQL.
//
// Properties: decode_item() takes exactly what boost::json::parse() reads
// as an object of strings, booleans and integers that fit int64, and reads
// the same item from it (a name given twice keeps its last value, as
// there, but for an earlier value it cannot hold, which is refused); an item decoded, encoded
// again, decodes to itself, and encodes to the same text. A table spec
// taken passes the checks a new table's does (validate_table_spec,
// validate_sql_names: what goes into SQL is as safe as when it was first
// written), is written again by spec_to_json() to text that reads back as
// the same spec, and makes its DDL.
#include <algorithm>
#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "check.h"
#include "store/eval.h"
#include "store/item_json.h"
#include "store/sqlite/sqlite_schema.h"

namespace {

namespace json = boost::json;
using leasehold::Item;
using leasehold::Value;
using leasehold::fuzz::escaped;

// The item boost::json::parse() reads from `text`; nullopt where
// decode_item() must refuse it.
std::optional<Item> reference_item(std::string_view text) {
  json::error_code ec;
  const json::value parsed = json::parse(text, ec);
  if (ec || !parsed.is_object()) return std::nullopt;
  Item item;
  for (const auto& [key, value] : parsed.get_object()) {
    Value v;
    if (value.is_string()) {
      v = std::string(value.get_string());
    } else if (value.is_bool()) {
      v = value.get_bool();
    } else if (value.is_int64()) {
      v = value.get_int64();
    } else if (value.is_uint64() && value.get_uint64() <= static_cast<uint64_t>(INT64_MAX)) {
      v = static_cast<int64_t>(value.get_uint64());
    } else {
      return std::nullopt;
    }
    item.insert_or_assign(std::string(key), std::move(v));
  }
  return item;
}

std::string show(const Item& item) { return escaped(leasehold::store::encode_item(item)); }

bool same(const leasehold::IndexSpec& a, const leasehold::IndexSpec& b) {
  return a.name == b.name && a.hash_attr == b.hash_attr && a.range_attr == b.range_attr &&
         a.range_type == b.range_type && a.projects_all == b.projects_all &&
         a.projected == b.projected;
}

bool same(const leasehold::TableSpec& a, const leasehold::TableSpec& b) {
  return a.name == b.name && a.pk_attr == b.pk_attr && a.sk_attr == b.sk_attr &&
         std::ranges::equal(a.indexes, b.indexes,
                            [](const auto& x, const auto& y) { return same(x, y); });
}

void check_table_spec(std::string_view text) {
  namespace sqlite = leasehold::store::sqlite;
  const leasehold::Result<leasehold::TableSpec> spec = sqlite::spec_from_json(text);
  if (!spec.ok()) {
    FUZZ_CHECK(spec.status().code() == leasehold::Code::kInternal,
               "a stored spec refused as " + spec.status().to_string());
    return;
  }
  FUZZ_CHECK(
      leasehold::store::validate_table_spec(*spec).ok() && sqlite::validate_sql_names(*spec).ok(),
      "spec_from_json took a spec a new table could not have: " + escaped(text));
  const std::string written = sqlite::spec_to_json(*spec);
  const leasehold::Result<leasehold::TableSpec> again = sqlite::spec_from_json(written);
  FUZZ_CHECK(again.ok() && same(*again, *spec),
             "spec_to_json's text does not read back: " + escaped(written));
  FUZZ_CHECK_EQ(sqlite::spec_to_json(*again), written, "the spec written twice");
  (void)sqlite::create_items_ddl(*spec);
  for (size_t i = 0; i < spec->indexes.size(); ++i) (void)sqlite::add_index_ddl(*spec, i);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  check_table_spec(text);
  const leasehold::Result<Item> decoded = leasehold::store::decode_item(text);
  const std::optional<Item> expected = reference_item(text);
  // One difference is by design: a name given twice whose earlier value is
  // unsupported (encode_item() writes each name once) is refused, where
  // boost::json::parse() keeps the last value. The error names it.
  constexpr std::string_view kUnsupported = "stored attribute ";
  if (!decoded.ok() && expected && decoded.status().message().starts_with(kUnsupported)) {
    std::string_view name = decoded.status().message();
    name.remove_prefix(kUnsupported.size());
    name.remove_suffix(std::string_view(" has an unsupported type").size());
    FUZZ_CHECK(expected->contains(name),
               "decode_item refused a value boost::json::parse took: " + escaped(text));
    return 0;
  }
  FUZZ_CHECK(decoded.ok() == expected.has_value(),
             std::string(decoded.ok() ? "decode_item took " : "decode_item refused ") +
                 escaped(text) + (decoded.ok() ? "" : " (" + decoded.status().to_string() + ")"));
  if (!decoded.ok()) return 0;
  FUZZ_CHECK(*decoded == *expected,
             "decode_item read " + show(*decoded) + ", boost::json " + show(*expected));
  const std::string encoded = leasehold::store::encode_item(*decoded);
  const leasehold::Result<Item> again = leasehold::store::decode_item(encoded);
  FUZZ_CHECK(again.ok() && *again == *decoded,
             "encode_item's text does not read back: " + escaped(encoded));
  FUZZ_CHECK_EQ(leasehold::store::encode_item(*again), encoded, "the item encoded twice");
  return 0;
}
