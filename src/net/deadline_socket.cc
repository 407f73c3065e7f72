// DeadlineSocket over the socket's descriptor in non-blocking mode, waiting
// with ppoll() for the time left until the deadline.
#include "net/deadline_socket.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>

namespace leasehold::net {
namespace {

// A far deadline is waited for in slices of this length, so that the time
// left always fits in a timespec.
constexpr Duration kWaitSliceMax = std::chrono::hours(1);

boost::system::error_code last_error() {
  return boost::system::error_code(errno, boost::system::system_category());
}

}  // namespace

bool DeadlineSocket::wait(short events) {
  pollfd p{socket_.native_handle(), events, 0};
  for (;;) {
    // Real time: ppoll() below waits in the kernel, which knows no Clock.
    const Duration left = deadline_ - std::chrono::steady_clock::now();
    if (left <= Duration::zero()) return false;
    const auto slice = std::min(left, kWaitSliceMax);
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(slice);
    const timespec timeout{static_cast<time_t>(seconds.count()),
                           static_cast<long>((slice - seconds).count())};
    const int n = ::ppoll(&p, 1, &timeout, nullptr);
    // Readiness or an error (POLLERR, POLLHUP): the next call says which.
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;
  }
}

boost::system::error_code DeadlineSocket::connect(const std::vector<tcp::endpoint>& endpoints) {
  error_code ec = asio::error::host_not_found;
  for (const tcp::endpoint& endpoint : endpoints) {
    socket_.close(ec);
    socket_.open(endpoint.protocol(), ec);
    if (!ec) socket_.non_blocking(true, ec);
    if (ec) continue;
    const int fd = socket_.native_handle();
    if (::connect(fd, endpoint.data(), static_cast<socklen_t>(endpoint.size())) != 0) {
      if (errno != EINPROGRESS) {
        ec = last_error();
        continue;
      }
      if (!wait(POLLOUT)) return beast::error::timeout;
      int error = 0;
      socklen_t length = sizeof(error);
      if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
      if (error != 0) {
        ec = error_code(error, boost::system::system_category());
        continue;
      }
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return {};
  }
  socket_.close();
  return ec;
}

bool DeadlineSocket::stale() {
  char byte;
  const ssize_t n = ::recv(socket_.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK));
}

size_t DeadlineSocket::recv_some(void* data, size_t size, error_code& ec) {
  ec = {};
  if (size == 0) return 0;
  if (wait_before_read_) {
    wait_before_read_ = false;
    if (!wait(POLLIN)) {
      ec = beast::error::timeout;
      return 0;
    }
  }
  for (;;) {
    const ssize_t n = ::recv(socket_.native_handle(), data, size, 0);
    if (n > 0) return static_cast<size_t>(n);
    if (n == 0) {
      ec = asio::error::eof;
      return 0;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) {
      ec = last_error();
      return 0;
    }
    if (!wait(POLLIN)) {
      ec = beast::error::timeout;
      return 0;
    }
  }
}

size_t DeadlineSocket::send_some(const void* data, size_t size, error_code& ec) {
  ec = {};
  if (size == 0) return 0;
  for (;;) {
    // MSG_NOSIGNAL: a peer that has gone is an error to return, not SIGPIPE.
    const ssize_t n = ::send(socket_.native_handle(), data, size, MSG_NOSIGNAL);
    if (n > 0) {
      bytes_sent_ += static_cast<size_t>(n);
      wait_before_read_ = true;
      return static_cast<size_t>(n);
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      ec = last_error();
      return 0;
    }
    if (!wait(POLLOUT)) {
      ec = beast::error::timeout;
      return 0;
    }
  }
}

}  // namespace leasehold::net
