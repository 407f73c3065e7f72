#include "cli/hold.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "base/duration.h"
#include "cli/validate.h"
#include "leasehold/renewer.h"

extern char** environ;

namespace leasehold::cli {
namespace {

// Signals passed on to the command; SIGCHLD is read as well.
constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// The longest single wait of the main loop: it re-checks the lease's local
// deadline at least this often even if no event arrives.
constexpr auto kLoopWaitMax = std::chrono::milliseconds(1000);

std::string errno_text(int err) { return std::strerror(err); }

// Owns one file descriptor.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// Records the first reason the lease was lost and wakes the main loop through
// a pipe. raise() is called from a Renewer thread; the rest from the main
// thread.
class LossFlag {
 public:
  Status open() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
      return internal_error("pipe2: " + errno_text(errno));
    }
    read_fd_ = std::make_unique<UniqueFd>(fds[0]);
    write_fd_ = std::make_unique<UniqueFd>(fds[1]);
    return Status::ok_status();
  }
  void raise(const Status& why) {
    {
      std::lock_guard lock(mu_);
      if (raised_) return;
      raised_ = true;
      why_ = why.message();
    }
    const char byte = 1;
    [[maybe_unused]] const ssize_t n = write(write_fd_->get(), &byte, 1);
  }
  bool raised() const {
    std::lock_guard lock(mu_);
    return raised_;
  }
  std::string why() const {
    std::lock_guard lock(mu_);
    return why_;
  }
  int read_fd() const { return read_fd_->get(); }

 private:
  mutable std::mutex mu_;
  bool raised_ = false;
  std::string why_;
  std::unique_ptr<UniqueFd> read_fd_, write_fd_;
};

sigset_t handled_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  for (const int sig : kForwardedSignals) sigaddset(&set, sig);
  return set;
}

// Blocks the handled signals in this thread (and so in every thread started
// later) and returns a signalfd that reads them.
Result<int> open_signal_fd() {
  // An inherited SIG_IGN for SIGCHLD would make the kernel reap the command
  // behind our back; the default disposition keeps its exit status for us.
  signal(SIGCHLD, SIG_DFL);
  const sigset_t set = handled_signals();
  if (pthread_sigmask(SIG_BLOCK, &set, nullptr) != 0) {
    return internal_error("cannot block signals");
  }
  const int fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd < 0) return internal_error("signalfd: " + errno_text(errno));
  return fd;
}

// The environment of this process with the lease's token and epoch set.
std::vector<std::string> child_environment(const Lease& lease) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (entry.starts_with("LEASEHOLD_TOKEN=") || entry.starts_with("LEASEHOLD_EPOCH=")) continue;
    env.emplace_back(entry);
  }
  env.push_back("LEASEHOLD_TOKEN=" + lease.token);
  env.push_back("LEASEHOLD_EPOCH=" + std::to_string(lease.epoch));
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// In the child, between fork and exec: only async-signal-safe calls. If this
// process dies (even by SIGKILL), the kernel kills the command: nobody would
// renew its lease any more, and it must not outlive it. Reports a failed
// exec's errno through `report_fd` (close-on-exec, so success says nothing).
[[noreturn]] void exec_child(char** argv, char** envp, pid_t parent, int report_fd) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
  sigset_t empty;
  sigemptyset(&empty);
  const sigset_t defaults = handled_signals();
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sigismember(&defaults, sig) == 1) signal(sig, SIG_DFL);
  }
  sigprocmask(SIG_SETMASK, &empty, nullptr);
  execvpe(argv[0], argv, envp);
  const int err = errno;
  (void)!write(report_fd, &err, sizeof err);
  _exit(127);
}

// Starts the command with stdio inherited, an empty signal mask and default
// dispositions (this process blocks signals; the command must not inherit
// that), tied to this process's life.
Result<pid_t> spawn_child(std::vector<std::string> command, const Lease& lease) {
  std::vector<std::string> env = child_environment(lease);
  std::vector<char*> argv = c_strings(command);
  std::vector<char*> envp = c_strings(env);
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return internal_error("pipe: " + errno_text(errno));
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) exec_child(argv.data(), envp.data(), parent, report[1]);
  close(report[1]);
  int err = 0;
  ssize_t n;
  do {
    n = read(report[0], &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  if (pid < 0) return internal_error("cannot fork: " + errno_text(errno));
  if (n == sizeof err) {
    waitpid(pid, nullptr, 0);
    return internal_error("cannot run '" + command[0] + "': " + errno_text(err));
  }
  return pid;
}

// The shell's convention: the exit code, or 128+N for death by signal N.
int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return kExitStoreFailed;
}

// What the main loop works with.
struct Held {
  Session& session;
  Renewer& renewer;
  Renewer::Id id;
  LossFlag& loss;
  int signal_fd;
  pid_t child;
  int wait_status = 0;
  bool exited = false;
};

// Reads every pending signal: forwards the forwardable ones to the command
// and reaps it if it has exited.
void drain_signals(Held& h) {
  signalfd_siginfo info;
  while (read(h.signal_fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    const int sig = static_cast<int>(info.ssi_signo);
    if (sig != SIGCHLD && !h.exited) {
      spdlog::debug("forwarding signal {} to the command (pid {})", sig, h.child);
      kill(h.child, sig);
    }
  }
  if (!h.exited && waitpid(h.child, &h.wait_status, WNOHANG) == h.child) h.exited = true;
}

// Waits until the command exits (true) or the lease is lost (false).
bool wait_child_or_loss(Held& h) {
  while (true) {
    const std::optional<Lease> lease = h.renewer.get(h.id);
    const MonoTime now = h.session.clock.mono_now();
    // The Renewer reports loss before the deadline; this check is a second
    // line that does not depend on its threads having run.
    if (!lease) h.loss.raise(failed_precondition("the renewer gave the lease up"));
    if (lease && !lease->valid_at(now)) {
      h.loss.raise(deadline_exceeded("the lease passed its local deadline"));
    }
    if (h.loss.raised()) return false;
    if (h.exited) return true;
    const Duration wait =
        std::clamp<Duration>(lease->valid_until - now, Duration::zero(), kLoopWaitMax);
    pollfd fds[2] = {{h.signal_fd, POLLIN, 0}, {h.loss.read_fd(), POLLIN, 0}};
    // Rounded up, so that the deadline has passed when poll() times out.
    const int wait_ms = static_cast<int>(to_ms(wait + std::chrono::microseconds(999)));
    if (poll(fds, 2, wait_ms) < 0 && errno != EINTR) {
      spdlog::warn("poll: {}", errno_text(errno));
    }
    drain_signals(h);
  }
}

// After a loss: SIGTERM at once (and SIGCONT, since a stopped command must
// run to act on it).
void terminate_child(Held& h) {
  if (h.exited) return;
  kill(h.child, SIGTERM);
  kill(h.child, SIGCONT);
}

// Waits up to `grace` for the command to exit, then sends SIGKILL; reaps it.
void reap_within(Held& h, Duration grace) {
  const MonoTime deadline = h.session.clock.mono_now() + grace;
  while (true) {
    drain_signals(h);
    if (h.exited) return;
    const MonoTime now = h.session.clock.mono_now();
    if (now >= deadline) break;
    pollfd fd = {h.signal_fd, POLLIN, 0};
    const int wait_ms = static_cast<int>(to_ms(deadline - now + std::chrono::microseconds(999)));
    poll(&fd, 1, std::max(wait_ms, 1));
  }
  spdlog::error("the command (pid {}) outlived the {} grace period; sending SIGKILL", h.child,
                format_duration(grace));
  kill(h.child, SIGKILL);
  while (waitpid(h.child, &h.wait_status, 0) < 0 && errno == EINTR) {
  }
  h.exited = true;
}

// After the command exited with the lease still ours: releases it.
int finish(Held& h) {
  const int code = exit_code_of(h.wait_status);
  const std::optional<Lease> latest = h.renewer.remove(h.id);
  h.renewer.stop();
  if (!latest || h.loss.raised() || !latest->valid_at(h.session.clock.mono_now())) {
    spdlog::error("the lease was lost before the command finished: {}", h.loss.why());
    return kExitNotYours;
  }
  const Status released = h.session.manager->release(*latest, ReleaseMode::kExpire);
  if (exit_code_for(released) == kExitNotYours) {
    spdlog::error("the lease was lost before the command finished: {}", released.message());
    return kExitNotYours;
  }
  if (!released.ok()) {
    spdlog::warn("could not release the lease ({}); it expires by itself at {} ms",
                 released.message(), latest->expires_at_ms);
  }
  spdlog::debug("the command exited with {}; lease released", code);
  return code;
}

}  // namespace

Result<HoldRequest> make_hold(const LeaseArgs& args) {
  ASSIGN_OR_RETURN(AcquireRequest acquire, make_acquire(args));
  ASSIGN_OR_RETURN(const Duration grace, parse_grace(args.grace));
  if (args.command.empty()) return invalid_argument("COMMAND is missing (after --)");
  RETURN_IF_ERROR(check_command(args.command));
  return HoldRequest{std::move(acquire), grace, args.command};
}

int run_hold(const std::string& store_uri, const HoldRequest& request) {
  // Signals are blocked before the store or the Renewer start any thread.
  auto signal_fd = open_signal_fd();
  if (!signal_fd.ok()) return report(signal_fd.status());
  const UniqueFd signal_fd_owner(*signal_fd);
  LossFlag loss;
  if (const Status opened = loss.open(); !opened.ok()) return report(opened);
  auto session = open_session(store_uri);
  if (!session.ok()) return report(session.status());
  Session& s = **session;
  const Key& key = request.acquire.key;
  auto lease = s.manager->acquire(key, request.acquire.options);
  if (!lease.ok()) return report_not_yours(s, key, request.acquire.options.slot, lease.status());
  spdlog::debug("acquired the lease on '{}' (epoch {})", key.pk, lease->epoch);

  Renewer renewer(*s.manager, s.clock, s.random);
  const Renewer::Id id =
      renewer.add(*lease, [&loss](const Lease&, const Status& why) { loss.raise(why); });
  renewer.start();
  auto child = spawn_child(request.command, *lease);
  if (!child.ok()) {
    renewer.remove(id);
    renewer.stop();
    (void)s.manager->release(*lease, ReleaseMode::kExpire);
    return report(child.status());
  }
  Held held{s, renewer, id, loss, *signal_fd, *child};
  if (!wait_child_or_loss(held)) {
    terminate_child(held);
    spdlog::error(
        "lost the lease on '{}' (epoch {}): {}; {} (pid {})", key.pk, lease->epoch, loss.why(),
        held.exited ? "the command had already exited" : "sent SIGTERM to the command", held.child);
    reap_within(held, request.grace);
    renewer.stop();
    return kExitNotYours;
  }
  return finish(held);
}

}  // namespace leasehold::cli
