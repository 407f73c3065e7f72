// SocketTlsStream: a TLS client stream in which OpenSSL reads and writes the
// socket itself (SSL_set_fd), for connections that stay open, mostly idle,
// by the thousand: the WebSocket client's wss:// streams (net/websocket.cc).
//
// Asio's ssl::stream keeps two 17 KiB buffers of its own per stream, zeroed
// when it is made, and a BIO pair whose two 17 KiB rings fill as bytes pass:
// some 70 KiB resident per connection, idle or not. Here OpenSSL's record
// buffers are the only ones, and SSL_MODE_RELEASE_BUFFERS gives them back
// whenever the connection has nothing pending, so an idle stream holds its
// SSL object and its cipher state: a few KiB.
//
// It is an Asio AsyncStream (async_read_some, async_write_some) with what
// Beast's WebSocket stream needs of the layer under it (next_layer() and a
// teardown, below). Each operation calls OpenSSL at once; when OpenSSL wants
// the socket readable or writable, it waits for that (socket.async_wait) and
// calls again. An operation done without waiting completes through a post,
// never inside the call that started it. A read and a write may be under way
// together (Beast writes pings and pongs while its read waits).
//
// REQUIRES: the socket's executor is run by one thread (the WsClient's loops
// are), so that OpenSSL's calls on one SSL never overlap, and so that no
// readiness the kernel reports can fall between OpenSSL's failed read and
// the wait that follows it. Internal to net/: it includes net/beast.h.
#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <cerrno>
#include <memory>
#include <string>
#include <utility>

#include "leasehold/status.h"
#include "net/beast.h"
#include "net/beast_websocket.h"
#include "net/tls.h"

namespace leasehold::net {

template <typename Socket>
class SocketTlsStream {
 public:
  using executor_type = typename Socket::executor_type;
  using next_layer_type = Socket;

  SocketTlsStream(executor_type executor, ssl::context& context)
      : socket_(std::move(executor)), context_(context) {}
  SocketTlsStream(const SocketTlsStream&) = delete;
  SocketTlsStream& operator=(const SocketTlsStream&) = delete;

  executor_type get_executor() noexcept { return socket_.get_executor(); }
  Socket& next_layer() { return socket_; }
  const Socket& next_layer() const { return socket_; }
  SSL* native_handle() { return ssl_.get(); }

  // Once the socket is connected, before async_handshake: the SSL object on
  // the socket, with SNI for a name (an IP literal goes without) and the
  // peer's certificate required to name `host`. kUnavailable, with `where`
  // in the message, on failure.
  Status prepare(const std::string& host, const std::string& where) {
    ssl_.reset(SSL_new(context_.native_handle()));
    if (!ssl_) return unavailable("TLS to " + where + ": cannot make a TLS connection");
    SSL* ssl = ssl_.get();
    SSL_set_mode(ssl, SSL_MODE_RELEASE_BUFFERS | SSL_MODE_ENABLE_PARTIAL_WRITE |
                          SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    boost::system::error_code ec;
    socket_.non_blocking(true, ec);
    if (ec || SSL_set_fd(ssl, static_cast<int>(socket_.native_handle())) != 1) {
      ERR_clear_error();
      return unavailable("TLS to " + where + ": cannot set up the TLS connection");
    }
    LEASEHOLD_RETURN_IF_ERROR(prepare_client_ssl(ssl, host, where));
    SSL_set_connect_state(ssl);
    return Status::ok_status();
  }

  // void(error_code). REQUIRES: prepare() succeeded.
  template <typename Handler>
  auto async_handshake(Handler&& handler) {
    return asio::async_compose<Handler, void(boost::system::error_code)>(
        Op<Kind::kHandshake, asio::mutable_buffer>(*this, {}), handler, socket_);
  }

  template <typename Buffers, typename Handler>
  auto async_read_some(const Buffers& buffers, Handler&& handler) {
    return asio::async_compose<Handler, void(boost::system::error_code, size_t)>(
        Op<Kind::kRead, asio::mutable_buffer>(*this, first_buffer<asio::mutable_buffer>(buffers)),
        handler, socket_);
  }

  template <typename Buffers, typename Handler>
  auto async_write_some(const Buffers& buffers, Handler&& handler) {
    return asio::async_compose<Handler, void(boost::system::error_code, size_t)>(
        Op<Kind::kWrite, asio::const_buffer>(*this, first_buffer<asio::const_buffer>(buffers)),
        handler, socket_);
  }

  // A close_notify, if the socket takes it at once; the socket is left as it
  // is. For the teardown below.
  void say_goodbye() {
    if (!ssl_ || !socket_.is_open() || SSL_is_init_finished(ssl_.get()) != 1) return;
    (void)SSL_shutdown(ssl_.get());
    ERR_clear_error();
  }

 private:
  enum class Kind { kHandshake, kRead, kWrite };

  struct SslFree {
    void operator()(SSL* ssl) const { SSL_free(ssl); }
  };

  template <typename Buffer, typename Buffers>
  static Buffer first_buffer(const Buffers& buffers) {
    for (auto it = asio::buffer_sequence_begin(buffers); it != asio::buffer_sequence_end(buffers);
         ++it) {
      const Buffer b(*it);
      if (b.size() > 0) return b;
    }
    return Buffer();
  }

  // What a failed OpenSSL call means, as Asio's ssl::stream would say it.
  static boost::system::error_code failure(int ssl_error, int saved_errno) {
    const unsigned long queued = ERR_get_error();
    ERR_clear_error();
    if (ssl_error == SSL_ERROR_ZERO_RETURN) return asio::error::eof;  // the peer's close_notify
    if (ERR_GET_REASON(queued) == SSL_R_UNEXPECTED_EOF_WHILE_READING ||
        (ssl_error == SSL_ERROR_SYSCALL && queued == 0 && saved_errno == 0)) {
      return ssl::error::stream_truncated;  // the connection ended without one
    }
    if (ssl_error == SSL_ERROR_SYSCALL && queued == 0) {
      return {saved_errno, boost::system::system_category()};
    }
    return {static_cast<int>(queued), asio::error::get_ssl_category()};
  }

  // One operation: calls OpenSSL, waits for the socket as it asks, calls
  // again, until done.
  template <Kind kKind, typename Buffer>
  struct Op {
    Op(SocketTlsStream& s, Buffer b) : stream(s), buffer(b) {}

    SocketTlsStream& stream;
    Buffer buffer;
    bool waited = false;  // it has waited once: completing now is not inline
    bool done = false;    // done without waiting, completing after a post
    boost::system::error_code result;
    size_t bytes = 0;

    template <typename Self>
    void operator()(Self& self, boost::system::error_code ec = {}) {
      if (done) return complete(self);
      if (ec) return finish(self, ec, 0);
      // A closed socket's descriptor may belong to another connection by now.
      if (!stream.socket_.is_open()) return finish(self, asio::error::bad_descriptor, 0);
      if (kKind != Kind::kHandshake && buffer.size() == 0) return finish(self, {}, 0);
      SSL* ssl = stream.ssl_.get();
      ERR_clear_error();
      errno = 0;
      size_t n = 0;
      int r = 0;
      if constexpr (kKind == Kind::kHandshake) {
        r = SSL_do_handshake(ssl);
      } else if constexpr (kKind == Kind::kRead) {
        r = SSL_read_ex(ssl, buffer.data(), buffer.size(), &n);
      } else {
        r = SSL_write_ex(ssl, buffer.data(), buffer.size(), &n);
      }
      const int saved_errno = errno;
      if (r == 1) return finish(self, {}, n);
      const int error = SSL_get_error(ssl, r);
      if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
        ERR_clear_error();
        waited = true;
        return stream.socket_.async_wait(
            error == SSL_ERROR_WANT_READ ? Socket::wait_read : Socket::wait_write, std::move(self));
      }
      finish(self, failure(error, saved_errno), 0);
    }

    template <typename Self>
    void finish(Self& self, boost::system::error_code ec, size_t n) {
      result = ec;
      bytes = n;
      if (waited) return complete(self);
      done = true;
      asio::post(stream.get_executor(), std::move(self));
    }

    template <typename Self>
    void complete(Self& self) {
      if constexpr (kKind == Kind::kHandshake) {
        self.complete(result);
      } else {
        self.complete(result, bytes);
      }
    }
  };

  Socket socket_;
  ssl::context& context_;
  std::unique_ptr<SSL, SslFree> ssl_;
};

// Beast's closing handshake ends with a teardown of the layer under it: a
// close_notify if it goes at once, then the socket's own teardown.
template <typename Socket, typename Handler>
void async_teardown(beast::role_type role, SocketTlsStream<Socket>& stream, Handler&& handler) {
  using beast::async_teardown;
  using boost::beast::websocket::async_teardown;
  stream.say_goodbye();
  async_teardown(role, stream.next_layer(), std::forward<Handler>(handler));
}
template <typename Socket>
void teardown(beast::role_type role, SocketTlsStream<Socket>& stream,
              boost::system::error_code& ec) {
  using beast::teardown;
  using boost::beast::websocket::teardown;
  stream.say_goodbye();
  teardown(role, stream.next_layer(), ec);
}

}  // namespace leasehold::net
