// Tests for HttpClient against a small HTTP/1.1 server on 127.0.0.1 (port 0)
// written with plain sockets, whose misbehaviours are chosen per test: close
// after reading the request, never answer, send too much, drop idle
// connections; and against an HTTPS server (Beast, with certificates from a
// test CA) that answers or never does.
#include "net/http_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "net/beast.h"
#include "testing/temp_dir.h"
#include "testing/test_pki.h"

namespace leasehold::net {
namespace {

using namespace std::chrono_literals;

enum class Mode {
  kEcho,
  kCloseAfterRead,
  kNeverAnswer,
  kLargeBody,
  kCloseAfterReply,  // closes without a word: the client finds out later
  kConnectionClose,  // says "Connection: close" in its reply, and closes
};

// One thread per connection; every request is read whole before the mode
// decides what to do with it.
class TestServer {
 public:
  explicit TestServer(Mode mode) : mode_(mode) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len), 0);
    EXPECT_EQ(::listen(listen_fd_, 64), 0);
    EXPECT_EQ(::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
    accept_thread_ = std::thread([this] { accept_loop(); });
  }

  ~TestServer() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      ::shutdown(listen_fd_, SHUT_RDWR);  // wakes accept()
      for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
    }
    accept_thread_.join();
    for (auto& t : threads_) t.join();
    ::close(listen_fd_);
  }

  uint16_t port() const { return port_; }
  int accepted() const { return accepted_; }
  int max_in_flight() const { return max_in_flight_; }

  // Blocks until the server has closed `n` connections after replying.
  void wait_closed(int n) {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return closed_ >= n; });
  }

 private:
  void accept_loop() {
    for (;;) {
      int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) return;
      std::lock_guard lock(mu_);
      if (stopping_) {
        ::close(fd);
        return;
      }
      ++accepted_;
      open_fds_.insert(fd);
      threads_.emplace_back([this, fd] { serve(fd); });
    }
  }

  // Reads one request (headers and Content-Length body); false at EOF.
  static bool read_request(int fd, std::string& pending, std::string& body) {
    char chunk[4096];
    size_t end;
    while ((end = pending.find("\r\n\r\n")) == std::string::npos) {
      ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
      if (n <= 0) return false;
      pending.append(chunk, static_cast<size_t>(n));
    }
    std::string head = pending.substr(0, end);
    std::transform(head.begin(), head.end(), head.begin(), ::tolower);
    size_t at = head.find("content-length:");
    size_t length = at == std::string::npos ? 0 : std::stoul(head.substr(at + 15));
    while (pending.size() < end + 4 + length) {
      ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
      if (n <= 0) return false;
      pending.append(chunk, static_cast<size_t>(n));
    }
    body = pending.substr(end + 4, length);
    pending.erase(0, end + 4 + length);
    return true;
  }

  void serve(int fd) {
    std::string pending, body;
    while (read_request(fd, pending, body)) {
      if (mode_ == Mode::kCloseAfterRead) break;
      if (mode_ == Mode::kNeverAnswer) continue;
      int now = ++in_flight_;
      int seen = max_in_flight_;
      while (now > seen && !max_in_flight_.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(1ms);  // lets concurrent requests overlap
      --in_flight_;
      std::string reply = mode_ == Mode::kLargeBody ? std::string(4096, 'x') : "ok:" + body;
      const bool close = mode_ == Mode::kCloseAfterReply || mode_ == Mode::kConnectionClose;
      std::string response = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: " +
                             std::to_string(reply.size()) + "\r\n" +
                             (mode_ == Mode::kConnectionClose ? "Connection: close\r\n" : "") +
                             "\r\n" + reply;
      if (::send(fd, response.data(), response.size(), MSG_NOSIGNAL) < 0) break;
      if (close) break;
    }
    std::lock_guard lock(mu_);
    open_fds_.erase(fd);
    ::close(fd);
    ++closed_;
    cv_.notify_all();
  }

  const Mode mode_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread accept_thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::set<int> open_fds_;
  std::vector<std::thread> threads_;
  int closed_ = 0;
  std::atomic<int> accepted_{0};
  std::atomic<int> in_flight_{0};
  std::atomic<int> max_in_flight_{0};
};

std::unique_ptr<HttpClient> open_client(uint16_t port, size_t connections_max = 4,
                                        size_t response_bytes_max = size_t{16} << 20) {
  HttpClientOptions options;
  options.endpoint = {"http", "127.0.0.1", port};
  options.connections_max = connections_max;
  options.response_bytes_max = response_bytes_max;
  auto client = HttpClient::open(options);
  EXPECT_TRUE(client.ok()) << client.status().to_string();
  return std::move(client).value();
}

HttpRequest post(std::string body) {
  HttpRequest request;
  request.headers = {{"Authorization", "SECRET-CREDENTIAL"}, {"Content-Type", "text/plain"}};
  request.body = std::move(body);
  return request;
}

// A loopback port with nothing listening: bound, then closed.
uint16_t unused_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

TEST(HttpClientTest, KeepAliveReusesOneConnection) {
  TestServer server(Mode::kEcho);
  auto client = open_client(server.port());
  for (int i = 0; i < 20; ++i) {
    auto response = client->send(post("n" + std::to_string(i)), 5s);
    ASSERT_TRUE(response.ok()) << response.status().to_string();
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, "ok:n" + std::to_string(i));
    EXPECT_EQ(response->header("content-type"), "text/plain");
  }
  EXPECT_EQ(server.accepted(), 1);
}

TEST(HttpClientTest, ConcurrentRequestsAreBoundedByThePool) {
  TestServer server(Mode::kEcho);
  auto client = open_client(server.port(), /*connections_max=*/3);
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        std::string body = std::to_string(t) + "/" + std::to_string(i);
        auto response = client->send(post(body), 10s);
        if (response.ok() && response->body == "ok:" + body) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 80);
  EXPECT_LE(server.accepted(), 3);
  EXPECT_LE(server.max_in_flight(), 3);
}

TEST(HttpClientTest, ServerClosingAfterReadingIsUnknownOutcome) {
  TestServer server(Mode::kCloseAfterRead);
  auto client = open_client(server.port());
  auto response = client->send(post("{}"), 5s);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), Code::kUnknownOutcome) << response.status().to_string();
  EXPECT_EQ(response.status().message().find("SECRET"), std::string::npos);
}

TEST(HttpClientTest, NothingListeningIsUnavailable) {
  auto client = open_client(unused_port());
  auto response = client->send(post("{}"), 5s);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), Code::kUnavailable) << response.status().to_string();
}

TEST(HttpClientTest, ServerThatNeverAnswersIsUnknownOutcomeAtTheDeadline) {
  TestServer server(Mode::kNeverAnswer);
  auto client = open_client(server.port());
  auto start = std::chrono::steady_clock::now();
  auto response = client->send(post("{}"), 200ms);
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), Code::kUnknownOutcome) << response.status().to_string();
  EXPECT_GE(elapsed, 200ms);
  EXPECT_LT(elapsed, 5s);
}

// The server answered, so it received the request: a write may have
// applied, and only a read-back can tell.
TEST(HttpClientTest, OversizedResponseIsRefusedAndLeavesTheOutcomeUnknown) {
  TestServer server(Mode::kLargeBody);
  auto client = open_client(server.port(), 4, /*response_bytes_max=*/1024);
  auto response = client->send(post("{}"), 5s);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), Code::kUnknownOutcome) << response.status().to_string();
  EXPECT_NE(response.status().message().find("exceeds 1024 bytes"), std::string::npos);
}

TEST(HttpClientTest, ConnectionClosedWhileIdleIsReplacedNotFailed) {
  TestServer server(Mode::kCloseAfterReply);
  auto client = open_client(server.port());
  for (int i = 0; i < 3; ++i) {
    auto response = client->send(post("x"), 5s);
    ASSERT_TRUE(response.ok()) << response.status().to_string();
    server.wait_closed(i + 1);
  }
  EXPECT_EQ(server.accepted(), 3);
}

// A host name is resolved for every new connection; resolutions asked for
// at once take turns on the client's one resolver, and all succeed.
TEST(HttpClientTest, HostNamesAreResolvedForEveryNewConnection) {
  TestServer server(Mode::kConnectionClose);
  HttpClientOptions options;
  options.endpoint = {"http", "localhost", server.port()};
  options.connections_max = 4;
  auto client = HttpClient::open(options);
  ASSERT_TRUE(client.ok()) << client.status().to_string();
  std::atomic<int> ok{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 6; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) {
        auto response = (*client)->send(post("x"), 10s);
        if (response.ok() && response->status == 200) ++ok;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, 30);
  EXPECT_EQ(server.accepted(), 30);
}

TEST(HttpClientTest, HttpsToAPlainServerFailsBeforeSending) {
  TestServer server(Mode::kEcho);
  HttpClientOptions options;
  options.endpoint = {"https", "127.0.0.1", server.port()};
  auto client = HttpClient::open(options);
  ASSERT_TRUE(client.ok()) << client.status().to_string();
  // The server waits for an HTTP request line that never comes, so the
  // handshake runs into the deadline; nothing of the request was written.
  auto response = (*client)->send(post("{}"), 300ms);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), Code::kUnavailable) << response.status().to_string();
  EXPECT_NE(response.status().message().find("TLS handshake"), std::string::npos);
}

TEST(HttpClientTest, PlainHttpOnlyForLoopback) {
  for (std::string host : {"example.com", "10.0.0.1", "::2", "localhost.example.com"}) {
    HttpClientOptions options;
    options.endpoint = {"http", host, 80};
    auto client = HttpClient::open(options);
    ASSERT_FALSE(client.ok()) << host;
    EXPECT_EQ(client.status().code(), Code::kInvalidArgument);
    EXPECT_NE(client.status().message().find("loopback"), std::string::npos);
  }
  for (std::string host : {"localhost", "127.0.0.1", "127.1.2.3", "::1"}) {
    HttpClientOptions options;
    options.endpoint = {"http", host, 80};
    EXPECT_TRUE(HttpClient::open(options).ok()) << host;
  }
}

TEST(HttpClientTest, BadRequestsAreInvalidArgument) {
  TestServer server(Mode::kEcho);
  auto client = open_client(server.port());
  HttpRequest request = post("{}");
  request.method = "FROB";
  EXPECT_EQ(client->send(request, 5s).status().code(), Code::kInvalidArgument);
  request = post("{}");
  request.headers.push_back({"X-Bad", "a\r\nInjected: 1"});
  EXPECT_EQ(client->send(request, 5s).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(server.accepted(), 0);
}

TEST(HttpClientTest, HostHeaderOmitsDefaultPorts) {
  HttpClientOptions options;
  options.endpoint = {"https", "dynamodb.us-east-1.amazonaws.com", 443};
  EXPECT_EQ((*HttpClient::open(options))->host_header(), "dynamodb.us-east-1.amazonaws.com");
  options.endpoint = {"http", "::1", 8000};
  EXPECT_EQ((*HttpClient::open(options))->host_header(), "[::1]:8000");
}

// HTTPS on `address` (a loopback address, port 0) with the certificate of
// `pki`, which names localhost and 127.0.0.1: one thread per connection,
// blocking Beast calls; each request is answered "ok:" + its body, or never.
// The destructor shuts every socket down, which ends each thread's call.
class TlsTestServer {
 public:
  TlsTestServer(const testing::TestPki& pki, bool answers, const std::string& address = "127.0.0.1")
      : answers_(answers), acceptor_(io_) {
    tls_.use_certificate_chain(asio::buffer(pki.cert_pem));
    tls_.use_private_key(asio::buffer(pki.key_pem), ssl::context::pem);
    const tcp::endpoint endpoint(asio::ip::make_address(address), 0);
    acceptor_.open(endpoint.protocol());
    acceptor_.bind(endpoint);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    accept_thread_ = std::thread([this] { accept_loop(); });
  }

  ~TlsTestServer() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
      ::shutdown(acceptor_.native_handle(), SHUT_RDWR);
      for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
    }
    accept_thread_.join();
    for (auto& thread : threads_) thread.join();
  }

  uint16_t port() const { return port_; }
  int accepted() const { return accepted_; }
  int requests() const { return requests_; }

 private:
  void accept_loop() {
    for (;;) {
      tcp::socket socket(io_);
      boost::system::error_code ec;
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
      ssl::stream<tcp::socket&> stream(socket, tls_);
      stream.handshake(ssl::stream_base::server);
      beast::flat_buffer buffer;
      for (;;) {
        http::request<http::string_body> request;
        http::read(stream, buffer, request);
        ++requests_;
        if (!answers_) continue;
        http::response<http::string_body> response{http::status::ok, request.version()};
        response.body() = "ok:" + request.body();
        response.prepare_payload();
        http::write(stream, response);
      }
    } catch (const boost::system::system_error&) {
      // The client went or refused the certificate, or the server stops.
    }
  }

  const bool answers_;
  asio::io_context io_;
  ssl::context tls_{ssl::context::tls_server};
  tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::thread accept_thread_;
  std::mutex mu_;
  bool stopping_ = false;
  std::set<int> fds_;
  std::vector<std::thread> threads_;
  std::atomic<int> accepted_{0};
  std::atomic<int> requests_{0};
};

class HttpClientTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pki_ = testing::make_test_pki();
    files_ = testing::write_test_pki(pki_, dir_);
  }

  std::unique_ptr<HttpClient> open_https(const std::string& host, uint16_t port) {
    HttpClientOptions options;
    options.endpoint = {"https", host, port};
    options.ca_file = files_.ca_file;
    auto client = HttpClient::open(options);
    EXPECT_TRUE(client.ok()) << client.status().to_string();
    return std::move(client).value();
  }

  const testing::TempDir tmp_{"leasehold-http-"};
  const std::filesystem::path dir_ = tmp_.path();
  testing::TestPki pki_;
  testing::TestPkiFiles files_;
};

// By address (matched against the certificate's IP) and by name (SNI and the
// certificate's DNS name), each over one kept connection.
TEST_F(HttpClientTlsTest, HttpsToAServerTheCaSignedWorksAndKeepsItsConnection) {
  TlsTestServer server(pki_, /*answers=*/true);
  for (const std::string host : {"127.0.0.1", "localhost"}) {
    auto client = open_https(host, server.port());
    for (int i = 0; i < 5; ++i) {
      auto response = client->send(post("n" + std::to_string(i)), 5s);
      ASSERT_TRUE(response.ok()) << host << ": " << response.status().to_string();
      EXPECT_EQ(response->status, 200);
      EXPECT_EQ(response->body, "ok:n" + std::to_string(i));
    }
  }
  EXPECT_EQ(server.accepted(), 2);
  EXPECT_EQ(server.requests(), 10);
}

TEST_F(HttpClientTlsTest, ACertificateFromAnUnknownCaIsRefusedBeforeSending) {
  const testing::TestPki other = testing::make_test_pki();
  TlsTestServer server(other, /*answers=*/true);
  auto client = open_https("127.0.0.1", server.port());
  auto response = client->send(post("{}"), 5s);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), Code::kUnavailable) << response.status().to_string();
  EXPECT_NE(response.status().message().find("TLS handshake"), std::string::npos);
  EXPECT_EQ(server.requests(), 0);
}

// A certificate from the trusted CA for other names: refused by name (SNI
// and the DNS names) and by address.
TEST_F(HttpClientTlsTest, ACertificateForOtherNamesIsRefusedByNameAndByAddress) {
  pki_ = testing::make_test_pki("DNS:elsewhere.test,IP:10.9.8.7");
  files_ = testing::write_test_pki(pki_, dir_);
  TlsTestServer server(pki_, /*answers=*/true);
  for (const std::string host : {"localhost", "127.0.0.1"}) {
    auto client = open_https(host, server.port());
    auto response = client->send(post("{}"), 5s);
    ASSERT_FALSE(response.ok()) << host;
    EXPECT_EQ(response.status().code(), Code::kUnavailable) << response.status().to_string();
    EXPECT_NE(response.status().message().find("TLS handshake"), std::string::npos);
  }
  EXPECT_EQ(server.requests(), 0);
}

// 127.0.0.2 is loopback too, but the certificate does not name it.
TEST_F(HttpClientTlsTest, ACertificateForAnotherHostIsRefusedBeforeSending) {
  TlsTestServer server(pki_, /*answers=*/true, "127.0.0.2");
  auto client = open_https("127.0.0.2", server.port());
  auto response = client->send(post("{}"), 5s);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), Code::kUnavailable) << response.status().to_string();
  EXPECT_NE(response.status().message().find("TLS handshake"), std::string::npos);
  EXPECT_EQ(server.requests(), 0);
}

TEST_F(HttpClientTlsTest, HttpsServerThatNeverAnswersIsUnknownOutcomeAtTheDeadline) {
  TlsTestServer server(pki_, /*answers=*/false);
  auto client = open_https("127.0.0.1", server.port());
  auto start = std::chrono::steady_clock::now();
  auto response = client->send(post("{}"), 300ms);
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.status().code(), Code::kUnknownOutcome) << response.status().to_string();
  EXPECT_GE(elapsed, 300ms);
  EXPECT_LT(elapsed, 5s);
}

}  // namespace
}  // namespace leasehold::net
