// Tests for the JSON form of items: what encode_item() writes decodes back to
// the same item, and decode_item() refuses whatever encode_item() would not
// write, naming the attribute when one is at fault.
#include "store/item_json.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "leasehold/store.h"

namespace leasehold::store {
namespace {

TEST(ItemJson, AnItemComesBackAsItWasEncoded) {
  const Item item{{"pk", std::string("USER#ann")},
                  {"display_name", std::string("Ann \"the\" \\ \xc3\xa9 \n")},
                  {"admin", true},
                  {"held", false},
                  {"epoch", int64_t{INT64_MAX}},
                  {"low", int64_t{INT64_MIN}},
                  {"zero", int64_t{0}},
                  {"", std::string()}};
  const std::string json = encode_item(item);
  const Result<Item> decoded = decode_item(json);
  ASSERT_TRUE(decoded.ok()) << decoded.status().to_string();
  EXPECT_EQ(*decoded, item);
  EXPECT_EQ(decode_item("{}").value(), Item{});
}

TEST(ItemJson, EscapesAndKeysOutOfOrderDecode) {
  const Result<Item> decoded = decode_item(R"( {"b":"\u00e9\n\"x\"","a":1,"b2":true} )");
  ASSERT_TRUE(decoded.ok()) << decoded.status().to_string();
  const Item expected{{"a", int64_t{1}}, {"b", std::string("\xc3\xa9\n\"x\"")}, {"b2", true}};
  EXPECT_EQ(*decoded, expected);
  // A name given twice keeps its last value.
  EXPECT_EQ(decode_item(R"({"a":1,"b":0,"a":2})").value(),
            (Item{{"a", int64_t{2}}, {"b", int64_t{0}}}));
}

TEST(ItemJson, AnAttributeOfAnotherTypeIsRefusedByName) {
  for (const char* json :
       {R"({"pk":"a","n":1.5})", R"({"pk":"a","n":null})", R"({"pk":"a","n":[1]})",
        R"({"pk":"a","n":{"x":1}})", R"({"pk":"a","n":18446744073709551615})"}) {
    const Result<Item> decoded = decode_item(json);
    ASSERT_FALSE(decoded.ok()) << json;
    EXPECT_EQ(decoded.status().code(), Code::kInternal) << json;
    EXPECT_EQ(decoded.status().message(), "stored attribute n has an unsupported type") << json;
  }
}

TEST(ItemJson, WhatIsNotOneObjectIsRefused) {
  for (const char* json : {"", "5", "\"pk\"", "[]", "[{\"pk\":\"a\"}]", "{\"pk\":\"a\"",
                           "{\"pk\":}", "{\"pk\":\"a\"} {}", "{\"pk\":\"a\"}x", "null"}) {
    const Result<Item> decoded = decode_item(json);
    ASSERT_FALSE(decoded.ok()) << json;
    EXPECT_EQ(decoded.status().code(), Code::kInternal) << json;
    EXPECT_EQ(decoded.status().message(), "stored item is not a JSON object") << json;
  }
}

}  // namespace
}  // namespace leasehold::store
