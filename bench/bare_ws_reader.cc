// bare_ws_reader: the baseline of the stream fleet's throughput benchmark
// (bench/fleet_bench.py throughput, docs/benchmarks.md). It reads the same
// streams of `leasehold upstream-sim` that a `leasehold worker` reads, with
// Boost.Beast's WebSocket stream used directly and nothing else: each whole
// message is counted and dropped.
//
//   bare_ws_reader --host 127.0.0.1 --port PORT --connections 1000 --seconds 10
//                  [--settle 2] [--prefix t] [--threads 2]
//
// Connection i reads ws://HOST:PORT/s/<prefix><i>?from=1 (what a worker asks
// for a connection with no checkpoint yet). Once every connection is open
// and `settle` seconds more have passed, it says so on stderr ("measuring"),
// counts messages and the process's CPU time (getrusage RUSAGE_SELF) over
// `seconds`, then prints one JSON line on stdout:
//
//   {"connections":..,"threads":..,"messages":..,"seconds":..,
//    "messages_per_s":..,"cpu_s":..,"cpu_ms_per_10k":..,"rss_kib":..}
//
// cpu_s is the CPU time used during the window only, not while connecting;
// rss_kib the process's resident memory (VmRSS) at the window's end.
// Exit status 1 (and a line on stderr) if a connection fails or does not
// open within kOpenTimeout.
//
// Threads: `threads` io_contexts, each run by one I/O thread (the worker's
// WsClient runs two), the streams dealt out among them in turn, each on its
// io_context's executor with no strand, as the WsClient does; the streams
// have the WsClient's settings (no permessage-deflate, a 1 MiB
// message limit, a 30 s idle timeout with keep-alive pings), so that the
// difference measured is what the worker does on top of Beast. The main
// thread only waits and reads the counters, which are atomics written by one
// I/O thread each.
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/asio/connect.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#pragma GCC diagnostic pop

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = boost::beast::websocket;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using Executor = asio::io_context::executor_type;
using Ws = websocket::stream<asio::basic_stream_socket<tcp, Executor>, false>;
using SteadyClock = std::chrono::steady_clock;

constexpr size_t kConnectionsMax = 20'000;  // the upstream-sim's own limit
constexpr size_t kThreadsMax = 16;
constexpr double kSecondsMax = 3600;
constexpr size_t kMessageBytesMax = 1 << 20;       // as the WsClient's default
constexpr std::chrono::seconds kIdleTimeout{30};   // as the WsClient's default
constexpr std::chrono::seconds kOpenTimeout{120};  // for all connections together
constexpr std::chrono::milliseconds kOpenPollEvery{50};

struct Args {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  size_t connections = 1000;
  double seconds = 10;
  double settle = 2;
  std::string prefix = "t";
  size_t threads = 2;
};

// What the streams share with the main thread.
struct Shared {
  std::atomic<size_t> opened{0};
  std::atomic<size_t> failed{0};
  std::atomic<bool> failure_said{false};
};

class Reader : public std::enable_shared_from_this<Reader> {
 public:
  Reader(asio::io_context& io, Shared& shared, tcp::endpoint endpoint, std::string host,
         std::string target)
      : ws_(io.get_executor()),
        shared_(shared),
        endpoint_(endpoint),
        host_(std::move(host)),
        target_(std::move(target)) {
    ws_.read_message_max(kMessageBytesMax);
  }

  void start() {
    asio::post(ws_.get_executor(), [self = shared_from_this()] { self->connect(); });
  }

  uint64_t messages() const { return messages_.load(std::memory_order_relaxed); }

 private:
  void connect() {
    beast::get_lowest_layer(ws_).async_connect(
        endpoint_, [self = shared_from_this()](error_code ec) {
          if (ec) return self->fail("connect", ec);
          self->ws_.async_handshake(self->host_, self->target_,
                                    [self](error_code ec2) { self->on_handshake(ec2); });
        });
  }

  void on_handshake(error_code ec) {
    if (ec) return fail("upgrade", ec);
    websocket::stream_base::timeout timeout;
    timeout.handshake_timeout = std::chrono::seconds(2);
    timeout.idle_timeout = kIdleTimeout;
    timeout.keep_alive_pings = true;
    ws_.set_option(timeout);
    shared_.opened.fetch_add(1, std::memory_order_release);
    read();
  }

  void read() {
    ws_.async_read(buffer_, [self = shared_from_this()](error_code ec, size_t) {
      if (ec) return self->fail("read", ec);
      self->messages_.store(self->messages_.load(std::memory_order_relaxed) + 1,
                            std::memory_order_relaxed);
      self->buffer_.consume(self->buffer_.size());
      self->read();
    });
  }

  void fail(const char* step, error_code ec) {
    shared_.failed.fetch_add(1, std::memory_order_release);
    if (!shared_.failure_said.exchange(true)) {
      std::fprintf(stderr, "bare_ws_reader: %s %s: %s\n", target_.c_str(), step,
                   ec.message().c_str());
    }
  }

  Ws ws_;
  beast::flat_buffer buffer_;
  Shared& shared_;
  const tcp::endpoint endpoint_;
  const std::string host_;  // the Host header: host:port
  const std::string target_;
  std::atomic<uint64_t> messages_{0};  // written by the stream's strand only
};

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// VmRSS of this process in KiB; 0 if /proc does not say.
long rss_kib() {
  FILE* status = std::fopen("/proc/self/status", "r");
  if (status == nullptr) return 0;
  char line[256];
  long kib = 0;
  while (std::fgets(line, sizeof(line), status) != nullptr) {
    if (std::sscanf(line, "VmRSS: %ld kB", &kib) == 1) break;
  }
  std::fclose(status);
  return kib;
}

uint64_t total_messages(const std::vector<std::shared_ptr<Reader>>& readers) {
  uint64_t total = 0;
  for (const auto& r : readers) total += r->messages();
  return total;
}

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(
      stderr,
      "bare_ws_reader: %s\nusage: bare_ws_reader --host IP --port PORT "
      "[--connections 1..%zu] [--seconds S] [--settle S] [--prefix P] [--threads 1..%zu]\n",
      why.c_str(), kConnectionsMax, kThreadsMax);
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) usage("missing a value for " + std::string(flag));
    const std::string value = argv[i + 1];
    if (flag == "--host") {
      a.host = value;
    } else if (flag == "--port") {
      const unsigned long port = std::strtoul(value.c_str(), nullptr, 10);
      if (port > 65535) usage("bad --port");
      a.port = static_cast<uint16_t>(port);
    } else if (flag == "--connections") {
      a.connections = std::strtoul(value.c_str(), nullptr, 10);
    } else if (flag == "--seconds") {
      a.seconds = std::strtod(value.c_str(), nullptr);
    } else if (flag == "--settle") {
      a.settle = std::strtod(value.c_str(), nullptr);
    } else if (flag == "--prefix") {
      a.prefix = value;
    } else if (flag == "--threads") {
      a.threads = std::strtoul(value.c_str(), nullptr, 10);
    } else {
      usage("unknown flag " + std::string(flag));
    }
  }
  if (a.port == 0) usage("--port is required");
  if (a.connections < 1 || a.connections > kConnectionsMax) usage("bad --connections");
  if (!(a.seconds > 0 && a.seconds <= kSecondsMax)) usage("bad --seconds");
  if (!(a.settle >= 0 && a.settle <= kSecondsMax)) usage("bad --settle");
  if (a.threads < 1 || a.threads > kThreadsMax) usage("bad --threads");
  return a;
}

// Waits until every reader is open; false if one failed or time ran out.
bool wait_open(const Shared& shared, size_t n) {
  const SteadyClock::time_point deadline = SteadyClock::now() + kOpenTimeout;
  while (shared.opened.load(std::memory_order_acquire) < n) {
    if (shared.failed.load(std::memory_order_acquire) > 0) return false;
    if (SteadyClock::now() > deadline) {
      std::fprintf(stderr, "bare_ws_reader: %zu of %zu open after %lld s\n", shared.opened.load(),
                   n, static_cast<long long>(kOpenTimeout.count()));
      return false;
    }
    std::this_thread::sleep_for(kOpenPollEvery);
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const Args args = parse_args(argc, argv);
  error_code ec;
  const asio::ip::address address = asio::ip::make_address(args.host, ec);
  if (ec) usage("--host must be an IP address");
  const tcp::endpoint endpoint(address, args.port);
  const std::string host = args.host + ":" + std::to_string(args.port);

  std::vector<std::unique_ptr<asio::io_context>> ios;
  std::vector<asio::executor_work_guard<Executor>> works;
  for (size_t i = 0; i < args.threads; ++i) {
    ios.push_back(std::make_unique<asio::io_context>(1));
    works.push_back(asio::make_work_guard(*ios.back()));
  }
  Shared shared;
  std::vector<std::shared_ptr<Reader>> readers;
  readers.reserve(args.connections);
  for (size_t i = 0; i < args.connections; ++i) {
    readers.push_back(std::make_shared<Reader>(*ios[i % ios.size()], shared, endpoint, host,
                                               "/s/" + args.prefix + std::to_string(i) + "?from=1"));
  }
  std::vector<std::thread> threads;
  for (const auto& io : ios) threads.emplace_back([&io] { io->run(); });
  for (const auto& r : readers) r->start();

  const bool open = wait_open(shared, args.connections);
  int status = 1;
  if (open) {
    std::this_thread::sleep_for(std::chrono::duration<double>(args.settle));
    std::fprintf(stderr, "bare_ws_reader: %zu open; measuring for %.3f s\n", args.connections,
                 args.seconds);
    const double cpu0 = cpu_seconds();
    const uint64_t messages0 = total_messages(readers);
    const SteadyClock::time_point t0 = SteadyClock::now();
    std::this_thread::sleep_until(t0 + std::chrono::duration<double>(args.seconds));
    const uint64_t messages1 = total_messages(readers);
    const SteadyClock::time_point t1 = SteadyClock::now();
    const double cpu1 = cpu_seconds();
    if (shared.failed.load() == 0) {
      const double seconds = std::chrono::duration<double>(t1 - t0).count();
      const uint64_t messages = messages1 - messages0;
      const double cpu = cpu1 - cpu0;
      std::printf(
          "{\"connections\":%zu,\"threads\":%zu,\"messages\":%llu,\"seconds\":%.3f,"
          "\"messages_per_s\":%.1f,\"cpu_s\":%.3f,\"cpu_ms_per_10k\":%.2f,\"rss_kib\":%ld}\n",
          args.connections, args.threads, static_cast<unsigned long long>(messages), seconds,
          messages / seconds, cpu, messages > 0 ? cpu * 1000 * 10'000 / messages : 0.0,
          rss_kib());
      std::fflush(stdout);
      status = 0;
    }
  }
  // No close handshakes: the upstream sees the connections drop, which it
  // handles as any reader going away.
  for (const auto& io : ios) io->stop();
  for (std::thread& t : threads) t.join();
  return status;
}
