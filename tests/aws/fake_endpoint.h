// FakeEndpoint: an HTTP/1.1 server on 127.0.0.1 that answers each request
// with what a handler the test gives returns, for the endpoints that AWS
// credentials come from (STS, the container endpoint, EC2's metadata
// service), and records every request so that the test can check what the
// client sent. One connection at a time, one request per connection
// ("Connection: close"). A handler may block (a stalled endpoint): the
// server answers nothing else meanwhile, as one stuck agent would not.
// Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace leasehold::testing {

struct FakeRequest {
  std::string method;
  std::string target;                          // path and query
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;

  // The header's value, or "" when absent.
  std::string header(const std::string& lower_name) const;
  // The body as an application/x-www-form-urlencoded form, decoded.
  std::map<std::string, std::string> form() const;
};

struct FakeReply {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  // Sent after Content-Type: {"x-amz-request-id", "..."}, say.
  std::vector<std::pair<std::string, std::string>> headers = {};
};

class FakeEndpoint {
 public:
  using Handler = std::function<FakeReply(const FakeRequest&)>;

  explicit FakeEndpoint(Handler handler);
  ~FakeEndpoint();
  FakeEndpoint(const FakeEndpoint&) = delete;
  FakeEndpoint& operator=(const FakeEndpoint&) = delete;

  // "http://127.0.0.1:PORT".
  std::string url() const;
  std::vector<FakeRequest> requests() const;
  size_t request_count() const;
  // Waits (in real time, up to `deadline_ms`) until `n` requests have
  // arrived (their handlers may still be running); false if they have not.
  bool wait_for_requests(size_t n, int deadline_ms = 10'000) const;

 private:
  void serve();

  const Handler handler_;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mu_;
  mutable std::condition_variable arrived_;
  std::vector<FakeRequest> requests_;
  std::thread thread_;
};

// A gate a handler waits at until the test opens it: a stalled endpoint.
class Gate {
 public:
  void wait();
  void open();

 private:
  std::mutex mu_;
  std::condition_variable opened_;
  bool open_ = false;
};

}  // namespace leasehold::testing
