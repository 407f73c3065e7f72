// UpstreamSim on Boost.Beast: an acceptor on a strand, and per connection a
// SimSession on a strand of its own that does the TLS handshake (wss://
// only), reads the upgrade request (header limit; one handshake timeout over
// both), refuses it or accepts it, then writes the stream's messages, one at
// a time, while a read stays pending for the client's pings and close frame.
// A session is a template on its WebSocket stream, over the socket
// (PlainSimWs) or over an SSL stream on it (TlsSimWs), behind one base class
// that the server keeps. Pacing: each session keeps the time its next
// message is due and waits for it on its own timer (absolute times, so that
// write latency does not slow the rate down), the first due as the stream
// opens or, with random_phase, a random part of a period later; a session
// that fell behind by more than one period starts again from now rather
// than burst.
#include "tools/upstream_sim/upstream_sim.h"

#include <openssl/ssl.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <charconv>
#include <condition_variable>
#include <optional>
#include <thread>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "base/mutex.h"
#include "leasehold/random.h"
#include "net/beast_websocket.h"
#include "net/tls.h"

namespace leasehold::tools {
namespace {

namespace asio = net::asio;
namespace beast = net::beast;
namespace http = net::http;
namespace ssl = net::ssl;
namespace websocket = net::websocket;
using tcp = net::tcp;
using error_code = boost::system::error_code;
using SteadyClock = std::chrono::steady_clock;

constexpr uint32_t kHeaderBytesMax = 8 * 1024;
constexpr size_t kClientMessageBytesMax = 4 * 1024;  // what a client may send (dropped)

bool is_conn_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

// The value of `from` in a query ("a=1&from=5"), if present.
std::optional<std::string_view> from_param(std::string_view query) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    if (pair.starts_with("from=")) return pair.substr(5);
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

}  // namespace

Result<SimStreamRequest> parse_sim_target(std::string_view target) {
  const size_t question = target.find('?');
  const std::string_view path = target.substr(0, question);
  const std::string_view query =
      question == std::string_view::npos ? std::string_view() : target.substr(question + 1);
  if (!path.starts_with("/s/")) return not_found("no stream at this path; try /s/<conn>?from=N");
  SimStreamRequest request;
  const std::string_view conn = path.substr(3);
  if (conn.empty() || conn.size() > kUpstreamSimConnBytesMax ||
      !std::all_of(conn.begin(), conn.end(), is_conn_char)) {
    return invalid_argument("conn must be 1.." + std::to_string(kUpstreamSimConnBytesMax) +
                            " characters of A-Z, a-z, 0-9, '.', '_', '-'");
  }
  request.conn = std::string(conn);
  if (const auto from = from_param(query)) {
    const auto [end, ec] = std::from_chars(from->data(), from->data() + from->size(), request.from);
    if (ec != std::errc() || end != from->data() + from->size() || request.from < 1) {
      return invalid_argument("from must be an integer >= 1");
    }
  }
  return request;
}

void append_sim_message(std::string& out, std::string_view conn, int64_t seq, int64_t sent_at_ms) {
  char number[24];
  const auto append_number = [&](int64_t n) {
    out.append(number, std::to_chars(number, number + sizeof(number), n).ptr);
  };
  out.append(R"({"seq":)");
  append_number(seq);
  out.append(R"(,"conn":")").append(conn).append(R"(","sent_at_ms":)");
  append_number(sent_at_ms);
  // Eight hex digits that change with seq, so that no two neighbours match.
  const uint32_t mixed = static_cast<uint32_t>(seq) * 0x9E3779B1u;
  char data[8];
  for (int i = 0; i < 8; ++i) data[i] = "0123456789abcdef"[(mixed >> (28 - 4 * i)) & 0xf];
  out.append(R"(,"data":")").append(data, sizeof(data)).append(R"("})");
}

namespace {

// No permessage-deflate: its state costs hundreds of KiB a stream.
using PlainSimWs = websocket::stream<beast::tcp_stream, false>;
using TlsSimWs = websocket::stream<ssl::stream<beast::tcp_stream>, false>;

class SimServer;

// What the server holds of a session, whichever stream it is on.
class SimSessionBase : public std::enable_shared_from_this<SimSessionBase> {
 public:
  virtual ~SimSessionBase() = default;
  virtual void start() = 0;
  // Posts a close (1001, going away) to the session's strand.
  virtual void request_stop() = 0;
};

// One connection: Ws is PlainSimWs or TlsSimWs.
template <typename Ws>
class SimSession final : public SimSessionBase {
 public:
  // REQUIRES: `tls` is non-null for TlsSimWs (and outlives the session),
  // ignored for PlainSimWs.
  SimSession(SimServer& server, tcp::socket socket, ssl::context* tls);
  ~SimSession() override;
  SimSession(const SimSession&) = delete;
  SimSession& operator=(const SimSession&) = delete;

  void start() override;
  void request_stop() override;

 private:
  static constexpr bool kTls = std::is_same_v<Ws, TlsSimWs>;

  static Ws make_stream(tcp::socket socket, ssl::context* tls) {
    if constexpr (kTls) {
      return Ws(std::move(socket), *tls);
    } else {
      (void)tls;
      return Ws(std::move(socket));
    }
  }

  std::shared_ptr<SimSession> self() {
    return std::static_pointer_cast<SimSession>(shared_from_this());
  }
  beast::tcp_stream& tcp_layer() { return beast::get_lowest_layer(ws_); }

  void begin();
  void read_request();
  void on_request(error_code ec);
  void refuse(http::status status, std::string body);
  void on_accept(error_code ec);
  void read();
  void send();
  void on_write(error_code ec);
  void wait_for_next();
  void wait_until_due();
  void stop_now();

  SimServer& server_;
  Ws ws_;
  asio::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> parser_;
  std::unique_ptr<http::response<http::string_body>> refusal_;
  SimStreamRequest request_;
  std::string out_;  // the message being written
  SteadyClock::time_point next_due_{};
  bool over_limit_ = false;  // past kUpstreamSimConnectionsMax: refused with 503
  bool counted_ = false;     // in streams()
  bool write_pending_ = false;
  bool stopping_ = false;   // the server is stopping: close after the write under way
  bool peer_gone_ = false;  // the read failed: the stream is over
};

class SimServer final : public UpstreamSim {
 public:
  // `tls`: null for ws://.
  SimServer(UpstreamSimOptions options, std::unique_ptr<ssl::context> tls)
      : options_(std::move(options)),
        tls_(std::move(tls)),
        io_(std::in_place, static_cast<int>(options_.threads)),
        acceptor_(std::in_place, asio::make_strand(*io_)),
        work_(asio::make_work_guard(*io_)) {
    if (options_.rate_per_conn > 0) {
      period_ = std::chrono::duration_cast<SteadyClock::duration>(
          std::chrono::duration<double>(1.0 / options_.rate_per_conn));
    }
  }
  ~SimServer() override {
    stop();
    acceptor_.reset();
    io_.reset();  // frees what its queued handlers still hold
  }

  Status listen();
  void run();

  uint16_t port() const override { return port_; }
  size_t streams() const override { return streams_.load(std::memory_order_acquire); }
  void stop() override;

  // For the sessions.
  const UpstreamSimOptions& options() const { return options_; }
  SteadyClock::duration period() const { return period_; }  // zero at rate 0
  // How long a stream's first message waits: zero, or with random_phase a
  // uniform draw below one period.
  SteadyClock::duration first_delay() {
    if (!options_.random_phase || period_ == SteadyClock::duration::zero()) return {};
    return SteadyClock::duration(random_.uniform(0, period_.count() - 1));
  }
  Logger* logger() const { return options_.logger; }
  int64_t wall_ms() { return to_unix_ms(options_.clock->wall_now()); }
  bool add(SimSessionBase* session) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    sessions_.insert(session);
    return sessions_.size() <= kUpstreamSimConnectionsMax;
  }
  void remove(SimSessionBase* session) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    sessions_.erase(session);
    if (sessions_.empty()) emptied_.notify_all();
  }
  void stream_opened() { streams_.fetch_add(1, std::memory_order_acq_rel); }
  void stream_closed() { streams_.fetch_sub(1, std::memory_order_acq_rel); }

 private:
  void accept();
  void start_session(tcp::socket socket);

  const UpstreamSimOptions options_;
  const std::unique_ptr<ssl::context> tls_;  // shared by every session; null for ws://
  SteadyClock::duration period_{};
  SystemRandom random_;  // thread-safe
  Mutex mu_;
  CondVar emptied_;
  std::unordered_set<SimSessionBase*> sessions_ GUARDED_BY(mu_);
  std::atomic<size_t> streams_{0};
  std::optional<asio::io_context> io_;
  std::optional<tcp::acceptor> acceptor_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::vector<std::thread> threads_;
  uint16_t port_ = 0;
  bool stopped_ = false;
};

template <typename Ws>
SimSession<Ws>::SimSession(SimServer& server, tcp::socket socket, ssl::context* tls)
    : server_(server), ws_(make_stream(std::move(socket), tls)), timer_(ws_.get_executor()) {
  ws_.read_message_max(kClientMessageBytesMax);
}

template <typename Ws>
SimSession<Ws>::~SimSession() {
  if (counted_) server_.stream_closed();
  server_.remove(this);
}

template <typename Ws>
void SimSession<Ws>::start() {
  over_limit_ = !server_.add(this);
  // Once added, stop() may call request_stop(): what follows runs on the
  // session's strand, as that does, and never at the same time.
  asio::post(ws_.get_executor(), [self = self()] { self->begin(); });
}

template <typename Ws>
void SimSession<Ws>::begin() {
  if (stopping_) return;  // the session ends with this handler
  // One deadline for the TLS handshake and the upgrade request together.
  tcp_layer().expires_after(kUpstreamSimHandshakeTimeout);
  if constexpr (kTls) {
    // OpenSSL's record buffers go back while the stream is idle, which a
    // paced stream is most of the time.
    SSL_set_mode(ws_.next_layer().native_handle(), SSL_MODE_RELEASE_BUFFERS);
    ws_.next_layer().async_handshake(ssl::stream_base::server, [self = self()](error_code ec) {
      if (ec || self->stopping_) return;  // the session ends with this handler
      self->read_request();
    });
  } else {
    read_request();
  }
}

template <typename Ws>
void SimSession<Ws>::read_request() {
  if (over_limit_) return refuse(http::status::service_unavailable, "too many streams\n");
  parser_.emplace();
  parser_->header_limit(kHeaderBytesMax);
  http::async_read(ws_.next_layer(), buffer_, *parser_,
                   [self = self()](error_code ec, size_t) { self->on_request(ec); });
}

template <typename Ws>
void SimSession<Ws>::request_stop() {
  asio::post(ws_.get_executor(), [self = self()] {
    if (self->stopping_ || self->peer_gone_) return;
    self->stopping_ = true;
    self->timer_.cancel();
    if (!self->counted_) {  // not a stream (yet): just go
      error_code ignored;
      self->tcp_layer().socket().close(ignored);
    } else if (!self->write_pending_) {
      self->stop_now();
    }  // else on_write closes
  });
}

template <typename Ws>
void SimSession<Ws>::on_request(error_code ec) {
  if (ec || stopping_) return;  // the session ends with this handler
  const http::request<http::empty_body>& request = parser_->get();
  if (!websocket::is_upgrade(request)) {
    return refuse(http::status::bad_request, "expected a WebSocket upgrade\n");
  }
  auto parsed = parse_sim_target(request.target());
  if (!parsed.ok()) {
    return refuse(parsed.status().code() == Code::kNotFound ? http::status::not_found
                                                            : http::status::bad_request,
                  parsed.status().message() + "\n");
  }
  request_ = std::move(*parsed);
  tcp_layer().expires_never();
  websocket::stream_base::timeout timeout;
  timeout.handshake_timeout = kUpstreamSimHandshakeTimeout;
  timeout.idle_timeout = kUpstreamSimIdleTimeout;
  timeout.keep_alive_pings = true;
  ws_.set_option(timeout);
  ws_.async_accept(request, [self = self()](error_code e) { self->on_accept(e); });
}

template <typename Ws>
void SimSession<Ws>::refuse(http::status status, std::string body) {
  refusal_ = std::make_unique<http::response<http::string_body>>(status, 11);
  refusal_->set(http::field::content_type, "text/plain");
  refusal_->keep_alive(false);
  refusal_->body() = std::move(body);
  refusal_->prepare_payload();
  tcp_layer().expires_after(kUpstreamSimHandshakeTimeout);
  http::async_write(ws_.next_layer(), *refusal_, [self = self()](error_code, size_t) {
    error_code ignored;
    self->tcp_layer().socket().shutdown(tcp::socket::shutdown_both, ignored);
  });
}

template <typename Ws>
void SimSession<Ws>::on_accept(error_code ec) {
  parser_.reset();
  if (ec || stopping_) return;
  counted_ = true;
  server_.stream_opened();
  log_to(server_.logger(), LogLevel::kDebug, "stream {} opened from seq {}", request_.conn,
         request_.from);
  next_due_ = SteadyClock::now();
  read();
  const SteadyClock::duration delay = server_.first_delay();
  if (delay == SteadyClock::duration::zero()) return send();
  next_due_ += delay;
  wait_until_due();
}

template <typename Ws>
void SimSession<Ws>::read() {
  ws_.async_read(buffer_, [self = self()](error_code ec, size_t) {
    self->buffer_.consume(self->buffer_.size());
    if (ec) {  // closed, failed or timed out: no more writes either
      self->peer_gone_ = true;
      self->timer_.cancel();
      return;
    }
    self->read();
  });
}

template <typename Ws>
void SimSession<Ws>::send() {
  out_.clear();
  append_sim_message(out_, request_.conn, request_.from, server_.wall_ms());
  write_pending_ = true;
  ws_.async_write(asio::buffer(out_),
                  [self = self()](error_code ec, size_t) { self->on_write(ec); });
}

template <typename Ws>
void SimSession<Ws>::on_write(error_code ec) {
  write_pending_ = false;
  if (ec || peer_gone_) return;
  ++request_.from;
  if (stopping_) return stop_now();
  if (server_.period() == SteadyClock::duration::zero()) return send();
  wait_for_next();
}

template <typename Ws>
void SimSession<Ws>::wait_for_next() {
  const SteadyClock::time_point now = SteadyClock::now();
  next_due_ += server_.period();
  if (next_due_ + server_.period() < now) next_due_ = now;  // far behind: no burst
  wait_until_due();
}

template <typename Ws>
void SimSession<Ws>::wait_until_due() {
  timer_.expires_at(next_due_);
  timer_.async_wait([self = self()](error_code ec) {
    if (ec || self->stopping_ || self->peer_gone_) return;
    self->send();
  });
}

template <typename Ws>
void SimSession<Ws>::stop_now() {
  ws_.async_close(websocket::close_reason(websocket::close_code::going_away, "server stopping"),
                  [self = self()](error_code) {
                    error_code ignored;
                    self->tcp_layer().socket().close(ignored);
                  });
}

Status SimServer::listen() {
  error_code ec;
  const asio::ip::address address = asio::ip::make_address(options_.host, ec);
  if (ec) return invalid_argument("upstream-sim: '" + options_.host + "' is not an IP address");
  const tcp::endpoint endpoint(address, options_.port);
  acceptor_->open(endpoint.protocol(), ec);
  if (!ec) acceptor_->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_->bind(endpoint, ec);
  if (!ec) acceptor_->listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) port_ = acceptor_->local_endpoint(ec).port();
  if (ec)
    return unavailable("upstream-sim: cannot listen on " + options_.host + ": " + ec.message());
  return Status::ok_status();
}

void SimServer::run() {
  asio::post(acceptor_->get_executor(), [this] { accept(); });
  threads_.reserve(options_.threads);
  for (size_t i = 0; i < options_.threads; ++i) threads_.emplace_back([this] { io_->run(); });
}

void SimServer::accept() {
  acceptor_->async_accept(asio::make_strand(*io_), [this](error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_->is_open()) return;
    if (ec) {
      log_to(logger(), LogLevel::kWarn, "upstream-sim: accept failed: {}", ec.message());
    } else {
      start_session(std::move(socket));
    }
    accept();
  });
}

void SimServer::start_session(tcp::socket socket) {
  std::shared_ptr<SimSessionBase> session;
  if (tls_) {
    session = std::make_shared<SimSession<TlsSimWs>>(*this, std::move(socket), tls_.get());
  } else {
    session = std::make_shared<SimSession<PlainSimWs>>(*this, std::move(socket), nullptr);
  }
  session->start();
}

void SimServer::stop() {
  if (stopped_) return;
  stopped_ = true;
  asio::post(acceptor_->get_executor(), [this] {
    error_code ignored;
    acceptor_->close(ignored);
  });
  std::vector<std::shared_ptr<SimSessionBase>> live;
  MutexLock lock(mu_);
  for (SimSessionBase* session : sessions_) {
    if (auto s = session->weak_from_this().lock()) live.push_back(std::move(s));
  }
  lock.unlock();
  for (const auto& session : live) session->request_stop();
  live.clear();
  lock.lock();
  const MonoTime deadline = SteadyClock::now() + kUpstreamSimStopTimeout;
  while (!sessions_.empty()) {
    if (emptied_.wait_until(mu_, deadline) == std::cv_status::timeout) break;
  }
  lock.unlock();
  work_.reset();
  io_->stop();
  for (std::thread& thread : threads_) thread.join();
}

Status validate(const UpstreamSimOptions& options) {
  if (options.threads < 1 || options.threads > kUpstreamSimThreadsMax) {
    return invalid_argument("upstream-sim threads must be 1.." +
                            std::to_string(kUpstreamSimThreadsMax));
  }
  if (!(options.rate_per_conn >= 0 && options.rate_per_conn <= kUpstreamSimRateMax)) {
    return invalid_argument("upstream-sim rate per connection must be 0.." +
                            std::to_string(static_cast<int64_t>(kUpstreamSimRateMax)));
  }
  if (options.clock == nullptr) return invalid_argument("upstream-sim needs a clock");
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return invalid_argument("upstream-sim TLS needs both a certificate file and a key file");
  }
  return Status::ok_status();
}

}  // namespace

Result<std::unique_ptr<UpstreamSim>> UpstreamSim::start(UpstreamSimOptions options) {
  LEASEHOLD_RETURN_IF_ERROR(validate(options));
  std::unique_ptr<net::ssl::context> tls;
  if (!options.tls_cert.empty()) {
    LEASEHOLD_ASSIGN_OR_RETURN(tls,
                               net::make_server_tls_context(options.tls_cert, options.tls_key));
  }
  auto server = std::make_unique<SimServer>(std::move(options), std::move(tls));
  LEASEHOLD_RETURN_IF_ERROR(server->listen());
  server->run();
  return std::unique_ptr<UpstreamSim>(std::move(server));
}

}  // namespace leasehold::tools
