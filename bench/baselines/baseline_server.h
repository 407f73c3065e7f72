// BaselineServer: the least an HTTP/1.1 server on Boost.Beast can do, as
// the yardstick `leasehold bench http` measures the real server against in
// the same run. It is Beast's asynchronous HTTP server example reduced to
// the minimum: an acceptor, and per connection a session on a strand of its
// own that reads a request (Beast's parser, the whole message) and writes
// fixed bytes back, captured beforehand from the real server's reply to the
// same request. No router, no handler, no timeouts, no limits beyond the
// parser's defaults: whatever the request, the answer is `reply`.
//
// Like the real server it keeps a connection alive for at most
// `requests_per_connection_max` requests: the last one gets `last_reply`
// (the real server's reply that says Connection: close) and the connection
// is shut down, so that a client reconnects as often against either.
//
// stop() closes the acceptor and every connection and joins the I/O
// threads; the destructor stops too. Call stop() from one thread, not from
// the server's own.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "leasehold/status.h"

namespace leasehold::bench {

struct BaselineOptions {
  std::string host = "127.0.0.1";              // an IP address
  uint16_t port = 0;                           // 0: any free port (see port())
  size_t threads = 1;                          // I/O threads, at least 1
  std::string reply;                           // a complete response, written as it is
  std::string last_reply;                      // the same, saying Connection: close
  size_t requests_per_connection_max = 1'000;  // at least 1
};

class BaselineServer {
 public:
  // Binds and starts the I/O threads. kInvalidArgument for a bad option,
  // kUnavailable if the address cannot be bound.
  static Result<std::unique_ptr<BaselineServer>> start(BaselineOptions options);
  virtual ~BaselineServer() = default;
  virtual uint16_t port() const = 0;
  virtual void stop() = 0;
};

}  // namespace leasehold::bench
