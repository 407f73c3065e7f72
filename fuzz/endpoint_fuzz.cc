// Endpoints and URLs (net/endpoint.h): the HTTP endpoints of AWS services
// and emulators (flags, store URIs, AWS_ENDPOINT_URL...) and the ws:// and
// wss:// URLs of the fleet's upstreams.
//
// The first byte picks the parser; the rest is the URL.
// Properties: an endpoint taken has a scheme of http or https, a host (no
// space or control character: it goes into the Host header) and a port, and written again
// ("scheme://host:port", brackets around an IPv6 literal) reads back the same; a WebSocket URL
// taken has a host, a target starting with '/', no byte a request line cannot carry, and written
// again reads back the same.
#include <cstdint>
#include <string>
#include <string_view>

#include "check.h"
#include "net/endpoint.h"

namespace {

namespace net = leasehold::net;
using leasehold::fuzz::escaped;

std::string authority(const std::string& host, uint16_t port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

void check_http(std::string_view url) {
  const auto e = net::parse_http_endpoint(url);
  if (!e.ok()) return;
  FUZZ_CHECK((e->scheme == "http" || e->scheme == "https") && !e->host.empty() && e->port != 0,
             "endpoint " + escaped(url));
  for (const char c : e->host) {
    const auto byte = static_cast<unsigned char>(c);
    FUZZ_CHECK(byte > 0x20 && byte < 0x7f,
               "a host a Host header cannot carry: " + escaped(e->host));
  }
  const std::string again_text = e->scheme + "://" + authority(e->host, e->port);
  const auto again = net::parse_http_endpoint(again_text);
  FUZZ_CHECK(again.ok(), escaped(again_text) + ", written from " + escaped(url) + ", is refused");
  FUZZ_CHECK_EQ(again->host, e->host, "the host read back");
  FUZZ_CHECK_EQ(again->port, e->port, "the port read back");
  FUZZ_CHECK_EQ(again->scheme, e->scheme, "the scheme read back");
  (void)net::is_loopback_host(e->host);
  (void)net::is_ip_literal(e->host);
}

void check_ws(std::string_view url) {
  const auto u = net::parse_ws_url(url);
  if (!u.ok()) return;
  FUZZ_CHECK(!u->host.empty() && u->port != 0 && u->target.starts_with('/'), "URL " + escaped(url));
  for (const char c : u->target) {
    const auto byte = static_cast<unsigned char>(c);
    FUZZ_CHECK(byte > 0x20 && byte < 0x7f,
               "a target a request line cannot carry: " + escaped(u->target));
  }
  const std::string again_text =
      std::string(u->tls ? "wss://" : "ws://") + authority(u->host, u->port) + u->target;
  const auto again = net::parse_ws_url(again_text);
  FUZZ_CHECK(again.ok(), escaped(again_text) + ", written from " + escaped(url) + ", is refused");
  FUZZ_CHECK(again->tls == u->tls, "tls read back");
  FUZZ_CHECK_EQ(again->host, u->host, "the host read back");
  FUZZ_CHECK_EQ(again->port, u->port, "the port read back");
  FUZZ_CHECK_EQ(again->target, u->target, "the target read back");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view url(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] & 1) {
    check_ws(url);
  } else {
    check_http(url);
  }
  return 0;
}
