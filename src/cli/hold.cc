#include "cli/hold.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/duration.h"
#include "base/logging.h"
#include "base/mutex.h"
#include "cli/group_guard.h"
#include "cli/validate.h"
#include "leasehold/renewer.h"

extern char** environ;

namespace leasehold::cli {
namespace {

// Signals passed on to the command; SIGCHLD is read as well.
constexpr int kForwardedSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

// The longest single wait of the main loop: it re-checks the lease at least
// this often (or every half renew period, if shorter) even if no event
// arrives, which is also how soon a renewal moves the guard's deadline.
constexpr auto kLoopWaitMax = std::chrono::milliseconds(1000);

// What the command's process reads, before it execs, to go ahead.
constexpr char kGo = 'G';

// Owns one file descriptor.
class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }
  int get() const { return fd_; }
  void reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

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
      return internal_error(std::string("pipe2: ") + std::strerror(errno));
    }
    read_fd_ = std::make_unique<UniqueFd>(fds[0]);
    write_fd_ = std::make_unique<UniqueFd>(fds[1]);
    return Status::ok_status();
  }
  void raise(const Status& why) {
    {
      MutexLock lock(mu_);
      if (raised_) return;
      raised_ = true;
      why_ = why.message();
    }
    const char byte = 1;
    [[maybe_unused]] const ssize_t n = write(write_fd_->get(), &byte, 1);
  }
  bool raised() const {
    MutexLock lock(mu_);
    return raised_;
  }
  std::string why() const {
    MutexLock lock(mu_);
    return why_;
  }
  int read_fd() const { return read_fd_->get(); }

 private:
  mutable Mutex mu_;
  bool raised_ GUARDED_BY(mu_) = false;
  std::string why_ GUARDED_BY(mu_);
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
  if (fd < 0) return internal_error(std::string("signalfd: ") + std::strerror(errno));
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
// renew its lease any more, and it must not outlive it (the guard takes care
// of the rest of its group). Execs only once `start_fd` says to go; reports a
// failed exec's errno through it (close-on-exec, so success says nothing).
[[noreturn]] void exec_child(char** argv, char** envp, pid_t parent, int start_fd) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(127);
  // A group of its own, so that every signal reaches what the command starts
  // too. The parent sets it as well; whichever runs first wins the race.
  if (setpgid(0, 0) != 0) _exit(127);
  const sigset_t defaults = handled_signals();
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sigismember(&defaults, sig) == 1) signal(sig, SIG_DFL);
  }
  char go = 0;
  ssize_t n;
  do {
    n = read(start_fd, &go, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1 || go != kGo) _exit(127);
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
  execvpe(argv[0], argv, envp);
  const int err = errno;
  (void)!write(start_fd, &err, sizeof err);
  _exit(127);
}

// Forks the command's process, the leader of a new process group, with stdio
// inherited, the lease in its environment, and (once it execs) an empty
// signal mask and default dispositions: this process blocks signals, the
// command must not inherit that. It waits for let_exec() on `start`.
Result<pid_t> fork_command(std::vector<std::string> command, const Lease& lease, UniqueFd& start) {
  std::vector<std::string> env = child_environment(lease);
  std::vector<char*> argv = c_strings(command);
  std::vector<char*> envp = c_strings(env);
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
    return internal_error(std::string("socketpair: ") + std::strerror(errno));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    close(ends[0]);  // or it would never see end-of-file if this process died
    exec_child(argv.data(), envp.data(), parent, ends[1]);
  }
  const int fork_errno = errno;
  close(ends[1]);
  start.reset(ends[0]);
  if (pid < 0) return internal_error(std::string("cannot fork: ") + std::strerror(fork_errno));
  if (setpgid(pid, pid) != 0) {
    const int err = errno;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return internal_error(std::string("cannot give the command a process group: ") +
                          std::strerror(err));
  }
  return pid;
}

// Lets the forked command exec; fails if it could not.
Status let_exec(const UniqueFd& start, const std::string& name) {
  if (send(start.get(), &kGo, 1, MSG_NOSIGNAL) != 1) {
    return internal_error("cannot start '" + name + "': " + std::strerror(errno));
  }
  int err = 0;
  ssize_t n;
  do {
    n = read(start.get(), &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  if (n == sizeof err) return internal_error("cannot run '" + name + "': " + std::strerror(err));
  return Status::ok_status();
}

// The shell's convention: the exit code, or 128+N for death by signal N.
int exit_code_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return kExitStoreFailed;
}

// How many processes other than `pgid` itself are alive in process group
// `pgid`, from /proc; zombies run no code and do not count.
int others_alive_in_group(pid_t pgid) {
  int alive = 0;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    if (name == std::to_string(pgid)) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    // "pid (comm) state ppid pgrp ...", where comm may hold anything.
    const size_t comm_end = stat.rfind(')');
    if (comm_end == std::string::npos) continue;
    char state = 0;
    int ppid = 0, pgrp = 0;
    const int fields = std::sscanf(stat.c_str() + comm_end + 1, " %c %d %d", &state, &ppid, &pgrp);
    if (fields == 3 && pgrp == pgid && state != 'Z' && state != 'X') ++alive;
  }
  return alive;
}

// What the main loop works with.
struct Held {
  Context& ctx;
  Renewer& renewer;
  Renewer::Id id;
  LossFlag& loss;
  int signal_fd;
  Duration grace;
  Duration wait_max;     // the longest single wait of the main loop
  MonoTime valid_until;  // of the latest lease seen
  pid_t child = -1;      // the command; also the id of its process group
  std::unique_ptr<GroupGuard> guard = nullptr;
  bool exited = false;    // the command has exited; it is reaped by end_group()
  siginfo_t exit_info{};  // how, once exited
  int wait_status = 0;    // once reaped
};

// When the command gets SIGTERM: early enough that SIGKILL, `grace` later,
// still lands kKillLead before the lease's local deadline.
MonoTime loss_point(const Held& h) { return h.valid_until - h.grace - kKillLead; }

// When the command's group must be dead, by this process's hand or the guard's.
MonoTime kill_deadline(const Held& h) { return h.valid_until - kKillLead; }

// Takes in the latest form of the lease: a renewal moves the guard's deadline.
void note_lease(Held& h, const Lease& lease) {
  if (lease.valid_until == h.valid_until) return;
  assert(lease.valid_until > h.valid_until && "a renewal never shortens the lease");
  h.valid_until = lease.valid_until;
  if (h.guard) h.guard->move_deadline(kill_deadline(h));
}

// SIGKILL to everything in the command's group, then the guard is disarmed,
// then the command reaped. In that order: until the command is reaped its
// group's id cannot be reused, so neither signal can reach a stranger.
void end_group(Held& h) {
  kill(-h.child, SIGKILL);
  if (h.guard) h.guard->disarm();
  while (waitpid(h.child, &h.wait_status, 0) < 0 && errno == EINTR) {
  }
  h.exited = true;
}

// Whether the lease still leaves the command its whole grace period. The
// store may have answered late (it was locked, or slow), or this process
// been paused since.
bool room_to_start(Held& h) {
  const std::optional<Lease> lease = h.renewer.get(h.id);
  if (lease) note_lease(h, *lease);
  return lease && !h.loss.raised() && h.ctx.clock().mono_now() < loss_point(h);
}

// Why the command was not started: room_to_start() said no.
Status too_late_to_start(Held& h, const Lease& lease) {
  const Duration left = h.valid_until - h.ctx.clock().mono_now();
  const std::string when = left <= Duration::zero()
                               ? "was already past its local deadline"
                               : "had " + std::to_string(to_ms(left)) +
                                     "ms left before its local deadline, less than the " +
                                     std::to_string(to_ms(h.grace + kKillLead)) +
                                     "ms needed to stop the command in time";
  return failed_precondition("the lease on '" + lease.key.pk + "' (epoch " +
                             std::to_string(lease.epoch) + ") " + when +
                             " (the store answered late, or this process was paused); the "
                             "command was not started");
}

// Starts the command in a process group of its own, watched by a guard, if
// the lease still has room for it. On failure nothing of it is left running.
Status start_command(Held& h, const std::vector<std::string>& command, const Lease& lease) {
  UniqueFd start;
  auto child = fork_command(command, lease, start);
  if (!child.ok()) return child.status();
  h.child = *child;
  auto guard = GroupGuard::start(h.child, kill_deadline(h), h.ctx.logger());
  if (guard.ok()) h.guard = std::move(guard).value();
  Status status = guard.status();
  if (status.ok() && !room_to_start(h)) status = too_late_to_start(h, lease);
  if (status.ok()) status = let_exec(start, command[0]);
  if (!status.ok()) end_group(h);
  return status;
}

// Reads every pending signal and forwards the forwardable ones to the
// command's group; notes (without reaping) whether the command has exited.
void drain_signals(Held& h) {
  signalfd_siginfo info;
  while (read(h.signal_fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    const int sig = static_cast<int>(info.ssi_signo);
    if (sig != SIGCHLD && !h.exited) {
      log_to(h.ctx.logger(), LogLevel::kDebug,
             "forwarding signal {} to the command's process group {}", sig, h.child);
      kill(-h.child, sig);
    }
  }
  if (!h.exited && waitid(P_PID, h.child, &h.exit_info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
      h.exit_info.si_pid == h.child) {
    h.exited = true;
  }
}

// Waits for signals until `deadline`, or until the command exits.
void wait_exit_until(Held& h, MonoTime deadline) {
  while (true) {
    drain_signals(h);
    if (h.exited) return;
    const MonoTime now = h.ctx.clock().mono_now();
    if (now >= deadline) return;
    pollfd fd = {h.signal_fd, POLLIN, 0};
    const int wait_ms = static_cast<int>(to_ms(deadline - now + std::chrono::microseconds(999)));
    poll(&fd, 1, std::max(wait_ms, 1));
  }
}

// Waits until the command exits (true) or the lease is lost (false).
bool wait_child_or_loss(Held& h) {
  while (true) {
    const std::optional<Lease> lease = h.renewer.get(h.id);
    if (lease) note_lease(h, *lease);
    const MonoTime now = h.ctx.clock().mono_now();
    // The Renewer reports loss at the same point; this check is a second
    // line that does not depend on its threads having run.
    if (!lease) h.loss.raise(failed_precondition("the renewer gave the lease up"));
    if (now >= loss_point(h)) {
      h.loss.raise(deadline_exceeded("the lease was not renewed in time to keep the command"));
    }
    if (h.loss.raised()) return false;
    if (h.exited) return true;
    const Duration wait = std::clamp<Duration>(loss_point(h) - now, Duration::zero(), h.wait_max);
    pollfd fds[2] = {{h.signal_fd, POLLIN, 0}, {h.loss.read_fd(), POLLIN, 0}};
    // Rounded up, so that the loss point has passed when poll() times out.
    const int wait_ms = static_cast<int>(to_ms(wait + std::chrono::microseconds(999)));
    if (poll(fds, 2, wait_ms) < 0 && errno != EINTR) {
      log_to(h.ctx.logger(), LogLevel::kWarn, "poll: {}", std::strerror(errno));
    }
    drain_signals(h);
  }
}

// After a loss: SIGTERM to the command's group at once (and SIGCONT, since a
// stopped command must run to act on it), SIGKILL when the grace period ends
// or kKillLead before the lease's deadline, whichever comes first. If that
// has passed already (this process was paused), SIGKILL at once.
void stop_after_loss(Held& h, const Lease& lease) {
  const std::string lost =
      fmt::format("lost the lease on '{}' (epoch {}): {}", lease.key.pk, lease.epoch, h.loss.why());
  const MonoTime now = h.ctx.clock().mono_now();
  const MonoTime kill_at = std::min(now + h.grace, kill_deadline(h));
  if (h.exited) {
    const bool killed = h.exit_info.si_code == CLD_KILLED || h.exit_info.si_code == CLD_DUMPED;
    log_to(h.ctx.logger(), LogLevel::kError, "{}; the command (pid {}) had already {} {}", lost,
           h.child, killed ? "been killed by signal" : "exited with", h.exit_info.si_status);
  } else if (now >= kill_at) {
    log_to(h.ctx.logger(), LogLevel::kError,
           "{}; too late for a grace period: sending SIGKILL to the command (pid {}) "
           "and its process group",
           lost, h.child);
  } else {
    kill(-h.child, SIGTERM);
    kill(-h.child, SIGCONT);
    log_to(h.ctx.logger(), LogLevel::kError,
           "{}; sent SIGTERM to the command (pid {}) and its process group", lost, h.child);
    wait_exit_until(h, kill_at);
    if (!h.exited) {
      log_to(h.ctx.logger(), LogLevel::kError,
             "the command (pid {}) was still running {} after SIGTERM (grace {}); "
             "sending SIGKILL to its process group",
             h.child, format_duration(kill_at - now), format_duration(h.grace));
    }
  }
  end_group(h);
}

// After the command exited with the lease still ours: kills what it left
// running in its group (it would run on unprotected), then releases.
int finish(Held& h) {
  const int leftovers = others_alive_in_group(h.child);
  end_group(h);
  if (leftovers > 0) {
    log_to(h.ctx.logger(), LogLevel::kWarn,
           "killed {} process(es) that the command (pid {}) left running in its process group",
           leftovers, h.child);
  }
  const int code = exit_code_of(h.wait_status);
  const std::optional<Lease> latest = h.renewer.remove(h.id);
  h.renewer.stop();
  if (!latest || h.loss.raised() || !latest->valid_at(h.ctx.clock().mono_now())) {
    log_to(h.ctx.logger(), LogLevel::kError,
           "the lease was lost before the command finished: {}", h.loss.why());
    return kExitNotYours;
  }
  const Status released = h.ctx.leases().release(*latest, ReleaseMode::kExpire);
  if (exit_code_for(released) == kExitNotYours) {
    log_to(h.ctx.logger(), LogLevel::kError,
           "the lease was lost before the command finished: {}", released.message());
    return kExitNotYours;
  }
  if (!released.ok()) {
    log_to(h.ctx.logger(), LogLevel::kWarn,
           "could not release the lease ({}); it expires by itself at {} ms", released.message(),
           latest->expires_at_ms);
  }
  log_to(h.ctx.logger(), LogLevel::kDebug, "the command exited with {}; lease released", code);
  return code;
}

// The Renewer declares the lease lost when SIGTERM is due (loss_point()).
// One lease is never in two store calls at once, so one renewal thread is
// all it can use.
RenewerOptions renewer_options(Duration grace) {
  RenewerOptions options;
  options.loss_lead = grace + kKillLead;
  options.renew_threads = 1;
  return options;
}

// Gives up a lease the command never ran under: best effort, since it is not
// needed any more and expires by itself.
void release_unused(Held& h, const Lease& acquired) {
  const std::optional<Lease> latest = h.renewer.remove(h.id);
  h.renewer.stop();
  (void)h.ctx.leases().release(latest.value_or(acquired), ReleaseMode::kExpire);
}

}  // namespace

Result<HoldRequest> make_hold(const LeaseArgs& args) {
  LEASEHOLD_ASSIGN_OR_RETURN(AcquireRequest acquire, make_acquire(args));
  LEASEHOLD_ASSIGN_OR_RETURN(const Duration grace, parse_grace(args.grace, acquire.options.ttl));
  if (args.command.empty()) return invalid_argument("COMMAND is missing (after --)");
  LEASEHOLD_RETURN_IF_ERROR(check_command(args.command));
  return HoldRequest{std::move(acquire), grace, args.command};
}

int run_hold(const std::string& store_uri, Logger& logger, const HoldRequest& request) {
  // Signals are blocked before the store or the Renewer start any thread.
  auto signal_fd = open_signal_fd();
  if (!signal_fd.ok()) return report(signal_fd.status());
  const UniqueFd signal_fd_owner(*signal_fd);
  LossFlag loss;
  if (const Status opened = loss.open(); !opened.ok()) return report(opened);
  auto ctx = open_context(store_uri, logger);
  if (!ctx.ok()) return report(ctx.status());
  Context& s = *ctx;
  const Key& key = request.acquire.key;
  auto lease = s.leases().acquire(key, request.acquire.options);
  if (!lease.ok()) return report_not_yours(s, key, request.acquire.options.slot, lease.status());
  log_to(logger, LogLevel::kDebug, "acquired the lease on '{}' (epoch {})", key.pk, lease->epoch);
  const Duration renew_every = s.leases().default_renew_every(lease->ttl);
  assert(request.grace + kKillLead <= s.leases().validity(lease->ttl) - 2 * renew_every &&
         "make_hold() lets only a grace period through that fits the ttl");

  const std::unique_ptr<Renewer> renewer = s.runtime->make_renewer(renewer_options(request.grace));
  const Renewer::Id id =
      renewer->add(*lease, [&loss](const Lease&, const Status& why) { loss.raise(why); });
  renewer->start();
  Held held{s,
            *renewer,
            id,
            loss,
            *signal_fd,
            request.grace,
            std::min<Duration>(kLoopWaitMax, renew_every / 2),
            lease->valid_until};
  if (const Status started = start_command(held, request.command, *lease); !started.ok()) {
    release_unused(held, *lease);
    return report(started);
  }
  if (!wait_child_or_loss(held)) {
    stop_after_loss(held, *lease);
    renewer->stop();
    return kExitNotYours;
  }
  return finish(held);
}

}  // namespace leasehold::cli
