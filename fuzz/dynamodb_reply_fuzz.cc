// DynamoDB's JSON answers (store/dynamodb/wire.h): interpret_reply() on
// every reply, the items of GetItem, Query and Scan answers, DescribeTable's
// table, and the query cursors callers hand back.
//
// The first byte picks the HTTP status; the rest is the body.
// Properties: a 200 taken is kAnswered and anything else is refused; a
// refusal's message stays bounded (DynamoDB's message is cut, and so must
// be the rest); an item decoded, encoded again (as a tree and as text),
// decodes to itself; a cursor taken has the shape asked for and decodes.
#include <cstdint>
#include <string>
#include <string_view>

#include "check.h"
#include "store/dynamodb/wire.h"

namespace {

namespace json = boost::json;
namespace ddb = leasehold::store::dynamodb;
using leasehold::Item;
using leasehold::fuzz::escaped;

constexpr int kStatuses[] = {200, 400, 403, 404, 413, 500, 502, 503};
// A Status's message about a reply: the operation, the exception's name,
// DynamoDB's message cut to kErrorMessageBytesMax and a note.
constexpr size_t kStatusMessageBytesMax = 1024;

void check_item(const json::object& object) {
  const leasehold::Result<Item> item = ddb::decode_item(object);
  if (!item.ok()) return;
  const json::object encoded = ddb::encode_item(*item);
  const leasehold::Result<Item> again = ddb::decode_item(encoded);
  FUZZ_CHECK(again.ok() && *again == *item,
             "an item encoded again reads back otherwise: " + escaped(json::serialize(encoded)));
  for (const auto& [name, value] : *item) {
    std::string text;
    ddb::append_value_json(value, text);
    json::error_code ec;
    const json::value parsed = json::parse(text, ec);
    FUZZ_CHECK(!ec && parsed == json::value(ddb::encode_value(value)),
               "append_value_json of " + escaped(name) + " wrote " + escaped(text));
  }
}

void check_table(const json::object& table) {
  const leasehold::TableSpec spec = ddb::spec_from_description("t", table);
  (void)ddb::is_active(table, {"by_kind", "by_owner"});
  (void)ddb::needs_stream(spec, table, "t");
  (void)ddb::attribute_definitions(spec);
}

void check_cursor(const std::string& text) {
  leasehold::TableSpec spec;
  spec.pk_attr = "pk";
  spec.sk_attr = "sk";
  const ddb::CursorShape shape = ddb::table_cursor_shape(spec);
  const auto cursor = ddb::decode_cursor(text, shape);
  if (!cursor.ok()) return;
  FUZZ_CHECK(cursor->size() == 2 && cursor->contains("pk") && cursor->contains("sk"),
             "a cursor of another shape taken: " + escaped(text));
  FUZZ_CHECK(ddb::decode_item(*cursor).ok(), "a cursor taken does not decode: " + escaped(text));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int status = kStatuses[data[0] % std::size(kStatuses)];
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  ddb::Verdict verdict{};
  ddb::ErrorDetail detail;
  const leasehold::Result<json::object> reply =
      ddb::interpret_reply("GetItem", status, body, &verdict, {}, &detail);
  if (!reply.ok()) {
    FUZZ_CHECK(status != 200 || verdict == ddb::Verdict::kUnrecognised, "a 200 refused");
    const std::string& message = reply.status().message();
    FUZZ_CHECK(message.size() <= kStatusMessageBytesMax,
               "a refusal's message of " + std::to_string(message.size()) + " bytes");
    check_cursor(std::string(body));
    return 0;
  }
  FUZZ_CHECK(status == 200 && verdict == ddb::Verdict::kAnswered,
             "HTTP " + std::to_string(status) + " taken as an answer");
  if (const json::object* item = ddb::object_field(*reply, "Item")) check_item(*item);
  if (const json::array* items = ddb::array_field(*reply, "Items")) {
    for (const json::value& v : *items) {
      if (v.is_object()) check_item(v.get_object());
    }
  }
  if (const json::object* key = ddb::object_field(*reply, "LastEvaluatedKey")) check_item(*key);
  if (const json::object* table = ddb::object_field(*reply, "Table")) check_table(*table);
  return 0;
}
