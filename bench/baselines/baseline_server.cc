// BaselineServer on Beast: an acceptor, and per connection a session that
// loops on http::async_read and asio::async_write of fixed bytes. stop()
// stops the io_context; the sessions, held only by their pending handlers,
// are destroyed with it, which closes their sockets.
#include "bench/baselines/baseline_server.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "net/beast.h"

namespace leasehold::bench {
namespace {

namespace asio = net::asio;
namespace beast = net::beast;
namespace http = net::http;
using tcp = net::tcp;
using error_code = boost::system::error_code;

class BaselineSession : public std::enable_shared_from_this<BaselineSession> {
 public:
  BaselineSession(tcp::socket socket, const BaselineOptions& options)
      : socket_(std::move(socket)), options_(options) {}

  void read() {
    request_ = {};
    http::async_read(socket_, buffer_, request_,
                     beast::bind_front_handler(&BaselineSession::on_read, shared_from_this()));
  }

 private:
  void on_read(error_code ec, size_t) {
    if (ec) return;  // the client left: the session ends with its last handler
    last_ = ++requests_ >= options_.requests_per_connection_max;
    const std::string& bytes = last_ ? options_.last_reply : options_.reply;
    asio::async_write(socket_, asio::buffer(bytes),
                      beast::bind_front_handler(&BaselineSession::on_write, shared_from_this()));
  }

  void on_write(error_code ec, size_t) {
    if (ec) return;
    if (last_) {
      socket_.shutdown(tcp::socket::shutdown_send, ec);
      return;
    }
    read();
  }

  tcp::socket socket_;
  const BaselineOptions& options_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  size_t requests_ = 0;
  bool last_ = false;
};

class BaselineImpl final : public BaselineServer {
 public:
  explicit BaselineImpl(BaselineOptions options) : options_(std::move(options)), acceptor_(io_) {}
  ~BaselineImpl() override { stop(); }

  Status listen() {
    error_code ec;
    const asio::ip::address address = asio::ip::make_address(options_.host, ec);
    if (ec)
      return invalid_argument("baseline server: '" + options_.host + "' is not an IP address");
    const tcp::endpoint endpoint(address, options_.port);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (!ec) port_ = acceptor_.local_endpoint(ec).port();
    if (ec) return unavailable("baseline server: cannot listen: " + ec.message());
    return Status::ok_status();
  }

  void run() {
    accept();
    for (size_t i = 0; i < options_.threads; ++i) threads_.emplace_back([this] { io_.run(); });
  }

  uint16_t port() const override { return port_; }

  void stop() override {
    io_.stop();
    for (std::thread& thread : threads_) thread.join();
    threads_.clear();
  }

 private:
  void accept() {
    acceptor_.async_accept(asio::make_strand(io_), [this](error_code ec, tcp::socket socket) {
      if (ec) return;  // the acceptor is gone: stop()
      std::make_shared<BaselineSession>(std::move(socket), options_)->read();
      accept();
    });
  }

  const BaselineOptions options_;
  asio::io_context io_;
  tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace

Result<std::unique_ptr<BaselineServer>> BaselineServer::start(BaselineOptions options) {
  if (options.threads == 0 || options.requests_per_connection_max == 0) {
    return invalid_argument(
        "baseline server: threads and requests_per_connection_max must be >= 1");
  }
  if (options.reply.empty() || options.last_reply.empty()) {
    return invalid_argument("baseline server: no reply to send");
  }
  auto server = std::make_unique<BaselineImpl>(std::move(options));
  LEASEHOLD_RETURN_IF_ERROR(server->listen());
  server->run();
  return std::unique_ptr<BaselineServer>(std::move(server));
}

}  // namespace leasehold::bench
