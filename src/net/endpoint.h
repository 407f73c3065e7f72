// HttpEndpoint: the scheme, host and port an HTTP client talks to, parsed
// from a URL such as "https://dynamodb.us-east-1.amazonaws.com"; WsUrl: the
// same and the request target of a WebSocket URL ("ws://host:port/s/a?from=3").
//
// Plain C++ (no Boost in the interface). Pure functions, safe from any
// thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "leasehold/status.h"

namespace leasehold::net {

struct HttpEndpoint {
  std::string scheme;  // "http" or "https"
  std::string host;    // a name or an IP literal, without brackets
  uint16_t port = 0;
};

// Parses "http://127.0.0.1:8000" or "https://dynamodb.us-east-1.amazonaws.com"
// (default ports 80/443; IPv6 literals in brackets; an optional trailing "/").
// Paths, queries and user info are refused with kInvalidArgument.
Result<HttpEndpoint> parse_http_endpoint(std::string_view url);

inline constexpr size_t kWsUrlBytesMax = 2048;

struct WsUrl {
  bool tls = false;    // wss://
  std::string host;    // a name or an IP literal, without brackets
  uint16_t port = 0;   // 80 or 443 when the URL names none
  std::string target;  // path and query, at least "/"
};

// Parses "ws://host[:port][/path][?query]" or "wss://...". kInvalidArgument
// for another scheme, no host, a bad port, user info, a fragment, a space, a
// control or non-ASCII character, or more than kWsUrlBytesMax bytes.
Result<WsUrl> parse_ws_url(std::string_view url);

// True for 127.0.0.0/8, ::1 and "localhost".
bool is_loopback_host(std::string_view host);

// True when `host` is an IPv4 or IPv6 literal (no brackets), which needs no
// name resolution and gets no SNI.
bool is_ip_literal(std::string_view host);

}  // namespace leasehold::net
