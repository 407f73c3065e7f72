// Server on Boost.Beast, after Beast's advanced_server example: an acceptor
// on the first I/O thread, and per connection a Session that reads a
// request, answers it and loops while the connection is kept alive.
// Every limit of ServerLimits is applied where the session is built and
// checked before the bytes it bounds are read: the header within
// header_bytes_max and header_timeout, the body within the route's
// body_bytes_max (a Content-Length over it is refused before a byte of the
// body is read) and request_timeout.
//
// Streamed bodies: an upload route's body is parsed through a small buffer
// (Beast's buffer_body) and appended to an UploadFile, after admission; a
// response's file is read in parts with pread and written after its header.
// Neither ever holds more than kTransferBufferBytes of the body; both run
// under the transfer limits (transfer_deadline()). The file writes and reads
// are ordinary blocking calls on the I/O thread, as Beast's own file_body
// makes them: on a local disk they cost less than the socket operations
// around them. A response's BodyStream is different: it may wait on a store,
// so each of its parts is made by a job on the blocking pool and written
// from the session's thread as one chunk (Beast's chunk encoding), the next
// part asked for once it is written; a part that fails or comes too late
// closes the connection before the last chunk is sent.
//
// Per request, the transport's own work is kept small, since on a route
// that answers from memory it is most of what a request costs: one timer
// per session bounds every socket operation (set_io_deadline()), instead of
// Beast's tcp_stream, which arms and cancels a timer around each read and
// write; a header that came whole with the bytes already read is parsed at
// once rather than by an asynchronous read that finds nothing more to read;
// and the response's status line and header fields are written into one
// buffer the session keeps (the security headers, the same on every
// response, written once for the process), sent with the body in one
// gathered write.
//
// Threads: each of the `threads` I/O threads runs an io_context of its own,
// and each connection lives on one of them, given out in turn as they are
// accepted: a session's handlers run on one thread, in order, with no strand
// to pass through and no scheduler shared with another thread (on a
// two-core machine, one io_context shared by the threads cost a sixth more
// CPU per request, in locking, waking threads and strand dispatch). The price
// is that a connection waits while another of its thread is served, which is
// why whatever may block runs on the pool (below) and only short work (a
// read from memory or a local file) runs inline. A handler
// that may block (RouteOptions::blocking), or whose admission may
// (ServerHooks::admit_blocks), runs with its admission on the owner's
// blocking pool, and its response is written from the session's thread. A
// pool job holds work on the session's io_context, so the I/O threads
// outlive every handler.
#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cassert>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <exception>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "base/mutex.h"
#include "net/beast.h"
#include "server/errors.h"
#include "server/files.h"
#include "server/range.h"
#include "server/server.h"
#include "server/target.h"
#include "server/tls_context.h"

namespace leasehold::server {
namespace {

namespace asio = net::asio;
namespace beast = net::beast;
namespace http = net::http;
namespace ssl = net::ssl;
using tcp = net::tcp;
using error_code = boost::system::error_code;

// How much a session reads at once while it waits for a request's first byte.
constexpr size_t kFirstReadBytes = 4096;
// After accept() fails (out of file descriptors), the acceptor waits this
// long before it tries again, rather than spin.
constexpr std::chrono::milliseconds kAcceptRetryDelay{50};
// The most a TLS connection waits for the client's close_notify.
constexpr std::chrono::milliseconds kTlsShutdownTimeout{1'000};
// The most I/O threads a server may have.
constexpr size_t kThreadsMax = 256;
// The most of a streamed body (an upload, a file response) a session holds
// at once.
constexpr size_t kTransferBufferBytes = 64 * 1024;
// A response body up to this size is copied after the header and sent with
// it from one buffer, which costs less than a gathered write of two.
constexpr size_t kCopiedBodyBytesMax = 4 * 1024;
// Past this, the credit a streamed body earns by moving bytes stops growing
// (it keeps the deadline's arithmetic far from overflowing).
constexpr std::chrono::hours kTransferCreditMax{24 * 365};

constexpr std::string_view kStrictTransportSecurity = "max-age=31536000";
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// A handler's response that can be written as it is: a final status, header
// names that are tokens and values without control characters (no header
// injection).
bool is_well_formed(const Response& response) {
  if (response.status < 200 || response.status > 599) return false;
  return std::ranges::all_of(response.headers, [](const auto& header) {
    const auto& [name, value] = header;
    return !name.empty() && std::ranges::all_of(name, is_token_char) &&
           std::ranges::none_of(value, [](char c) {
             const auto byte = static_cast<unsigned char>(c);
             return (byte < 0x20 && c != '\t') || byte == 0x7f;
           });
  });
}

bool equal_ignoring_case(std::string_view a, std::string_view b) { return beast::iequals(a, b); }

// The header fields every response carries that are the same on every
// response: written out once.
constexpr std::string_view kSecurityHeaders =
    "Content-Security-Policy: "
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'\r\n"
    "X-Content-Type-Options: nosniff\r\n"
    "Referrer-Policy: same-origin\r\n"
    "X-Frame-Options: DENY\r\n";

// The fields the transport writes itself, whatever the handler set: the
// framing, X-Request-Id and the security headers (Strict-Transport-Security
// only over TLS: elsewhere a handler's is sent as it is).
bool is_transport_header(std::string_view name, bool tls) {
  for (std::string_view own : {"Content-Length", "Transfer-Encoding", "Connection", "X-Request-Id",
                               "Content-Security-Policy", "X-Content-Type-Options",
                               "Referrer-Policy", "X-Frame-Options"}) {
    if (equal_ignoring_case(name, own)) return true;
  }
  return tls && equal_ignoring_case(name, "Strict-Transport-Security");
}

void append_number(std::string& out, uint64_t n) {
  char digits[20];
  const auto end = std::to_chars(std::begin(digits), std::end(digits), n).ptr;
  out.append(digits, end);
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
  out.append(name);
  out += ": ";
  out.append(value);
  out += "\r\n";
}

bool is_http_parse_error(const error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message;
}

Status validate(const ServerOptions& options, const ServerHooks& hooks) {
  const ServerLimits& limits = options.limits;
  if (limits.header_bytes_max == 0 || limits.header_bytes_max > UINT32_MAX ||
      limits.connections_max == 0 || limits.keep_alive_requests_max == 0) {
    return invalid_argument(
        "server limits: header_bytes_max, connections_max and "
        "keep_alive_requests_max must be at least 1");
  }
  using std::chrono::milliseconds;
  for (milliseconds timeout : {limits.header_timeout, limits.request_timeout, limits.idle_timeout,
                               limits.drain_timeout, limits.transfer_idle_timeout}) {
    if (timeout <= milliseconds::zero()) {
      return invalid_argument("server limits: every timeout must be positive");
    }
  }
  if (limits.transfer_rate_min_bytes_per_s == 0) {
    return invalid_argument("server limits: transfer_rate_min_bytes_per_s must be at least 1");
  }
  if (options.threads > kThreadsMax) {
    return invalid_argument("at most " + std::to_string(kThreadsMax) + " server threads");
  }
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return invalid_argument("TLS needs both a certificate file and a key file");
  }
  if (!hooks.submit_blocking) return invalid_argument("the server needs a submit_blocking hook");
  return Status::ok_status();
}

class SessionBase : public std::enable_shared_from_this<SessionBase> {
 public:
  virtual ~SessionBase() = default;
  virtual void start() = 0;
  // stop(): close if idle, else answer the request in flight and close.
  virtual void begin_stop() = 0;
  // Past drain_timeout: close now.
  virtual void force_close() = 0;
};

class ServerImpl;
// The server whose I/O thread this is: a mark each I/O thread sets for
// itself, rather than a list of thread IDs, since once a thread is joined
// its ID may be given to a new thread, which must not pass for the server's.
thread_local const ServerImpl* running_on = nullptr;

class ServerImpl final : public Server {
 public:
  // REQUIRES: threads >= 1.
  ServerImpl(ServerOptions options, const Router& router, ServerHooks hooks,
             std::unique_ptr<ssl::context> tls, size_t threads, uint64_t first_request_id)
      : options_(std::move(options)),
        router_(router),
        hooks_(std::move(hooks)),
        tls_(std::move(tls)),
        clock_(options_.clock != nullptr ? *options_.clock : real_clock_),
        ios_(make_contexts(threads)),
        control_(ios_.front()->get_executor()),
        acceptor_(control_),
        retry_timer_(control_),
        drain_timer_(control_),
        next_request_id_(first_request_id) {
    work_.reserve(ios_.size());
    for (const auto& io : ios_) work_.push_back(asio::make_work_guard(*io));
  }

  ~ServerImpl() override {
    assert(!on_own_thread() && "a server is destroyed on one of its own threads");
    stop();
  }

  Status listen();
  void run();

  uint16_t port() const override { return port_; }
  void stop() override;
  void wait() override;

  // For the sessions.
  const ServerLimits& limits() const { return options_.limits; }
  const Router& router() const { return router_; }
  const ServerHooks& hooks() const { return hooks_; }
  Logger* logger() const { return options_.logger; }
  Clock& clock() const { return clock_; }
  // Names upload files: always the CSPRNG, whatever options.random is.
  Random& upload_random() { return upload_random_; }
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }
  // The next request's ID, written into `out`: 16 hex digits.
  void next_request_id(std::string& out) {
    static constexpr char kDigits[] = "0123456789abcdef";
    uint64_t id = next_request_id_.fetch_add(1, std::memory_order_relaxed);
    out.resize(16);
    for (size_t i = out.size(); i-- > 0; id >>= 4) out[i] = kDigits[id & 0xf];
  }
  // A session counts as an open connection from its constructor to its
  // destructor (connections_max).
  void connection_opened() { connections_.fetch_add(1, std::memory_order_relaxed); }
  void connection_closed() { connections_.fetch_sub(1, std::memory_order_relaxed); }
  // False if the server is stopping: the session is not to start.
  bool add_session(SessionBase* session) EXCLUDES(mu_);
  void remove_session(SessionBase* session) EXCLUDES(mu_);

 private:
  // One io_context per I/O thread, each told that one thread runs it.
  static std::vector<std::unique_ptr<asio::io_context>> make_contexts(size_t threads) {
    assert(threads >= 1);
    std::vector<std::unique_ptr<asio::io_context>> ios;
    ios.reserve(threads);
    for (size_t i = 0; i < threads; ++i) ios.push_back(std::make_unique<asio::io_context>(1));
    return ios;
  }
  void accept();
  void on_accept(error_code ec, tcp::socket socket);
  void start_session(tcp::socket socket);
  void shut_down();  // on control_
  std::vector<std::shared_ptr<SessionBase>> live_sessions() EXCLUDES(mu_);
  bool on_own_thread() const;
  void join() EXCLUDES(join_mu_);

  const ServerOptions options_;
  const Router& router_;
  const ServerHooks hooks_;
  const std::unique_ptr<ssl::context> tls_;
  RealClock real_clock_;
  Clock& clock_;
  SystemRandom upload_random_;
  const std::vector<std::unique_ptr<asio::io_context>> ios_;  // one per I/O thread
  // The acceptor and the timers: on the first thread's io_context, which
  // one thread runs, so that their handlers never run at once.
  const asio::io_context::executor_type control_;
  tcp::acceptor acceptor_;
  asio::steady_timer retry_timer_;
  asio::steady_timer drain_timer_;
  size_t next_io_ = 0;  // on control_: the io_context of the next connection
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> work_;  // until stop()
  uint16_t port_ = 0;
  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_ = false;
  std::atomic<uint64_t> next_request_id_;
  std::atomic<size_t> connections_ = 0;

  Mutex mu_;
  std::unordered_set<SessionBase*> sessions_ GUARDED_BY(mu_);

  Mutex join_mu_;  // held by the thread that joins the I/O threads
  bool joined_ GUARDED_BY(join_mu_) = false;
};

// One connection. Everything but the constructor and run_handler() runs on
// the connection's I/O thread (the stream's executor).
template <class Stream>
class Session final : public SessionBase {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, tcp::socket>;
  using TimePoint = asio::steady_timer::time_point;

  Session(ServerImpl& server, tcp::socket socket, std::string client_address, ssl::context* tls);
  ~Session() override;

  void start() override;
  void begin_stop() override;
  void force_close() override;

 private:
  std::shared_ptr<Session> self() { return std::static_pointer_cast<Session>(shared_from_this()); }
  tcp::socket& tcp_layer() { return beast::get_lowest_layer(stream_); }
  const ServerLimits& limits() const { return server_.limits(); }

  void set_io_deadline(TimePoint at);
  void clear_io_deadline() { io_deadline_ = TimePoint::max(); }
  void arm_io_timer(TimePoint at);
  void on_io_timer(uint64_t arming, error_code ec);
  void on_handshake(error_code ec);
  void wait_for_request();
  void on_first_bytes(error_code ec, size_t bytes);
  void read_header();
  void reset_request();
  void on_header(error_code ec, size_t bytes);
  void on_read_error(error_code ec);
  void begin_exchange();
  bool take_target();
  bool take_route();
  void read_body();
  void on_body(error_code ec, size_t bytes);
  void begin_upload(bool has_body);
  void on_admitted(std::optional<Response> refused);
  void read_upload_body();
  void on_upload_bytes(error_code ec, size_t bytes);
  void finish_upload();
  void refuse_upload(const Status& status);
  asio::steady_timer::time_point transfer_deadline() const;
  bool admit_blocks() const;
  // What a job on the blocking pool runs: an upload route's admission alone,
  // or the handler (after admission, unless admitted_ already).
  enum class Step { kAdmit, kHandle };
  void dispatch();
  void dispatch_blocking(Step step);
  void on_handled(Request request, std::optional<Response> response, uint64_t generation,
                  Step step);
  void on_handler_timeout(uint64_t generation, error_code ec);
  static std::optional<Response> run_admit(ServerImpl& server, Request& request,
                                           const Route& route);
  static Response run_handler(ServerImpl& server, Request& request, const Route& route,
                              bool admitted);
  void respond(Response response);
  void write_head(const Response& response, bool bodiless, uint64_t content_length);
  Response open_file_response(Response response);
  void on_written(error_code ec, size_t bytes);
  void write_file_part();
  void on_file_part(error_code ec, size_t bytes);
  void request_part();
  void on_part(uint64_t generation, Result<bool> more, std::string part);
  void on_part_timeout(uint64_t generation, error_code ec);
  void write_part();
  void on_part_written(error_code ec, size_t bytes);
  static Result<bool> run_body_stream(BodyStream& stream, std::string& part);
  void finish_write(error_code ec);
  void end_exchange(const Response& response);
  void close_gracefully();
  void close_now();

  ServerImpl& server_;
  Stream stream_;
  const std::string client_address_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  asio::steady_timer handler_timer_;
  // The socket operation in progress fails (the socket is closed) once
  // io_deadline_ passes; max() while none is bounded (a handler on the
  // blocking pool). io_timer_ fires at or before it, at io_timer_at_ (max()
  // when not waiting); arming it again only when a deadline comes earlier
  // than that keeps a keep-alive connection to about one timer wait per
  // header_timeout, rather than two timer operations per read or write.
  asio::steady_timer io_timer_;
  TimePoint io_deadline_ = TimePoint::max();
  TimePoint io_timer_at_ = TimePoint::max();
  uint64_t io_timer_armings_ = 0;  // which wait a timer's completion is from

  bool idle_ = true;  // waiting for a request's first byte (or the TLS handshake)
  bool stopping_ = false;
  size_t requests_ = 0;  // answered on this connection

  // The exchange in progress: open from its first byte (the `started` hook)
  // until its response is being written, then writing until `answered`.
  enum class Exchange { kNone, kOpen, kWriting };
  Exchange exchange_ = Exchange::kNone;
  Request request_;
  Request request_summary_;  // request_ without headers and body, while a handler has it
  const Route* route_ = nullptr;
  bool keep_alive_ = false;  // the client's wish, and nothing of the request left unread
  bool http10_ = false;      // the request said HTTP/1.0: no chunked response
  MonoTime started_;
  TimePoint deadline_;       // request_timeout
  uint64_t generation_ = 0;  // which handler run a result is from
  bool awaiting_handler_ = false;
  Response response_;  // being written: its body is sent from here
  std::string head_;   // response_'s status line and header fields, as sent

  // An upload route's exchange: admitted before its body is read, which is
  // then parsed through upload_parser_ into upload_.
  bool admitted_ = false;
  bool has_body_ = false;
  std::optional<http::request_parser<http::buffer_body>> upload_parser_;
  // Shared with a handler on the blocking pool: the file is removed once
  // both the exchange and the handler are done with it.
  std::shared_ptr<UploadFile> upload_;
  // A file response's body: what is left to send of it, from where.
  std::unique_ptr<SendFile> send_file_;
  uint64_t send_offset_ = 0;
  uint64_t send_remaining_ = 0;
  // A response's BodyStream (shared with the pool job making its next
  // part), the part being written and whether it is the last. Chunked
  // unless http10_.
  std::shared_ptr<BodyStream> body_stream_;
  std::string part_;
  bool part_last_ = false;
  bool awaiting_part_ = false;  // a pool job is making the next part
  // The streamed body in progress, either way (transfer_deadline()).
  asio::steady_timer::time_point transfer_started_;
  uint64_t transfer_bytes_ = 0;
  std::unique_ptr<char[]> transfer_buffer_;  // kTransferBufferBytes, made on first use
};

template <class Stream>
Session<Stream>::Session(ServerImpl& server, tcp::socket socket, std::string client_address,
                         ssl::context* tls)
    : server_(server),
      stream_([&]() -> Stream {
        if constexpr (kTls) {
          return Stream(std::move(socket), *tls);
        } else {
          (void)tls;
          return Stream(std::move(socket));
        }
      }()),
      client_address_(std::move(client_address)),
      handler_timer_(stream_.get_executor()),
      io_timer_(stream_.get_executor()) {
  server_.connection_opened();
}

template <class Stream>
Session<Stream>::~Session() {
  server_.remove_session(this);
  server_.connection_closed();
}

template <class Stream>
void Session<Stream>::start() {
  asio::dispatch(stream_.get_executor(), [self = self()] {
    if constexpr (kTls) {
      self->set_io_deadline(asio::steady_timer::clock_type::now() + self->limits().header_timeout);
      self->stream_.async_handshake(ssl::stream_base::server,
                                    beast::bind_front_handler(&Session::on_handshake, self));
    } else {
      self->wait_for_request();
    }
  });
}

// Bounds the socket operation about to start (and those that follow, until
// the next call) by `at`.
template <class Stream>
void Session<Stream>::set_io_deadline(TimePoint at) {
  io_deadline_ = at;
  if (io_timer_at_ <= at) return;  // it fires in time, and looks again then
  arm_io_timer(at);
}

// The wait holds the session weakly: a session that nothing else holds (its
// connection closed gracefully) ends without waiting for its timer.
template <class Stream>
void Session<Stream>::arm_io_timer(TimePoint at) {
  io_timer_at_ = at;
  const uint64_t arming = ++io_timer_armings_;
  io_timer_.expires_at(at);  // a wait in progress ends with operation_aborted
  io_timer_.async_wait([weak = weak_from_this(), arming](error_code ec) {
    if (const auto self = weak.lock()) {
      std::static_pointer_cast<Session>(self)->on_io_timer(arming, ec);
    }
  });
}

template <class Stream>
void Session<Stream>::on_io_timer(uint64_t arming, error_code ec) {
  if (ec || arming != io_timer_armings_) return;  // cancelled, or a later wait is on
  io_timer_at_ = TimePoint::max();
  if (io_deadline_ == TimePoint::max()) return;  // nothing to bound
  if (asio::steady_timer::clock_type::now() < io_deadline_) return arm_io_timer(io_deadline_);
  // Past the deadline: the operation in progress fails, as Beast's
  // tcp_stream makes it, by closing the socket.
  clear_io_deadline();
  error_code ignored;
  tcp_layer().close(ignored);
}

template <class Stream>
void Session<Stream>::on_handshake(error_code ec) {
  if (ec) return close_now();
  wait_for_request();
}

template <class Stream>
void Session<Stream>::begin_stop() {
  asio::dispatch(stream_.get_executor(), [self = self()] {
    self->stopping_ = true;
    if (self->idle_) self->close_now();
  });
}

template <class Stream>
void Session<Stream>::force_close() {
  asio::dispatch(stream_.get_executor(), [self = self()] {
    self->stopping_ = true;
    if (self->awaiting_handler_) {
      self->awaiting_handler_ = false;
      self->request_ = std::move(self->request_summary_);  // for `answered`
    }
    self->handler_timer_.cancel();
    if (self->awaiting_part_) {
      self->awaiting_part_ = false;
      return self->finish_write(asio::error::operation_aborted);  // ends the exchange, closes
    }
    self->close_now();
  });
}

// Waits for the first byte of the next request under idle_timeout (the first
// request of a connection under header_timeout), so that header_timeout
// counts from that byte.
template <class Stream>
void Session<Stream>::wait_for_request() {
  idle_ = true;
  if (stopping_ || server_.stopping()) return close_now();
  upload_parser_.reset();
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(limits().header_bytes_max));
  // The route's limit is set once the header is read; none until then, so
  // that the Content-Length is judged against the route, not Beast's default.
  parser_->body_limit(boost::none);
  if (buffer_.size() > 0) return read_header();  // pipelined
  set_io_deadline(asio::steady_timer::clock_type::now() +
                  (requests_ == 0 ? limits().header_timeout : limits().idle_timeout));
  stream_.async_read_some(buffer_.prepare(kFirstReadBytes),
                          beast::bind_front_handler(&Session::on_first_bytes, self()));
}

template <class Stream>
void Session<Stream>::on_first_bytes(error_code ec, size_t bytes) {
  if (ec) return close_now();  // the client left, idle_timeout, or stop()
  buffer_.commit(bytes);
  read_header();
}

template <class Stream>
void Session<Stream>::read_header() {
  idle_ = false;
  started_ = server_.clock().mono_now();
  reset_request();
  route_ = nullptr;
  keep_alive_ = false;
  http10_ = false;
  // Socket deadlines are on the timers' own clock (the real one); the
  // injected clock measures what `answered` reports.
  const TimePoint now = asio::steady_timer::clock_type::now();
  deadline_ = now + limits().request_timeout;
  exchange_ = Exchange::kOpen;
  if (server_.hooks().started) {
    try {
      server_.hooks().started(request_);
    } catch (const std::exception& e) {
      log_to(server_.logger(), LogLevel::kError, "request {}: the started hook threw: {}",
             request_.request_id, e.what());
    }
  }
  // The bytes read so far most often hold the whole header.
  error_code ec;
  const size_t used = parser_->put(buffer_.data(), ec);
  buffer_.consume(used);
  if (ec != http::error::need_more && (ec || parser_->is_header_done())) {
    return on_header(ec, used);
  }
  set_io_deadline(now + limits().header_timeout);
  http::async_read_header(stream_, buffer_, *parser_,
                          beast::bind_front_handler(&Session::on_header, self()));
}

// The new request's Request, reusing the storage of the one before (its
// strings and header list) where it can.
template <class Stream>
void Session<Stream>::reset_request() {
  auto headers = std::move(request_.headers);
  headers.clear();
  std::string request_id = std::move(request_.request_id);
  request_ = Request{};
  request_.headers = std::move(headers);
  server_.next_request_id(request_id);
  request_.request_id = std::move(request_id);
  request_.client_address = client_address_;
  request_.tls = kTls;
}

template <class Stream>
void Session<Stream>::on_header(error_code ec, size_t) {
  if (ec) return on_read_error(ec);
  begin_exchange();
}

// A request that cannot be read to its end: answered if it is the client's
// fault (and the connection closed), else the connection just closes.
template <class Stream>
void Session<Stream>::on_read_error(error_code ec) {
  keep_alive_ = false;
  if (ec == http::error::header_limit) {
    return respond(error_response(431, "the request header is larger than " +
                                           std::to_string(limits().header_bytes_max) + " bytes"));
  }
  if (ec == http::error::body_limit) {
    return respond(error_response(413, "the request body is larger than this route accepts (" +
                                           std::to_string(route_->options.body_bytes_max) +
                                           " bytes)"));
  }
  if (is_http_parse_error(ec)) return respond(error_response(400, "malformed HTTP request"));
  close_now();  // the client left, a timeout, or stop()
}

template <class Stream>
void Session<Stream>::begin_exchange() {
  const auto& header = parser_->get();
  request_.method = std::string(header.method_string());
  request_.target = std::string(header.target());
  for (const auto& field : header) {
    std::string name(field.name_string());
    // A field name is a token: ASCII, so no locale is needed to lower it.
    for (char& c : name) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    request_.headers.emplace_back(std::move(name), std::string(field.value()));
  }
  // Until the body is read, an answer must close the connection: the unread
  // body would be taken for the next request.
  const bool has_body = !parser_->is_done();
  keep_alive_ = header.keep_alive() && !has_body;
  http10_ = header.version() < 11;
  deadline_ = asio::steady_timer::clock_type::now() + limits().request_timeout;
  if (!take_target() || !take_route()) return;
  if (!route_->options.upload_dir.empty()) return begin_upload(has_body);
  if (!has_body) return dispatch();
  const uint64_t body_bytes_max = route_->options.body_bytes_max;
  if (const auto length = parser_->content_length(); length && *length > body_bytes_max) {
    return on_read_error(http::error::body_limit);  // refused unread
  }
  parser_->body_limit(body_bytes_max);
  keep_alive_ = header.keep_alive();
  if (!beast::iequals(header[http::field::expect], "100-continue")) return read_body();
  set_io_deadline(deadline_);
  asio::async_write(stream_, asio::buffer(kContinue), [self = self()](error_code ec, size_t) {
    if (ec) return self->close_now();
    self->read_body();
  });
}

// Fills the path and query; false, having answered 400, if the target is not
// a path.
template <class Stream>
bool Session<Stream>::take_target() {
  auto target = parse_target(request_.target);
  if (!target.ok()) {
    respond(error_response(400, target.status().message()));
    return false;
  }
  request_.path = std::move(target->path);
  request_.query = std::move(target->query);
  return true;
}

// Finds the route; false, having answered 404 or 405, if there is none.
template <class Stream>
bool Session<Stream>::take_route() {
  Router::Match match = server_.router().match(request_.method, request_.path);
  if (match.route == nullptr) {
    if (match.allow.empty()) {
      respond(error_response(404, "no such resource"));
    } else {
      Response response = error_response(405, "the method is not allowed here (see Allow)");
      response.set_header("Allow", match.allow);
      respond(std::move(response));
    }
    return false;
  }
  route_ = match.route;
  request_.route = route_->pattern;
  request_.params = std::move(match.params);
  return true;
}

template <class Stream>
void Session<Stream>::read_body() {
  set_io_deadline(deadline_);
  http::async_read(stream_, buffer_, *parser_,
                   beast::bind_front_handler(&Session::on_body, self()));
}

template <class Stream>
void Session<Stream>::on_body(error_code ec, size_t) {
  if (exchange_ != Exchange::kOpen) return;  // force_close() dropped it meanwhile
  if (ec) return on_read_error(ec);
  request_.body = std::move(parser_->get().body());
  dispatch();
}

// An upload route: refused from its Content-Length, then admitted, all
// before a byte of the body is read.
template <class Stream>
void Session<Stream>::begin_upload(bool has_body) {
  has_body_ = has_body;
  if (const auto length = parser_->content_length();
      has_body && length && *length > route_->options.body_bytes_max) {
    return on_read_error(http::error::body_limit);  // refused unread
  }
  if (admit_blocks()) return dispatch_blocking(Step::kAdmit);
  on_admitted(run_admit(server_, request_, *route_));
}

// Admitted (no refusal): the body file is made and the body read into it.
// Refused: the answer closes the connection, since the body is unread.
template <class Stream>
void Session<Stream>::on_admitted(std::optional<Response> refused) {
  if (refused) return respond(std::move(*refused));
  admitted_ = true;
  auto file = UploadFile::create(route_->options.upload_dir, server_.upload_random());
  if (!file.ok()) return refuse_upload(file.status());
  upload_ = std::move(file).value();
  request_.body_file = upload_->path();
  if (!has_body_) return finish_upload();
  // The header parser becomes a body parser: Beast moves what it has read so
  // far into it, body bytes that came with the header included.
  upload_parser_.emplace(std::move(*parser_));
  upload_parser_->body_limit(route_->options.body_bytes_max);
  transfer_started_ = asio::steady_timer::clock_type::now();
  transfer_bytes_ = 0;
  if (!beast::iequals(upload_parser_->get()[http::field::expect], "100-continue")) {
    return read_upload_body();
  }
  set_io_deadline(transfer_deadline());
  asio::async_write(stream_, asio::buffer(kContinue), [self = self()](error_code ec, size_t) {
    if (ec) return self->close_now();
    self->read_upload_body();
  });
}

template <class Stream>
void Session<Stream>::read_upload_body() {
  if (!transfer_buffer_) transfer_buffer_ = std::make_unique<char[]>(kTransferBufferBytes);
  auto& body = upload_parser_->get().body();
  body.data = transfer_buffer_.get();
  body.size = kTransferBufferBytes;
  set_io_deadline(transfer_deadline());
  http::async_read_some(stream_, buffer_, *upload_parser_,
                        beast::bind_front_handler(&Session::on_upload_bytes, self()));
}

// need_buffer only says the buffer is full: its bytes go to the file and
// the reading goes on.
template <class Stream>
void Session<Stream>::on_upload_bytes(error_code ec, size_t) {
  if (exchange_ != Exchange::kOpen) return;  // force_close() dropped it meanwhile
  if (ec == http::error::need_buffer) ec = {};
  if (ec) return on_read_error(ec);  // 413 past the limit; the client left; a timeout
  const size_t got = kTransferBufferBytes - upload_parser_->get().body().size;
  if (got > 0) {
    if (Status written = upload_->write({transfer_buffer_.get(), got}); !written.ok()) {
      return refuse_upload(written);
    }
    transfer_bytes_ += got;
  }
  if (upload_parser_->is_done()) return finish_upload();
  read_upload_body();
}

// The body is all in the file: the handler runs, with request_timeout
// afresh for itself and the response.
template <class Stream>
void Session<Stream>::finish_upload() {
  if (Status closed = upload_->close(); !closed.ok()) return refuse_upload(closed);
  if (upload_parser_) {
    keep_alive_ = upload_parser_->get().keep_alive();
    upload_parser_.reset();
  }
  deadline_ = asio::steady_timer::clock_type::now() + limits().request_timeout;
  dispatch();
}

// The body file could not be made or written: 507 for a full disk, else 500
// (the log has the cause). The connection closes, as the body may be unread.
template <class Stream>
void Session<Stream>::refuse_upload(const Status& status) {
  keep_alive_ = false;
  log_to(server_.logger(), LogLevel::kError, "request {}: {} {}: the upload failed: {}",
         request_.request_id, request_.method, request_.route, status.to_string());
  if (status.code() == Code::kResourceExhausted) {
    return respond(error_response(507, "the server has no room for this upload"));
  }
  respond(internal_error_response(request_.request_id));
}

// The deadline of the next read or write of a streamed body: the transfer
// limits of ServerLimits.
template <class Stream>
asio::steady_timer::time_point Session<Stream>::transfer_deadline() const {
  const ServerLimits& l = limits();
  const std::chrono::duration<double> credit_s(std::min(
      static_cast<double>(transfer_bytes_) / static_cast<double>(l.transfer_rate_min_bytes_per_s),
      std::chrono::duration<double>(kTransferCreditMax).count()));
  const auto credit = std::chrono::duration_cast<std::chrono::milliseconds>(credit_s);
  return std::min(asio::steady_timer::clock_type::now() + l.transfer_idle_timeout,
                  transfer_started_ + l.request_timeout + credit);
}

template <class Stream>
bool Session<Stream>::admit_blocks() const {
  const ServerHooks& hooks = server_.hooks();
  if (!hooks.admit_blocks) return route_->options.access != Access::kPublic;
  return hooks.admit_blocks(request_, *route_);
}

template <class Stream>
void Session<Stream>::dispatch() {
  if (route_->options.blocking || (!admitted_ && admit_blocks())) {
    return dispatch_blocking(Step::kHandle);
  }
  Response response = run_handler(server_, request_, *route_, admitted_);
  respond(std::move(response));
}

// Hands the request to the blocking pool, and waits for the response (or
// the admission) under request_timeout.
template <class Stream>
void Session<Stream>::dispatch_blocking(Step step) {
  const uint64_t generation = ++generation_;
  request_summary_ = Request{};
  request_summary_.method = request_.method;
  request_summary_.target = request_.target;
  request_summary_.path = request_.path;
  request_summary_.query = request_.query;
  request_summary_.client_address = request_.client_address;
  request_summary_.tls = request_.tls;
  request_summary_.request_id = request_.request_id;
  request_summary_.route = request_.route;
  auto job = [self = self(), request = std::move(request_), route = route_, generation, step,
              admitted = admitted_, upload = upload_,
              work = asio::make_work_guard(stream_.get_executor())]() mutable {
    std::optional<Response> response = step == Step::kAdmit
                                           ? run_admit(self->server_, request, *route)
                                           : run_handler(self->server_, request, *route, admitted);
    upload.reset();  // the handler is done with the body file
    {
      auto executor = self->stream_.get_executor();
      asio::post(executor, [self = std::move(self), request = std::move(request),
                            response = std::move(response), generation, step]() mutable {
        self->on_handled(std::move(request), std::move(response), generation, step);
      });
    }
    work.reset();  // last: the io_context may be gone after this
  };
  if (!server_.hooks().submit_blocking(std::move(job))) {
    request_ = std::move(request_summary_);
    return respond(error_response(503, "the server is busy; try again"));
  }
  awaiting_handler_ = true;
  // No socket operation is in progress while the pool has the request: the
  // deadline that bounds it is handler_timer_'s.
  clear_io_deadline();
  handler_timer_.expires_at(deadline_);
  handler_timer_.async_wait(
      beast::bind_front_handler(&Session::on_handler_timeout, self(), generation));
}

template <class Stream>
void Session<Stream>::on_handled(Request request, std::optional<Response> response,
                                 uint64_t generation, Step step) {
  if (!awaiting_handler_ || generation != generation_) return;  // answered 503 already
  awaiting_handler_ = false;
  handler_timer_.cancel();
  request_ = std::move(request);
  if (step == Step::kAdmit) return on_admitted(std::move(response));
  respond(std::move(*response));
}

template <class Stream>
void Session<Stream>::on_handler_timeout(uint64_t generation, error_code ec) {
  if (ec || !awaiting_handler_ || generation != generation_) return;
  awaiting_handler_ = false;
  keep_alive_ = false;
  request_ = std::move(request_summary_);
  respond(error_response(503, "the request took longer than " +
                                  std::to_string(limits().request_timeout.count()) + " ms"));
}

// Admission alone, for an upload route before its body is read: nullopt to
// go on, else the answer. Never throws.
template <class Stream>
std::optional<Response> Session<Stream>::run_admit(ServerImpl& server, Request& request,
                                                   const Route& route) {
  if (!server.hooks().admit) return std::nullopt;
  try {
    return server.hooks().admit(request, route);
  } catch (const std::exception& e) {
    log_to(server.logger(), LogLevel::kError, "request {}: {} {}: admit threw: {}",
           request.request_id, request.method, route.pattern, e.what());
  } catch (...) {
    log_to(server.logger(), LogLevel::kError, "request {}: {} {}: admit threw a non-exception",
           request.request_id, request.method, route.pattern);
  }
  return internal_error_response(request.request_id);
}

// Admission (unless `admitted` already) and the handler, on whichever thread
// runs them. Never throws.
template <class Stream>
Response Session<Stream>::run_handler(ServerImpl& server, Request& request, const Route& route,
                                      bool admitted) {
  try {
    if (server.hooks().admit && !admitted) {
      if (std::optional<Response> refused = server.hooks().admit(request, route)) {
        return std::move(*refused);
      }
    }
    return route.handler(request);
  } catch (const std::exception& e) {
    log_to(server.logger(), LogLevel::kError, "request {}: {} {} threw: {}", request.request_id,
           request.method, route.pattern, e.what());
  } catch (...) {
    log_to(server.logger(), LogLevel::kError, "request {}: {} {} threw a non-exception",
           request.request_id, request.method, route.pattern);
  }
  return internal_error_response(request.request_id);
}

template <class Stream>
void Session<Stream>::respond(Response response) {
  if (!is_well_formed(response)) {
    log_to(server_.logger(), LogLevel::kError,
           "request {}: {} {} answered with status {} or a malformed header", request_.request_id,
           request_.method, request_.route, response.status);
    response = internal_error_response(request_.request_id);
  }
  if (!response.file_path.empty()) response = open_file_response(std::move(response));
  if (response.body_stream) response.body.clear();
  ++requests_;
  const bool bodiless = response.status == 204 || response.status == 304;
  const bool head = request_.method == "HEAD";
  // An HTTP/1.0 client reads a streamed body to the connection's close.
  const bool close_delimited = response.body_stream && !bodiless && http10_;
  keep_alive_ = keep_alive_ && !stopping_ && !server_.stopping() &&
                requests_ < limits().keep_alive_requests_max && !close_delimited;
  write_head(response, bodiless, send_file_ ? send_remaining_ : response.body.size());
  if (bodiless || head) send_file_.reset();  // its size was all that was needed
  if (response.body_stream && !bodiless && !head) {
    body_stream_ = std::make_shared<BodyStream>(std::move(response.body_stream));
  }
  response.body_stream = nullptr;
  response_ = std::move(response);
  exchange_ = Exchange::kWriting;
  set_io_deadline(deadline_);
  const bool body_sent = !bodiless && !head && !response_.body.empty();
  if (body_sent && response_.body.size() <= kCopiedBodyBytesMax) {
    head_ += response_.body;  // one buffer, one plain send
    return asio::async_write(stream_, asio::buffer(head_),
                             beast::bind_front_handler(&Session::on_written, self()));
  }
  const std::array<asio::const_buffer, 2> buffers = {
      asio::buffer(head_), body_sent ? asio::buffer(response_.body) : asio::const_buffer()};
  asio::async_write(stream_, buffers, beast::bind_front_handler(&Session::on_written, self()));
}

// Writes the response's status line and header fields into head_, as
// Beast's serializer would: the handler's fields, then the transport's
// (X-Request-Id, the security headers, Cache-Control and Content-Type unless
// the handler set them, the framing).
template <class Stream>
void Session<Stream>::write_head(const Response& response, bool bodiless, uint64_t content_length) {
  head_ = "HTTP/1.1 ";
  const auto status = static_cast<unsigned>(response.status);
  append_number(head_, status);
  head_ += ' ';
  const auto reason = http::obsolete_reason(http::int_to_status(status));
  head_.append(reason.data(), reason.size());
  head_ += "\r\n";
  bool has_cache_control = false;
  bool has_content_type = false;
  for (const auto& [name, value] : response.headers) {
    if (is_transport_header(name, kTls)) continue;
    has_cache_control = has_cache_control || equal_ignoring_case(name, "Cache-Control");
    has_content_type = has_content_type || equal_ignoring_case(name, "Content-Type");
    append_field(head_, name, value);
  }
  append_field(head_, "X-Request-Id", request_.request_id);
  head_ += kSecurityHeaders;
  if (kTls) append_field(head_, "Strict-Transport-Security", kStrictTransportSecurity);
  if (!has_cache_control) append_field(head_, "Cache-Control", "no-store");
  if (!has_content_type && response.body_stream) {
    append_field(head_, "Content-Type", "application/octet-stream");
  } else if (!has_content_type && !response.body.empty()) {
    append_field(head_, "Content-Type", "application/json");
  }
  if (!bodiless && response.body_stream) {
    if (!http10_) head_ += "Transfer-Encoding: chunked\r\n";
  } else if (!bodiless) {
    head_ += "Content-Length: ";
    append_number(head_, content_length);
    head_ += "\r\n";
  }
  if (!keep_alive_) head_ += "Connection: close\r\n";
  head_ += "\r\n";
}

// A response with a file: the file opened (it may have vanished: 404), and
// the status, Content-Range and Accept-Ranges that the Range asks for. The
// file is then sent after the header by write_file_part().
template <class Stream>
Response Session<Stream>::open_file_response(Response response) {
  const std::string path = std::exchange(response.file_path, {});
  if (response.status == 204 || response.status == 304) return response;  // no body to send
  auto file = SendFile::open(path);
  if (!file.ok()) {
    if (file.status().code() == Code::kNotFound) return error_response(404, "no such file");
    log_to(server_.logger(), LogLevel::kError, "request {}: {} {}: cannot send a file: {}",
           request_.request_id, request_.method, request_.route, file.status().to_string());
    return internal_error_response(request_.request_id);
  }
  const uint64_t size = (*file)->size();
  RangeAnswer range{.kind = RangeAnswer::Kind::kWhole, .range = {.first = 0, .length = size}};
  if (response.status == 200) {
    response.set_header("Accept-Ranges", "bytes");
    const bool reads = request_.method == "GET" || request_.method == "HEAD";
    if (reads && if_range_matches(request_.header("if-range"), response.header("ETag"),
                                  response.header("Last-Modified"))) {
      range = resolve_range(request_.header("range"), size);
    }
  }
  if (range.kind == RangeAnswer::Kind::kUnsatisfiable) {
    Response refused = error_response(
        416, "the range asked for is outside the file's " + std::to_string(size) + " bytes");
    refused.set_header("Content-Range", unsatisfied_content_range(size));
    refused.set_header("Accept-Ranges", "bytes");
    return refused;
  }
  if (range.kind == RangeAnswer::Kind::kPart) {
    response.status = 206;
    response.set_header("Content-Range", content_range(range.range, size));
  }
  if (!response.header("Content-Type")) {
    response.set_header("Content-Type", "application/octet-stream");
  }
  response.body.clear();
  send_file_ = std::move(file).value();
  send_offset_ = range.range.first;
  send_remaining_ = range.range.length;
  return response;
}

template <class Stream>
void Session<Stream>::on_written(error_code ec, size_t) {
  if (!ec && (send_file_ || body_stream_)) {
    transfer_started_ = asio::steady_timer::clock_type::now();
    transfer_bytes_ = 0;
    return send_file_ ? write_file_part() : request_part();
  }
  finish_write(ec);
}

// Sends the next part of the file, under the transfer limits. A file that
// shrank since it was opened cannot fill the Content-Length already sent:
// the connection closes.
template <class Stream>
void Session<Stream>::write_file_part() {
  if (send_remaining_ == 0) return finish_write({});
  if (!transfer_buffer_) transfer_buffer_ = std::make_unique<char[]>(kTransferBufferBytes);
  const size_t want =
      static_cast<size_t>(std::min<uint64_t>(kTransferBufferBytes, send_remaining_));
  Result<size_t> read = send_file_->read_at(send_offset_, {transfer_buffer_.get(), want});
  if (!read.ok() || *read == 0) {
    log_to(server_.logger(), LogLevel::kError, "request {}: {} {}: the file ended early: {}",
           request_.request_id, request_.method, request_.route,
           read.ok() ? "it shrank while it was sent" : read.status().to_string());
    return finish_write(asio::error::eof);
  }
  set_io_deadline(transfer_deadline());
  asio::async_write(stream_, asio::buffer(transfer_buffer_.get(), *read),
                    beast::bind_front_handler(&Session::on_file_part, self()));
}

template <class Stream>
void Session<Stream>::on_file_part(error_code ec, size_t bytes) {
  if (ec) return finish_write(ec);
  send_offset_ += bytes;
  send_remaining_ -= bytes;
  transfer_bytes_ += bytes;
  write_file_part();
}

// Asks the blocking pool for the next part of the body stream, and waits
// for it under the transfer limits, as for a read or write of the body.
template <class Stream>
void Session<Stream>::request_part() {
  const uint64_t generation = ++generation_;
  auto job = [self = self(), stream = body_stream_, generation,
              work = asio::make_work_guard(stream_.get_executor())]() mutable {
    std::string part;
    Result<bool> more = run_body_stream(*stream, part);
    stream.reset();
    {
      auto executor = self->stream_.get_executor();
      asio::post(executor, [self = std::move(self), more = std::move(more), part = std::move(part),
                            generation]() mutable {
        self->on_part(generation, std::move(more), std::move(part));
      });
    }
    work.reset();  // last: the io_context may be gone after this
  };
  if (!server_.hooks().submit_blocking(std::move(job))) {
    log_to(server_.logger(), LogLevel::kWarn,
           "request {}: {} {}: the blocking pool refused the body's next part", request_.request_id,
           request_.method, request_.route);
    return finish_write(asio::error::no_buffer_space);
  }
  awaiting_part_ = true;
  clear_io_deadline();
  handler_timer_.expires_at(transfer_deadline());
  handler_timer_.async_wait(
      beast::bind_front_handler(&Session::on_part_timeout, self(), generation));
}

// The body stream's call, on the pool. Never throws.
template <class Stream>
Result<bool> Session<Stream>::run_body_stream(BodyStream& stream, std::string& part) {
  try {
    return stream(part);
  } catch (const std::exception& e) {
    return internal_error(std::string("the body stream threw: ") + e.what());
  } catch (...) {
    return internal_error("the body stream threw a non-exception");
  }
}

template <class Stream>
void Session<Stream>::on_part(uint64_t generation, Result<bool> more, std::string part) {
  if (!awaiting_part_ || generation != generation_) return;  // timed out, or force_close()
  awaiting_part_ = false;
  handler_timer_.cancel();
  if (!more.ok()) {
    log_to(server_.logger(), LogLevel::kError, "request {}: {} {}: the body broke off: {}",
           request_.request_id, request_.method, request_.route, more.status().to_string());
    return finish_write(asio::error::eof);  // the connection closes: no last chunk
  }
  part_ = std::move(part);
  part_last_ = !*more;
  write_part();
}

template <class Stream>
void Session<Stream>::on_part_timeout(uint64_t generation, error_code ec) {
  if (ec || !awaiting_part_ || generation != generation_) return;
  awaiting_part_ = false;
  log_to(server_.logger(), LogLevel::kError,
         "request {}: {} {}: the body's next part came too late", request_.request_id,
         request_.method, request_.route);
  finish_write(asio::error::timed_out);
}

// Writes part_ as one chunk (an empty one would end the body: none is sent).
template <class Stream>
void Session<Stream>::write_part() {
  if (part_.empty()) return on_part_written({}, 0);
  set_io_deadline(transfer_deadline());
  if (http10_) {
    return asio::async_write(stream_, asio::buffer(part_),
                             beast::bind_front_handler(&Session::on_part_written, self()));
  }
  asio::async_write(stream_, http::make_chunk(asio::buffer(part_)),
                    beast::bind_front_handler(&Session::on_part_written, self()));
}

template <class Stream>
void Session<Stream>::on_part_written(error_code ec, size_t bytes) {
  if (ec) return finish_write(ec);
  transfer_bytes_ += bytes;
  if (!part_last_) return request_part();
  part_.clear();
  if (http10_) return finish_write({});  // keep_alive_ is false: the close ends the body
  set_io_deadline(transfer_deadline());
  asio::async_write(stream_, http::make_chunk_last(),
                    [self = self()](error_code last_ec, size_t) { self->finish_write(last_ec); });
}

template <class Stream>
void Session<Stream>::finish_write(error_code ec) {
  send_file_.reset();
  end_exchange(response_);
  if (ec) return close_now();
  if (!keep_alive_) return close_gracefully();
  wait_for_request();
}

// Ends the exchange that `started` announced, once: with the response
// written (or whose write failed), or with kStatusDropped from close_now().
template <class Stream>
void Session<Stream>::end_exchange(const Response& response) {
  exchange_ = Exchange::kNone;
  // Before `answered`: whoever hears of the end finds the body file gone
  // (unless a handler still running on the blocking pool holds it).
  upload_.reset();
  send_file_.reset();
  body_stream_.reset();
  awaiting_part_ = false;
  admitted_ = false;
  has_body_ = false;
  if (!server_.hooks().answered) return;
  try {
    server_.hooks().answered(request_, response, server_.clock().mono_now() - started_);
  } catch (const std::exception& e) {
    log_to(server_.logger(), LogLevel::kError, "request {}: the answered hook threw: {}",
           request_.request_id, e.what());
  }
}

// After a response that said Connection: close. What the client may still be
// sending (a refused body) is not read.
template <class Stream>
void Session<Stream>::close_gracefully() {
  idle_ = true;
  if constexpr (kTls) {
    set_io_deadline(
        asio::steady_timer::clock_type::now() +
        std::min<std::chrono::milliseconds>(kTlsShutdownTimeout, limits().header_timeout));
    stream_.async_shutdown([self = self()](error_code) { self->close_now(); });
  } else {
    error_code ec;
    tcp_layer().shutdown(tcp::socket::shutdown_send, ec);
    // The socket closes with the session, which nothing holds any more.
  }
}

// Every path that gives up on a connection ends here, so a request that was
// started and is not being answered ends here too. A response being written
// ends in on_written(), which the closing makes fail.
template <class Stream>
void Session<Stream>::close_now() {
  idle_ = true;
  error_code ignored;
  tcp_layer().close(ignored);
  if (exchange_ == Exchange::kOpen) {
    Response dropped;
    dropped.status = kStatusDropped;
    end_exchange(dropped);
  }
}

Status ServerImpl::listen() {
  error_code ec;
  asio::ip::address address = asio::ip::make_address(options_.host, ec);
  if (ec) {
    tcp::resolver resolver(*ios_.front());
    auto results = resolver.resolve(options_.host, "", ec);
    if (ec || results.empty()) {
      return invalid_argument("cannot resolve the server's host '" + options_.host + "'");
    }
    address = results.begin()->endpoint().address();
  }
  const tcp::endpoint endpoint(address, options_.port);
  const std::string where = options_.host + ":" + std::to_string(options_.port);
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return unavailable("cannot listen on " + where + ": " + ec.message());
  port_ = acceptor_.local_endpoint(ec).port();
  if (ec) return unavailable("cannot listen on " + where + ": " + ec.message());
  return Status::ok_status();
}

void ServerImpl::run() {
  threads_.reserve(ios_.size());
  for (const auto& io : ios_) {
    threads_.emplace_back([this, &io = *io] {
      running_on = this;
      io.run();
    });
  }
  asio::post(control_, [this] { accept(); });
}

void ServerImpl::accept() {
  asio::io_context& io = *ios_[next_io_];
  next_io_ = (next_io_ + 1) % ios_.size();
  acceptor_.async_accept(io, beast::bind_front_handler(&ServerImpl::on_accept, this));
}

void ServerImpl::on_accept(error_code ec, tcp::socket socket) {
  if (ec == asio::error::operation_aborted || stopping()) return;  // closed by stop()
  if (ec) {
    // Out of file descriptors, most likely: wait a little for some to close.
    log_to(options_.logger, LogLevel::kWarn, "accepting a connection failed: {}", ec.message());
    retry_timer_.expires_after(kAcceptRetryDelay);
    retry_timer_.async_wait([this](error_code wait_ec) {
      if (!wait_ec && !stopping()) accept();
    });
    return;
  }
  if (connections_.load(std::memory_order_relaxed) >= options_.limits.connections_max) {
    log_to(options_.logger, LogLevel::kDebug, "connection refused: {} open",
           options_.limits.connections_max);
    socket.close(ec);
  } else {
    start_session(std::move(socket));
  }
  accept();
}

void ServerImpl::start_session(tcp::socket socket) {
  error_code ec;
  const tcp::endpoint peer = socket.remote_endpoint(ec);
  if (ec) return;  // gone already
  std::string address = peer.address().to_string();
  std::shared_ptr<SessionBase> session;
  if (tls_) {
    session = std::make_shared<Session<beast::ssl_stream<tcp::socket>>>(
        *this, std::move(socket), std::move(address), tls_.get());
  } else {
    session = std::make_shared<Session<tcp::socket>>(*this, std::move(socket), std::move(address),
                                                     nullptr);
  }
  if (add_session(session.get())) session->start();
}

bool ServerImpl::add_session(SessionBase* session) {
  MutexLock lock(mu_);
  if (stopping()) return false;
  sessions_.insert(session);
  return true;
}

void ServerImpl::remove_session(SessionBase* session) {
  bool last = false;
  {
    MutexLock lock(mu_);
    sessions_.erase(session);
    last = stopping() && sessions_.empty();
  }
  // Nothing left to drain: the io_context may run out of work.
  if (last) asio::post(control_, [this] { drain_timer_.cancel(); });
}

std::vector<std::shared_ptr<SessionBase>> ServerImpl::live_sessions() {
  std::vector<std::shared_ptr<SessionBase>> live;
  MutexLock lock(mu_);
  live.reserve(sessions_.size());
  for (SessionBase* session : sessions_) {
    // Null for a session whose destructor is running.
    if (auto shared = session->weak_from_this().lock()) live.push_back(std::move(shared));
  }
  return live;
}

void ServerImpl::shut_down() {
  error_code ec;
  acceptor_.close(ec);
  retry_timer_.cancel();
  for (const auto& session : live_sessions()) session->begin_stop();
  bool draining = false;
  {
    MutexLock lock(mu_);
    draining = !sessions_.empty();
  }
  if (draining) {
    drain_timer_.expires_after(options_.limits.drain_timeout);
    drain_timer_.async_wait([this](error_code wait_ec) {
      if (wait_ec) return;  // every session ended in time
      for (const auto& session : live_sessions()) session->force_close();
    });
  }
  work_.clear();  // the threads return once every session has ended
}

void ServerImpl::stop() {
  if (!stopping_.exchange(true, std::memory_order_acq_rel)) {
    asio::post(control_, [this] { shut_down(); });
  }
  if (!on_own_thread()) join();
}

void ServerImpl::wait() {
  assert(!on_own_thread() && "wait() on one of the server's threads");
  join();
}

bool ServerImpl::on_own_thread() const { return running_on == this; }

void ServerImpl::join() {
  MutexLock lock(join_mu_);
  if (joined_) return;
  for (auto& thread : threads_) thread.join();
  joined_ = true;
}

}  // namespace

Result<std::unique_ptr<Server>> Server::start(ServerOptions options, const Router& router,
                                              ServerHooks hooks) {
  RETURN_IF_ERROR(validate(options, hooks));
  std::unique_ptr<ssl::context> tls;
  if (!options.tls_cert_file.empty()) {
    ASSIGN_OR_RETURN(tls, make_server_tls_context(options.tls_cert_file, options.tls_key_file));
  }
  SystemRandom system_random;
  Random& random = options.random != nullptr ? *options.random : system_random;
  const size_t threads =
      options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  auto server = std::make_unique<ServerImpl>(std::move(options), router, std::move(hooks),
                                             std::move(tls), threads, random.next_u64());
  RETURN_IF_ERROR(server->listen());
  server->run();
  return std::unique_ptr<Server>(std::move(server));
}

}  // namespace leasehold::server
