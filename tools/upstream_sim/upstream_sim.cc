// UpstreamSim on Boost.Beast: the stream requests' parsing, the messages'
// text, and the server (sim_server.h): an acceptor on a strand, and per
// connection a session on a strand of its own (sim_session.h), which the
// server keeps behind one base class whichever its stream.
#include "tools/upstream_sim/upstream_sim.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/logging.h"
#include "net/tls.h"
#include "tools/upstream_sim/sim_server.h"

namespace leasehold::tools {
namespace {

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

namespace sim {

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
  std::shared_ptr<SimSessionBase> session = tls_ ? make_tls_session(*this, std::move(socket), *tls_)
                                                 : make_plain_session(*this, std::move(socket));
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

}  // namespace sim

namespace {

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
  auto server = std::make_unique<sim::SimServer>(std::move(options), std::move(tls));
  LEASEHOLD_RETURN_IF_ERROR(server->listen());
  server->run();
  return std::unique_ptr<UpstreamSim>(std::move(server));
}

}  // namespace leasehold::tools
