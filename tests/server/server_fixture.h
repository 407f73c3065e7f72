// What the server's tests share: a Router the test fills, hooks that run
// blocking handlers on a small BlockingPool (or refuse to), record every
// started and answered request and let a test admit or refuse, a gate a handler can wait
// at, and a server on 127.0.0.1, port 0, with limits short enough for tests.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "runtime/blocking_pool.h"
#include "server/router.h"
#include "server/server.h"
#include "test_client.h"
#include "testing/capturing_logger.h"
#include "testing/eventually.h"

namespace leasehold::server::testing {

// A gate handlers wait at until the test opens it, counting who is waiting.
class Gate {
 public:
  void pass() {
    std::unique_lock lock(mu_);
    ++waiting_;
    changed_.notify_all();
    changed_.wait(lock, [this] { return open_; });
    --waiting_;
  }
  void open() {
    std::lock_guard lock(mu_);
    open_ = true;
    changed_.notify_all();
  }
  // True once `n` handlers wait at the gate; false after 10 s.
  bool wait_for_waiting(int n) {
    std::unique_lock lock(mu_);
    return changed_.wait_for(lock, 10s, [&] { return waiting_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable changed_;
  int waiting_ = 0;
  bool open_ = false;
};

struct Answered {
  std::string method, path, route, request_id;
  int status = 0;
  std::chrono::nanoseconds elapsed{0};
};

// For what no event signals (a port that refuses), up to kWaitMax unless a
// test says.
using leasehold::testing::eventually;
inline constexpr std::chrono::milliseconds kWaitMax = 10s;

class ServerFixture : public ::testing::Test {
 protected:
  ~ServerFixture() override { gate_.open(); }

  // Timeouts long enough never to fire by accident, short enough for a test
  // that waits for one to.
  static ServerLimits test_limits() {
    ServerLimits limits;
    limits.header_timeout = 5s;
    limits.request_timeout = 5s;
    limits.idle_timeout = 10s;
    limits.drain_timeout = 5s;
    return limits;
  }

  void start(ServerLimits limits = test_limits()) {
    ServerOptions options;
    options.port = 0;
    options.threads = 2;
    options.limits = limits;
    start_with(std::move(options));
  }

  void start_with(ServerOptions options) {
    options.logger = &logger_;
    auto server = Server::start(std::move(options), router_, hooks());
    ASSERT_TRUE(server.ok()) << server.status().to_string();
    server_ = std::move(server).value();
  }

  ServerHooks hooks() {
    ServerHooks hooks;
    hooks.admit = [this](Request& request, const Route& route) -> std::optional<Response> {
      if (admit_) return admit_(request, route);
      return std::nullopt;
    };
    if (admit_blocks_) hooks.admit_blocks = admit_blocks_;
    hooks.started = [this](const Request& request) {
      std::lock_guard lock(answered_mu_);
      started_.push_back(request.request_id);
    };
    hooks.answered = [this](const Request& request, const Response& response,
                            std::chrono::nanoseconds elapsed) {
      std::lock_guard lock(answered_mu_);
      answered_.push_back({request.method, request.path, request.route, request.request_id,
                           response.status, elapsed});
      answered_cv_.notify_all();
    };
    hooks.submit_blocking = [this](std::function<void()> job) {
      if (refuse_blocking_) return false;
      return pool_.submit([this, job = std::move(job)] {
        {
          std::lock_guard lock(answered_mu_);
          pool_threads_.insert(std::this_thread::get_id());
        }
        job();
      });
    };
    return hooks;
  }

  uint16_t port() const { return server_->port(); }

  // True once `n` requests have been answered; false after 10 s.
  bool wait_answered(size_t n) {
    std::unique_lock lock(answered_mu_);
    return answered_cv_.wait_for(lock, 10s, [&] { return answered_.size() >= n; });
  }
  std::vector<Answered> answered() {
    std::lock_guard lock(answered_mu_);
    return answered_;
  }
  std::vector<std::string> started() {
    std::lock_guard lock(answered_mu_);
    return started_;
  }
  bool on_pool_thread(std::thread::id id) {
    std::lock_guard lock(answered_mu_);
    return pool_threads_.contains(id);
  }

  // A handler answering 200 with `body`, as text.
  static Handler reply(std::string body) {
    return [body](Request&) {
      Response response{.status = 200, .headers = {}, .body = body};
      response.set_header("Content-Type", "text/plain");
      return response;
    };
  }

  static inline const RouteOptions kInline{
      .access = Access::kPublic, .body_bytes_max = 0, .blocking = false};
  static inline const RouteOptions kBlocking{
      .access = Access::kPublic, .body_bytes_max = 0, .blocking = true};

  // Room for a request from each of a thousand connections at once.
  runtime::BlockingPool pool_{{.threads = 2, .queue_max = 2048}};
  CapturingLogger logger_;
  Router router_;
  std::function<std::optional<Response>(Request&, const Route&)> admit_;
  // The admit_blocks hook, if set before start(); else none (the default).
  std::function<bool(const Request&, const Route&)> admit_blocks_;
  std::atomic<bool> refuse_blocking_ = false;
  Gate gate_;

  std::mutex answered_mu_;
  std::condition_variable answered_cv_;
  std::vector<Answered> answered_;
  std::vector<std::string> started_;  // request IDs
  std::set<std::thread::id> pool_threads_;

  std::unique_ptr<Server> server_;  // last: stopped before the rest goes
};

}  // namespace leasehold::server::testing
