// Tests for WsClient against a small Beast WebSocket server on 127.0.0.1
// (port 0), plain or TLS with certificates made in the test, whose behaviour
// is chosen by the path: send counted messages, flood, send many tiny ones
// at once, send one huge message, stay silent, close with a code, refuse the
// upgrade.
#include "net/websocket.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "net/beast_websocket.h"
#include "testing/temp_dir.h"
#include "testing/test_pki.h"

namespace leasehold::net {
namespace {

using namespace std::chrono_literals;
using error_code = boost::system::error_code;

// Message `i` of /count/N: its size varies from a few bytes to tens of KiB
// (sent in 256-byte frames, so that large ones arrive in pieces), and its
// bytes say which message it is.
std::string counted_message(size_t i) {
  const size_t size = i % 7 == 0 ? 5'000 + (i * 7'919) % 40'000 : 8 + i % 50;
  std::string message = std::to_string(i) + ":";
  message.resize(size, static_cast<char>('a' + i % 26));
  return message;
}

size_t number_after(std::string_view target, std::string_view prefix) {
  size_t n = 0;
  std::from_chars(target.data() + prefix.size(), target.data() + target.size(), n);
  return n;
}

// One thread per connection, with blocking Beast calls; stop() shuts every
// socket down, which ends each thread's blocking call.
class TestWsServer {
 public:
  explicit TestWsServer(const testing::TestPki* pki = nullptr) : acceptor_(io_) {
    if (pki != nullptr) {
      tls_.emplace(ssl::context::tls_server);
      tls_->use_certificate_chain(asio::buffer(pki->cert_pem));
      tls_->use_private_key(asio::buffer(pki->key_pem), ssl::context::pem);
    }
    const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(endpoint.protocol());
    acceptor_.bind(endpoint);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    accept_thread_ = std::thread([this] { accept_loop(); });
  }
  ~TestWsServer() { stop(); }

  void stop() {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
      stopping_ = true;
      ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    cv_.notify_all();
    accept_thread_.join();
    for (auto& thread : threads_) thread.join();
  }

  std::string url(std::string_view path) const {
    return std::string(tls_ ? "wss" : "ws") + "://127.0.0.1:" + std::to_string(port_) +
           std::string(path);
  }
  int accepted() const { return accepted_; }
  // Waits until a /tiny/ stream has sent all its messages.
  bool wait_tiny_sent(std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return tiny_sent_ > 0; });
  }

 private:
  void accept_loop() {
    for (;;) {
      tcp::socket socket(io_);
      error_code ec;
      acceptor_.accept(socket, ec);
      std::lock_guard lock(mu_);
      if (ec || stopping_) return;
      ++accepted_;
      fds_.insert(socket.native_handle());
      threads_.emplace_back([this, s = std::move(socket)]() mutable { serve(std::move(s)); });
    }
  }

  void serve(tcp::socket socket) {
    try {
      if (tls_) {
        ssl::stream<tcp::socket&> stream(socket, *tls_);
        stream.handshake(ssl::stream_base::server);
        serve_http(stream);
      } else {
        serve_http(socket);
      }
    } catch (const boost::system::system_error&) {
      // The client went, or stop() shut the socket down.
    }
  }

  template <typename Stream>
  void serve_http(Stream& stream) {
    beast::flat_buffer buffer;
    http::request<http::string_body> request;
    http::read(stream, buffer, request);
    const std::string target(request.target());
    const bool known = target.starts_with("/count/") || target.starts_with("/tiny/") ||
                       target == "/flood" || target.starts_with("/big/") || target == "/silent" ||
                       target == "/quiet" || target == "/close" || target == "/ping-behind";
    if (!known) {
      http::response<http::string_body> refusal{http::status::not_found, request.version()};
      refusal.body() = "no such stream";
      refusal.prepare_payload();
      http::write(stream, refusal);
      return;
    }
    websocket::stream<Stream&> ws(stream);
    ws.auto_fragment(true);
    ws.write_buffer_bytes(256);
    ws.accept(request);
    behave(ws, target);
  }

  template <typename Ws>
  void behave(Ws& ws, const std::string& target) {
    if (target.starts_with("/count/")) {
      const size_t n = number_after(target, "/count/");
      for (size_t i = 0; i < n; ++i) {
        ws.binary(i % 3 == 0);
        ws.write(asio::buffer(counted_message(i)));
      }
      read_until_closed(ws);
    } else if (target.starts_with("/tiny/")) {
      // Small enough that all are in the client's socket buffer at once.
      const size_t n = number_after(target, "/tiny/");
      for (size_t i = 0; i < n; ++i) ws.write(asio::buffer(std::to_string(i)));
      {
        std::lock_guard lock(mu_);
        ++tiny_sent_;
      }
      cv_.notify_all();
      read_until_closed(ws);
    } else if (target == "/flood") {
      for (size_t i = 0;; ++i) ws.write(asio::buffer(std::to_string(i)));
    } else if (target.starts_with("/big/")) {
      ws.write(asio::buffer(std::string(number_after(target, "/big/"), 'b')));
      ws.write(asio::buffer(std::string("after")));
      read_until_closed(ws);
    } else if (target == "/silent") {
      // Reads nothing, so answers no ping, and sends nothing.
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_; });
    } else if (target == "/quiet") {
      read_until_closed(ws);  // sends nothing, but answers pings while reading
    } else if (target == "/ping-behind") {
      // A message and a ping right behind it, in one write: the client
      // reads both at once and answers the ping before it needs the network
      // again. Then nothing more until stop().
      const std::string_view frames(
          "\x81\x05"
          "first"
          "\x89\x00",
          9);
      asio::write(ws.next_layer(), asio::buffer(frames.data(), frames.size()));
      read_until_closed(ws);
    } else if (target == "/close") {
      ws.close(websocket::close_reason(static_cast<websocket::close_code>(4001), "going away now"));
      read_until_closed(ws);
    }
  }

  template <typename Ws>
  static void read_until_closed(Ws& ws) {
    beast::flat_buffer buffer;
    for (;;) {
      ws.read(buffer);
      buffer.consume(buffer.size());
    }
  }

  asio::io_context io_;
  std::optional<ssl::context> tls_;
  tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::thread accept_thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  int tiny_sent_ = 0;
  std::set<int> fds_;
  std::vector<std::thread> threads_;
  std::atomic<int> accepted_{0};
};

// What a stream's handlers saw, and a way to wait for it with a deadline.
class Recorder {
 public:
  struct Message {
    std::string bytes;
    bool text;
  };

  WsHandlers handlers() {
    WsHandlers h;
    h.on_open = [this] {
      std::lock_guard lock(mu_);
      ++opened_;
      open_before_message_ = open_before_message_ && messages_.empty();
      cv_.notify_all();
    };
    h.on_message = [this](std::string_view message, bool text) {
      std::lock_guard lock(mu_);
      if (closed_.has_value()) ++after_closed_;
      messages_.push_back({std::string(message), text});
      cv_.notify_all();
    };
    h.on_closed = [this](const Status& why) {
      std::lock_guard lock(mu_);
      ++closed_count_;
      closed_ = why;
      closed_at_ = std::chrono::steady_clock::now();
      cv_.notify_all();
    };
    return h;
  }

  bool wait_messages(size_t n, std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return messages_.size() >= n; });
  }
  // The status on_closed got, or a kInternal one if it did not run in time.
  Status wait_closed(std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return closed_.has_value(); })) {
      return internal_error("on_closed did not run");
    }
    return *closed_;
  }

  std::vector<Message> messages() const {
    std::lock_guard lock(mu_);
    return messages_;
  }
  int opened() const {
    std::lock_guard lock(mu_);
    return opened_;
  }
  int closed_count() const {
    std::lock_guard lock(mu_);
    return closed_count_;
  }
  std::chrono::steady_clock::time_point closed_at() const {
    std::lock_guard lock(mu_);
    return closed_at_;
  }
  // Every call was in order: on_open before any message, none after on_closed.
  bool in_order() const {
    std::lock_guard lock(mu_);
    return open_before_message_ && after_closed_ == 0;
  }

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Message> messages_;
  int opened_ = 0;
  int closed_count_ = 0;
  int after_closed_ = 0;
  bool open_before_message_ = true;
  std::optional<Status> closed_;
  std::chrono::steady_clock::time_point closed_at_;
};

// A peer that never answers a close frame (the flood, the silent one) costs
// close_timeout.
WsClientOptions test_options() {
  WsClientOptions options;
  options.close_timeout = 200ms;
  return options;
}

std::unique_ptr<WsClient> open_client(WsClientOptions options = test_options()) {
  auto client = WsClient::open(std::move(options));
  EXPECT_TRUE(client.ok()) << client.status().to_string();
  return client.ok() ? std::move(*client) : nullptr;
}

// test_options(), trusting the CAs of `ca_file`.
WsClientOptions trusting(const std::string& ca_file) {
  WsClientOptions options = test_options();
  options.ca_file = ca_file;
  return options;
}

// `url` (on 127.0.0.1) with `host` in its place.
std::string with_host(std::string url, const std::string& host) {
  return url.replace(url.find("127.0.0.1"), 9, host);
}

std::shared_ptr<WsStream> connect(WsClient& client, const std::string& url, Recorder& recorder) {
  auto stream = client.connect(url, recorder.handlers());
  EXPECT_TRUE(stream.ok()) << stream.status().to_string();
  return stream.ok() ? *stream : nullptr;
}

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

// Checks message i of /count/N, whole and in its place.
void expect_counted(const std::vector<Recorder::Message>& messages, size_t n) {
  ASSERT_EQ(messages.size(), n);
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(messages[i].bytes, counted_message(i)) << "message " << i;
    EXPECT_EQ(messages[i].text, i % 3 != 0) << "message " << i;
  }
}

TEST(WsClientTest, MessagesArriveWholeAndInOrder) {
  TestWsServer server;
  auto client = open_client();
  Recorder recorder;
  auto stream = connect(*client, server.url("/count/300"), recorder);
  ASSERT_TRUE(recorder.wait_messages(300));
  expect_counted(recorder.messages(), 300);
  EXPECT_EQ(client->open_streams(), 1u);
  stream->close();
  const Status why = recorder.wait_closed();
  EXPECT_TRUE(why.ok()) << why.to_string();
  EXPECT_EQ(recorder.opened(), 1);
  EXPECT_EQ(recorder.closed_count(), 1);
  EXPECT_TRUE(recorder.in_order());
  EXPECT_EQ(client->open_streams(), 0u);
}

// Messages that are read together are handed over together, up to the
// batch limit, in order; close() from inside on_messages makes that call
// the last.
TEST(WsClientTest, MessagesReadTogetherComeInBatches) {
  TestWsServer server;
  auto client = open_client();
  constexpr size_t kMessages = 1000;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::vector<std::string>> batches;
  size_t received = 0;
  bool after_close = false;
  std::optional<Status> closed;
  std::shared_ptr<WsStream> stream;
  WsHandlers handlers;
  handlers.on_messages = [&](std::span<const WsMessage> messages) {
    // The first call waits until the server has sent everything, so that
    // the rest is in the socket buffer when the client reads on.
    if (batches.empty()) {
      EXPECT_TRUE(server.wait_tiny_sent());
    }
    std::lock_guard lock(mu);
    after_close = after_close || received >= kMessages;
    std::vector<std::string> batch;
    for (const WsMessage& m : messages) {
      EXPECT_TRUE(m.text);
      batch.emplace_back(m.bytes);
    }
    batches.push_back(std::move(batch));
    received += messages.size();
    if (received >= kMessages) stream->close();
  };
  handlers.on_closed = [&](const Status& why) {
    std::lock_guard lock(mu);
    closed = why;
    cv.notify_all();
  };
  {
    std::lock_guard lock(mu);  // the handle is set before the last message
    auto connected =
        client->connect(server.url("/tiny/" + std::to_string(kMessages)), std::move(handlers));
    ASSERT_TRUE(connected.ok());
    stream = *connected;
  }
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return closed.has_value(); }));
  EXPECT_TRUE(closed->ok()) << closed->to_string();
  EXPECT_FALSE(after_close) << "a call after close()";
  size_t next = 0, largest = 0;
  for (const auto& batch : batches) {
    ASSERT_FALSE(batch.empty());
    largest = std::max(largest, batch.size());
    for (const auto& m : batch) ASSERT_EQ(m, std::to_string(next++));
  }
  EXPECT_EQ(next, kMessages);
  // 1,536 bytes (Beast's read buffer) hold more than 256 such messages.
  EXPECT_EQ(largest, kWsBatchMessagesMax);
  EXPECT_LT(batches.size(), size_t{20});
}

TEST(WsClientTest, ManyStreamsOnTwoThreads) {
  TestWsServer server;
  auto client = open_client();
  constexpr int kStreams = 20;
  std::vector<Recorder> recorders(kStreams);
  std::vector<std::shared_ptr<WsStream>> streams;
  for (auto& recorder : recorders)
    streams.push_back(connect(*client, server.url("/count/50"), recorder));
  for (auto& recorder : recorders) {
    ASSERT_TRUE(recorder.wait_messages(50));
    expect_counted(recorder.messages(), 50);
  }
  EXPECT_EQ(client->open_streams(), static_cast<size_t>(kStreams));
  for (auto& stream : streams) stream->close();
  for (auto& recorder : recorders) EXPECT_TRUE(recorder.wait_closed().ok());
  EXPECT_EQ(client->open_streams(), 0u);
}

// A read that Beast keeps busy without the network (answering a ping that
// came in with the message) must not hold that message back until the next
// one arrives.
TEST(WsClientTest, AMessageFollowedByAPingIsDeliveredBeforeTheNextArrives) {
  TestWsServer server;
  auto client = open_client();
  for (int round = 0; round < 5; ++round) {
    Recorder recorder;
    auto stream = connect(*client, server.url("/ping-behind"), recorder);
    ASSERT_TRUE(recorder.wait_messages(1, 2s)) << "round " << round;
    EXPECT_EQ(recorder.messages()[0].bytes, "first");
    stream->close();
    EXPECT_TRUE(recorder.wait_closed().ok());
  }
}

// Closes a stream of /flood from the test's thread after 200 messages,
// `rounds` times: on_message is never called once close() has returned.
// `busy` is how long each on_message call lasts, so that close() often finds
// one under way.
void expect_no_message_after_close(WsClient& client, const std::string& url, int rounds,
                                   std::chrono::microseconds busy) {
  for (int round = 0; round < rounds; ++round) {
    std::atomic<bool> close_returned{false};
    std::atomic<int> after_close{0};
    std::atomic<int> received{0};
    std::mutex mu;
    std::condition_variable cv;
    std::optional<Status> closed;
    WsHandlers handlers;
    handlers.on_message = [&](std::string_view, bool) {
      if (close_returned.load()) ++after_close;
      const auto until = std::chrono::steady_clock::now() + busy;
      while (std::chrono::steady_clock::now() < until) {
      }
      if (close_returned.load()) ++after_close;
      if (++received == 200) {
        std::lock_guard lock(mu);
        cv.notify_all();
      }
    };
    handlers.on_closed = [&](const Status& why) {
      std::lock_guard lock(mu);
      closed = why;
      cv.notify_all();
    };
    auto stream = client.connect(url, std::move(handlers));
    ASSERT_TRUE(stream.ok());
    {
      std::unique_lock lock(mu);
      ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return received.load() >= 200; }));
    }
    (*stream)->close();
    close_returned = true;
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return closed.has_value(); }));
    EXPECT_TRUE(closed->ok()) << closed->to_string();
    EXPECT_EQ(after_close.load(), 0) << "round " << round;
  }
}

TEST(WsClientTest, NoMessageAfterCloseReturnsUnderAFastSender) {
  TestWsServer server;
  auto client = open_client();
  expect_no_message_after_close(*client, server.url("/flood"), 10, 20us);
}

TEST(WsClientTest, CloseFromInsideOnMessageMakesThatCallTheLast) {
  TestWsServer server;
  auto client = open_client();
  Recorder recorder;
  std::shared_ptr<WsStream> stream;
  std::atomic<int> calls{0};
  std::mutex mu;
  WsHandlers handlers = recorder.handlers();
  auto record = handlers.on_message;
  handlers.on_message = [&](std::string_view message, bool text) {
    record(message, text);
    if (++calls == 10) {
      std::lock_guard lock(mu);
      stream->close();
    }
  };
  {
    std::lock_guard lock(mu);  // the handle is set before the tenth message
    auto connected = client->connect(server.url("/flood"), std::move(handlers));
    ASSERT_TRUE(connected.ok());
    stream = *connected;
  }
  EXPECT_TRUE(recorder.wait_closed().ok());
  EXPECT_EQ(recorder.messages().size(), 10u);
  EXPECT_TRUE(recorder.in_order());
}

TEST(WsClientTest, AMessageOverTheLimitClosesWithResourceExhausted) {
  TestWsServer server;
  WsClientOptions options = test_options();
  options.message_bytes_max = 64 * 1024;
  auto client = open_client(options);
  Recorder at_limit, over_limit;
  auto a = connect(*client, server.url("/big/65536"), at_limit);
  auto b = connect(*client, server.url("/big/65537"), over_limit);
  ASSERT_TRUE(at_limit.wait_messages(2));
  EXPECT_EQ(at_limit.messages()[0].bytes, std::string(65536, 'b'));
  EXPECT_EQ(at_limit.messages()[1].bytes, "after");
  const Status why = over_limit.wait_closed();
  EXPECT_EQ(why.code(), Code::kResourceExhausted) << why.to_string();
  EXPECT_TRUE(contains(why.message(), "65536")) << why.message();
  EXPECT_TRUE(over_limit.messages().empty());
  a->close();
  EXPECT_TRUE(at_limit.wait_closed().ok());
}

TEST(WsClientTest, ARefusedUpgradeNamesTheHttpStatus) {
  TestWsServer server;
  auto client = open_client();
  Recorder recorder;
  auto stream = connect(*client, server.url("/nowhere?token=s3cr3t"), recorder);
  const Status why = recorder.wait_closed();
  EXPECT_EQ(why.code(), Code::kUnavailable) << why.to_string();
  EXPECT_TRUE(contains(why.message(), "404")) << why.message();
  EXPECT_TRUE(contains(why.message(), "/nowhere")) << why.message();
  EXPECT_FALSE(contains(why.message(), "s3cr3t")) << "the query reached a message";
  EXPECT_EQ(recorder.opened(), 0);
  EXPECT_EQ(recorder.closed_count(), 1);
}

TEST(WsClientTest, ARefusedConnectionIsUnavailable) {
  uint16_t port;
  {
    asio::io_context io;
    tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    port = acceptor.local_endpoint().port();
  }  // closed: nothing listens there now
  auto client = open_client();
  Recorder recorder;
  auto stream = connect(*client, "ws://127.0.0.1:" + std::to_string(port) + "/s", recorder);
  const Status why = recorder.wait_closed();
  EXPECT_EQ(why.code(), Code::kUnavailable) << why.to_string();
  EXPECT_TRUE(contains(why.message(), "refused")) << why.message();
  EXPECT_EQ(recorder.opened(), 0);
}

TEST(WsClientTest, AnUpgradeThatNeverAnswersTimesOut) {
  // A listening socket that never accepts: the kernel completes the TCP
  // handshake, and nobody reads the upgrade request.
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  WsClientOptions options = test_options();
  options.connect_timeout = 300ms;
  auto client = open_client(options);
  Recorder recorder;
  const auto start = std::chrono::steady_clock::now();
  auto stream =
      connect(*client, "ws://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port()) + "/s",
              recorder);
  const Status why = recorder.wait_closed();
  EXPECT_EQ(why.code(), Code::kUnavailable) << why.to_string();
  EXPECT_TRUE(contains(why.message(), "within 300ms")) << why.message();
  EXPECT_GE(recorder.closed_at() - start, 300ms);
}

TEST(WsClientTest, ASilentPeerIsCutOffAfterTheIdleTimeout) {
  TestWsServer server;
  WsClientOptions options = test_options();
  options.idle_timeout = 600ms;
  auto client = open_client(options);
  Recorder silent, quiet;
  const auto start = std::chrono::steady_clock::now();
  auto a = connect(*client, server.url("/silent"), silent);
  auto b = connect(*client, server.url("/quiet"), quiet);
  const Status why = silent.wait_closed();
  EXPECT_EQ(why.code(), Code::kUnavailable) << why.to_string();
  EXPECT_TRUE(contains(why.message(), "silent for 600ms")) << why.message();
  EXPECT_GE(silent.closed_at() - start, 600ms);
  // A peer that answers the pings stays, though it sends nothing.
  EXPECT_EQ(quiet.wait_closed(1800ms).code(), Code::kInternal) << "on_closed ran";
  b->close();
  EXPECT_TRUE(quiet.wait_closed().ok());
}

TEST(WsClientTest, ThePeersCloseFrameGivesItsCodeAndReason) {
  TestWsServer server;
  auto client = open_client();
  Recorder recorder;
  auto stream = connect(*client, server.url("/close"), recorder);
  const Status why = recorder.wait_closed();
  EXPECT_EQ(why.code(), Code::kUnavailable) << why.to_string();
  EXPECT_TRUE(contains(why.message(), "4001")) << why.message();
  EXPECT_TRUE(contains(why.message(), "going away now")) << why.message();
  EXPECT_EQ(recorder.opened(), 1);
}

class WsClientTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pki_ = testing::make_test_pki();
    files_ = testing::write_test_pki(pki_, dir_);
  }

  const testing::TempDir tmp_{"leasehold-ws-"};
  const std::filesystem::path dir_ = tmp_.path();
  testing::TestPki pki_;
  testing::TestPkiFiles files_;
};

TEST_F(WsClientTlsTest, WssWithALocalCa) {
  TestWsServer server(&pki_);
  auto client = open_client(trusting(files_.ca_file));
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    Recorder recorder;
    auto stream = connect(*client, with_host(server.url("/count/40"), host), recorder);
    ASSERT_TRUE(recorder.wait_messages(40)) << recorder.wait_closed(0ms).to_string();
    expect_counted(recorder.messages(), 40);
    stream->close();
    EXPECT_TRUE(recorder.wait_closed().ok());
  }
}

TEST_F(WsClientTlsTest, ACertificateFromAnUnknownCaIsRefused) {
  const testing::TestPki other = testing::make_test_pki();
  TestWsServer server(&other);
  auto client = open_client(trusting(files_.ca_file));
  Recorder recorder;
  auto stream = connect(*client, server.url("/count/1"), recorder);
  const Status why = recorder.wait_closed();
  EXPECT_EQ(why.code(), Code::kUnavailable) << why.to_string();
  EXPECT_TRUE(contains(why.message(), "TLS handshake")) << why.message();
  EXPECT_TRUE(contains(why.message(), "certificate verify failed")) << why.message();
  EXPECT_EQ(recorder.opened(), 0);
}

// A certificate from the trusted CA for other names: refused by name (SNI
// and the DNS names) and by address.
TEST_F(WsClientTlsTest, ACertificateForOtherNamesIsRefusedByNameAndByAddress) {
  const testing::TestPki elsewhere = testing::make_test_pki("DNS:elsewhere.test,IP:10.9.8.7");
  const testing::TestPkiFiles files = testing::write_test_pki(elsewhere, dir_ / "elsewhere");
  TestWsServer server(&elsewhere);
  auto client = open_client(trusting(files.ca_file));
  for (const std::string host : {"localhost", "127.0.0.1"}) {
    Recorder recorder;
    auto stream = connect(*client, with_host(server.url("/count/1"), host), recorder);
    const Status why = recorder.wait_closed();
    EXPECT_EQ(why.code(), Code::kUnavailable) << why.to_string();
    EXPECT_TRUE(contains(why.message(), "certificate verify failed"))
        << host << ": " << why.message();
    EXPECT_EQ(recorder.opened(), 0);
    stream->close();  // before the recorder goes, had it opened
  }
}

TEST_F(WsClientTlsTest, AStalledTlsHandshakeTimesOutOrEndsOnClose) {
  // A peer that accepts and never answers the ClientHello.
  asio::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  WsClientOptions options = trusting(files_.ca_file);
  options.connect_timeout = 300ms;
  auto client = open_client(options);
  const std::string url =
      "wss://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port()) + "/s";
  Recorder timed_out, closed;
  const auto start = std::chrono::steady_clock::now();
  auto a = connect(*client, url, timed_out);
  auto b = connect(*client, url, closed);
  tcp::socket first = acceptor.accept(), second = acceptor.accept();
  b->close();  // while its handshake waits: it ends now, not at the timeout
  EXPECT_TRUE(closed.wait_closed().ok());
  EXPECT_LT(closed.closed_at() - start, 300ms);
  const Status why = timed_out.wait_closed();
  EXPECT_EQ(why.code(), Code::kUnavailable) << why.to_string();
  EXPECT_TRUE(contains(why.message(), "within 300ms")) << why.message();
  EXPECT_TRUE(contains(why.message(), "TLS handshake")) << why.message();
  EXPECT_GE(timed_out.closed_at() - start, 300ms);
  EXPECT_EQ(timed_out.opened() + closed.opened(), 0);
}

// wss:// runs on OpenSSL reading and writing the socket itself
// (net/socket_tls_stream.h): what a plain stream does, it does through TLS.
TEST_F(WsClientTlsTest, MessagesLargerThanATlsRecordArriveWholeAndInOrder) {
  TestWsServer server(&pki_);
  auto client = open_client(trusting(files_.ca_file));
  Recorder big, tiny;
  // 200,000 bytes span thirteen TLS records; 500 tiny messages share records.
  auto a = connect(*client, server.url("/big/200000"), big);
  auto b = connect(*client, server.url("/tiny/500"), tiny);
  ASSERT_TRUE(big.wait_messages(2)) << big.wait_closed(0ms).to_string();
  EXPECT_EQ(big.messages()[0].bytes, std::string(200000, 'b'));
  EXPECT_EQ(big.messages()[1].bytes, "after");
  ASSERT_TRUE(tiny.wait_messages(500)) << tiny.wait_closed(0ms).to_string();
  for (size_t i = 0; i < 500; ++i) EXPECT_EQ(tiny.messages()[i].bytes, std::to_string(i));
  a->close();
  b->close();
  EXPECT_TRUE(big.wait_closed().ok());
  EXPECT_TRUE(tiny.wait_closed().ok());
}

TEST_F(WsClientTlsTest, ThePeersCloseFrameAndASilentPeerAreToldApart) {
  TestWsServer server(&pki_);
  WsClientOptions options = trusting(files_.ca_file);
  options.idle_timeout = 600ms;
  auto client = open_client(options);
  Recorder closing, silent, quiet;
  auto a = connect(*client, server.url("/close"), closing);
  auto b = connect(*client, server.url("/silent"), silent);
  auto c = connect(*client, server.url("/quiet"), quiet);
  const Status closed = closing.wait_closed();
  EXPECT_EQ(closed.code(), Code::kUnavailable) << closed.to_string();
  EXPECT_TRUE(contains(closed.message(), "4001")) << closed.message();
  const Status cut = silent.wait_closed();
  EXPECT_EQ(cut.code(), Code::kUnavailable) << cut.to_string();
  EXPECT_TRUE(contains(cut.message(), "silent for 600ms")) << cut.message();
  // Its pings go out through TLS and its pongs come back: it stays.
  EXPECT_EQ(quiet.wait_closed(1800ms).code(), Code::kInternal) << "on_closed ran";
  c->close();
  EXPECT_TRUE(quiet.wait_closed().ok());
}

TEST_F(WsClientTlsTest, NoMessageAfterCloseUnderAFastSender) {
  TestWsServer server(&pki_);
  auto client = open_client(trusting(files_.ca_file));
  expect_no_message_after_close(*client, server.url("/flood"), 5, 0us);
}

TEST(WsClientTest, TheDestructorClosesEveryStream) {
  TestWsServer server;
  asio::io_context io;
  tcp::acceptor never_accepts(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  auto client = open_client();
  std::vector<Recorder> recorders(4);
  std::vector<std::shared_ptr<WsStream>> streams;
  streams.push_back(connect(*client, server.url("/silent"), recorders[0]));
  streams.push_back(connect(*client, server.url("/flood"), recorders[1]));
  streams.push_back(connect(*client, server.url("/quiet"), recorders[2]));
  streams.push_back(connect(
      *client, "ws://127.0.0.1:" + std::to_string(never_accepts.local_endpoint().port()) + "/s",
      recorders[3]));  // still connecting
  ASSERT_TRUE(recorders[1].wait_messages(10));
  client.reset();
  for (auto& recorder : recorders) {
    EXPECT_EQ(recorder.closed_count(), 1);
    EXPECT_TRUE(recorder.wait_closed(0ms).ok()) << recorder.wait_closed(0ms).to_string();
    EXPECT_TRUE(recorder.in_order());
  }
  for (auto& stream : streams) stream->close();  // does nothing, safely
}

TEST(WsClientTest, BadOptionsAndUrlsAreRefused) {
  for (size_t threads : {size_t{0}, kWsThreadsMax + 1}) {
    WsClientOptions options;
    options.threads = threads;
    EXPECT_EQ(WsClient::open(options).status().code(), Code::kInvalidArgument);
  }
  WsClientOptions options = test_options();
  options.ca_file = "/nonexistent/ca.pem";
  EXPECT_EQ(WsClient::open(options).status().code(), Code::kInvalidArgument);
  options = {};
  options.idle_timeout = Duration::zero();
  EXPECT_EQ(WsClient::open(options).status().code(), Code::kInvalidArgument);
  options = {};
  options.message_bytes_max = 0;
  EXPECT_EQ(WsClient::open(options).status().code(), Code::kInvalidArgument);

  auto client = open_client();
  bool called = false;
  WsHandlers handlers;
  handlers.on_open = [&] { called = true; };
  handlers.on_closed = [&](const Status&) { called = true; };
  for (const char* url : {"http://127.0.0.1/", "ws://", "ws://host:99999/", "ws://a b/"}) {
    EXPECT_EQ(client->connect(url, handlers).status().code(), Code::kInvalidArgument) << url;
  }
  EXPECT_EQ(client->open_streams(), 0u);
  client.reset();
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace leasehold::net
