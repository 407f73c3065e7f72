// The upstream simulator's server, and what its sessions share with it.
// Internal to tools/upstream_sim/: UpstreamSim (upstream_sim.h) is the
// interface. A session is a template on its WebSocket stream
// (sim_session.h), made in a file of its own for each stream
// (sim_session_plain.cc, sim_session_tls.cc): Beast's WebSocket server is
// most of the simulator's compile time, and so compiles on two cores.
#pragma once

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <thread>
#include <unordered_set>
#include <vector>

#include "base/mutex.h"
#include "leasehold/random.h"
#include "net/beast_websocket.h"
#include "tools/upstream_sim/upstream_sim.h"

namespace leasehold::tools::sim {

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

// A session for `socket`, not started yet: over the socket (ws://), or over
// TLS on it with `tls`, which outlives the session (wss://).
std::shared_ptr<SimSessionBase> make_plain_session(SimServer& server, tcp::socket socket);
std::shared_ptr<SimSessionBase> make_tls_session(SimServer& server, tcp::socket socket,
                                                 ssl::context& tls);

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

}  // namespace leasehold::tools::sim
