// Starting and stopping a Node.js server; see node_server.h.
#include "tests/server/node_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace leasehold::testing {
namespace {

// Reads the first line the server prints, waiting at most until `deadline`.
Result<std::string> read_line(const std::string& name, int fd, MonoTime deadline) {
  std::string out;
  for (;;) {
    size_t newline = out.find('\n');
    if (newline != std::string::npos) return out.substr(0, newline);
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return deadline_exceeded(name + " did not report its port in time");
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) return internal_error("poll: " + std::string(strerror(errno)));
    if (ready <= 0) continue;
    char chunk[256];
    ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n == 0) return unavailable(name + " exited before listening (see its stderr above)");
    if (n < 0 && errno != EINTR) return internal_error("read: " + std::string(strerror(errno)));
    if (n > 0) out.append(chunk, static_cast<size_t>(n));
  }
}

// fork + exec node; only async-signal-safe calls between the two, so the
// argument vector is built before the fork.
pid_t spawn_node(int stdout_fd, int read_fd, const std::vector<const char*>& argv) {
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  ::dup2(stdout_fd, STDOUT_FILENO);
  ::close(read_fd);
  ::execvp("node", const_cast<char* const*>(argv.data()));
  ::_exit(127);
}

}  // namespace

bool loopback_accepts(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

Result<uint16_t> free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return internal_error("socket: " + std::string(strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(addr);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size) == 0;
  ::close(fd);
  if (!ok) return internal_error("binding port 0: " + std::string(strerror(errno)));
  return ntohs(addr.sin_port);
}

std::string node_module_path(const std::string& module) {
  return std::string(LEASEHOLD_SOURCE_DIR) + "/node_modules/" + module;
}

Result<std::unique_ptr<NodeServer>> NodeServer::start(const NodeServerOptions& options) {
  const std::string module = node_module_path(options.module);
  struct stat st;
  if (::stat((module + "/package.json").c_str(), &st) != 0) {
    return failed_precondition(module + " is missing; run scripts/setup.sh (npm ci)");
  }
  const MonoTime deadline = std::chrono::steady_clock::now() + options.start_timeout;
  std::vector<const char*> argv = {"node", "--no-warnings",        "--input-type=module",
                                   "-e",   options.script.c_str(), module.c_str()};
  for (const std::string& arg : options.args) argv.push_back(arg.c_str());
  argv.push_back(nullptr);
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return internal_error("pipe: " + std::string(strerror(errno)));
  pid_t pid = spawn_node(fds[1], fds[0], argv);
  ::close(fds[1]);
  if (pid < 0) {
    ::close(fds[0]);
    return internal_error("fork: " + std::string(strerror(errno)));
  }
  // From here the destructor kills and reaps the child on every path.
  std::unique_ptr<NodeServer> server(new NodeServer(pid, fds[0]));
  LEASEHOLD_ASSIGN_OR_RETURN(std::string line, read_line(options.name, fds[0], deadline));
  int port = std::atoi(line.c_str());
  if (port <= 0 || port > 65535) return internal_error(options.name + " printed no port: " + line);
  server->port_ = static_cast<uint16_t>(port);
  if (!loopback_accepts(server->port_)) {
    return unavailable(options.name + " does not accept connections on port " + line);
  }
  return server;
}

void NodeServer::pause() { ::kill(pid_, SIGSTOP); }

void NodeServer::resume() { ::kill(pid_, SIGCONT); }

NodeServer::~NodeServer() {
  // The servers keep everything in memory, so there is nothing to flush.
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  ::close(stdout_fd_);
}

}  // namespace leasehold::testing
