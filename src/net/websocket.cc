// WsClient on Boost.Beast. `threads` event loops, each an io_context run by
// one I/O thread of its own; each stream is a Session placed on the loop
// with the fewest streams, where it stays. Its socket's executor is that
// loop's, so every completion (Beast's own, for pings and the close
// handshake, as well as ours) runs on the loop's one thread, and a stream's
// handlers never run at once without a strand. One thread per io_context,
// rather than several threads sharing one, is what keeps a slow stream
// cheap: a message that arrives alone is read, handled and followed by the
// next read on the thread that epoll woke, with no hand-off to another
// thread (a wake-up, a lock and a context switch each time).
//
// A session's life, on its loop: start -> (resolve) -> TCP connect -> (TLS
// handshake) -> upgrade, all under one connect timer -> open: a read loop
// (below) -> finish: on_closed, once, when no operation of ours is pending.
//
// The read loop reads one whole message at a time with Beast and copies it
// into the session's batch, then begins the next read at once. Beast reads
// the network in chunks and finds the next message in what it already has,
// or asks the layer below it for more bytes; that layer (NetworkReads) tells
// the session each time it asks. When Beast asks the network, the batch
// holds every message that had arrived, and it is handed to on_messages
// then, while that read waits: at once if the ask came while the read was
// being begun, else (Beast first had other work without the network, such
// as answering a ping that came in behind the message) through a post to
// the loop. Otherwise the read's completion is already queued on the loop
// and the batch grows. The batch lives apart from Beast's buffer, which the
// pending read fills.
//
// What the caller holds is a Gate, not the session: close() must work from
// any thread, even after the client (and with it the io_context) has gone,
// when it does nothing. A Gate holds the mutex on_message runs under, which
// is how close() knows that no call is under way when it returns, and a weak
// reference to its session, through which it posts the close request to the
// session's loop.
#include "net/websocket.h"

#include <openssl/ssl.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <cassert>
#include <optional>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "base/duration.h"
#include "base/logging.h"
#include "base/mutex.h"
#include "net/beast_websocket.h"
#include "net/endpoint.h"
#include "net/socket_tls_stream.h"
#include "net/tls.h"

namespace leasehold::net {
namespace {

using error_code = boost::system::error_code;
using Executor = asio::io_context::executor_type;
using Socket = asio::basic_stream_socket<tcp, Executor>;

// A read or batch buffer that grew past this for large messages is given
// back once they have been handled; smaller ones are kept for the next.
constexpr size_t kReadBufferKeepBytes = 16 * 1024;

// What NetworkReads tells: Beast is asking the layer below for bytes.
class NetworkListener {
 public:
  virtual void on_network_read() = 0;

 protected:
  ~NetworkListener() = default;
};

// The layer under Beast's WebSocket stream: `Next` (the socket, or the TLS
// stream on it) as it is, except that it tells its listener of each of
// Beast's reads from it, so that a session knows when the read under way
// waits for the network. (A TLS stream may have the bytes already: its
// batches can end sooner than they need to, never later.) Beast's
// completions run on the session's loop, and so does the listener.
template <typename Next>
class NetworkReads {
 public:
  using executor_type = typename Next::executor_type;
  using next_layer_type = Next;

  template <typename... Args>
  explicit NetworkReads(Args&&... args) : next_(std::forward<Args>(args)...) {}

  executor_type get_executor() noexcept { return next_.get_executor(); }
  Next& next_layer() { return next_; }
  const Next& next_layer() const { return next_; }
  void listen(NetworkListener* listener) { listener_ = listener; }

  template <typename Buffers, typename Handler>
  auto async_read_some(const Buffers& buffers, Handler&& handler) {
    if (listener_ != nullptr) listener_->on_network_read();
    return next_.async_read_some(buffers, std::forward<Handler>(handler));
  }
  template <typename Buffers, typename Handler>
  auto async_write_some(const Buffers& buffers, Handler&& handler) {
    return next_.async_write_some(buffers, std::forward<Handler>(handler));
  }

 private:
  Next next_;
  NetworkListener* listener_ = nullptr;
};

// Beast's closing handshake ends with a teardown of the layer under it,
// found by argument-dependent lookup: the one of `Next`.
template <typename Next, typename Handler>
void async_teardown(beast::role_type role, NetworkReads<Next>& layer, Handler&& handler) {
  using beast::async_teardown;
  using websocket::async_teardown;
  async_teardown(role, layer.next_layer(), std::forward<Handler>(handler));
}
template <typename Next>
void teardown(beast::role_type role, NetworkReads<Next>& layer, error_code& ec) {
  using beast::teardown;
  using websocket::teardown;
  teardown(role, layer.next_layer(), ec);
}

// No permessage-deflate: its state costs hundreds of KiB a stream.
using PlainWs = websocket::stream<NetworkReads<Socket>, false>;
// TLS with OpenSSL on the socket itself: an idle stream keeps no buffers
// (net/socket_tls_stream.h).
using TlsWs = websocket::stream<NetworkReads<SocketTlsStream<Socket>>, false>;

class SessionCore;

// The stream on_messages is running for on this thread, if any: close() from
// inside on_messages must not wait for the call it is part of.
thread_local const void* delivering_on_this_thread = nullptr;

// What the caller holds (see the top of the file).
class Gate final : public WsStream {
 public:
  void close() override;

  // On the session's loop: hands `batch` to the handlers unless the
  // stream is closing (on_message: message by message, none after a
  // close()). False if the stream was closing before the call or is after it.
  bool deliver(const WsHandlers& handlers, std::span<const WsMessage> batch) EXCLUDES(deliver_mu_) {
    MutexLock lock(deliver_mu_);
    if (closing_.load(std::memory_order_relaxed)) return false;
    const void* outer = delivering_on_this_thread;
    delivering_on_this_thread = this;
    if (handlers.on_messages) {
      handlers.on_messages(batch);
    } else if (handlers.on_message) {
      for (const WsMessage& m : batch) {
        if (closing_.load(std::memory_order_relaxed)) break;
        handlers.on_message(m.bytes, m.text);
      }
    }
    delivering_on_this_thread = outer;
    return !closing_.load(std::memory_order_relaxed);
  }

  bool closing() const { return closing_.load(std::memory_order_acquire); }

  void link(std::weak_ptr<SessionCore> session) EXCLUDES(link_mu_) {
    MutexLock lock(link_mu_);
    session_ = std::move(session);
  }
  // After this, close() no longer reaches the session (the client is going).
  void detach() EXCLUDES(link_mu_) {
    MutexLock lock(link_mu_);
    session_.reset();
  }

 private:
  Mutex deliver_mu_;  // held while on_message runs
  std::atomic<bool> closing_{false};
  std::atomic<bool> close_requested_{false};
  Mutex link_mu_;
  std::weak_ptr<SessionCore> session_ GUARDED_BY(link_mu_);
};

class BeastWsClient;

// One event loop: an io_context and the one thread that runs it.
struct Loop {
  Loop() : io(1), work(asio::make_work_guard(io)) {}

  // Placed here and not yet destroyed. First, so that it outlives the
  // io_context, whose destruction frees sessions its handlers still hold.
  std::atomic<size_t> sessions{0};
  asio::io_context io;  // concurrency hint 1: one thread runs it
  std::optional<asio::executor_work_guard<Executor>> work;
  std::thread thread;
};

// The part of a session that does not depend on the stream's type.
class SessionCore : public std::enable_shared_from_this<SessionCore> {
 public:
  SessionCore(BeastWsClient& client, Loop& loop, WsUrl url, WsHandlers handlers,
              std::shared_ptr<Gate> gate);
  virtual ~SessionCore();
  SessionCore(const SessionCore&) = delete;
  SessionCore& operator=(const SessionCore&) = delete;

  // Both post to the session's loop and return at once.
  virtual void start() = 0;
  virtual void request_close() = 0;

  Gate& gate() { return *gate_; }
  // Calls on_closed if it has not run, from a thread that is not an I/O
  // thread. REQUIRES: the client's I/O threads have ended.
  void finish_after_threads() { finish(Status::ok_status()); }

 protected:
  enum class State { kStarting, kConnecting, kOpen, kFinished };

  const WsClientOptions& options() const;
  // Calls on_closed (once) and gives back what the session holds.
  void finish(Status why);
  virtual void release() = 0;  // closes the socket, frees the buffers

  BeastWsClient& client_;
  Loop& loop_;
  const WsUrl url_;
  std::string host_header_;  // host[:port], as the Host header carries it
  std::string where_;        // scheme://host:port/path, for messages: never the query
  WsHandlers handlers_;
  const std::shared_ptr<Gate> gate_;
  State state_ = State::kStarting;
};

class BeastWsClient final : public WsClient {
 public:
  BeastWsClient(WsClientOptions options, std::unique_ptr<ssl::context> tls)
      : options_(std::move(options)), tls_(std::move(tls)) {
    loops_.reserve(options_.threads);
    for (size_t i = 0; i < options_.threads; ++i) {
      loops_.push_back(std::make_unique<Loop>());
      Loop& loop = *loops_.back();
      loop.thread = std::thread([&loop] { loop.io.run(); });
    }
  }
  ~BeastWsClient() override;

  Result<std::shared_ptr<WsStream>> connect(std::string_view url, WsHandlers handlers) override;
  size_t open_streams() const override { return open_.load(std::memory_order_acquire); }

  // For the sessions.
  const WsClientOptions& options() const { return options_; }
  ssl::context& tls() { return *tls_; }
  Logger* logger() const { return options_.logger; }
  void add(SessionCore* session) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    sessions_.insert(session);
  }
  void remove(SessionCore* session) EXCLUDES(mu_) {
    MutexLock lock(mu_);
    sessions_.erase(session);
  }
  void stream_closed() { open_.fetch_sub(1, std::memory_order_acq_rel); }

 private:
  const WsClientOptions options_;
  const std::unique_ptr<ssl::context> tls_;
  Mutex mu_;
  std::unordered_set<SessionCore*> sessions_ GUARDED_BY(mu_);  // from construction to destruction
  std::atomic<size_t> open_{0};
  std::vector<std::unique_ptr<Loop>> loops_;
};

void Gate::close() {
  if (delivering_on_this_thread == this) {
    closing_.store(true, std::memory_order_release);  // the current call is the last
  } else {
    MutexLock lock(deliver_mu_);  // waits for a call under way on another thread
    closing_.store(true, std::memory_order_release);
  }
  if (close_requested_.exchange(true, std::memory_order_acq_rel)) return;
  // Under link_mu_, so that detach() cannot complete while a request is being
  // posted. request_close() posts a reference of its own: the one taken here
  // is never the last.
  MutexLock lock(link_mu_);
  if (std::shared_ptr<SessionCore> session = session_.lock()) session->request_close();
}

std::string bracketed(const std::string& host) {
  return host.find(':') != std::string::npos ? "[" + host + "]" : host;
}

SessionCore::SessionCore(BeastWsClient& client, Loop& loop, WsUrl url, WsHandlers handlers,
                         std::shared_ptr<Gate> gate)
    : client_(client),
      loop_(loop),
      url_(std::move(url)),
      handlers_(std::move(handlers)),
      gate_(std::move(gate)) {
  const uint16_t default_port = url_.tls ? 443 : 80;
  host_header_ = bracketed(url_.host);
  if (url_.port != default_port) host_header_ += ":" + std::to_string(url_.port);
  where_ = std::string(url_.tls ? "wss://" : "ws://") + bracketed(url_.host) + ":" +
           std::to_string(url_.port) + url_.target.substr(0, url_.target.find('?'));
  loop_.sessions.fetch_add(1, std::memory_order_relaxed);
  client_.add(this);
}

SessionCore::~SessionCore() {
  client_.remove(this);
  loop_.sessions.fetch_sub(1, std::memory_order_relaxed);
}

const WsClientOptions& SessionCore::options() const { return client_.options(); }

void SessionCore::finish(Status why) {
  if (state_ == State::kFinished) return;
  state_ = State::kFinished;
  release();
  log_to(client_.logger(), LogLevel::kDebug, "websocket {} closed: {}", where_, why.to_string());
  // Moved out first: the handlers' captures go with the session's last call.
  WsHandlers handlers = std::move(handlers_);
  handlers_ = {};
  client_.stream_closed();  // first, so that on_closed sees the stream gone
  if (handlers.on_closed) handlers.on_closed(why);
}

// One stream: Ws is PlainWs or TlsWs.
template <typename Ws>
class Session final : public SessionCore, private NetworkListener {
 public:
  Session(BeastWsClient& client, Loop& loop, WsUrl url, WsHandlers handlers,
          std::shared_ptr<Gate> gate)
      : SessionCore(client, loop, std::move(url), std::move(handlers), std::move(gate)),
        ws_(make_stream(client, loop)) {
    ws_.read_message_max(client.options().message_bytes_max);
    ws_.next_layer().listen(this);
  }

  void start() override {
    asio::post(ws_.get_executor(), [self = self()] { self->begin(); });
  }
  void request_close() override {
    asio::post(ws_.get_executor(), [self = self()] { self->begin_close(); });
  }

 private:
  // What only connecting needs, freed once the stream is open.
  struct Connecting {
    explicit Connecting(const Executor& loop) : timer(loop) {}
    asio::steady_timer timer;  // the connect timeout, over every step
    std::optional<tcp::resolver> resolver;
    websocket::response_type response;  // of the upgrade
  };

  static constexpr bool kTls = std::is_same_v<Ws, TlsWs>;

  static Ws make_stream(BeastWsClient& client, Loop& loop) {
    if constexpr (kTls) {
      return Ws(loop.io.get_executor(), client.tls());
    } else {
      return Ws(loop.io.get_executor());
    }
  }

  std::shared_ptr<Session> self() { return std::static_pointer_cast<Session>(shared_from_this()); }
  Socket& socket() { return beast::get_lowest_layer(ws_); }
  Executor executor() { return ws_.get_executor(); }

  void begin();
  void resolve();
  void connect_to(const std::vector<tcp::endpoint>& endpoints);
  void tls_handshake();
  void upgrade();
  void on_upgraded(error_code ec);
  void connect_failed(std::string_view step, error_code ec);
  void on_connect_timeout(error_code ec);
  void read(std::shared_ptr<Session> self);
  void on_read(error_code ec, std::shared_ptr<Session> self);
  void take_message();
  void on_network_read() override;
  void deliver_posted();
  bool batch_full() const;
  bool deliver_batch();
  void read_failed(error_code ec);
  void begin_close();
  void finish_when_idle();
  void release() override;

  Ws ws_;
  beast::flat_buffer buffer_;  // the message being read
  // Messages read and not yet handed over: their bytes one after another,
  // and each one's size and kind.
  std::string batch_;
  struct Held {
    size_t bytes;
    bool text;
  };
  std::vector<Held> held_;
  std::vector<WsMessage> views_;  // the batch as on_messages gets it, reused
  std::unique_ptr<Connecting> connecting_;
  Status failure_;          // the first failure once open
  bool timed_out_ = false;  // the connect timer fired
  bool close_requested_ = false;
  bool read_pending_ = false;
  bool close_pending_ = false;
  bool beginning_read_ = false;  // on_read() is beginning the next read
  bool network_read_ = false;    // and that read has asked the network
  bool delivery_posted_ = false;
};

template <typename Ws>
void Session<Ws>::begin() {
  if (state_ != State::kStarting) return;
  if (gate_->closing()) return finish(Status::ok_status());
  state_ = State::kConnecting;
  log_to(client_.logger(), LogLevel::kDebug, "websocket {} connecting", where_);
  connecting_ = std::make_unique<Connecting>(executor());
  connecting_->timer.expires_after(options().connect_timeout);
  connecting_->timer.async_wait([self = self()](error_code ec) { self->on_connect_timeout(ec); });
  error_code ec;
  const asio::ip::address address = asio::ip::make_address(url_.host, ec);
  if (ec) return resolve();
  connect_to({tcp::endpoint(address, url_.port)});
}

template <typename Ws>
void Session<Ws>::resolve() {
  tcp::resolver& resolver = connecting_->resolver.emplace(executor());
  resolver.async_resolve(
      url_.host, std::to_string(url_.port),
      [self = self()](error_code ec, const tcp::resolver::results_type& results) {
        if (ec) return self->connect_failed("resolving", ec);
        std::vector<tcp::endpoint> endpoints;
        for (const auto& entry : results) endpoints.push_back(entry.endpoint());
        self->connect_to(endpoints);
      });
}

template <typename Ws>
void Session<Ws>::connect_to(const std::vector<tcp::endpoint>& endpoints) {
  if (close_requested_ || timed_out_) {
    return connect_failed("connecting", asio::error::operation_aborted);
  }
  asio::async_connect(socket(), endpoints, [self = self()](error_code ec, const tcp::endpoint&) {
    if (ec) return self->connect_failed("connecting", ec);
    if constexpr (kTls) {
      self->tls_handshake();
    } else {
      self->upgrade();
    }
  });
}

template <typename Ws>
void Session<Ws>::tls_handshake() {
  if constexpr (kTls) {
    SocketTlsStream<Socket>& tls = ws_.next_layer().next_layer();
    const Status prepared = tls.prepare(url_.host, where_);
    if (!prepared.ok()) {
      connecting_.reset();
      return finish(prepared);
    }
    tls.async_handshake([self = self()](error_code ec) {
      if (ec) return self->connect_failed("TLS handshake", ec);
      self->upgrade();
    });
  }
}

template <typename Ws>
void Session<Ws>::upgrade() {
  ws_.async_handshake(connecting_->response, host_header_, url_.target,
                      [self = self()](error_code ec) { self->on_upgraded(ec); });
}

template <typename Ws>
void Session<Ws>::on_upgraded(error_code ec) {
  if (ec == websocket::error::upgrade_declined && !close_requested_ && !timed_out_) {
    const unsigned status = connecting_->response.result_int();
    connecting_.reset();
    return finish(unavailable(where_ + ": upgrade refused: HTTP " + std::to_string(status)));
  }
  if (ec) return connect_failed("upgrade", ec);
  connecting_.reset();                                       // cancels the connect timer
  if (close_requested_) return finish(Status::ok_status());  // its socket is closed
  state_ = State::kOpen;
  websocket::stream_base::timeout timeout;
  timeout.handshake_timeout = options().close_timeout;  // now bounds the close handshake
  timeout.idle_timeout = options().idle_timeout;
  timeout.keep_alive_pings = true;
  ws_.set_option(timeout);
  log_to(client_.logger(), LogLevel::kDebug, "websocket {} open", where_);
  if (!gate_->closing() && handlers_.on_open) handlers_.on_open();
  if (gate_->closing()) return begin_close();  // the request may still be queued
  read(self());
}

template <typename Ws>
void Session<Ws>::connect_failed(std::string_view step, error_code ec) {
  Status why;
  if (close_requested_) {
    why = Status::ok_status();
  } else if (timed_out_) {
    why = unavailable(where_ + ": not connected within " +
                      format_duration(options().connect_timeout) + " (" + std::string(step) + ")");
  } else {
    why = unavailable(where_ + ": " + std::string(step) + ": " + ec.message());
  }
  connecting_.reset();
  finish(std::move(why));
}

template <typename Ws>
void Session<Ws>::on_connect_timeout(error_code ec) {
  if (ec || state_ != State::kConnecting) return;  // cancelled, or connected since
  timed_out_ = true;
  if (connecting_ && connecting_->resolver) connecting_->resolver->cancel();
  error_code ignored;
  socket().close(ignored);  // the step under way completes with an error
}

template <typename Ws>
void Session<Ws>::read(std::shared_ptr<Session> self) {
  read_pending_ = true;
  ws_.async_read(buffer_, [self = std::move(self)](error_code ec, size_t) mutable {
    Session* session = self.get();
    session->on_read(ec, std::move(self));
  });
}

// The read loop (see the top of the file).
template <typename Ws>
void Session<Ws>::on_read(error_code ec, std::shared_ptr<Session> self) {
  read_pending_ = false;
  if (ec) {
    (void)deliver_batch();  // what came before the failure is whole
    return read_failed(ec);
  }
  take_message();
  if (close_requested_) {
    begin_close();
    return finish_when_idle();
  }
  if (batch_full()) {
    if (!deliver_batch()) {
      begin_close();
      return finish_when_idle();
    }
    return read(std::move(self));
  }
  network_read_ = false;
  beginning_read_ = true;
  read(std::move(self));
  beginning_read_ = false;
  // Its message is here already, or Beast has other work first
  // (on_network_read() hands the batch over once it asks the network).
  if (!network_read_) return;
  // The read waits for the network: nothing more is here to add.
  if (!deliver_batch()) begin_close();  // ends the pending read, then finishes
}

// Beast asks the network for bytes: what the batch holds is all there is.
template <typename Ws>
void Session<Ws>::on_network_read() {
  if (beginning_read_) {
    network_read_ = true;  // on_read() hands it over once the read is begun
    return;
  }
  if (held_.empty() || delivery_posted_) return;
  // In the middle of Beast's operation: handed over from the loop instead.
  delivery_posted_ = true;
  asio::post(executor(), [self = self()] { self->deliver_posted(); });
}

template <typename Ws>
void Session<Ws>::deliver_posted() {
  delivery_posted_ = false;
  if (state_ != State::kOpen || close_requested_ || held_.empty()) return;
  if (!deliver_batch()) begin_close();  // ends the pending read, then finishes
}

// Moves the message just read from Beast's buffer to the batch.
template <typename Ws>
void Session<Ws>::take_message() {
  const auto data = buffer_.cdata();
  batch_.append(static_cast<const char*>(data.data()), data.size());
  held_.push_back({data.size(), ws_.got_text()});
  buffer_.consume(buffer_.size());
  if (buffer_.capacity() > kReadBufferKeepBytes) buffer_.shrink_to_fit();
}

template <typename Ws>
bool Session<Ws>::batch_full() const {
  return held_.size() >= kWsBatchMessagesMax || batch_.size() >= kWsBatchBytesMax;
}

// Hands the batch over, if there is one, and empties it. False if the
// stream is closing.
template <typename Ws>
bool Session<Ws>::deliver_batch() {
  if (held_.empty()) return !gate_->closing();
  views_.clear();
  size_t at = 0;
  for (const Held& h : held_) {
    views_.push_back({std::string_view(batch_).substr(at, h.bytes), h.text});
    at += h.bytes;
  }
  assert(at == batch_.size());
  const bool more = gate_->deliver(handlers_, views_);
  views_.clear();
  held_.clear();
  batch_.clear();
  if (batch_.capacity() > kReadBufferKeepBytes) std::string().swap(batch_);
  return more;
}

template <typename Ws>
void Session<Ws>::read_failed(error_code ec) {
  if (!close_requested_ && failure_.ok()) {
    if (ec == websocket::error::closed) {
      const websocket::close_reason& reason = ws_.reason();
      std::string text = where_ + ": closed by the peer: code " + std::to_string(reason.code);
      if (!reason.reason.empty()) text += " (" + std::string(reason.reason.c_str()) + ")";
      failure_ = unavailable(std::move(text));
    } else if (ec == websocket::error::message_too_big) {
      failure_ = resource_exhausted(where_ + ": a message exceeded " +
                                    std::to_string(options().message_bytes_max) + " bytes");
    } else if (ec == beast::error::timeout) {
      failure_ = unavailable(where_ + ": the peer was silent for " +
                             format_duration(options().idle_timeout));
    } else {
      failure_ = unavailable(where_ + ": " + ec.message());
    }
  }
  finish_when_idle();
}

template <typename Ws>
void Session<Ws>::begin_close() {
  if (close_requested_ || state_ == State::kFinished) return;
  close_requested_ = true;
  if (state_ == State::kStarting) return finish(Status::ok_status());
  if (state_ == State::kConnecting) {
    // The step under way completes with an error, and finishes the session.
    if (connecting_ && connecting_->resolver) connecting_->resolver->cancel();
    error_code ignored;
    socket().close(ignored);
    return;
  }
  if (!failure_.ok()) return finish_when_idle();  // already failing: nothing to say
  close_pending_ = true;
  ws_.async_close(websocket::close_code::normal, [self = self()](error_code ec) {
    self->close_pending_ = false;
    if (ec) {
      error_code ignored;
      self->socket().close(ignored);  // ends a read still waiting
    }
    self->finish_when_idle();
  });
}

template <typename Ws>
void Session<Ws>::finish_when_idle() {
  if (read_pending_ || close_pending_) return;
  finish(close_requested_ ? Status::ok_status() : failure_);
}

template <typename Ws>
void Session<Ws>::release() {
  connecting_.reset();
  error_code ignored;
  socket().close(ignored);
  buffer_ = beast::flat_buffer();
  std::string().swap(batch_);
  held_ = {};
  views_ = {};
}

BeastWsClient::~BeastWsClient() {
  // Every stream is asked to close, as close() would; each gets on_closed.
  std::vector<std::shared_ptr<SessionCore>> live;
  {
    MutexLock lock(mu_);
    for (SessionCore* session : sessions_) {
      if (auto s = session->weak_from_this().lock()) live.push_back(std::move(s));
    }
  }
  for (const auto& session : live) session->gate().close();
  live.clear();
  for (const auto& loop : loops_) loop->work.reset();
  for (const auto& loop : loops_) loop->thread.join();
  // Nothing runs the loops any more. A session still here was kept by a
  // close request posted after its threads ended: cut its handle off, call
  // its on_closed if it has not run (it has, unless connect() raced this),
  // and let the io_context's destruction free it.
  {
    MutexLock lock(mu_);
    for (SessionCore* session : sessions_) {
      session->gate().detach();
      if (auto s = session->weak_from_this().lock()) live.push_back(std::move(s));
    }
  }
  for (const auto& session : live) session->finish_after_threads();
  live.clear();
  loops_.clear();  // frees what their queued handlers still hold
}

Result<std::shared_ptr<WsStream>> BeastWsClient::connect(std::string_view url,
                                                         WsHandlers handlers) {
  LEASEHOLD_ASSIGN_OR_RETURN(WsUrl parsed, parse_ws_url(url));
  auto gate = std::make_shared<Gate>();
  // The loop with the fewest sessions (a race between two connects may
  // place both on one: the loops stay roughly even, which is all it needs).
  Loop* loop = loops_.front().get();
  for (const auto& l : loops_) {
    if (l->sessions.load(std::memory_order_relaxed) < loop->sessions.load(std::memory_order_relaxed)) {
      loop = l.get();
    }
  }
  std::shared_ptr<SessionCore> session;
  if (parsed.tls) {
    session = std::make_shared<Session<TlsWs>>(*this, *loop, std::move(parsed),
                                               std::move(handlers), gate);
  } else {
    session = std::make_shared<Session<PlainWs>>(*this, *loop, std::move(parsed),
                                                 std::move(handlers), gate);
  }
  gate->link(session);
  open_.fetch_add(1, std::memory_order_acq_rel);
  session->start();
  return std::shared_ptr<WsStream>(std::move(gate));
}

Status validate(const WsClientOptions& options) {
  if (options.threads < 1 || options.threads > kWsThreadsMax) {
    return invalid_argument("WebSocket client threads must be 1.." + std::to_string(kWsThreadsMax));
  }
  if (options.message_bytes_max < 1 || options.message_bytes_max > kWsMessageBytesLimit) {
    return invalid_argument("WebSocket message_bytes_max must be 1.." +
                            std::to_string(kWsMessageBytesLimit));
  }
  if (options.connect_timeout <= Duration::zero() || options.idle_timeout <= Duration::zero() ||
      options.close_timeout <= Duration::zero()) {
    return invalid_argument("WebSocket connect, idle and close timeouts must be positive");
  }
  return Status::ok_status();
}

}  // namespace

Result<std::unique_ptr<WsClient>> WsClient::open(WsClientOptions options) {
  LEASEHOLD_RETURN_IF_ERROR(validate(options));
  LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<ssl::context> tls,
                             make_client_tls_context(options.ca_file));
  return std::unique_ptr<WsClient>(new BeastWsClient(std::move(options), std::move(tls)));
}

}  // namespace leasehold::net
