// Smoke test: HttpClient speaks DynamoDB's JSON 1.0 protocol to dynalite.
// Requests are unsigned (dynalite checks only that an Authorization header is
// present and well-formed); the SigV4 signer is tested on its own.
#include <gtest/gtest.h>

#include "net/http_client.h"
#include "tests/dynamodb/dynalite_fixture.h"

namespace leasehold::testing {
namespace {

using namespace std::chrono_literals;
using net::HttpClient;
using net::HttpClientOptions;
using net::HttpRequest;
using net::HttpResponse;

HttpRequest dynamodb_request(const std::string& operation, std::string body) {
  HttpRequest request;
  request.method = "POST";
  request.target = "/";
  request.headers = {
      {"X-Amz-Target", "DynamoDB_20120810." + operation},
      {"Content-Type", "application/x-amz-json-1.0"},
      {"X-Amz-Date", "20200101T000000Z"},
      {"Authorization",
       "AWS4-HMAC-SHA256 Credential=AKID/20200101/us-east-1/dynamodb/aws4_request, "
       "SignedHeaders=host, Signature=00"},
  };
  request.body = std::move(body);
  return request;
}

class DynaliteSmokeTest : public DynaliteTest {
 protected:
  void SetUp() override {
    HttpClientOptions options;
    auto endpoint = net::parse_http_endpoint(dynalite().endpoint());
    ASSERT_TRUE(endpoint.ok()) << endpoint.status().to_string();
    options.endpoint = *endpoint;
    auto client = HttpClient::open(options);
    ASSERT_TRUE(client.ok()) << client.status().to_string();
    client_ = std::move(client).value();
  }

  HttpResponse call(const std::string& operation, std::string body) {
    auto response = client_->send(dynamodb_request(operation, std::move(body)), 10s);
    EXPECT_TRUE(response.ok()) << response.status().to_string();
    return response.ok() ? *response : HttpResponse{};
  }

  std::unique_ptr<HttpClient> client_;
};

TEST_F(DynaliteSmokeTest, ListCreateList) {
  HttpResponse listed = call("ListTables", "{}");
  EXPECT_EQ(listed.status, 200) << listed.body;
  EXPECT_EQ(listed.body, R"({"TableNames":[]})");

  HttpResponse created =
      call("CreateTable", R"({"TableName":"smoke",)"
                          R"("AttributeDefinitions":[{"AttributeName":"Pk","AttributeType":"S"}],)"
                          R"("KeySchema":[{"AttributeName":"Pk","KeyType":"HASH"}],)"
                          R"("BillingMode":"PAY_PER_REQUEST"})");
  EXPECT_EQ(created.status, 200) << created.body;
  EXPECT_NE(created.body.find(R"("TableName":"smoke")"), std::string::npos) << created.body;

  listed = call("ListTables", "{}");
  EXPECT_EQ(listed.status, 200) << listed.body;
  EXPECT_EQ(listed.body, R"({"TableNames":["smoke"]})");
}

TEST_F(DynaliteSmokeTest, UnknownTableIsA400WithItsExceptionType) {
  HttpResponse response = call("DescribeTable", R"({"TableName":"no_such_table"})");
  EXPECT_EQ(response.status, 400);
  EXPECT_NE(response.body.find("ResourceNotFoundException"), std::string::npos) << response.body;
}

}  // namespace
}  // namespace leasehold::testing
