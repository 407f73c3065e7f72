#include "store/dynamodb/wire.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

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

// The text encoders write what the JSON tree encoders serialise to, and
// every string comes back as it went in, whatever bytes it holds.
TEST(WireText, TextEncodersMatchTheTreeEncoders) {
  std::string control;
  for (char c = 0; c < 0x20; ++c) control += c;
  for (const std::string& s :
       {std::string(), std::string("plain"), std::string("q\"uo\\te/"), control,
        std::string("h\xc3\xa9llo \xe2\x82\xac"), std::string("a\0b", 3), std::string("\x7f")}) {
    std::string text;
    append_json_string(s, text);
    EXPECT_EQ(boost::json::parse(text).as_string(), s) << text;
    for (const Value& v : {Value(s), Value(int64_t{0}), Value(INT64_MIN), Value(INT64_MAX),
                           Value(true), Value(false)}) {
      std::string value_text;
      append_value_json(v, value_text);
      EXPECT_EQ(boost::json::parse(value_text), boost::json::value(encode_value(v))) << value_text;
    }
    for (const TableSpec& spec : {TableSpec{"t", "p", "", {}}, TableSpec{"t", "p\"k", "s", {}}}) {
      std::string key_text;
      append_key_json(spec, {s, s}, key_text);
      EXPECT_EQ(boost::json::parse(key_text), boost::json::value(encode_key(spec, {s, s})))
          << key_text;
    }
  }
}

TEST(WireText, PlaceholdersAsTextMatchTheTrees) {
  ExpressionBuilder b;
  std::string none;
  b.append_placeholders_json(none);
  EXPECT_EQ(none, "");
  (void)b.condition(cond::eq("lease_token", std::string("t\"1")) &&
                    cond::lt("lease_expires_at_ms", int64_t{5}) && cond::eq("ok", true) &&
                    cond::eq("lease_token", std::string("t2")));
  std::string text = "{\"x\":1";
  b.append_placeholders_json(text);
  text += '}';
  const boost::json::object parsed = boost::json::parse(text).as_object();
  EXPECT_EQ(parsed.at("ExpressionAttributeNames"), boost::json::value(b.names()));
  EXPECT_EQ(parsed.at("ExpressionAttributeValues"), boost::json::value(b.values()));
  EXPECT_EQ(b.names().size(), 3u);
  EXPECT_EQ(b.values().size(), 4u);
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

// ---------------------------------------------------------------- errors

// Every row of the error table, and what falls outside it: the code and
// message of the Status, the verdict, and so (next_step) whether a read and
// a write are sent again. Written out here, independently of the table, so
// that a changed row shows up as a failing test.
struct ErrorCase {
  int http_status;
  std::string type;
  Code code;
  Verdict verdict;
  bool refused_note;  // " (DynamoDB refused the credentials)"
};

const std::vector<ErrorCase>& error_cases() {
  using C = Code;
  using V = Verdict;
  static const std::vector<ErrorCase> kCases = {
      {400, "ConditionalCheckFailedException", C::kConditionFailed, V::kAnswered, false},
      {400, "ResourceNotFoundException", C::kNotFound, V::kAnswered, false},
      {400, "ValidationException", C::kInvalidArgument, V::kAnswered, false},
      {400, "SerializationException", C::kInvalidArgument, V::kAnswered, false},
      {400, "ResourceInUseException", C::kAlreadyExists, V::kAnswered, false},
      {400, "ExpiredIteratorException", C::kFailedPrecondition, V::kAnswered, false},
      {400, "TrimmedDataAccessException", C::kNotFound, V::kAnswered, false},
      {400, "UnrecognizedClientException", C::kUnavailable, V::kAnswered, true},
      {403, "InvalidSignatureException", C::kUnavailable, V::kAnswered, true},
      {403, "MissingAuthenticationToken", C::kUnavailable, V::kAnswered, true},
      {403, "MissingAuthenticationTokenException", C::kUnavailable, V::kAnswered, true},
      {400, "AccessDeniedException", C::kUnavailable, V::kAnswered, true},
      {400, "ExpiredTokenException", C::kUnavailable, V::kAnswered, true},
      {403, "IncompleteSignatureException", C::kUnavailable, V::kAnswered, true},
      {403, "InvalidClientTokenId", C::kUnavailable, V::kAnswered, true},
      {403, "SignatureDoesNotMatch", C::kUnavailable, V::kAnswered, true},
      {400, "ProvisionedThroughputExceededException", C::kUnavailable, V::kNothingApplied, false},
      {400, "ThrottlingException", C::kUnavailable, V::kNothingApplied, false},
      {400, "RequestLimitExceeded", C::kUnavailable, V::kNothingApplied, false},
      {400, "LimitExceededException", C::kUnavailable, V::kNothingApplied, false},
      {500, "InternalServerError", C::kUnavailable, V::kMayHaveApplied, false},
      {503, "ServiceUnavailable", C::kUnavailable, V::kMayHaveApplied, false},
      // Outside the table: judged by the HTTP status alone.
      {500, "NewServerSideException", C::kUnavailable, V::kMayHaveApplied, false},
      {504, "", C::kUnavailable, V::kMayHaveApplied, false},  // a load balancer's page
      {400, "NewClientSideException", C::kInvalidArgument, V::kUnrecognised, false},
      {413, "", C::kInvalidArgument, V::kUnrecognised, false},
      {499, "", C::kInvalidArgument, V::kUnrecognised, false},
  };
  return kCases;
}

TEST(WireErrors, EveryRowOfTheErrorTable) {
  // The cases cover the whole table, and no row twice.
  std::set<std::string> types, listed;
  for (const ErrorRule& rule : error_rules()) {
    EXPECT_TRUE(types.emplace(rule.type).second) << rule.type;
  }
  for (const ErrorCase& c : error_cases()) {
    if (types.contains(c.type)) listed.insert(c.type);
  }
  EXPECT_EQ(listed, types);
  for (const ErrorCase& c : error_cases()) {
    SCOPED_TRACE(std::to_string(c.http_status) + " " + c.type);
    const Judged judged = classify("UpdateItem", c.http_status, c.type, "why");
    EXPECT_EQ(code_name(judged.status.code()), code_name(c.code));
    EXPECT_EQ(judged.verdict, c.verdict);
    const std::string& message = judged.status.message();
    if (c.code == Code::kConditionFailed) {
      EXPECT_EQ(message, "the condition is false");
      continue;
    }
    const std::string what = c.type.empty() ? "HTTP " + std::to_string(c.http_status) : c.type;
    EXPECT_EQ(message, "UpdateItem: " + what + ": why" +
                           (c.refused_note ? " (DynamoDB refused the credentials)" : ""));
  }
}

TEST(WireErrors, MessagesAreCutAndOptional) {
  const Judged long_message =
      classify("GetItem", 400, "ValidationException", std::string(1000, 'x'));
  EXPECT_EQ(long_message.status.message(),
            "GetItem: ValidationException: " + std::string(kErrorMessageBytesMax, 'x'));
  EXPECT_EQ(classify("GetItem", 502, "", "").status.message(), "GetItem: HTTP 502");
}

// Found by fuzzing (fuzz/dynamodb_reply_fuzz.cc): an unknown exception's
// name went into the Status whole, however long a proxy's __type was.
TEST(WireErrors, ExceptionNamesAreCut) {
  const Judged judged = classify("GetItem", 400, std::string(2000, 'A'), "m");
  EXPECT_EQ(judged.status.message(), "GetItem: " + std::string(kErrorTypeBytesMax, 'A') + ": m");
  EXPECT_EQ(judged.verdict, Verdict::kUnrecognised);
}

// What the store does after each verdict: the table in wire.h.
TEST(WireErrors, NextStepSendsAWriteAgainOnlyWhenNothingApplied) {
  struct Row {
    Verdict verdict;
    Next read, write;
  };
  for (const Row& r : {Row{Verdict::kAnswered, Next::kReturn, Next::kReturn},
                       Row{Verdict::kNothingApplied, Next::kSendAgain, Next::kSendAgain},
                       Row{Verdict::kMayHaveApplied, Next::kSendAgain, Next::kUnknownOutcome},
                       Row{Verdict::kUnrecognised, Next::kReturn, Next::kUnknownOutcome}}) {
    EXPECT_EQ(next_step(r.verdict, true), r.read) << static_cast<int>(r.verdict);
    EXPECT_EQ(next_step(r.verdict, false), r.write) << static_cast<int>(r.verdict);
  }
  EXPECT_EQ(judge_send_failure(Code::kUnavailable), Verdict::kNothingApplied);
  EXPECT_EQ(judge_send_failure(Code::kUnknownOutcome), Verdict::kMayHaveApplied);
  EXPECT_EQ(judge_send_failure(Code::kInvalidArgument), Verdict::kAnswered);
}

TEST(WireErrors, RepliesAreReadOrJudged) {
  Verdict verdict = Verdict::kUnrecognised;
  auto ok = interpret_reply("GetItem", 200, R"({"Item":{}})", &verdict);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(verdict, Verdict::kAnswered);
  EXPECT_TRUE(ok->contains("Item"));
  auto garbled = interpret_reply("UpdateItem", 200, "<html>", &verdict);
  EXPECT_EQ(garbled.status().code(), Code::kInternal);
  EXPECT_EQ(garbled.status().message(), "UpdateItem: malformed JSON reply");
  EXPECT_EQ(verdict, Verdict::kUnrecognised);
  ErrorDetail detail;
  auto throttled = interpret_reply(
      "PutItem", 400,
      R"({"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","Message":"slow"})",
      &verdict, {}, &detail);
  EXPECT_EQ(throttled.status().message(), "PutItem: ThrottlingException: slow");
  EXPECT_EQ(verdict, Verdict::kNothingApplied);
  EXPECT_EQ(detail.type, "ThrottlingException");
  EXPECT_EQ(detail.message, "slow");
  auto page = interpret_reply("PutItem", 502, "<html>busy</html>", &verdict);
  EXPECT_EQ(page.status().message(), "PutItem: HTTP 502");
  EXPECT_EQ(verdict, Verdict::kMayHaveApplied);
  EXPECT_EQ(exception_name("ThrottlingException"), "ThrottlingException");
}

TEST(WireErrors, GivingUpIsUnavailableAndSaysWhy) {
  EXPECT_EQ(gave_up("UpdateItem", 0, {}, RetryStop::kDeadline).message(),
            "UpdateItem: not sent before the deadline");
  const Status last = unavailable("throttled");
  EXPECT_EQ(gave_up("GetItem", 4, last, RetryStop::kAttempts).message(),
            "GetItem: gave up after 4 attempts: throttled");
  const Status at_deadline = gave_up("GetItem", 2, last, RetryStop::kDeadline);
  EXPECT_EQ(at_deadline.code(), Code::kUnavailable);
  EXPECT_EQ(at_deadline.message(), "GetItem: gave up at the deadline after 2 attempts: throttled");
  const Status quota = gave_up("GetItem", 1, last, RetryStop::kQuota);
  EXPECT_EQ(quota.code(), Code::kUnavailable);
  EXPECT_EQ(quota.message(),
            "GetItem: gave up after 1 attempt (the retry quota is spent: the service has been "
            "failing): throttled");
}

// ---------------------------------------------------------------- key ranges

TEST(WireRanges, EveryKindOfRangeBecomesAKeyCondition) {
  struct Row {
    KeyRange range;
    RangeText text;
  };
  const std::string a = "a", b = "b";
  for (const Row& r :
       {Row{KeyRange::all(), {false, ""}}, Row{KeyRange::eq(a), {false, "#n0 = :v0"}},
        Row{KeyRange::lt(a), {false, "#n0 < :v0"}}, Row{KeyRange::le(a), {false, "#n0 <= :v0"}},
        Row{KeyRange::gt(a), {false, "#n0 > :v0"}}, Row{KeyRange::ge(a), {false, "#n0 >= :v0"}},
        Row{KeyRange::between(a, b), {false, "#n0 BETWEEN :v0 AND :v1"}},
        Row{KeyRange::begins_with(a), {false, "begins_with(#n0, :v0)"}},
        Row{KeyRange::ge(int64_t{5}), {false, "#n0 >= :v0"}}}) {
    ExpressionBuilder builder;
    const RangeText text = range_text(builder, "sk", r.range);
    EXPECT_EQ(text.none, r.text.none);
    EXPECT_EQ(text.text, r.text.text);
    if (!text.text.empty()) {
      EXPECT_EQ(boost::json::serialize(builder.names()), R"({"#n0":"sk"})");
    }
  }
}

// DynamoDB refuses an empty string as a key operand; no key is empty, so each
// range becomes what it means for non-empty keys.
TEST(WireRanges, EmptyStringOperandsMeanAllOrNothing) {
  const std::string empty, b = "b";
  struct Row {
    KeyRange range;
    bool none;
    std::string text;
  };
  for (const Row& r :
       {Row{KeyRange::gt(empty), false, ""}, Row{KeyRange::ge(empty), false, ""},
        Row{KeyRange::begins_with(empty), false, ""}, Row{KeyRange::eq(empty), true, ""},
        Row{KeyRange::lt(empty), true, ""}, Row{KeyRange::le(empty), true, ""},
        Row{KeyRange::between(empty, empty), true, ""},
        Row{KeyRange::between(empty, b), false, "#n0 <= :v0"}}) {
    ExpressionBuilder builder;
    const RangeText text = range_text(builder, "sk", r.range);
    EXPECT_EQ(text.none, r.none) << r.text;
    EXPECT_EQ(text.text, r.text);
  }
}

TEST(WireRanges, KeyConditionsJoinTheHashAndTheRange) {
  ExpressionBuilder b;
  EXPECT_EQ(key_condition(b, "pk", "a", "sk", KeyRange::all()), "#n0 = :v0");
  ExpressionBuilder c;
  EXPECT_EQ(key_condition(c, "g", "G", "n", KeyRange::between(int64_t{1}, int64_t{9})),
            "#n0 = :v0 AND #n1 BETWEEN :v1 AND :v2");
  EXPECT_EQ(boost::json::serialize(c.values()),
            R"({":v0":{"S":"G"},":v1":{"N":"1"},":v2":{"N":"9"}})");
  ExpressionBuilder d;
  EXPECT_EQ(key_condition(d, "pk", "a", "sk", KeyRange::eq(std::string())), std::nullopt);
}

TEST(WireRanges, CursorsMustHaveTheExpectedShape) {
  const TableSpec spec{"t", "pk", "sk", {}};
  const CursorShape shape = table_cursor_shape(spec);
  auto cursor = decode_cursor(R"({"pk":"a","sk":"b"})", shape);
  ASSERT_TRUE(cursor.ok()) << cursor.status().to_string();
  EXPECT_EQ(boost::json::serialize(*cursor), R"({"pk":{"S":"a"},"sk":{"S":"b"}})");
  for (const char* bad : {"", "{}", "not json", R"({"pk":"a"})", R"({"pk":"a","sk":""})",
                          R"({"pk":"a","sk":1})", R"({"pk":"a","sk":"b","x":"c"})"}) {
    const auto decoded = decode_cursor(bad, shape);
    EXPECT_EQ(decoded.status().code(), Code::kInvalidArgument) << bad;
    EXPECT_EQ(decoded.status().message(), "malformed query cursor") << bad;
  }
}

// ---------------------------------------------------------------- conditions

TEST(Wire, BooleanInequalitiesBecomeFalseAndOthersAreLeftAlone) {
  Condition storage;
  const Condition plain = cond::eq("a", true) && cond::lt("n", int64_t{3});
  EXPECT_EQ(&portable(plain, "pk", storage), &plain);
  const Condition& rewritten = portable(cond::exists("a") && cond::lt("b", true), "pk", storage);
  EXPECT_EQ(&rewritten, &storage);
  EXPECT_EQ(ExpressionBuilder().condition(rewritten),
            "attribute_exists(#n0) AND attribute_exists(#n1) AND attribute_not_exists(#n1)");
}

TEST(Wire, AddsAreGuardedAgainstLeavingInt64) {
  ExpressionBuilder b;
  EXPECT_EQ(overflow_guards(Update().set("a", int64_t{1}).add("z", 0), b), "");
  const std::string guard = overflow_guards(Update().add("n", 2), b);
  // Which value gets :v0 is up to the compiler's order of evaluation.
  const bool type_first = b.values().at(":v0").as_object().contains("S");
  const std::string type = type_first ? ":v0" : ":v1", limit = type_first ? ":v1" : ":v0";
  EXPECT_EQ(guard, "(attribute_not_exists(#n0) OR NOT attribute_type(#n0, " + type +
                       ") OR #n0 <= " + limit + ")");
  EXPECT_EQ(boost::json::serialize(b.values().at(type)), R"({"S":"N"})");
  EXPECT_EQ(boost::json::serialize(b.values().at(limit)), R"({"N":"9223372036854775805"})");
  boost::json::object body;
  add_placeholders(body, b);
  EXPECT_TRUE(body.contains("ExpressionAttributeNames"));
  EXPECT_TRUE(body.contains("ExpressionAttributeValues"));
  boost::json::object empty_body;
  ExpressionBuilder unused;
  add_placeholders(empty_body, unused);
  EXPECT_TRUE(empty_body.empty());
}

// ---------------------------------------------------------------- tables

TEST(WireTables, TableNames) {
  EXPECT_TRUE(valid_table_name("abc"));
  EXPECT_TRUE(valid_table_name("prod_leases.v-2"));
  EXPECT_TRUE(valid_table_name(std::string(kTableNameBytesMax, 'a')));
  for (const std::string& bad : {std::string("ab"), std::string(kTableNameBytesMax + 1, 'a'),
                                 std::string("a b c"), std::string("t\xc3\xa9t")}) {
    EXPECT_FALSE(valid_table_name(bad)) << bad;
  }
}

TEST(WireTables, CreateTableDefinesEveryKeyAttributeOnce) {
  const TableSpec spec{"conns",
                       "Pk",
                       "",
                       {{"by-state", "desired_state", "lease_expires_at_ms", AttrType::kInt},
                        {"by-owner", "lease_owner", "Pk", AttrType::kString}}};
  auto definitions = attribute_definitions(spec);
  ASSERT_TRUE(definitions.ok()) << definitions.status().to_string();
  EXPECT_EQ(boost::json::serialize(*definitions),
            R"([{"AttributeName":"Pk","AttributeType":"S"},)"
            R"({"AttributeName":"desired_state","AttributeType":"S"},)"
            R"({"AttributeName":"lease_expires_at_ms","AttributeType":"N"},)"
            R"({"AttributeName":"lease_owner","AttributeType":"S"}])");
  EXPECT_EQ(boost::json::serialize(key_schema_json("p", "s")),
            R"([{"AttributeName":"p","KeyType":"HASH"},{"AttributeName":"s","KeyType":"RANGE"}])");
  EXPECT_EQ(boost::json::serialize(gsi_json(spec.indexes[0])),
            R"({"IndexName":"by-state","KeySchema":[{"AttributeName":"desired_state",)"
            R"("KeyType":"HASH"},{"AttributeName":"lease_expires_at_ms","KeyType":"RANGE"}],)"
            R"("Projection":{"ProjectionType":"ALL"}})");
  const TableSpec clash{"t", "pk", "", {{"i", "g", "pk", AttrType::kInt}}};
  const auto refused = attribute_definitions(clash);
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(refused.status().message(), "attribute pk is a key of type S and of type N in table t");
}

// A DescribeTable reply as DynamoDB sends it (abridged), read back into the
// spec that created it.
constexpr const char* kDescribed = R"({
  "TableName": "prod_conns", "TableStatus": "ACTIVE",
  "AttributeDefinitions": [{"AttributeName": "Pk", "AttributeType": "S"},
                           {"AttributeName": "Sk", "AttributeType": "S"},
                           {"AttributeName": "state", "AttributeType": "S"},
                           {"AttributeName": "expires", "AttributeType": "N"},
                           {"AttributeName": "name", "AttributeType": "S"}],
  "KeySchema": [{"AttributeName": "Pk", "KeyType": "HASH"},
                {"AttributeName": "Sk", "KeyType": "RANGE"}],
  "GlobalSecondaryIndexes": [
    {"IndexName": "by-state", "IndexStatus": "ACTIVE",
     "KeySchema": [{"AttributeName": "state", "KeyType": "HASH"},
                   {"AttributeName": "expires", "KeyType": "RANGE"}]},
    {"IndexName": "by-name", "IndexStatus": "CREATING",
     "KeySchema": [{"AttributeName": "state", "KeyType": "HASH"},
                   {"AttributeName": "name", "KeyType": "RANGE"}]}]
})";

TEST(WireTables, DescribeTableIsReadBackIntoASpec) {
  const boost::json::object table = boost::json::parse(kDescribed).as_object();
  const TableSpec spec = spec_from_description("conns", table);
  EXPECT_EQ(spec.name, "conns");
  EXPECT_EQ(spec.pk_attr, "Pk");
  EXPECT_EQ(spec.sk_attr, "Sk");
  ASSERT_EQ(spec.indexes.size(), 2u);
  EXPECT_EQ(spec.indexes[0].name, "by-state");
  EXPECT_EQ(spec.indexes[0].hash_attr, "state");
  EXPECT_EQ(spec.indexes[0].range_attr, "expires");
  EXPECT_EQ(spec.indexes[0].range_type, AttrType::kInt);
  EXPECT_EQ(spec.indexes[1].range_type, AttrType::kString);
  const TableSpec bare =
      spec_from_description("t", boost::json::parse(R"({"KeySchema":[{"AttributeName":"k",)"
                                                    R"("KeyType":"HASH"}],"Junk":1})")
                                     .as_object());
  EXPECT_EQ(bare.pk_attr, "k");
  EXPECT_EQ(bare.sk_attr, "");
  EXPECT_TRUE(bare.indexes.empty());
}

TEST(WireTables, ActiveMeansTheTableAndTheNamedIndexes) {
  const boost::json::object table = boost::json::parse(kDescribed).as_object();
  EXPECT_TRUE(is_active(table, {}));
  EXPECT_TRUE(is_active(table, {"by-state"}));
  EXPECT_FALSE(is_active(table, {"by-name"}));
  EXPECT_FALSE(is_active(table, {"by-state", "no-such-index"}));
  EXPECT_FALSE(is_active(boost::json::parse(R"({"TableStatus":"CREATING"})").as_object(), {}));
  EXPECT_FALSE(is_active(boost::json::parse(R"({"TableStatus":"ACTIVE"})").as_object(), {"i"}));
}

// A table's stream as DescribeTable shows it: only an enabled one of
// NEW_AND_OLD_IMAGES serves a change feed; one turned off keeps its
// LatestStreamArn but counts as none, and one of another view type is
// refused rather than read without images.
TEST(WireTables, AStreamIsReadBackAndOnlyOneWithBothImagesServesAFeed) {
  const auto described = [](const std::string& stream) {
    return boost::json::parse(R"({"KeySchema":[{"AttributeName":"k","KeyType":"HASH"}])" + stream +
                              "}")
        .as_object();
  };
  const std::string arn = R"(,"LatestStreamArn":"arn:aws:dynamodb:r:1:table/t/stream/x")";
  const boost::json::object with_feed = described(
      R"(,"StreamSpecification":{"StreamEnabled":true,"StreamViewType":"NEW_AND_OLD_IMAGES"})" +
      arn);
  const boost::json::object turned_off =
      described(R"(,"StreamSpecification":{"StreamEnabled":false})" + arn);
  const boost::json::object keys_only = described(
      R"(,"StreamSpecification":{"StreamEnabled":true,"StreamViewType":"KEYS_ONLY"})" + arn);
  const boost::json::object none = described("");

  EXPECT_EQ(stream_of(with_feed).arn, "arn:aws:dynamodb:r:1:table/t/stream/x");
  EXPECT_EQ(stream_of(with_feed).view_type, "NEW_AND_OLD_IMAGES");
  EXPECT_EQ(stream_of(turned_off).arn, "");
  EXPECT_EQ(stream_of(none).view_type, "");
  EXPECT_TRUE(spec_from_description("t", with_feed).change_feed);
  EXPECT_FALSE(spec_from_description("t", turned_off).change_feed);
  EXPECT_FALSE(spec_from_description("t", keys_only).change_feed);
  EXPECT_FALSE(spec_from_description("t", none).change_feed);

  TableSpec wanted{"t", "k", "", {}};
  EXPECT_FALSE(*needs_stream(wanted, none, "prod_t"));  // not asked for: left as it is
  wanted.change_feed = true;
  EXPECT_TRUE(*needs_stream(wanted, none, "prod_t"));
  EXPECT_TRUE(*needs_stream(wanted, turned_off, "prod_t"));
  EXPECT_FALSE(*needs_stream(wanted, with_feed, "prod_t"));
  const Result<bool> refused = needs_stream(wanted, keys_only, "prod_t");
  EXPECT_EQ(refused.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(refused.status().message(),
            "table prod_t has a stream of view type KEYS_ONLY; a change feed needs "
            "NEW_AND_OLD_IMAGES");
  EXPECT_EQ(boost::json::serialize(feed_stream_json()),
            R"({"StreamEnabled":true,"StreamViewType":"NEW_AND_OLD_IMAGES"})");
}

TEST(WireTables, MissingIndexesAreFoundAndDifferentOnesRefused) {
  const TableSpec have{"t", "pk", "", {{"a", "g", "n", AttrType::kInt}}};
  TableSpec wanted = have;
  wanted.indexes.push_back({"b", "g", "s", AttrType::kString});
  auto missing = missing_indexes(wanted, have, "prod_t");
  ASSERT_TRUE(missing.ok()) << missing.status().to_string();
  ASSERT_EQ(missing->size(), 1u);
  EXPECT_EQ(missing->front().name, "b");
  TableSpec other_keys = wanted;
  other_keys.sk_attr = "sk";
  const auto keys = missing_indexes(other_keys, have, "prod_t");
  EXPECT_EQ(keys.status().code(), Code::kInvalidArgument);
  EXPECT_EQ(keys.status().message(), "table prod_t exists with another key schema");
  TableSpec other_index = have;
  other_index.indexes[0].range_type = AttrType::kString;
  EXPECT_EQ(missing_indexes(other_index, have, "prod_t").status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace leasehold::store::dynamodb
