// HttpClient: synchronous HTTP/1.1 requests to one endpoint over a bounded
// pool of keep-alive connections, for the store backends that speak HTTP
// (DynamoDB, the container credentials endpoint) and any other client.
//
// One client talks to one endpoint (scheme, host, port). HTTPS verifies the
// server's certificate against the system trust store, with SNI and hostname
// verification; plain HTTP is refused unless the host is loopback. Errors are
// mapped so the lease layer can tell "nothing was sent" from "sent, outcome
// unknown": failing to resolve, connect or finish the TLS handshake gives
// kUnavailable; a timeout or a dropped connection after any byte of the
// request was written gives kUnknownOutcome. A request is retried (once, on a
// fresh connection) only when writing it to a reused idle connection failed
// before the kernel accepted a single byte; it is never retried after that.
// Error messages never contain request headers or bodies (they carry
// credentials). HttpClient is safe for concurrent use by many threads; at
// most `connections_max` requests are in flight at once, and further callers
// wait for a free connection until their own deadline. A request runs on its
// caller's thread, with no hand-off. The client starts no thread for an
// endpoint given as an IP literal; for a host name it has one, on which Asio
// resolves names, started with the first connection and kept for the
// client's life.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "leasehold/clock.h"
#include "leasehold/status.h"
#include "net/endpoint.h"

namespace leasehold::net {

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

struct HttpRequest {
  std::string method = "POST";  // "GET", "POST", "PUT", "DELETE", ...
  std::string target = "/";     // origin-form: path and query
  // Host and Content-Length are added by the client when absent.
  HttpHeaders headers;
  std::string body;
};

struct HttpResponse {
  int status = 0;
  HttpHeaders headers;
  std::string body;

  // The first header named `name` (compared case-insensitively), if any.
  std::optional<std::string_view> header(std::string_view name) const;
};

struct HttpClientOptions {
  HttpEndpoint endpoint;
  size_t connections_max = 16;
  size_t response_bytes_max = size_t{16} << 20;
  // A pooled connection idle for longer is closed instead of reused, so the
  // client gives up a connection before the server's keep-alive timeout does
  // (Node's default, which dynalite uses, is 5 s).
  Duration idle_max = std::chrono::seconds(4);
  // PEM file of trusted CAs used instead of the system store (tests only).
  std::string ca_file;
  // Plain http:// to a host that is not loopback. Only for endpoints that
  // are plain HTTP by design on a link-local address (the container
  // credentials endpoint); never for DynamoDB itself.
  bool allow_plain_http = false;
};

// The checks HttpClient::open() makes before it builds anything (all but
// loading ca_file), for callers that validate a configuration without
// opening it: kInvalidArgument for an unknown scheme, a missing host or port,
// plain HTTP to a non-loopback host, or connections_max == 0.
Status validate_http_client_options(const HttpClientOptions& options);

class HttpClient {
 public:
  // Fails with kInvalidArgument as validate_http_client_options() does, or
  // for an unreadable ca_file.
  static Result<std::unique_ptr<HttpClient>> open(HttpClientOptions options);

  virtual ~HttpClient() = default;

  // Sends `request` and reads the whole response before `timeout` elapses
  // (waiting for a free connection counts). Any HTTP status is a success;
  // the caller interprets it. Failures: kInvalidArgument (bad method or
  // header), kUnavailable (nothing was sent), kUnknownOutcome (the request
  // was sent, at least in part, and no complete reply came back, or the
  // reply exceeded response_bytes_max: either way the server may have acted).
  virtual Result<HttpResponse> send(const HttpRequest& request, Duration timeout) = 0;

  // The Host header value the client sends ("host" or "host:port" when the
  // port is not the scheme's default); request signers must sign this value.
  virtual const std::string& host_header() const = 0;
};

}  // namespace leasehold::net
