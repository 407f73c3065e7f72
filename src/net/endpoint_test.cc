// Tests for parsing HTTP endpoints and telling loopback hosts and IP
// literals apart.
#include "net/endpoint.h"

#include <gtest/gtest.h>

namespace leasehold::net {
namespace {

TEST(HttpEndpointTest, Parses) {
  auto e = parse_http_endpoint("http://127.0.0.1:8000");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->scheme, "http");
  EXPECT_EQ(e->host, "127.0.0.1");
  EXPECT_EQ(e->port, 8000);
  e = parse_http_endpoint("https://dynamodb.eu-west-1.amazonaws.com/");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->port, 443);
  e = parse_http_endpoint("http://[::1]:4567");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->host, "::1");
  EXPECT_EQ(e->port, 4567);
  for (const char* bad : {"127.0.0.1:8000", "ftp://x", "http://", "http://h:0", "http://h:70000",
                          "http://h:", "http://h/path", "http://u@h", "http://[::1"}) {
    EXPECT_EQ(parse_http_endpoint(bad).status().code(), Code::kInvalidArgument) << bad;
  }
}

TEST(WsUrlTest, Parses) {
  auto u = parse_ws_url("ws://127.0.0.1:9000/s/a?from=3");
  ASSERT_TRUE(u.ok()) << u.status().message();
  EXPECT_FALSE(u->tls);
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 9000);
  EXPECT_EQ(u->target, "/s/a?from=3");
  u = parse_ws_url("wss://stream.example.com");
  ASSERT_TRUE(u.ok()) << u.status().message();
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->target, "/");
  u = parse_ws_url("ws://[::1]?x=1");
  ASSERT_TRUE(u.ok()) << u.status().message();
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->target, "/?x=1");
  for (const char* bad : {"http://h/", "ws:/h", "ws://", "ws:///path", "ws://h:0/", "ws://h:x/",
                          "ws://u@h/", "ws://h/a#frag", "ws://h/a b", "ws://h/\x01", "wss://[::1/",
                          "WS://h/"}) {
    EXPECT_EQ(parse_ws_url(bad).status().code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_EQ(parse_ws_url("ws://h/" + std::string(kWsUrlBytesMax, 'a')).status().code(),
            Code::kInvalidArgument);
}

// Found by fuzzing (fuzz/endpoint_fuzz.cc): "http://[[1]:45" was taken with
// the host "[1", which no URL written from it reads back as; a host may not
// carry what would end a Host header either.
TEST(HttpEndpointTest, RefusesHostsNoHeaderCanCarry) {
  for (const char* bad : {"http://[[1]:45", "http://[host]:80", "http://[1.2.3.4]", "http://a]b",
                          "http://a\rb", "http://a\x7f", "http://caf\xc3\xa9"}) {
    EXPECT_EQ(parse_http_endpoint(bad).status().code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_EQ(parse_ws_url("ws://[[1]]/").status().code(), Code::kInvalidArgument);
  EXPECT_TRUE(parse_http_endpoint("http://[fd00:ec2::254]").ok());
}

TEST(HttpEndpointTest, LoopbackHostsAndIpLiterals) {
  for (const char* host : {"localhost", "LOCALHOST", "127.0.0.1", "127.1.2.3", "::1"}) {
    EXPECT_TRUE(is_loopback_host(host)) << host;
  }
  for (const char* host : {"example.com", "10.0.0.1", "::2", "localhost.example.com", ""}) {
    EXPECT_FALSE(is_loopback_host(host)) << host;
  }
  for (const char* host : {"127.0.0.1", "10.0.0.1", "::1", "fe80::1"}) {
    EXPECT_TRUE(is_ip_literal(host)) << host;
  }
  for (const char* host : {"localhost", "dynamodb.us-east-1.amazonaws.com", "[::1]", ""}) {
    EXPECT_FALSE(is_ip_literal(host)) << host;
  }
}

}  // namespace
}  // namespace leasehold::net
