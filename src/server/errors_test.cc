// The error shape, the Status → HTTP map, and the JSON body helper.
#include "server/errors.h"

#include <gtest/gtest.h>

#include <boost/json/parse.hpp>

#include "server/json.h"

namespace leasehold::server {
namespace {

// {"code", "message"} of an error body.
std::pair<std::string, std::string> error_of(const Response& response) {
  const auto value = boost::json::parse(response.body);
  const auto& error = value.at("error");
  return {std::string(error.at("code").as_string()), std::string(error.at("message").as_string())};
}

TEST(ErrorsTest, EveryStatusCodeMapsToOneHttpStatusAndCode) {
  struct Case {
    Code code;
    int status;
    std::string_view name;
  };
  const Case cases[] = {
      {Code::kInvalidArgument, 400, "bad_request"},
      {Code::kUnauthenticated, 401, "unauthenticated"},
      {Code::kPermissionDenied, 403, "forbidden"},
      {Code::kNotFound, 404, "not_found"},
      {Code::kAlreadyExists, 409, "conflict"},
      {Code::kFailedPrecondition, 409, "conflict"},
      {Code::kConditionFailed, 409, "conflict"},
      {Code::kResourceExhausted, 429, "too_many_requests"},
      {Code::kUnavailable, 503, "unavailable"},
      {Code::kDeadlineExceeded, 503, "unavailable"},
      {Code::kUnknownOutcome, 500, "internal"},
      {Code::kInternal, 500, "internal"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(code_name(c.code));
    EXPECT_EQ(http_error(c.code).status, c.status);
    EXPECT_EQ(http_error(c.code).code, c.name);
    const Response response = error_response(Status(c.code, "why"), "00000000000000ab");
    EXPECT_EQ(response.status, c.status);
    EXPECT_EQ(error_of(response).first, c.name);
  }
}

TEST(ErrorsTest, AnErrorResponseHasTheOneShape) {
  const Response response = error_response(404, "no movie \"7\"\n");
  EXPECT_EQ(response.status, 404);
  EXPECT_EQ(response.header("content-type"), "application/json");
  EXPECT_EQ(response.body, R"({"error":{"code":"not_found","message":"no movie \"7\"\n"}})");
  EXPECT_EQ(error_of(error_response(405, "x")).first, "method_not_allowed");
  EXPECT_EQ(error_of(error_response(413, "x")).first, "payload_too_large");
  EXPECT_EQ(error_of(error_response(415, "x")).first, "unsupported_media_type");
  EXPECT_EQ(error_of(error_response(416, "x")).first, "range_not_satisfiable");
  EXPECT_EQ(error_of(error_response(507, "x")).first, "insufficient_storage");
  EXPECT_EQ(error_of(error_response(431, "x")).first, "header_too_large");
  EXPECT_EQ(error_of(error_response(418, "x")).first, "bad_request");
  EXPECT_EQ(error_of(error_response(502, "x")).first, "internal");
  EXPECT_EQ(error_response(503, "x").header("retry-after"), "1");
}

TEST(ErrorsTest, A4xxCarriesTheStatusMessage) {
  const Response response = error_response(not_found("no movie 7"), "00000000000000ab");
  EXPECT_EQ(error_of(response).second, "no movie 7");
}

TEST(ErrorsTest, A5xxNeverCarriesTheStatusMessageOnlyTheRequestId) {
  for (const Status& status : {internal_error("table t has a corrupt item at pk=secret"),
                               unknown_outcome("token abc123 sent, no reply"),
                               unavailable("cannot reach db.internal:5432")}) {
    const Response response = error_response(status, "00000000000000ab");
    const std::string message = error_of(response).second;
    EXPECT_EQ(message.find(status.message()), std::string::npos) << message;
    EXPECT_NE(message.find("(request 00000000000000ab)"), std::string::npos) << message;
  }
  EXPECT_EQ(error_of(internal_error_response("00000000000000ab")).second,
            "internal error (request 00000000000000ab)");
  EXPECT_EQ(error_of(error_response(unavailable("s3 PUT s3://b/k: AccessDenied"), "0a")).second,
            "storage unavailable, try again later (request 0a)");
}

Request json_request(std::string content_type, std::string body) {
  Request request;
  if (!content_type.empty()) request.headers.emplace_back("content-type", std::move(content_type));
  request.body = std::move(body);
  return request;
}

TEST(JsonBodyTest, ReadsAnObjectSentAsApplicationJson) {
  for (const char* type :
       {"application/json", "application/json; charset=utf-8", "Application/JSON"}) {
    boost::json::object out;
    EXPECT_EQ(read_json_object(json_request(type, R"({"name":"ada"})"), out), std::nullopt);
    EXPECT_EQ(out.at("name").as_string(), "ada");
  }
}

TEST(JsonBodyTest, AnotherMediaTypeIs415) {
  for (const char* type :
       {"", "text/plain", "application/jsonp", "application/x-www-form-urlencoded"}) {
    boost::json::object out;
    const auto refused = read_json_object(json_request(type, R"({"name":"ada"})"), out);
    ASSERT_TRUE(refused.has_value()) << type;
    EXPECT_EQ(refused->status, 415);
    EXPECT_EQ(error_of(*refused).first, "unsupported_media_type");
  }
}

TEST(JsonBodyTest, MalformedJsonIs400WithoutEchoingTheBody) {
  for (const char* body : {"", "{\"password\": \"hunter2\"", "[\"hunter2\"]", "\"hunter2\"",
                           "{\"password\": hunter2}"}) {
    boost::json::object out;
    const auto refused = read_json_object(json_request("application/json", body), out);
    ASSERT_TRUE(refused.has_value()) << body;
    EXPECT_EQ(refused->status, 400);
    EXPECT_EQ(refused->body.find("hunter2"), std::string::npos) << refused->body;
  }
}

TEST(JsonBodyTest, JsonResponseSerialisesTheValue) {
  const Response response = json_response(201, boost::json::object{{"id", 7}});
  EXPECT_EQ(response.status, 201);
  EXPECT_EQ(response.body, R"({"id":7})");
  EXPECT_EQ(response.header("Content-Type"), "application/json");
}

}  // namespace
}  // namespace leasehold::server
