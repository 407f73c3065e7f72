// A server written for Node.js (an npm package of node_modules/: dynalite,
// fauxqs) started on a free loopback port for the tests.
//
// NodeServer::start() runs node on a small ES module script that makes the
// server listen on 127.0.0.1 port 0 and print the port it got, so two test
// processes never race for a port. It returns once the server accepts
// connections, or fails after a deadline. The destructor kills the process
// and waits for it; if the test process dies first, the kernel kills the
// server too (PR_SET_PDEATHSIG). node_modules/ must have been installed in
// the source tree (scripts/setup.sh).
//
// pause() and resume() stop and continue the process (SIGSTOP, SIGCONT): a
// server that takes connections into its backlog and answers nothing, and
// then carries on with everything it held, for fault tests.
//
// A NodeServer object is not synchronised; its port may be read by any thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "leasehold/clock.h"
#include "leasehold/status.h"

namespace leasehold::testing {

struct NodeServerOptions {
  std::string name = {};    // for messages: "dynalite"
  std::string module = {};  // the package's folder under node_modules/: "dynalite"
  // An ES module run by node. process.argv[1] is the package's folder; the
  // arguments follow. It must print the port, and a newline, once listening.
  std::string script = {};
  std::vector<std::string> args = {};
  Duration start_timeout = std::chrono::seconds(30);
};

class NodeServer {
 public:
  static Result<std::unique_ptr<NodeServer>> start(const NodeServerOptions& options);
  ~NodeServer();

  NodeServer(const NodeServer&) = delete;
  NodeServer& operator=(const NodeServer&) = delete;

  uint16_t port() const { return port_; }
  // "http://127.0.0.1:PORT"
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  void pause();
  void resume();

 private:
  NodeServer(pid_t pid, int stdout_fd) : pid_(pid), stdout_fd_(stdout_fd) {}

  pid_t pid_;
  int stdout_fd_;  // kept open so the server never writes to a closed pipe
  uint16_t port_ = 0;
};

// The path of a package in the source tree's node_modules/.
std::string node_module_path(const std::string& module);

// True when a TCP connection to 127.0.0.1:port is accepted.
bool loopback_accepts(uint16_t port);
// A loopback port free a moment ago (the kernel's pick for a socket bound
// to port 0, closed again), for a server that cannot be told to pick one
// itself; it may be taken meanwhile, so such a start is tried again.
Result<uint16_t> free_loopback_port();

}  // namespace leasehold::testing
