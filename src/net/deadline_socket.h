// DeadlineSocket: a TCP socket whose synchronous reads and writes wait with
// poll() until a deadline, for the HTTP client. Asio's and Beast's
// synchronous algorithms (asio::write, http::read, the TLS stream's
// handshake, reads and writes) run over it on the caller's thread: a request
// costs its send, a poll and a recv, with no reactor to run and no timer to
// arm and disarm, which Asio's asynchronous operations with deadlines need on
// every request.
//
// Internal to net/: it includes net/beast.h. A DeadlineSocket is used by one
// thread at a time; the io_context it is made on is never run, and may be
// shared by many sockets.
#pragma once

#include <cstddef>

#include "leasehold/clock.h"
#include "net/beast.h"

namespace leasehold::net {

class DeadlineSocket {
 public:
  using lowest_layer_type = tcp::socket;
  using executor_type = tcp::socket::executor_type;
  using error_code = boost::system::error_code;

  explicit DeadlineSocket(asio::io_context& ioc) : socket_(ioc) {}

  // Every operation from now on fails with beast::error::timeout once
  // `deadline` has passed.
  void expires_at(MonoTime deadline) { deadline_ = deadline; }

  // Connects to the first of `endpoints` that accepts before the deadline,
  // with TCP_NODELAY. The error is the last address's, or the timeout.
  error_code connect(const std::vector<tcp::endpoint>& endpoints);

  // True when the peer has closed the connection or sent something while no
  // request was out: either way it must not carry one. One non-blocking peek.
  bool stale();

  // Bytes of the stream the kernel has accepted so far: what may have
  // reached the peer.
  size_t bytes_sent() const { return bytes_sent_; }

  // The Asio stream interface (SyncReadStream, SyncWriteStream). Each call
  // moves at least one byte or fails: asio::error::eof when the peer closed,
  // beast::error::timeout at the deadline.
  template <typename MutableBuffers>
  size_t read_some(const MutableBuffers& buffers, error_code& ec) {
    const asio::mutable_buffer b = first_nonempty(buffers);
    return recv_some(b.data(), b.size(), ec);
  }
  template <typename ConstBuffers>
  size_t write_some(const ConstBuffers& buffers, error_code& ec) {
    const asio::const_buffer b = first_nonempty(buffers);
    return send_some(b.data(), b.size(), ec);
  }
  template <typename MutableBuffers>
  size_t read_some(const MutableBuffers& buffers) {
    error_code ec;
    const size_t n = read_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }
  template <typename ConstBuffers>
  size_t write_some(const ConstBuffers& buffers) {
    error_code ec;
    const size_t n = write_some(buffers, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }

  executor_type get_executor() { return socket_.get_executor(); }
  lowest_layer_type& lowest_layer() { return socket_; }

 private:
  template <typename Buffers>
  static auto first_nonempty(const Buffers& buffers) {
    for (auto it = asio::buffer_sequence_begin(buffers); it != asio::buffer_sequence_end(buffers);
         ++it) {
      if (it->size() > 0) return *it;
    }
    return *asio::buffer_sequence_begin(buffers);
  }

  size_t recv_some(void* data, size_t size, error_code& ec);
  size_t send_some(const void* data, size_t size, error_code& ec);
  // Waits until the socket is ready for `events` (POLLIN, POLLOUT), or has
  // failed, before the deadline; false at the deadline.
  bool wait(short events);

  tcp::socket socket_;
  MonoTime deadline_ = MonoTime::max();
  size_t bytes_sent_ = 0;
  // A reply is never there the moment its request has gone: the first read
  // after a write waits for it first, instead of trying a recv that fails.
  bool wait_before_read_ = false;
};

}  // namespace leasehold::net
