// WsClient: an asynchronous WebSocket client for the stream fleet's upstream
// connections (ws:// and wss://), many streams on a few I/O threads.
//
// A client owns `threads` event loops, one I/O thread each, never a thread
// per stream. connect() returns at once; each stream then resolves, connects,
// does TLS (wss://: the server's certificate verified against the system
// store or `ca_file`, with SNI and a hostname check) and the upgrade within
// connect_timeout, and reads messages until it is closed, the peer closes it,
// the network fails, the peer stays silent for idle_timeout (a ping is sent
// halfway; its pong counts as traffic), or a message exceeds
// message_bytes_max. Messages are handed over in batches: all those that
// came in with the bytes already read, up to the moment the stream has to
// wait for the network again (see WsHandlers::on_messages). A stream keeps
// only small buffers while idle: the ones a message and a batch are read
// into grow with them and shrink back after.
//
// Threads: open() starts `threads` event loops, each run by an I/O thread of
// its own (each loop's first URL with a host name, not an IP literal, starts
// one more, on which Asio resolves names); all are joined by the destructor.
// A stream is placed on the loop with the fewest streams and its handlers
// run on that loop's thread, one at a time (handlers of streams on other
// loops run in parallel); a handler that blocks holds up the other streams
// of its loop, so store calls go to a pool (docs/architecture.md, "Threads"). connect(),
// open_streams() and WsStream::close() are safe from any thread, handlers
// included (see close() on waiting); the destructor is not called from a
// handler.
//
// Log lines and error messages name a stream by scheme, host, port and path,
// never by its query string, which may carry credentials.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "leasehold/clock.h"
#include "leasehold/logger.h"
#include "leasehold/status.h"

namespace leasehold::net {

inline constexpr size_t kWsMessageBytesMax = 1 << 20;  // a bigger message closes the stream
inline constexpr std::chrono::milliseconds kWsConnectTimeout{
    10'000};                                                        // resolve + TCP + TLS + upgrade
inline constexpr std::chrono::milliseconds kWsIdleTimeout{30'000};  // silence before closing
inline constexpr size_t kWsThreadsMax = 16;
// The most a stream waits, by default, for the peer to answer its close
// frame before it drops the connection.
inline constexpr std::chrono::milliseconds kWsCloseTimeout{2'000};
// The largest message_bytes_max a client accepts.
inline constexpr size_t kWsMessageBytesLimit = size_t{64} << 20;
// A batch of messages (on_messages) is handed over once it holds this many
// messages or bytes, even if more are already read: it bounds what a stream
// holds, and how long its first message waits behind the others.
inline constexpr size_t kWsBatchMessagesMax = 256;
inline constexpr size_t kWsBatchBytesMax = 64 * 1024;

struct WsClientOptions {
  size_t threads = 2;   // I/O threads, 1..kWsThreadsMax
  std::string ca_file;  // PEM CAs trusted for wss:// instead of the system store
  size_t message_bytes_max = kWsMessageBytesMax;  // 1..kWsMessageBytesLimit
  Duration connect_timeout = kWsConnectTimeout;   // positive
  // Positive. Beast's keep-alive pings: a ping goes out after idle_timeout/2
  // of silence, and a peer that stays silent (no message, no pong) for
  // idle_timeout is cut off.
  Duration idle_timeout = kWsIdleTimeout;
  // Positive: how long a closing stream waits for the peer's close frame.
  Duration close_timeout = kWsCloseTimeout;
  Logger* logger = nullptr;  // debug lines; not owned; must outlive the client
};

// One whole message as on_messages gets it.
struct WsMessage {
  std::string_view bytes;  // valid only during the call
  bool text = false;       // a text message, not a binary one
};

// Called on the client's I/O threads; never two at once for one stream;
// order: on_open (if the upgrade succeeded), then the messages, then
// on_closed exactly once (also when connecting fails).
struct WsHandlers {
  std::function<void()> on_open;
  // Every whole message read, in order, in batches: a batch holds the
  // messages that came in with the bytes already read from the network
  // (so a reader that keeps up gets one message a call, one that falls
  // behind several), and it is handed over at once when the next message
  // needs bytes that have not arrived, or when it reaches
  // kWsBatchMessagesMax messages or kWsBatchBytesMax bytes. So no message
  // waits for the network to be delivered. Never empty.
  std::function<void(std::span<const WsMessage> messages)> on_messages;
  // Used only without on_messages: called once per message of each batch;
  // `message` is valid only during the call.
  std::function<void(std::string_view message, bool text)> on_message;
  // OK after close(); kUnavailable for connect/TLS/upgrade failures (with the
  // HTTP status of a refused upgrade in the message), network errors, the
  // peer's close frame (its code and reason in the message) or an idle
  // timeout; kResourceExhausted for a message over message_bytes_max.
  std::function<void(const Status& why)> on_closed;
};

class WsStream {
 public:
  virtual ~WsStream() = default;
  // Asks the stream to close (a close frame, then the socket). Safe from any
  // thread, idempotent. After close() returns, on_messages (on_message) is
  // never called again for this stream (a call under way on another thread
  // has returned); called from inside it, the current call is the last.
  // Messages read but not yet handed over are dropped.
  // REQUIRES: not called from inside another stream's on_messages whose
  // stream may, in its own on_messages, close this caller's stream (each
  // would wait for the other).
  virtual void close() = 0;
};

class WsClient {
 public:
  // kInvalidArgument for bad options or a CA file that cannot be loaded.
  static Result<std::unique_ptr<WsClient>> open(WsClientOptions options);

  // Closes every stream (each gets on_closed: a close frame, bounded by
  // close_timeout) and joins the threads. A stream's handle may outlive
  // the client; its close() then does nothing.
  // REQUIRES: not called from a handler; no connect() under way.
  virtual ~WsClient() = default;

  // Starts connecting; returns at once. kInvalidArgument for a bad URL
  // (nothing started, no handler called). The stream runs until it closes,
  // whether or not the caller keeps the handle.
  virtual Result<std::shared_ptr<WsStream>> connect(std::string_view url, WsHandlers handlers) = 0;

  // Streams whose on_closed has not run yet (a stream stops counting just
  // before its on_closed is called).
  virtual size_t open_streams() const = 0;
};

}  // namespace leasehold::net
