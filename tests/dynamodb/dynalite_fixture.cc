// Starting and stopping dynalite; see dynalite_fixture.h.
#include "tests/dynamodb/dynalite_fixture.h"

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

// Listens on 127.0.0.1 port 0 and prints the port once the socket is open.
constexpr const char* kScript = R"(
const dynalite = require(process.argv[1]);
const ms = Number(process.argv[2]);
const server = dynalite({createTableMs: ms, updateTableMs: ms, deleteTableMs: ms});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\n'));
)";

const std::string kModule = std::string(LEASEHOLD_SOURCE_DIR) + "/node_modules/dynalite";

// Reads the first line dynalite prints, waiting at most until `deadline`.
Result<std::string> read_line(int fd, MonoTime deadline) {
  std::string out;
  for (;;) {
    size_t newline = out.find('\n');
    if (newline != std::string::npos) return out.substr(0, newline);
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return deadline_exceeded("dynalite did not report its port in time");
    pollfd p{fd, POLLIN, 0};
    int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) return internal_error("poll: " + std::string(strerror(errno)));
    if (ready <= 0) continue;
    char chunk[256];
    ssize_t n = ::read(fd, chunk, sizeof(chunk));
    if (n == 0) return unavailable("dynalite exited before listening (see its stderr above)");
    if (n < 0 && errno != EINTR) return internal_error("read: " + std::string(strerror(errno)));
    if (n > 0) out.append(chunk, static_cast<size_t>(n));
  }
}

// True when a TCP connection to 127.0.0.1:port is accepted.
bool accepts_connections(uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

// fork + exec node; only async-signal-safe calls between the two.
pid_t spawn_node(int stdout_fd, int read_fd, const std::string& ms) {
  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);
  ::dup2(stdout_fd, STDOUT_FILENO);
  ::close(read_fd);
  ::execlp("node", "node", "-e", kScript, kModule.c_str(), ms.c_str(), nullptr);
  ::_exit(127);
}

}  // namespace

Result<std::unique_ptr<Dynalite>> Dynalite::start(const DynaliteOptions& options) {
  struct stat st;
  if (::stat((kModule + "/package.json").c_str(), &st) != 0) {
    return failed_precondition(kModule + " is missing; run scripts/setup.sh (npm ci)");
  }
  const MonoTime deadline = std::chrono::steady_clock::now() + options.start_timeout;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return internal_error("pipe: " + std::string(strerror(errno)));
  std::string ms = std::to_string(options.table_transition_ms);
  pid_t pid = spawn_node(fds[1], fds[0], ms);
  ::close(fds[1]);
  if (pid < 0) {
    ::close(fds[0]);
    return internal_error("fork: " + std::string(strerror(errno)));
  }
  // From here the destructor kills and reaps the child on every path.
  std::unique_ptr<Dynalite> dynalite(new Dynalite(pid, fds[0]));
  LEASEHOLD_ASSIGN_OR_RETURN(std::string line, read_line(fds[0], deadline));
  int port = std::atoi(line.c_str());
  if (port <= 0 || port > 65535) return internal_error("dynalite printed no port: " + line);
  dynalite->port_ = static_cast<uint16_t>(port);
  if (!accepts_connections(dynalite->port_)) {
    return unavailable("dynalite does not accept connections on port " + line);
  }
  return dynalite;
}

Dynalite::~Dynalite() {
  // dynalite keeps everything in memory, so there is nothing to flush.
  ::kill(pid_, SIGKILL);
  while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
  ::close(stdout_fd_);
}

std::unique_ptr<Dynalite> DynaliteTest::dynalite_;

std::string dynalite_store_uri(std::unique_ptr<Dynalite>& dynalite, const std::string& prefix) {
  if (!dynalite) {
    auto started = Dynalite::start();
    EXPECT_TRUE(started.ok()) << started.status().to_string();
    if (!started.ok()) return "memory:";
    dynalite = std::move(started).value();
    setenv("AWS_ACCESS_KEY_ID", "test", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "test", 1);
  }
  return "dynamodb://us-east-1/" + prefix + "?endpoint=" + dynalite->endpoint();
}

void DynaliteTest::SetUpTestSuite() {
  auto started = Dynalite::start();
  ASSERT_TRUE(started.ok()) << started.status().to_string();
  dynalite_ = std::move(started).value();
}

void DynaliteTest::TearDownTestSuite() { dynalite_.reset(); }

}  // namespace leasehold::testing
