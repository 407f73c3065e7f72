// The transport's parts, shared by the files that define them (private to
// server/: server/server.h is its interface, and nothing outside server/
// includes this header, which brings in Boost.Beast and Asio):
//   transport.cc           ServerImpl: listening, accepting, the I/O threads,
//                          the sessions, stop()
//   transport_session.cc   a Session's reading and dispatch: the request's
//                          header and body, routing, admission and the
//                          handler (inline or on the blocking pool), closing
//   transport_transfer.cc  streamed bodies: uploads into files, file
//                          responses and their ranges, a BodyStream's chunks
//   transport_response.cc  the response writer: its status line and header
//                          fields, and its write
// Session is a template on its stream (PlainStream, TlsStream), instantiated
// for both: the class in transport_session.cc, and each member in the one
// file that defines it.
//
// The server follows Beast's advanced_server example: an acceptor on the
// first I/O thread, and per connection a Session that reads a request,
// answers it and loops while the connection is kept alive. Every limit of
// ServerLimits is applied where the session is built and checked before the
// bytes it bounds are read: the header within header_bytes_max and
// header_timeout, the body within the route's body_bytes_max (a
// Content-Length over it is refused before a byte of the body is read) and
// request_timeout.
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
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <cassert>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "base/mutex.h"
#include "net/beast.h"
#include "server/files.h"
#include "server/server.h"

namespace leasehold::server::transport_parts {

namespace asio = net::asio;
namespace beast = net::beast;
namespace http = net::http;
namespace ssl = net::ssl;
using tcp = net::tcp;
using error_code = boost::system::error_code;

// The most of a streamed body (an upload, a file response) a session holds
// at once.
inline constexpr size_t kTransferBufferBytes = 64 * 1024;

inline constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

class SessionBase : public std::enable_shared_from_this<SessionBase> {
 public:
  virtual ~SessionBase() = default;
  virtual void start() = 0;
  // stop(): close if idle, else answer the request in flight and close.
  virtual void begin_stop() = 0;
  // Past drain_timeout: close now.
  virtual void force_close() = 0;
};

// The server that Server::start() builds (transport.cc).
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

  // transport_session.cc: reading the request, dispatching it, closing.
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
  void finish_write(error_code ec);
  void end_exchange(const Response& response);
  void close_gracefully();
  void close_now();

  // transport_transfer.cc: streamed bodies, either way.
  void begin_upload(bool has_body);
  void on_admitted(std::optional<Response> refused);
  void read_upload_body();
  void on_upload_bytes(error_code ec, size_t bytes);
  void finish_upload();
  void refuse_upload(const Status& status);
  asio::steady_timer::time_point transfer_deadline() const;
  Response open_file_response(Response response);
  void write_file_part();
  void on_file_part(error_code ec, size_t bytes);
  void request_part();
  void on_part(uint64_t generation, Result<bool> more, std::string part);
  void on_part_timeout(uint64_t generation, error_code ec);
  void write_part();
  void on_part_written(error_code ec, size_t bytes);
  static Result<bool> run_body_stream(BodyStream& stream, std::string& part);

  // transport_response.cc: the response's head, and its write.
  void respond(Response response);
  void write_head(const Response& response, bool bodiless, uint64_t content_length);
  void on_written(error_code ec, size_t bytes);

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

using PlainStream = tcp::socket;
using TlsStream = beast::ssl_stream<tcp::socket>;

}  // namespace leasehold::server::transport_parts
