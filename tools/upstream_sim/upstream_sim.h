// UpstreamSim: a WebSocket server that plays the upstream of the stream
// fleet, for tests, demos and benchmarks (`leasehold upstream-sim`).
//
// It serves resumable sequenced streams at /s/<conn>?from=N (N >= 1, 1 when
// absent; other query parameters are ignored): text frames
//
//   {"seq":N,"conn":"<conn>","sent_at_ms":<wall ms>,"data":"<8 bytes>"}
//
// with seq N, N+1, ... at `rate_per_conn` messages per second per stream,
// evenly paced (each stream keeps its own schedule and never bursts to catch
// up after a slow write), or, at rate 0, as fast as the client reads. A
// stream's first message goes at once, or with `random_phase` after a
// uniform random part of one period, so that streams opened together do not
// send together ever after, as a real upstream's would not. Any
// other path gets its upgrade refused with 404, a malformed conn or from with
// 400. What a client sends is read and dropped (pings are answered); a client
// silent for kUpstreamSimIdleTimeout, pings unanswered, is cut off.
//
// It speaks ws://, or, given a certificate and its key, wss:// only: every
// connection then does a TLS 1.2+ handshake first, and that handshake and
// the upgrade request together have kUpstreamSimHandshakeTimeout.
//
// Threads: `threads` I/O threads run every stream; each stream is on a strand
// of its own with one timer. stop() (and the destructor) closes the listener,
// sends every stream a close frame (1001, going away), waits up to
// kUpstreamSimStopTimeout for them to go, and joins the threads. Call stop()
// from one thread that is not the server's.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "leasehold/clock.h"
#include "leasehold/logger.h"
#include "leasehold/status.h"

namespace leasehold::tools {

inline constexpr size_t kUpstreamSimThreadsMax = 16;
inline constexpr size_t kUpstreamSimConnectionsMax = 20'000;  // more are refused with 503
inline constexpr double kUpstreamSimRateMax = 100'000;        // messages/s per stream
inline constexpr size_t kUpstreamSimConnBytesMax = 128;
inline constexpr std::chrono::milliseconds kUpstreamSimHandshakeTimeout{10'000};
inline constexpr std::chrono::milliseconds kUpstreamSimIdleTimeout{60'000};
inline constexpr std::chrono::milliseconds kUpstreamSimStopTimeout{2'000};

struct UpstreamSimOptions {
  std::string host = "127.0.0.1";  // an IP address
  uint16_t port = 0;               // 0: any free port (see port())
  double rate_per_conn = 10;       // 0..kUpstreamSimRateMax; 0: as fast as the client reads
  size_t threads = 1;              // 1..kUpstreamSimThreadsMax
  bool random_phase = false;       // a stream's first message after a random part of a period
  Clock* clock = nullptr;          // sent_at_ms; required, not owned
  Logger* logger = nullptr;        // not owned; null: nothing is logged
  // PEM files of the certificate chain and its private key, both or neither;
  // given, the simulator serves wss:// and nothing else.
  std::string tls_cert = {};
  std::string tls_key = {};
};

// What /s/<conn>?from=N asks for.
struct SimStreamRequest {
  std::string conn;
  int64_t from = 1;
};

// Parses a request target. kNotFound for a path other than /s/<conn>;
// kInvalidArgument for a conn that is empty, longer than
// kUpstreamSimConnBytesMax or has a byte outside [A-Za-z0-9._-], or a from
// that is not an integer >= 1.
Result<SimStreamRequest> parse_sim_target(std::string_view target);

// Message `seq` of stream `conn`, sent at `sent_at_ms`, appended to `out`.
void append_sim_message(std::string& out, std::string_view conn, int64_t seq, int64_t sent_at_ms);

class UpstreamSim {
 public:
  // Binds and starts the I/O threads. kInvalidArgument for a bad option, a
  // certificate or key that cannot be loaded (the message names the file,
  // never quotes it) or a key that is not the certificate's; kUnavailable if
  // the address cannot be bound.
  static Result<std::unique_ptr<UpstreamSim>> start(UpstreamSimOptions options);
  virtual ~UpstreamSim() = default;

  virtual uint16_t port() const = 0;
  // Streams being served now.
  virtual size_t streams() const = 0;
  virtual void stop() = 0;
};

}  // namespace leasehold::tools
