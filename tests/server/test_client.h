// A blocking HTTP/1.1 client on plain sockets (and OpenSSL for TLS), for the
// server's tests: it sends exactly the bytes a test chooses, half a header,
// a huge Content-Length with no body, a byte at a time, and reads responses
// and the server's closing of the connection, each under a deadline.
//
// One Client is used by one thread.
#pragma once

#include <openssl/ssl.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace leasehold::server::testing {

using namespace std::chrono_literals;

struct HttpResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased
  std::string body;

  // The first value of `name` (lower-case), or "" if absent.
  std::string header(std::string_view name) const;
  bool has_header(std::string_view name) const;
};

class Client {
 public:
  // Connects to 127.0.0.1:port; fd() < 0 if that failed.
  explicit Client(uint16_t port);
  // Over TLS, trusting `ca_pem` (a PEM certificate) and at most TLS version
  // `max_version` (0: any); tls_ok() says whether the handshake succeeded.
  Client(uint16_t port, const std::string& ca_pem, int max_version = 0);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  Client(Client&& other) noexcept;

  int fd() const { return fd_; }
  bool connected() const { return fd_ >= 0; }
  bool tls_ok() const { return ssl_ != nullptr; }

  // False if the connection refused the bytes (closed, reset).
  bool send(std::string_view data);
  // Reads one response (the headers only, whatever the Content-Length, when
  // `head`); nullopt if the connection closes first or `timeout` passes. A
  // chunked body is decoded, and is read whole only with its last chunk: one
  // that the connection's close cuts short is nullopt too.
  std::optional<HttpResponse> read_response(std::chrono::milliseconds timeout = 10s,
                                            bool head = false);
  // Sends a GET and reads its response.
  std::optional<HttpResponse> get(std::string_view target, std::string_view extra_headers = "");
  // True if the server closes the connection (EOF or reset) within
  // `timeout`; what arrives before that is kept in received().
  bool wait_closed(std::chrono::milliseconds timeout = 10s);
  // True if the connection is still open after `wait` with nothing to read.
  bool open_after(std::chrono::milliseconds wait);
  const std::string& received() const { return buffer_; }

 private:
  enum class Read { kData, kClosed, kTimeout };
  // Appends what arrives to buffer_, waiting until `deadline`.
  Read read_some(std::chrono::steady_clock::time_point deadline);
  // Decodes a chunked body from buffer_ into `body`, up to the end of its
  // trailer; false if the connection ends first, the deadline passes or the
  // chunks are malformed.
  bool read_chunked_body(std::chrono::steady_clock::time_point deadline, std::string& body);

  int fd_ = -1;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  std::string buffer_;  // received, not yet consumed
};

// "GET <target> HTTP/1.1" with a Host header and `extra_headers` (each
// ending in \r\n).
std::string get_request(std::string_view target, std::string_view extra_headers = "");

// One request on a new connection to 127.0.0.1:`port`: `method` `target`
// with a Host header, `headers` (each ending in \r\n), and `body` with its
// Content-Length (sent for an empty POST or PUT too). nullopt if no
// response came within the Client's default timeout.
std::optional<HttpResponse> exchange(uint16_t port, std::string_view method,
                                     std::string_view target, std::string_view headers = "",
                                     std::string_view body = "");

// Raises the soft limit on open files to the hard limit; returns the new
// soft limit.
uint64_t raise_open_files_limit();

}  // namespace leasehold::server::testing
