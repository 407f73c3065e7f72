// The load generator of `leasehold bench http` and `bench movies`: HTTP/1.1
// load on keep-alive connections to a server on 127.0.0.1, on Beast's
// asynchronous client operations. Closed-loop, each connection sends the
// next request as soon as it has read the reply to the previous one; paced
// (HttpLoadOptions::interval), it sends one every interval, as a page that
// polls does. Every reply is checked against the expected status (and
// body). A reply that says Connection: close
// (a server's keep-alive limit) makes its connection reconnect; a
// connection that fails (refused, reset, a reply past kReplyTimeout, a
// wrong reply) counts one failure and ends.
//
// run_http_load() runs all of its connections on one io_context on the
// calling thread, and returns when the last has finished its reply after
// the window: a client thread of its own, apart from the server's. The
// replies are timed with the Clock given, which must be the real one: the
// window also ends on an Asio timer on the steady clock.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/clock.h"
#include "leasehold/status.h"

namespace leasehold::bench {

// The longest a request waits for its reply before its connection fails.
inline constexpr std::chrono::seconds kReplyTimeout{10};

struct HttpLoadOptions {
  uint16_t port = 0;       // on 127.0.0.1
  size_t connections = 1;  // at least 1
  std::string request;     // one complete request, sent as it is each time
  int expected_status = 200;
  std::string expected_body;
  bool check_body = true;  // false: any body will do (it changes as the server's state does)
  // Zero: closed loop. Else each connection sends a request every
  // `interval` (or as soon as the reply comes, if that is later), the
  // connections' first requests spread evenly over the first interval.
  Duration interval{};
  Duration warmup{};  // load before the window; its replies are checked, not counted
  Duration window{};  // the timed window; at least 1 ns
};

struct HttpLoadResult {
  int64_t requests = 0;  // good replies that arrived within the window
  // Wrong replies, and connections lost other than after a reply that said
  // Connection: close (warm-up included).
  int64_t failures = 0;
  int64_t reconnects = 0;  // after a reply that said Connection: close
  // From send to reply read, of each request counted in `requests`.
  std::vector<int64_t> latencies_ns;
};

// REQUIRES: options as documented above.
HttpLoadResult run_http_load(const HttpLoadOptions& options, Clock& clock);

// One reply as it came over the wire.
struct CapturedReply {
  std::string bytes;  // the whole response, exactly as received
  int status = 0;
  std::string body;
};

// Sends `request` on a new connection to 127.0.0.1:`port` and returns the
// first reply, within kReplyTimeout. kUnavailable if the connection or the
// exchange fails, kInternal if the reply is not HTTP.
Result<CapturedReply> capture_reply(uint16_t port, std::string_view request);

}  // namespace leasehold::bench
