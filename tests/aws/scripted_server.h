// ScriptedServer: a loopback HTTP/1.1 server (127.0.0.1, port 0) that plays
// an AWS endpoint for the clients' tests: each request is answered from a
// script (the next reply in a list) or by a handler the test gives (which
// sees the request: its X-Amz-Date, say), or has its connection dropped
// after it was read (the outcome is unknown to the client), or gets no reply
// for as long as the server lives.
//
// One thread per connection; keep-alive, one request at a time,
// Content-Length framing (all the JSON APIs and S3 need). Requests are
// recorded. Safe for concurrent use; the handler runs under the server's
// mutex, one request at a time, so it may keep state without a lock of its
// own. The destructor closes every socket and joins every thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "leasehold/clock.h"

namespace leasehold::testing {

class ScriptedServer {
 public:
  using Headers = std::vector<std::pair<std::string, std::string>>;

  struct Request {
    std::string method;
    std::string target;
    Headers headers;  // names lower-cased
    std::string body;

    // The first header named `name` (lower-case), or "".
    std::string header(std::string_view name) const;
  };

  struct Reply {
    int status = 200;
    std::string body = "{}";
    bool drop = false;     // the connection is closed, unanswered
    bool hold = false;     // no reply until the server stops, then dropped
    // Besides Content-Type and Content-Length; a Content-Length here is sent
    // instead of the body's, for a HEAD's answer (the object's, no body).
    Headers headers = {};
    std::string content_type = "application/x-amz-json-1.0";
  };

  using Handler = std::function<Reply(const Request&)>;

  // Each request takes the next reply of `script`; once it is used up, 200
  // with "{}".
  explicit ScriptedServer(std::deque<Reply> script);
  explicit ScriptedServer(Handler handler);
  ~ScriptedServer();

  ScriptedServer(const ScriptedServer&) = delete;
  ScriptedServer& operator=(const ScriptedServer&) = delete;

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Each request's X-Amz-Target, lower-cased, without DynamoDB's prefix
  // ("getitem", "dynamodbstreams_20120810.getrecords"); "" where it has none.
  std::vector<std::string> targets();
  std::vector<Request> requests();

  // From now on, each request's reply waits until `count` requests have been
  // in flight at once, or until `max_wait` after the first such request.
  void hold_replies_until_in_flight(size_t count, Duration max_wait);
  size_t most_in_flight();

 private:
  void start();
  void serve(int fd);
  Reply reply_to(const Request& request, std::unique_lock<std::mutex>& lock);

  std::mutex mu_;
  std::condition_variable held_;
  size_t in_flight_ = 0, most_in_flight_ = 0, hold_count_ = 0;
  bool stopping_ = false;
  Duration hold_max_wait_{};
  std::optional<std::chrono::steady_clock::time_point> hold_deadline_;
  std::deque<Reply> script_;
  Handler handler_;
  std::vector<Request> requests_;
  std::vector<int> fds_;
  std::vector<std::thread> threads_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::thread accept_thread_;
};

// Signing times, as a service writes them: SigV4's X-Amz-Date
// ("20231114T221320Z") and an HTTP Date header ("Tue, 14 Nov 2023 22:13:20
// GMT").
std::string amz_date(WallTime t);
std::string http_date(WallTime t);

// What DynamoDB and SQS answer a request signed more than `allowed` from
// their time `now`: 400 InvalidSignatureException "Signature expired: ..."
// (or "Signature not yet current: ..."), with a Date header; nullopt for a
// request whose X-Amz-Date is within `allowed` of `now`.
std::optional<ScriptedServer::Reply> refuse_skewed_json(const ScriptedServer::Request& request,
                                                        WallTime now, Duration allowed);
// The same as S3 answers it: 403 RequestTimeTooSkewed, in XML.
std::optional<ScriptedServer::Reply> refuse_skewed_s3(const ScriptedServer::Request& request,
                                                      WallTime now, Duration allowed);

}  // namespace leasehold::testing
