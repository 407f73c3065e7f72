// fauxqs starts on a free port and answers SQS's JSON protocol and S3's REST
// API, so the clients' tests have a server to talk to.
#include <gtest/gtest.h>

#include "net/http_client.h"
#include "tests/aws/fauxqs_fixture.h"

namespace leasehold::testing {
namespace {

std::unique_ptr<net::HttpClient> client_of(const Fauxqs& fauxqs) {
  Result<net::HttpEndpoint> endpoint = net::parse_http_endpoint(fauxqs.endpoint());
  EXPECT_TRUE(endpoint.ok()) << endpoint.status().to_string();
  net::HttpClientOptions options;
  options.endpoint = *endpoint;
  Result<std::unique_ptr<net::HttpClient>> client = net::HttpClient::open(options);
  EXPECT_TRUE(client.ok()) << client.status().to_string();
  return std::move(client).value();
}

TEST(FauxqsSmoke, AnswersSqsAndS3OnOnePort) {
  Fauxqs* fauxqs = shared_fauxqs();
  ASSERT_NE(fauxqs, nullptr);
  std::unique_ptr<net::HttpClient> http = client_of(*fauxqs);
  const std::string name = unique_aws_name("smoke");

  net::HttpRequest create;
  create.target = "/";
  create.headers = {{"X-Amz-Target", "AmazonSQS.CreateQueue"},
                    {"Content-Type", "application/x-amz-json-1.0"}};
  create.body = "{\"QueueName\":\"" + name + "\"}";
  Result<net::HttpResponse> created = http->send(create, std::chrono::seconds(10));
  ASSERT_TRUE(created.ok()) << created.status().to_string();
  EXPECT_EQ(created->status, 200) << created->body;
  EXPECT_NE(created->body.find(name), std::string::npos) << created->body;

  net::HttpRequest bucket;
  bucket.method = "PUT";
  bucket.target = "/" + name;
  Result<net::HttpResponse> made = http->send(bucket, std::chrono::seconds(10));
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  EXPECT_EQ(made->status, 200) << made->body;
  net::HttpRequest put;
  put.method = "PUT";
  put.target = "/" + name + "/a/b.txt";
  put.body = "hello";
  ASSERT_EQ(http->send(put, std::chrono::seconds(10))->status, 200);
  net::HttpRequest get;
  get.method = "GET";
  get.target = "/" + name + "/a/b.txt";
  get.headers = {{"Range", "bytes=1-3"}};
  Result<net::HttpResponse> got = http->send(get, std::chrono::seconds(10));
  ASSERT_TRUE(got.ok()) << got.status().to_string();
  EXPECT_EQ(got->status, 206);
  EXPECT_EQ(got->body, "ell");

  // A HEAD's reply has no body whatever its Content-Length says: the client
  // reads none, at once, and the connection serves the next request.
  net::HttpRequest head;
  head.method = "HEAD";
  head.target = "/" + name + "/a/b.txt";
  Result<net::HttpResponse> headed = http->send(head, std::chrono::seconds(3));
  ASSERT_TRUE(headed.ok()) << headed.status().to_string();
  EXPECT_EQ(headed->status, 200);
  EXPECT_EQ(headed->header("content-length"), "5");
  EXPECT_EQ(headed->body, "");
  Result<net::HttpResponse> again = http->send(get, std::chrono::seconds(3));
  ASSERT_TRUE(again.ok()) << again.status().to_string();
  EXPECT_EQ(again->body, "ell");
}

}  // namespace
}  // namespace leasehold::testing
