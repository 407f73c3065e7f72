// HttpClient over Boost.Beast. Each pooled connection is a DeadlineSocket
// (net/deadline_socket.h), with TLS over it for https: the request is written
// and the reply read with Asio's and Beast's synchronous algorithms on the
// caller's thread, each read and write waiting with poll() until the
// request's deadline. Connections share one io_context, which is never run:
// it only owns the sockets.
//
// Threads: none for an endpoint given as an IP literal. For a host name, one:
// Asio resolves names on a thread of its own per io_context, started on the
// first resolution and joined when the io_context goes. Names are therefore
// resolved on one io_context that the client keeps for its life (Resolver).
#include "net/http_client.h"

#include <strings.h>

#include <algorithm>
#include <vector>

#include "base/duration.h"
#include "base/mutex.h"
#include "net/beast.h"
#include "net/deadline_socket.h"
#include "net/tls.h"

namespace leasehold::net {
namespace {

// Real time: deadlines here bound socket waits (DeadlineSocket), not time a
// Clock was given to measure.
using SteadyClock = std::chrono::steady_clock;
using TlsStream = ssl::stream<DeadlineSocket>;

constexpr uint32_t kHeaderBytesMax = 64 * 1024;

struct Connection {
  // Room for a typical reply, so that it is read with one system call.
  static constexpr size_t kBufferBytes = 16 * 1024;
  Connection() { buffer.reserve(kBufferBytes); }

  std::unique_ptr<DeadlineSocket> plain;
  std::unique_ptr<TlsStream> tls;
  beast::flat_buffer buffer;
  bool connected = false;
  bool reused = false;
  MonoTime idle_since{};

  DeadlineSocket& socket() { return tls ? tls->next_layer() : *plain; }

  // True when the peer closed the idle connection or sent something
  // unsolicited; either way it must not carry a request.
  bool stale() { return socket().stale(); }
};

// Idle connections and the count of open ones, bounded by connections_max.
class Pool {
 public:
  explicit Pool(size_t connections_max, Duration idle_max)
      : connections_max_(connections_max), idle_max_(idle_max) {}

  // A connection for one request: a reused idle one when `fresh` is false
  // and one is usable, else a new unconnected one. Waits until `deadline`.
  Result<std::unique_ptr<Connection>> acquire(MonoTime deadline, bool fresh) {
    std::vector<std::unique_ptr<Connection>> dropped;  // closed outside the lock
    MutexLock lock(mu_);
    for (;;) {
      while (!idle_.empty()) {
        std::unique_ptr<Connection> c = std::move(idle_.back());
        idle_.pop_back();
        if (fresh || SteadyClock::now() - c->idle_since > idle_max_ || c->stale()) {
          dropped.push_back(std::move(c));
          --open_;
          continue;
        }
        c->reused = true;
        return c;
      }
      if (open_ < connections_max_) {
        ++open_;
        return std::make_unique<Connection>();
      }
      if (cv_.wait_until(mu_, deadline) == std::cv_status::timeout && idle_.empty() &&
          open_ >= connections_max_) {
        return unavailable("all " + std::to_string(connections_max_) +
                           " connections stayed busy until the deadline");
      }
    }
  }

  // Returns a connection; it is kept for reuse only when `keep` is true.
  void release(std::unique_ptr<Connection> c, bool keep) {
    {
      MutexLock lock(mu_);
      if (keep) {
        c->idle_since = SteadyClock::now();
        idle_.push_back(std::move(c));
      } else {
        --open_;
      }
    }
    cv_.notify_one();
    // A connection not kept is closed here, outside the lock.
  }

 private:
  const size_t connections_max_;
  const Duration idle_max_;
  Mutex mu_;
  CondVar cv_;
  std::vector<std::unique_ptr<Connection>> idle_ GUARDED_BY(mu_);
  size_t open_ GUARDED_BY(mu_) = 0;
};

// What one attempt on one connection produced.
struct Exchange {
  Result<HttpResponse> response = internal_error("no attempt");
  bool keep_alive = false;
  bool retry_on_fresh = false;  // nothing reached the server; safe to resend
};

// Parses a response straight into an HttpResponse: Beast's own
// response_parser would keep every field in a container of its own first,
// to be copied out again.
class ResponseParser final : public http::basic_parser<false> {
 public:
  // Room for the fields of a typical reply, so that they are stored at once.
  static constexpr size_t kFieldsReserved = 8;

  explicit ResponseParser(HttpResponse& out) : out_(out) { out_.headers.reserve(kFieldsReserved); }

 private:
  using error_code = boost::system::error_code;

  void on_request_impl(http::verb, beast::string_view, beast::string_view, int,
                       error_code&) override {}
  void on_response_impl(int code, beast::string_view, int, error_code&) override {
    out_.status = code;
  }
  void on_field_impl(http::field, beast::string_view name, beast::string_view value,
                     error_code&) override {
    out_.headers.emplace_back(std::string(name), std::string(value));
  }
  void on_header_impl(error_code&) override {}
  // The parser has checked the length against its body limit.
  void on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) override {
    if (length) out_.body.reserve(static_cast<size_t>(*length));
  }
  size_t on_body_impl(beast::string_view body, error_code&) override {
    out_.body.append(body.data(), body.size());
    return body.size();
  }
  void on_chunk_header_impl(std::uint64_t, beast::string_view, error_code&) override {}
  size_t on_chunk_body_impl(std::uint64_t, beast::string_view body, error_code&) override {
    out_.body.append(body.data(), body.size());
    return body.size();
  }
  void on_finish_impl(error_code&) override {}

  HttpResponse& out_;
};

// Name resolution for one client, on one io_context (see the top of the
// file). Resolutions take turns: a name usually comes from a cache in well
// under a millisecond, and is needed only when a connection is opened. A
// caller waits for its turn, and for the answer, until its deadline.
class Resolver {
 public:
  Status resolve(const HttpEndpoint& endpoint, MonoTime deadline, const std::string& where,
                 std::vector<tcp::endpoint>& out) {
    if (!mu_.try_lock_until(deadline)) return unavailable("resolving " + where + ": timed out");
    MutexLock lock(mu_, std::adopt_lock);
    tcp::resolver resolver(ioc_);
    asio::steady_timer timer(ioc_, deadline);
    boost::system::error_code ec;
    bool timed_out = false;
    resolver.async_resolve(endpoint.host, std::to_string(endpoint.port),
                           [&](boost::system::error_code e, tcp::resolver::results_type r) {
                             ec = e;
                             for (const auto& entry : r) out.push_back(entry.endpoint());
                             timer.cancel();
                           });
    timer.async_wait([&](boost::system::error_code e) {
      if (!e) {
        timed_out = true;
        resolver.cancel();
      }
    });
    ioc_.restart();
    ioc_.run();
    if (timed_out) return unavailable("resolving " + where + ": timed out");
    if (ec) return unavailable("resolving " + where + ": " + ec.message());
    return Status::ok_status();
  }

 private:
  TimedMutex mu_;
  asio::io_context ioc_ GUARDED_BY(mu_);
};

class BeastHttpClient final : public HttpClient {
 public:
  BeastHttpClient(HttpClientOptions options, std::unique_ptr<ssl::context> tls_context)
      : options_(std::move(options)),
        tls_context_(std::move(tls_context)),
        pool_(options_.connections_max, options_.idle_max) {
    const HttpEndpoint& e = options_.endpoint;
    bool default_port =
        (e.scheme == "http" && e.port == 80) || (e.scheme == "https" && e.port == 443);
    std::string host = e.host.find(':') != std::string::npos ? "[" + e.host + "]" : e.host;
    host_header_ = default_port ? host : host + ":" + std::to_string(e.port);
    where_ = e.scheme + "://" + host + ":" + std::to_string(e.port);
    // An IP literal is its own address: it needs no resolver, so no thread.
    boost::system::error_code ec;
    const asio::ip::address address = asio::ip::make_address(e.host, ec);
    if (!ec) literal_.emplace_back(address, e.port);
  }

  Result<HttpResponse> send(const HttpRequest& request, Duration timeout) override;
  const std::string& host_header() const override { return host_header_; }

 private:
  Result<std::string> build(const HttpRequest& request) const;
  Status connect(Connection& c, MonoTime deadline) const;
  // The addresses to try: the literal, or what the name resolves to.
  Status addresses(MonoTime deadline, std::vector<tcp::endpoint>& out) const;
  Status handshake(Connection& c) const;
  // `head`: the request is a HEAD, whose reply has no body whatever its
  // Content-Length says.
  Exchange exchange(Connection& c, const std::string& wire, MonoTime deadline, Duration timeout,
                    bool head) const;
  Exchange read_response(Connection& c, Duration timeout, bool head) const;

  // Calls `f` with whichever stream (plain or TLS) the connection uses.
  template <typename F>
  static void with_stream(Connection& c, F&& f) {
    if (c.tls) {
      f(*c.tls);
    } else {
      f(*c.plain);
    }
  }

  const HttpClientOptions options_;
  const std::unique_ptr<ssl::context> tls_context_;  // null for plain HTTP
  // Owns the sockets of every connection; never run. Before the pool, so
  // that the pool's connections go first.
  mutable asio::io_context sockets_;
  Pool pool_;
  std::string host_header_;
  std::string where_;                   // for error messages: scheme://host:port
  std::vector<tcp::endpoint> literal_;  // the endpoint, when its host is an IP literal
  mutable Resolver resolver_;           // otherwise
};

Result<HttpResponse> BeastHttpClient::send(const HttpRequest& request, Duration timeout) {
  const MonoTime deadline = SteadyClock::now() + timeout;
  LEASEHOLD_ASSIGN_OR_RETURN(const std::string wire, build(request));
  for (int attempt = 0;; ++attempt) {
    LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<Connection> conn,
                               pool_.acquire(deadline, attempt > 0));
    Exchange ex = exchange(*conn, wire, deadline, timeout, request.method == "HEAD");
    pool_.release(std::move(conn), ex.keep_alive);
    if (ex.retry_on_fresh && attempt == 0) continue;
    return std::move(ex.response);
  }
}

// Bytes that would end a request line or a header line early. (One memchr
// for each: std::string::find_first_of calls memchr once for every byte of
// the text, and an Authorization value is hundreds of bytes.)
bool has_line_break(std::string_view text) {
  return text.find('\r') != std::string_view::npos || text.find('\n') != std::string_view::npos;
}

bool is_header_name(std::string_view name) {
  return !name.empty() && std::none_of(name.begin(), name.end(), [](char c) {
    return c == ':' || c == ' ' || c == '\r' || c == '\n';
  });
}

// The request as it goes on the wire, written as one buffer: for a message
// this small, Beast's generic serializer (a field list to allocate, buffer
// views to walk) costs more CPU than the request's own bytes.
Result<std::string> BeastHttpClient::build(const HttpRequest& request) const {
  const http::verb verb = http::string_to_verb(request.method);
  if (verb == http::verb::unknown) return invalid_argument("unknown HTTP method");
  if (request.target.empty() || request.target.front() != '/' || has_line_break(request.target) ||
      request.target.find(' ') != std::string::npos) {
    return invalid_argument("HTTP target must be a path starting with '/'");
  }
  std::string wire;
  wire.reserve(256 + request.body.size());
  wire.append(http::to_string(verb)).append(" ").append(request.target).append(" HTTP/1.1\r\n");
  bool has_host = false, has_length = false;
  for (const auto& [name, value] : request.headers) {
    // Never echo the header itself: it may be a credential.
    if (!is_header_name(name) || has_line_break(value)) {
      return invalid_argument("malformed HTTP header");
    }
    has_host = has_host || strcasecmp(name.c_str(), "host") == 0;
    has_length = has_length || strcasecmp(name.c_str(), "content-length") == 0;
    wire.append(name).append(": ").append(value).append("\r\n");
  }
  if (!has_host) wire.append("Host: ").append(host_header_).append("\r\n");
  if (!has_length) {
    wire.append("Content-Length: ").append(std::to_string(request.body.size())).append("\r\n");
  }
  wire.append("\r\n").append(request.body);
  return wire;
}

Status BeastHttpClient::addresses(MonoTime deadline, std::vector<tcp::endpoint>& out) const {
  if (!literal_.empty()) {
    out = literal_;
    return Status::ok_status();
  }
  return resolver_.resolve(options_.endpoint, deadline, where_, out);
}

Status BeastHttpClient::connect(Connection& c, MonoTime deadline) const {
  if (tls_context_) {
    c.tls = std::make_unique<TlsStream>(sockets_, *tls_context_);
  } else {
    c.plain = std::make_unique<DeadlineSocket>(sockets_);
  }
  std::vector<tcp::endpoint> endpoints;
  LEASEHOLD_RETURN_IF_ERROR(addresses(deadline, endpoints));
  c.socket().expires_at(deadline);
  const boost::system::error_code ec = c.socket().connect(endpoints);
  if (ec == beast::error::timeout) return unavailable("connecting to " + where_ + ": timed out");
  if (ec) return unavailable("connecting to " + where_ + ": " + ec.message());
  if (c.tls) LEASEHOLD_RETURN_IF_ERROR(handshake(c));
  c.connected = true;
  return Status::ok_status();
}

// REQUIRES: the socket's deadline is set.
Status BeastHttpClient::handshake(Connection& c) const {
  LEASEHOLD_RETURN_IF_ERROR(prepare_client_ssl(c.tls->native_handle(), options_.endpoint.host, where_));
  boost::system::error_code ec;
  c.tls->handshake(ssl::stream_base::client, ec);
  if (ec == beast::error::timeout)
    return unavailable("TLS handshake with " + where_ + ": timed out");
  if (ec) return unavailable("TLS handshake with " + where_ + " failed: " + ec.message());
  return Status::ok_status();
}

Exchange BeastHttpClient::exchange(Connection& c, const std::string& wire, MonoTime deadline,
                                   Duration timeout, bool head) const {
  Exchange ex;
  if (!c.connected) {
    Status s = connect(c, deadline);
    if (!s.ok()) {
      ex.response = s;
      return ex;
    }
  }
  boost::system::error_code ec;
  c.socket().expires_at(deadline);
  const size_t sent_before = c.socket().bytes_sent();
  with_stream(c, [&](auto& stream) { asio::write(stream, asio::buffer(wire), ec); });
  if (ec && c.socket().bytes_sent() == sent_before) {
    // The kernel took no byte of the request, so the server cannot act on it.
    ex.retry_on_fresh = c.reused && ec != beast::error::timeout;
    ex.response = unavailable("sending to " + where_ + ": " +
                              (ec == beast::error::timeout ? "timed out" : ec.message()));
    return ex;
  }
  if (ec) {
    ex.response = unknown_outcome("sending to " + where_ + " failed part-way (" + ec.message() +
                                  "); the request may have been applied");
    return ex;
  }
  return read_response(c, timeout, head);
}

Exchange BeastHttpClient::read_response(Connection& c, Duration timeout, bool head) const {
  Exchange ex;
  HttpResponse response;
  ResponseParser parser(response);
  parser.skip(head);
  parser.header_limit(kHeaderBytesMax);
  parser.body_limit(options_.response_bytes_max);
  boost::system::error_code ec;
  // The deadline set for the write still holds for the reads.
  with_stream(c, [&](auto& stream) { http::read(stream, c.buffer, parser, ec); });
  if (ec == http::error::body_limit || ec == http::error::buffer_overflow ||
      ec == http::error::header_limit) {
    // The server received the request and answered: a write may have applied.
    ex.response = unknown_outcome("response from " + where_ + " exceeds " +
                                  std::to_string(options_.response_bytes_max) +
                                  " bytes; the request may have been applied");
    return ex;
  }
  if (ec == beast::error::timeout) {
    ex.response = unknown_outcome("no response from " + where_ + " within " +
                                  format_duration(timeout) + "; the request may have been applied");
    return ex;
  }
  if (ec) {
    ex.response = unknown_outcome("reading the response from " + where_ + ": " + ec.message() +
                                  "; the request may have been applied");
    return ex;
  }
  ex.keep_alive = parser.keep_alive() && c.buffer.size() == 0;
  ex.response = std::move(response);
  return ex;
}

}  // namespace

std::optional<std::string_view> HttpResponse::header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (n.size() == name.size() && strncasecmp(n.data(), name.data(), n.size()) == 0) return v;
  }
  return std::nullopt;
}

Status validate_http_client_options(const HttpClientOptions& options) {
  const HttpEndpoint& e = options.endpoint;
  if (e.scheme != "http" && e.scheme != "https") {
    return invalid_argument("endpoint scheme must be http or https");
  }
  if (e.host.empty() || e.port == 0) return invalid_argument("endpoint needs a host and a port");
  if (e.scheme == "http" && !is_loopback_host(e.host) && !options.allow_plain_http) {
    return invalid_argument("plain http:// is allowed only for loopback hosts (got " + e.host +
                            "); use https://");
  }
  if (options.connections_max == 0) return invalid_argument("connections_max must be at least 1");
  return Status::ok_status();
}

Result<std::unique_ptr<HttpClient>> HttpClient::open(HttpClientOptions options) {
  LEASEHOLD_RETURN_IF_ERROR(validate_http_client_options(options));
  std::unique_ptr<ssl::context> tls_context;
  if (options.endpoint.scheme == "https") {
    LEASEHOLD_ASSIGN_OR_RETURN(tls_context, make_client_tls_context(options.ca_file));
  }
  return std::unique_ptr<HttpClient>(
      std::make_unique<BeastHttpClient>(std::move(options), std::move(tls_context)));
}

}  // namespace leasehold::net
