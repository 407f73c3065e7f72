// Server: HTTP/1.1 (and HTTPS) on Boost.Beast, asynchronous, on a fixed
// number of I/O threads. Everything has a limit (ServerLimits, each a named
// constant with a test). Handlers come from a Router; the server's owner
// supplies hooks for what the transport does not decide itself: admitting a
// request (authentication), recording a started and an answered one (access
// log, metrics) and running blocking work (the runtime's BlockingPool).
//
// A request is parsed and routed on an I/O thread (404 and 405 are answered
// there); admit and the handler then run on the blocking pool when the route
// blocks or admit may block on this request (ServerHooks::admit_blocks),
// inline on the I/O thread otherwise. Every response carries X-Request-Id,
// the security headers (CSP, nosniff, Referrer-Policy, X-Frame-Options, and
// Strict-Transport-Security over TLS) and Cache-Control: no-store unless the
// handler set one. The server's threads are its `threads` I/O threads, no
// others.
//
// An upload route (RouteOptions::upload_dir) is admitted before its body
// is read: admit runs once the header is in (on the blocking pool if
// admit_blocks says so), and a refused request gets its answer with not a
// byte of the body read or written to disk (a client that sent Expect:
// 100-continue never sends it). Then the body is streamed into a new file,
// and the handler runs with Request::body_file. A response with
// Response::file_path is streamed from disk. Both streamed bodies run under
// the transfer limits below instead of request_timeout alone.
//
// stop() stops accepting, lets requests in flight finish (up to
// drain_timeout), closes idle keep-alive connections and returns; the
// destructor stops too. Safe to call stop() from any thread (a signal
// watcher).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "leasehold/clock.h"
#include "leasehold/logger.h"
#include "leasehold/random.h"
#include "leasehold/status.h"
#include "server/http.h"
#include "server/router.h"

namespace leasehold::server {

// Named limits; every one is at least 1 (Server::start() refuses 0).
inline constexpr size_t kHeaderBytesMax = 8 * 1024;
inline constexpr size_t kConnectionsMax = 10'000;
inline constexpr size_t kKeepAliveRequestsMax = 1'000;
inline constexpr std::chrono::milliseconds kHeaderTimeout{10'000};
inline constexpr std::chrono::milliseconds kRequestTimeout{30'000};
inline constexpr std::chrono::milliseconds kIdleTimeout{60'000};
inline constexpr std::chrono::milliseconds kDrainTimeout{5'000};
inline constexpr std::chrono::milliseconds kTransferIdleTimeout{30'000};
inline constexpr size_t kTransferRateMinBytesPerS = 16 * 1024;

struct ServerLimits {
  // The request line and header fields; more is 431, then the connection
  // closes.
  size_t header_bytes_max = kHeaderBytesMax;
  // Open connections; one more is closed as soon as it is accepted.
  size_t connections_max = kConnectionsMax;
  size_t keep_alive_requests_max = kKeepAliveRequestsMax;  // then Connection: close
  // The whole header, from the request's first byte (and a new connection's
  // TLS handshake, and its wait for a first request); then the connection is
  // closed without an answer.
  std::chrono::milliseconds header_timeout = kHeaderTimeout;
  // The body, the handler and the response; a handler on the blocking pool
  // that overruns it gets its connection a 503 and closed (its result is
  // dropped when it returns).
  std::chrono::milliseconds request_timeout = kRequestTimeout;
  std::chrono::milliseconds idle_timeout = kIdleTimeout;    // between keep-alive requests
  std::chrono::milliseconds drain_timeout = kDrainTimeout;  // stop(): in-flight requests
  // A streamed body (an upload route's request body, a file response's
  // body) may take longer than request_timeout as long as it moves: its
  // deadline is request_timeout from its start plus one second for every
  // transfer_rate_min_bytes_per_s bytes moved so far, so a transfer that
  // keeps above that rate never reaches it; and each read or write must
  // move a byte within transfer_idle_timeout. Past either, the connection
  // closes (the request is dropped, an upload's file removed). Once an
  // upload's body is in, the handler and the response get request_timeout
  // afresh.
  std::chrono::milliseconds transfer_idle_timeout = kTransferIdleTimeout;
  size_t transfer_rate_min_bytes_per_s = kTransferRateMinBytesPerS;
};

struct ServerOptions {
  std::string host = "127.0.0.1";           // an IP address, or a name resolved once at start
  uint16_t port = 8080;                     // 0: any free port (see port())
  size_t threads = 0;                       // I/O threads; 0: the number of cores
  std::string tls_cert_file, tls_key_file;  // both or neither (PEM)
  ServerLimits limits;
  // Injected services; null means RealClock (elapsed times for `answered`),
  // SystemRandom (where request IDs start) and no logging (handler
  // exceptions, refused connections). Not owned; must outlive the server.
  Clock* clock = nullptr;
  Random* random = nullptr;
  Logger* logger = nullptr;
};

// A request the connection dropped before it was answered (the client left,
// a timeout, stop() past drain_timeout) reaches `answered` with this status.
inline constexpr int kStatusDropped = 0;

// Hooks run on the I/O threads unless said otherwise; they must be safe to
// call from several threads at once.
struct ServerHooks {
  // Runs before the handler of every matched route (on the blocking pool
  // when the route or admit_blocks says so): authenticates, fills
  // request.caller, and returns a Response to send instead (401, 403, ...)
  // or nullopt to go on.
  std::function<std::optional<Response>(Request&, const Route&)> admit;
  // Whether `admit` may block on this request, once it is read: it would
  // wait on a store's network round trip or lock. Such a request runs admit
  // and its handler on the blocking pool; one that neither may block runs
  // both on the I/O thread. Null: admit is taken to block on every route
  // that needs credentials, and on no other (what the route's Access says,
  // whatever the request carries).
  std::function<bool(const Request&, const Route&)> admit_blocks;
  // Called once per request when its first byte has arrived, before its
  // header is parsed: the request holds only request_id, client_address and
  // tls. Exactly one `answered` with the same request_id follows, whatever
  // becomes of the request.
  std::function<void(const Request&)> started;
  // Called once per started request, when it ends, with the time from its
  // first byte: after the response is written (or the write failed), the
  // transport's own answers (400, 404, 413, 431, 503, ...) included, where
  // the request holds what was parsed of it; or with a response of status
  // kStatusDropped (and nothing else) when the connection closed without an
  // answer. The response is the one the handler (or the transport) made:
  // its status, its own header fields and its body, without the fields the
  // transport adds when it writes it (X-Request-Id, the security headers,
  // the framing). A handler on the blocking pool that overruns
  // request_timeout still runs after its 503 has ended the request.
  std::function<void(const Request&, const Response&, std::chrono::nanoseconds elapsed)> answered;
  // Runs `job` on a thread that may block; false if it cannot be queued
  // (the server answers 503 with Retry-After). Required.
  std::function<bool(std::function<void()> job)> submit_blocking;
};

class Server {
 public:
  // Binds and starts the I/O threads. kInvalidArgument for bad options (a
  // TLS file that cannot be read, a limit of 0, no submit_blocking hook,
  // ...), kUnavailable if the address cannot be bound.
  // REQUIRES: `router` outlives the server, and no route is added to it any
  // more.
  static Result<std::unique_ptr<Server>> start(ServerOptions options, const Router& router,
                                               ServerHooks hooks);
  // Stops, as stop() does. REQUIRES: not called on one of the server's threads.
  virtual ~Server() = default;
  virtual uint16_t port() const = 0;  // the bound port
  // Returns once the I/O threads are joined: every handler has returned,
  // including one still running on the blocking pool past drain_timeout
  // (its connection is closed by then), since handlers may use what the
  // caller destroys next. Called on an I/O thread (from a handler), it only
  // begins the stop; wait() elsewhere then blocks until it is done.
  // REQUIRES: not called from a handler on the blocking pool (it would wait
  // for itself).
  virtual void stop() = 0;
  // Blocks until stop() has finished.
  virtual void wait() = 0;
};

}  // namespace leasehold::server
