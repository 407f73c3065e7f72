// HttpEndpoint and WebSocket URL parsing; Asio only to read IP literals.
#include "net/endpoint.h"

#include <strings.h>

#include <charconv>

#include "net/beast.h"

namespace leasehold::net {
namespace {

// The port after "host:" (or "[v6]:"); the scheme's default when absent.
Result<uint16_t> parse_port(std::string_view text, bool present, uint16_t default_port) {
  if (!present) return default_port;
  unsigned port = 0;
  auto [end, err] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (err != std::errc() || end != text.data() + text.size() || port == 0 || port > 65535) {
    return invalid_argument("endpoint port must be 1..65535");
  }
  return static_cast<uint16_t>(port);
}

// "host", "host:port", "[v6]" or "[v6]:port"; the host and port only.
Result<HttpEndpoint> parse_authority(std::string_view rest, uint16_t default_port) {
  HttpEndpoint e;
  std::string_view port_text;
  bool has_port = false;
  if (rest.front() == '[') {
    size_t close = rest.find(']');
    if (close == std::string_view::npos) return invalid_argument("endpoint has an unclosed '['");
    e.host = std::string(rest.substr(1, close - 1));
    // Brackets hold an IPv6 literal and nothing else ("[[1]" is no host).
    if (e.host.find(':') == std::string::npos || !is_ip_literal(e.host)) {
      return invalid_argument("endpoint: brackets that do not hold an IPv6 address");
    }
    rest.remove_prefix(close + 1);
    if (!rest.empty() && rest.front() != ':') return invalid_argument("endpoint: junk after ']'");
    has_port = !rest.empty();
    if (has_port) port_text = rest.substr(1);
  } else {
    size_t colon = rest.find(':');
    e.host = std::string(rest.substr(0, colon));
    has_port = colon != std::string_view::npos;
    if (has_port) port_text = rest.substr(colon + 1);
  }
  if (e.host.empty()) return invalid_argument("endpoint has no host");
  // The host goes into the Host header and the TLS name: no byte that would
  // end either, and no bracket outside an IPv6 literal's.
  for (const char c : e.host) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte <= 0x20 || byte >= 0x7f || (c == '[' || c == ']')) {
      return invalid_argument(
          "endpoint host has a space, a control character, a bracket or a "
          "non-ASCII character");
    }
  }
  LEASEHOLD_ASSIGN_OR_RETURN(e.port, parse_port(port_text, has_port, default_port));
  return e;
}

}  // namespace

bool is_loopback_host(std::string_view host) {
  if (host.size() == 9 && strncasecmp(host.data(), "localhost", 9) == 0) return true;
  boost::system::error_code ec;
  const asio::ip::address address = asio::ip::make_address(std::string(host), ec);
  return !ec && address.is_loopback();
}

bool is_ip_literal(std::string_view host) {
  boost::system::error_code ec;
  asio::ip::make_address(std::string(host), ec);
  return !ec;
}

Result<HttpEndpoint> parse_http_endpoint(std::string_view url) {
  size_t sep = url.find("://");
  if (sep == std::string_view::npos)
    return invalid_argument("endpoint must be http:// or https://");
  std::string scheme(url.substr(0, sep));
  if (scheme != "http" && scheme != "https") {
    return invalid_argument("endpoint scheme must be http or https");
  }
  std::string_view rest = url.substr(sep + 3);
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.empty() || rest.find_first_of("/?#@ ") != std::string_view::npos) {
    return invalid_argument("endpoint must be scheme://host[:port] without path or user info");
  }
  HttpEndpoint e;
  LEASEHOLD_ASSIGN_OR_RETURN(e, parse_authority(rest, scheme == "https" ? 443 : 80));
  e.scheme = std::move(scheme);
  return e;
}

Result<WsUrl> parse_ws_url(std::string_view url) {
  if (url.size() > kWsUrlBytesMax) {
    return invalid_argument("WebSocket URL is longer than " + std::to_string(kWsUrlBytesMax) +
                            " bytes");
  }
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      return invalid_argument("WebSocket URL has a space, a control or a non-ASCII character");
    }
  }
  WsUrl ws;
  std::string_view rest;
  if (url.starts_with("ws://")) {
    rest = url.substr(5);
  } else if (url.starts_with("wss://")) {
    ws.tls = true;
    rest = url.substr(6);
  } else {
    return invalid_argument("WebSocket URL must start with ws:// or wss://");
  }
  if (rest.find('#') != std::string_view::npos) {
    return invalid_argument("WebSocket URL must not have a fragment (#)");
  }
  size_t target = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, target);
  if (authority.find('@') != std::string_view::npos) {
    return invalid_argument("WebSocket URL must not carry user info (user@host)");
  }
  if (authority.empty()) return invalid_argument("WebSocket URL has no host");
  HttpEndpoint e;
  LEASEHOLD_ASSIGN_OR_RETURN(e, parse_authority(authority, ws.tls ? 443 : 80));
  ws.host = std::move(e.host);
  ws.port = e.port;
  if (target == std::string_view::npos) {
    ws.target = "/";
  } else {
    ws.target = std::string(rest.substr(target));
    if (ws.target.front() == '?') ws.target.insert(ws.target.begin(), '/');
  }
  return ws;
}

}  // namespace leasehold::net
