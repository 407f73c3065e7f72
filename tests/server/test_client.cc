#include "test_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>

namespace leasehold::server::testing {
namespace {

using Deadline = std::chrono::steady_clock::time_point;

int connect_loopback(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

int remaining_ms(Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

std::string lower(std::string_view s) {
  std::string out(s);
  std::ranges::transform(out, out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

}  // namespace

std::string HttpResponse::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) return value;
  }
  return "";
}

bool HttpResponse::has_header(std::string_view name) const {
  return std::ranges::any_of(headers, [&](const auto& h) { return h.first == name; });
}

Client::Client(uint16_t port) : fd_(connect_loopback(port)) {}

Client::Client(uint16_t port, const std::string& ca_pem, int max_version)
    : fd_(connect_loopback(port)) {
  if (fd_ < 0) return;
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (max_version != 0) {
    SSL_CTX_set_min_proto_version(ctx_, TLS1_VERSION);
    SSL_CTX_set_max_proto_version(ctx_, max_version);
    SSL_CTX_set_security_level(ctx_, 0);  // lets this client offer TLS 1.1
  }
  BIO* bio = BIO_new_mem_buf(ca_pem.data(), static_cast<int>(ca_pem.size()));
  X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  X509_STORE_add_cert(SSL_CTX_get_cert_store(ctx_), ca);
  X509_free(ca);
  SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
  SSL* ssl = SSL_new(ctx_);
  SSL_set_fd(ssl, fd_);
  SSL_set1_host(ssl, "localhost");
  if (SSL_connect(ssl) == 1) {
    ssl_ = ssl;
  } else {
    ERR_clear_error();
    SSL_free(ssl);
  }
}

Client::~Client() {
  if (ssl_ != nullptr) SSL_free(ssl_);
  if (ctx_ != nullptr) SSL_CTX_free(ctx_);
  if (fd_ >= 0) ::close(fd_);
}

Client::Client(Client&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      ctx_(std::exchange(other.ctx_, nullptr)),
      ssl_(std::exchange(other.ssl_, nullptr)),
      buffer_(std::move(other.buffer_)) {}

bool Client::send(std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ssl_ != nullptr ? SSL_write(ssl_, data.data(), static_cast<int>(data.size()))
                                      : ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) {
      if (ssl_ == nullptr && n < 0 && errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

Client::Read Client::read_some(Deadline deadline) {
  char chunk[16 * 1024];
  for (;;) {
    if (ssl_ == nullptr || SSL_pending(ssl_) == 0) {
      pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
      const int ready = ::poll(&p, 1, remaining_ms(deadline));
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) return Read::kTimeout;
    }
    const ssize_t n = ssl_ != nullptr ? SSL_read(ssl_, chunk, sizeof(chunk))
                                      : ::recv(fd_, chunk, sizeof(chunk), 0);
    if (n > 0) {
      buffer_.append(chunk, static_cast<size_t>(n));
      return Read::kData;
    }
    if (ssl_ != nullptr && SSL_get_error(ssl_, static_cast<int>(n)) == SSL_ERROR_WANT_READ) {
      continue;
    }
    if (ssl_ == nullptr && n < 0 && errno == EINTR) continue;
    ERR_clear_error();
    return Read::kClosed;  // EOF or reset
  }
}

std::optional<HttpResponse> Client::read_response(std::chrono::milliseconds timeout, bool head) {
  const Deadline deadline = std::chrono::steady_clock::now() + timeout;
  size_t end;
  while ((end = buffer_.find("\r\n\r\n")) == std::string::npos) {
    if (read_some(deadline) != Read::kData) return std::nullopt;
  }
  HttpResponse response;
  std::string_view header(buffer_.data(), end);
  size_t line_end = header.find("\r\n");
  const std::string_view status_line = header.substr(0, line_end);
  if (status_line.size() < 12 || !status_line.starts_with("HTTP/1.")) return std::nullopt;
  response.status = std::stoi(std::string(status_line.substr(9, 3)));
  while (line_end != std::string_view::npos) {
    header.remove_prefix(line_end + 2);
    line_end = header.find("\r\n");
    const std::string_view line = header.substr(0, line_end);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    response.headers.emplace_back(lower(line.substr(0, colon)), std::string(value));
  }
  buffer_.erase(0, end + 4);
  if (response.status / 100 == 1) return response;  // 100 Continue: no body
  if (!head && response.header("transfer-encoding") == "chunked") {
    if (!read_chunked_body(deadline, response.body)) return std::nullopt;
    return response;
  }
  const std::string length = response.header("content-length");
  const size_t body_bytes = head || length.empty() ? 0 : std::stoul(length);
  while (buffer_.size() < body_bytes) {
    if (read_some(deadline) != Read::kData) return std::nullopt;
  }
  response.body = buffer_.substr(0, body_bytes);
  buffer_.erase(0, body_bytes);
  return response;
}

bool Client::read_chunked_body(Deadline deadline, std::string& body) {
  for (;;) {
    size_t line_end;
    while ((line_end = buffer_.find("\r\n")) == std::string::npos) {
      if (read_some(deadline) != Read::kData) return false;
    }
    size_t size = 0;
    const auto [end, ec] = std::from_chars(buffer_.data(), buffer_.data() + line_end, size, 16);
    if (ec != std::errc() || (end != buffer_.data() + line_end && *end != ';')) return false;
    buffer_.erase(0, line_end + 2);
    if (size == 0) break;
    while (buffer_.size() < size + 2) {
      if (read_some(deadline) != Read::kData) return false;
    }
    if (buffer_.compare(size, 2, "\r\n") != 0) return false;
    body.append(buffer_, 0, size);
    buffer_.erase(0, size + 2);
  }
  // The trailer fields, if any, up to the empty line.
  for (;;) {
    size_t line_end;
    while ((line_end = buffer_.find("\r\n")) == std::string::npos) {
      if (read_some(deadline) != Read::kData) return false;
    }
    buffer_.erase(0, line_end + 2);
    if (line_end == 0) return true;
  }
}

std::optional<HttpResponse> Client::get(std::string_view target, std::string_view extra_headers) {
  if (!send(get_request(target, extra_headers))) return std::nullopt;
  return read_response();
}

bool Client::wait_closed(std::chrono::milliseconds timeout) {
  const Deadline deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    switch (read_some(deadline)) {
      case Read::kClosed:
        return true;
      case Read::kTimeout:
        return false;
      case Read::kData:
        break;
    }
  }
}

bool Client::open_after(std::chrono::milliseconds wait) {
  return read_some(std::chrono::steady_clock::now() + wait) == Read::kTimeout;
}

std::string get_request(std::string_view target, std::string_view extra_headers) {
  std::string request = "GET ";
  request += target;
  request += " HTTP/1.1\r\nHost: localhost\r\n";
  request += extra_headers;
  request += "\r\n";
  return request;
}

std::optional<HttpResponse> exchange(uint16_t port, std::string_view method,
                                     std::string_view target, std::string_view headers,
                                     std::string_view body) {
  Client client(port);
  std::string request = std::string(method) + " " + std::string(target) +
                        " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n" +
                        std::string(headers);
  if (!body.empty() || method == "POST" || method == "PUT") {
    request += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  request += "\r\n" + std::string(body);
  if (!client.send(request)) return std::nullopt;
  return client.read_response();
}

uint64_t raise_open_files_limit() {
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
  return limit.rlim_cur;
}

}  // namespace leasehold::server::testing
