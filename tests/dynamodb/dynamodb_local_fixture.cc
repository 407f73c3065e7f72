// Starting and stopping DynamoDB Local; see dynamodb_local_fixture.h.
#include "tests/dynamodb/dynamodb_local_fixture.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "tests/server/node_server.h"

namespace leasehold::testing {
namespace {

// A port taken between its pick and the server's bind makes the server
// exit; it is tried again on another.
constexpr int kStartAttemptsMax = 3;

// fork + exec java in `dir` (it writes a file of its own where it runs),
// its output to /dev/null; only async-signal-safe calls between the two, so
// the argument vector is built before the fork.
pid_t spawn_java(const std::vector<const char*>& argv, const char* dir) {
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent || ::chdir(dir) != 0) ::_exit(127);
  const int null_fd = ::open("/dev/null", O_RDWR);
  if (null_fd >= 0) {
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(null_fd, STDOUT_FILENO);
    ::dup2(null_fd, STDERR_FILENO);
  }
  ::execvp("java", const_cast<char* const*>(argv.data()));
  ::_exit(127);
}

// Kills and reaps `pid`.
void stop(pid_t pid) {
  ::kill(pid, SIGKILL);
  while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace

std::string dynamodb_local_dir() {
  return std::string(LEASEHOLD_SOURCE_DIR) + "/.deps/dynamodb-local";
}

Result<std::unique_ptr<DynamoDbLocal>> DynamoDbLocal::start(Duration start_timeout) {
  const std::string dir = dynamodb_local_dir();
  struct stat st;
  if (::stat((dir + "/DynamoDBLocal.jar").c_str(), &st) != 0) {
    return failed_precondition(dir + "/DynamoDBLocal.jar is missing; run scripts/setup.sh");
  }
  const std::string library_path = "-Djava.library.path=" + dir + "/DynamoDBLocal_lib";
  const std::string jar = dir + "/DynamoDBLocal.jar";
  std::string work = std::filesystem::temp_directory_path() / "leasehold-dynamodb-local-XXXXXX";
  if (::mkdtemp(work.data()) == nullptr) {
    return internal_error("mkdtemp: " + std::string(strerror(errno)));
  }
  const MonoTime deadline = std::chrono::steady_clock::now() + start_timeout;
  for (int attempt = 0; attempt < kStartAttemptsMax; ++attempt) {
    LEASEHOLD_ASSIGN_OR_RETURN(const uint16_t port, free_loopback_port());
    const std::string port_text = std::to_string(port);
    // The JIT's first tier only, and one GC thread: a test's JVM starts in
    // two thirds of the time and takes half the CPU (the tests run many,
    // two cores between them), and no test asks it for throughput.
    const std::vector<const char*> argv = {"java",
                                           "-XX:TieredStopAtLevel=1",
                                           "-XX:+UseSerialGC",
                                           library_path.c_str(),
                                           "-jar",
                                           jar.c_str(),
                                           "-inMemory",
                                           "-sharedDb",
                                           "-disableTelemetry",
                                           "-port",
                                           port_text.c_str(),
                                           nullptr};
    const pid_t pid = spawn_java(argv, work.c_str());
    if (pid < 0) return internal_error("fork: " + std::string(strerror(errno)));
    bool exited = false;
    while (!exited && std::chrono::steady_clock::now() < deadline) {
      if (loopback_accepts(port)) {
        return std::unique_ptr<DynamoDbLocal>(new DynamoDbLocal(pid, port, std::move(work)));
      }
      exited = ::waitpid(pid, nullptr, WNOHANG) == pid;  // the port was taken, most likely
      if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the JVM starting
    }
    if (!exited) stop(pid);
  }
  std::error_code ignored;
  std::filesystem::remove_all(work, ignored);
  return unavailable("DynamoDB Local did not start (java -jar " + jar + ")");
}

DynamoDbLocal::~DynamoDbLocal() {
  stop(pid_);
  std::error_code ignored;
  std::filesystem::remove_all(work_dir_, ignored);
}

}  // namespace leasehold::testing
