// The server (ServerImpl; server/transport_impl.h has the transport's
// layout): it listens, gives each accepted connection to the next I/O
// thread in turn, keeps the set of live sessions, and stops: no more
// accepting, idle sessions closed and busy ones drained up to
// drain_timeout, the I/O threads joined. Server::start() checks the options
// and builds it.
#include <algorithm>
#include <boost/asio/post.hpp>
#include <cassert>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "base/mutex.h"
#include "net/tls.h"
#include "server/server.h"
#include "server/transport_impl.h"

namespace leasehold::server {
namespace transport_parts {
namespace {

// After accept() fails (out of file descriptors), the acceptor waits this
// long before it tries again, rather than spin.
constexpr std::chrono::milliseconds kAcceptRetryDelay{50};
// The most I/O threads a server may have.
constexpr size_t kThreadsMax = 256;

// The server whose I/O thread this is: a mark each I/O thread sets for
// itself, rather than a list of thread IDs, since once a thread is joined
// its ID may be given to a new thread, which must not pass for the server's.
thread_local const ServerImpl* running_on = nullptr;

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

}  // namespace

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

}  // namespace transport_parts

Result<std::unique_ptr<Server>> Server::start(ServerOptions options, const Router& router,
                                              ServerHooks hooks) {
  LEASEHOLD_RETURN_IF_ERROR(transport_parts::validate(options, hooks));
  std::unique_ptr<net::ssl::context> tls;
  if (!options.tls_cert_file.empty()) {
    LEASEHOLD_ASSIGN_OR_RETURN(
        tls, net::make_server_tls_context(options.tls_cert_file, options.tls_key_file));
  }
  SystemRandom system_random;
  Random& random = options.random != nullptr ? *options.random : system_random;
  const size_t threads =
      options.threads != 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  auto server = std::make_unique<transport_parts::ServerImpl>(
      std::move(options), router, std::move(hooks), std::move(tls), threads, random.next_u64());
  LEASEHOLD_RETURN_IF_ERROR(server->listen());
  server->run();
  return std::unique_ptr<Server>(std::move(server));
}

}  // namespace leasehold::server
