// FaultProxy: a loopback HTTP/1.1 proxy between a DynamoDB client (the
// leasehold binary) and a DynamoDB server (dynalite) that injects faults.
//
// It listens on 127.0.0.1 port 0, serves each client connection on its own
// thread (keep-alive, one request at a time, Content-Length framing, which is
// all DynamoDB's JSON API and dynalite use), and forwards each request as it
// came, byte for byte, on an upstream connection of its own. Rules decide,
// per request, by the operation named in X-Amz-Target: the next `times`
// matching requests get a scripted error reply without being forwarded, or
// are forwarded (so the server applies them) and then get the scripted error
// instead of the server's reply, or are forwarded and then the client
// connection is closed without a reply, or the connection is closed without
// forwarding.
// Every request is recorded with what was done to it, for assertions.
// A rule may also hold its requests back for a while before any of that.
//
// A FaultProxy is safe for concurrent use: rules may be changed and the log
// read from any thread while requests flow. The destructor closes every
// socket and joins every thread; it never waits on a client.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "leasehold/status.h"

namespace leasehold::testing {

enum class FaultAction {
  kForward,           // relayed to the server and its reply relayed back
  kReply,             // answered with the rule's error; the server never sees it
  kForwardThenError,  // relayed (so applied), then answered with the rule's error instead
  kForwardThenDrop,   // relayed (so applied), then the client connection closed, no reply
  kDropUnforwarded,   // the client connection closed; the server never sees it
};

std::string_view action_name(FaultAction action);

struct FaultRule {
  // "UpdateItem", "GetItem", ...; empty matches every operation.
  std::string operation;
  // How long the proxy holds a matching request before acting on it: a slow
  // network or server, as the client sees it.
  std::chrono::milliseconds delay{0};
  FaultAction action = FaultAction::kReply;
  // How many matching requests the rule applies to; negative means all.
  int times = 1;
  // For kReply and kForwardThenError: the HTTP status and the DynamoDB
  // exception name (the part after '#' of __type); an empty type sends a body
  // that is not JSON, as a load balancer in front of DynamoDB might.
  int status = 400;
  std::string error_type = "ProvisionedThroughputExceededException";
};

// One request as the proxy saw it.
struct SeenRequest {
  std::string operation;  // from X-Amz-Target, e.g. "UpdateItem"
  FaultAction action;
  std::string body;  // the JSON body, for checks like ConsistentRead
};

class FaultProxy {
 public:
  // Starts a proxy to 127.0.0.1:upstream_port.
  static Result<std::unique_ptr<FaultProxy>> start(uint16_t upstream_port);
  ~FaultProxy();

  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  uint16_t port() const { return port_; }
  // "http://127.0.0.1:PORT"
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Rules are tried in the order added; the first that matches and has
  // times left decides. A request no rule matches is forwarded.
  void add_rule(FaultRule rule);
  void clear_rules();

  std::vector<SeenRequest> seen() const;
  // How many requests for `operation` ("" for all) were seen, optionally only
  // those that got `action`.
  int count(std::string_view operation, std::optional<FaultAction> action = std::nullopt) const;
  // "DescribeTable:forward UpdateItem:reply ..." for failure messages.
  std::string log() const;
  void clear_log();

 private:
  FaultProxy(int listen_fd, uint16_t upstream_port, uint16_t port)
      : listen_fd_(listen_fd), upstream_port_(upstream_port), port_(port) {}

  void accept_loop();
  void serve(int client_fd);
  FaultRule decide(const std::string& operation);
  // Registers an open socket so the destructor can shut it down; false if
  // the proxy is stopping (the caller then closes it at once).
  bool track(int fd);
  void close_tracked(int fd);

  const int listen_fd_;
  const uint16_t upstream_port_;
  const uint16_t port_;
  std::thread accept_thread_;

  mutable std::mutex mu_;  // guards everything below
  bool stopping_ = false;
  std::condition_variable stopping_cv_;  // notified when stopping_ is set
  std::vector<FaultRule> rules_;
  std::vector<SeenRequest> seen_;
  std::set<int> open_fds_;
  std::vector<std::thread> threads_;
};

// Sends one DynamoDB request straight to 127.0.0.1:port with a well-formed
// but unverified SigV4 header (dynalite checks the form, not the signature)
// and returns the reply body; an HTTP status other than 200 is an error.
// For looking at a server behind leasehold's back, e.g. ListTables.
Result<std::string> dynamodb_call(uint16_t port, std::string_view operation, std::string_view body);

}  // namespace leasehold::testing
