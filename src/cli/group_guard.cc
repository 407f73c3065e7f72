#include "cli/group_guard.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "base/logging.h"

namespace leasehold::cli {
namespace {

// The clock the deadlines are read from in both processes: RealClock's
// mono_now() reads CLOCK_BOOTTIME, which counts a suspend as time passing.

// Messages to the guard are one int64 each: a kill deadline in nanoseconds of
// CLOCK_BOOTTIME, or this.
constexpr int64_t kDisarm = -1;
// The guard's one message back: it has set itself up and is watching.
constexpr char kReady = 'R';
// How long disarm() waits for the guard to exit. It exits as soon as it reads
// the message; only a guard that was stopped (SIGSTOP) takes longer.
constexpr int kExitWaitMaxMs = 1000;
// How long start() waits for the guard to report ready.
constexpr int kStartWaitMaxMs = 5000;
// The guard's descriptor for its end of the socket, after stdio.
constexpr int kGuardFd = 3;

int64_t monotonic_ns(MonoTime t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// Async-signal-safe.
int64_t monotonic_now_ns() {
  timespec now{};
  clock_gettime(CLOCK_BOOTTIME, &now);
  return int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
}

// In the guard: stdio to /dev/null, the socket at kGuardFd, every other
// descriptor closed (sockets to the store, the holder's signalfd), so that it
// keeps nothing open that others wait on. Async-signal-safe calls only.
bool detach_guard(int fd) {
  const int moved = fcntl(fd, F_DUPFD, kGuardFd);  // never 0-2, whatever is open
  const int null_fd = open("/dev/null", O_RDWR);
  if (moved < 0 || null_fd < 0) return false;
  for (int stdio = 0; stdio <= 2; ++stdio) {
    if (dup2(null_fd, stdio) < 0) return false;
  }
  if (moved != kGuardFd && dup2(moved, kGuardFd) < 0) return false;
  return close_range(kGuardFd + 1, ~0U, 0) == 0;
}

// Reads the next message, waiting until `kill_at_ns` at most. Returns false
// when the group must be killed now: the deadline passed with no message
// waiting (one that came in meanwhile, a disarm above all, still counts: the
// guard itself may have been stopped for a while), or the holder went away
// without disarming. Async-signal-safe calls only.
bool next_message(int64_t kill_at_ns, int64_t& message) {
  while (true) {
    const int64_t left_ns = std::max<int64_t>(kill_at_ns - monotonic_now_ns(), 0);
    const timespec timeout{static_cast<time_t>(left_ns / 1'000'000'000),
                           static_cast<long>(left_ns % 1'000'000'000)};
    pollfd readable = {kGuardFd, POLLIN, 0};
    const int ready = ppoll(&readable, 1, &timeout, nullptr);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0 || (ready == 0 && left_ns == 0)) return false;
    if (ready == 0) continue;  // re-reads the clock
    const ssize_t n = read(kGuardFd, &message, sizeof message);
    if (n < 0 && errno == EINTR) continue;
    return n == static_cast<ssize_t>(sizeof message);  // 0: end-of-file
  }
}

// The guard's whole life, in a fork of a process whose other threads keep
// running: async-signal-safe calls only.
[[noreturn]] void guard_main(int fd, pid_t pgid, int64_t kill_at_ns) {
  // Its own group, so that signals aimed at the holder's group (the
  // terminal's, a supervisor's) do not end it.
  if (setpgid(0, 0) != 0 || !detach_guard(fd)) {
    kill(-pgid, SIGKILL);
    _exit(1);
  }
  for (const int sig : {SIGTSTP, SIGTTIN, SIGTTOU}) signal(sig, SIG_IGN);
  (void)!send(kGuardFd, &kReady, 1, MSG_NOSIGNAL);
  int64_t message = 0;
  while (next_message(kill_at_ns, message)) {
    if (message == kDisarm) _exit(0);
    kill_at_ns = message;
  }
  kill(-pgid, SIGKILL);
  _exit(0);
}

// Waits up to `wait_ms` for `fd` to be readable and reads one byte into
// `byte`. Returns 1, 0 at end-of-file, or -1 on an error or if nothing came.
ssize_t read_byte_within(int fd, int wait_ms, char& byte) {
  pollfd readable = {fd, POLLIN, 0};
  int ready;
  do {
    ready = poll(&readable, 1, wait_ms);
  } while (ready < 0 && errno == EINTR);
  if (ready <= 0) return -1;
  ssize_t n;
  do {
    n = read(fd, &byte, 1);
  } while (n < 0 && errno == EINTR);
  return n;
}

}  // namespace

Result<std::unique_ptr<GroupGuard>> GroupGuard::start(pid_t pgid, MonoTime kill_at, Logger& log) {
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) {
    return internal_error(std::string("socketpair: ") + std::strerror(errno));
  }
  const int64_t kill_at_ns = monotonic_ns(kill_at);
  const pid_t pid = fork();
  if (pid == 0) {
    close(ends[0]);
    guard_main(ends[1], pgid, kill_at_ns);
  }
  const int fork_errno = errno;
  close(ends[1]);
  if (pid < 0) {
    close(ends[0]);
    return internal_error(std::string("cannot fork the guard process: ") +
                          std::strerror(fork_errno));
  }
  // From here on the destructor closes the socket, and the guard kills the
  // group if it runs at all.
  std::unique_ptr<GroupGuard> guard(new GroupGuard(pid, ends[0], log));
  char ready = 0;
  if (read_byte_within(guard->fd_, kStartWaitMaxMs, ready) != 1 || ready != kReady) {
    return internal_error("the guard process (pid " + std::to_string(pid) + ") did not start");
  }
  return guard;
}

GroupGuard::~GroupGuard() {
  if (fd_ >= 0) close(fd_);
}

void GroupGuard::move_deadline(MonoTime kill_at) {
  if (fd_ < 0) return;
  const int64_t message = monotonic_ns(kill_at);
  // A guard that has exited (it fired) cannot be moved; EPIPE is expected.
  (void)!send(fd_, &message, sizeof message, MSG_NOSIGNAL);
}

void GroupGuard::disarm() {
  if (fd_ < 0) return;
  (void)!send(fd_, &kDisarm, sizeof kDisarm, MSG_NOSIGNAL);
  // The guard never writes again, so end-of-file means that it is exiting
  // (its descriptors close as it dies), and it can be reaped at once.
  char byte = 0;
  const bool exiting = read_byte_within(fd_, kExitWaitMaxMs, byte) == 0;
  close(fd_);
  fd_ = -1;
  if (!exiting) {
    log_to(log_, LogLevel::kWarn, "the guard process (pid {}) did not exit when told to", pid_);
    return;
  }
  while (waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace leasehold::cli
