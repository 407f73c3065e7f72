#include "store/dynamodb/wire.h"

#include <gtest/gtest.h>

namespace leasehold::store::dynamodb {
namespace {

TEST(Wire, ValuesRoundTripThroughAttributeValues) {
  for (const Value& v :
       {Value(std::string("")), Value(std::string("h\xc3\xa9llo \"q\"")), Value(int64_t{0}),
        Value(INT64_MIN), Value(INT64_MAX), Value(true), Value(false)}) {
    const boost::json::value wire = encode_value(v);
    auto back = decode_value("a", wire);
    ASSERT_TRUE(back.ok()) << back.status().to_string();
    EXPECT_EQ(*back, v);
  }
  EXPECT_EQ(boost::json::serialize(encode_value(int64_t{-42})), R"({"N":"-42"})");
  EXPECT_EQ(boost::json::serialize(encode_value(std::string("x"))), R"({"S":"x"})");
  EXPECT_EQ(boost::json::serialize(encode_value(true)), R"({"BOOL":true})");
}

TEST(Wire, OtherTypesAreRefusedNotMisread) {
  for (const char* wire : {R"({"N":"1.5"})", R"({"N":"1e3"})", R"({"N":"99999999999999999999"})",
                           R"({"NULL":true})", R"({"L":[]})", R"({"M":{}})", R"({"SS":["a"]})",
                           R"({"S":1})", R"("plain")", R"({"S":"a","N":"1"})"}) {
    const auto v = decode_value("attr", boost::json::parse(wire));
    ASSERT_FALSE(v.ok()) << wire;
    EXPECT_EQ(v.status().code(), Code::kInternal);
    EXPECT_NE(v.status().message().find("attr"), std::string::npos);
  }
}

TEST(Wire, KeysUseTheTablesAttributeNames) {
  const TableSpec fleet{"conns", "Pk", "", {}};
  EXPECT_EQ(boost::json::serialize(encode_key(fleet, {"CONN#1", ""})), R"({"Pk":{"S":"CONN#1"}})");
  const TableSpec sorted{"t", "p", "s", {}};
  EXPECT_EQ(boost::json::serialize(encode_key(sorted, {"a", "b"})),
            R"({"p":{"S":"a"},"s":{"S":"b"}})");
}

TEST(Wire, ConditionsUsePlaceholdersOnly) {
  ExpressionBuilder b;
  const std::string text = b.condition(
      (cond::not_exists("lease_owner") || cond::lt("lease_expires_at_ms", int64_t{5})) &&
      !cond::eq("a) OR (b", std::string(":v0")));
  EXPECT_EQ(text, "(attribute_not_exists(#n0) OR #n1 < :v0) AND NOT #n2 = :v1");
  EXPECT_EQ(boost::json::serialize(b.names()),
            R"({"#n0":"lease_owner","#n1":"lease_expires_at_ms","#n2":"a) OR (b"})");
  EXPECT_EQ(boost::json::serialize(b.values()), R"({":v0":{"N":"5"},":v1":{"S":":v0"}})");
  EXPECT_EQ(ExpressionBuilder().condition(Condition()), "");
  // No parentheses DynamoDB would call redundant: none around the whole
  // expression, none around terms that bind tighter anyway.
  ExpressionBuilder c;
  EXPECT_EQ(c.condition(cond::not_exists("a") || cond::lt("b", int64_t{1})),
            "attribute_not_exists(#n0) OR #n1 < :v0");
  EXPECT_EQ(c.condition(!(cond::exists("a") && cond::exists("b"))),
            "NOT (attribute_exists(#n0) AND attribute_exists(#n1))");
  EXPECT_EQ(c.condition_term(cond::exists("a") || cond::exists("b")),
            "(attribute_exists(#n0) OR attribute_exists(#n1))");
  EXPECT_EQ(c.condition_term(cond::exists("a")), "attribute_exists(#n0)");
  EXPECT_EQ(c.condition(!!cond::exists("a")), "NOT (NOT attribute_exists(#n0))");
}

TEST(Wire, UpdatesGroupActionsByClauseAndShareNamesWithConditions) {
  ExpressionBuilder b;
  const std::string cond = b.condition(cond::eq("lease_token", std::string("t")));
  const std::string text = b.update(Update()
                                        .set("lease_token", std::string("u"))
                                        .add("lease_epoch", 1)
                                        .set_if_absent("created", int64_t{7})
                                        .remove("lease_holder"));
  EXPECT_EQ(cond, "#n0 = :v0");
  EXPECT_EQ(text, "SET #n0 = :v1, #n2 = if_not_exists(#n2, :v3) ADD #n1 :v2 REMOVE #n3");
  EXPECT_EQ(b.names().size(), 4u);
  EXPECT_EQ(b.values().size(), 4u);
}

}  // namespace
}  // namespace leasehold::store::dynamodb
