// One connection of the upstream simulator, a template on its WebSocket
// stream (PlainSimWs or TlsSimWs): it does the TLS handshake (wss:// only),
// reads the upgrade request (header limit; one handshake timeout over
// both), refuses it or accepts it, then writes the stream's messages, one at
// a time, while a read stays pending for the client's pings and close frame.
// Pacing: each session keeps the time its next message is due and waits for
// it on its own timer (absolute times, so that write latency does not slow
// the rate down), the first due as the stream opens or, with random_phase, a
// random part of a period later; a session that fell behind by more than one
// period starts again from now rather than burst. Included by one file per
// stream (sim_session_plain.cc, sim_session_tls.cc), each of which makes
// its sessions.
#pragma once

#include <openssl/ssl.h>

#include <string>
#include <type_traits>
#include <utility>

#include "base/logging.h"
#include "tools/upstream_sim/sim_server.h"

namespace leasehold::tools::sim {

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

}  // namespace leasehold::tools::sim
