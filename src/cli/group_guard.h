// GroupGuard: a small process that SIGKILLs a process group when the process
// that started it dies or stops telling it the group may live on.
//
// `lease hold` runs its command in a process group of its own and starts a
// guard for it. The guard holds the only read end of a socket whose write end
// only `lease hold` keeps, and a kill deadline in CLOCK_BOOTTIME time. It
// sends the group SIGKILL and exits when the deadline passes (`lease hold` is
// frozen or stuck and did not move it) or when the socket reaches end-of-file
// without a disarm message (`lease hold` died, even by SIGKILL). The guard is
// a fork without exec: it is in its own process group (signals aimed at the
// holder's group do not reach it), keeps the holder's blocked signal mask (so
// SIGINT, SIGTERM, SIGHUP and SIGQUIT cannot end it), ignores the terminal's
// stop signals, and has /dev/null as stdio and no other descriptor, so a
// reader of the holder's output never waits on it.
//
// Not thread-safe; one thread owns a GroupGuard.
#pragma once

#include <sys/types.h>

#include <memory>

#include "leasehold/clock.h"
#include "leasehold/logger.h"
#include "leasehold/status.h"

namespace leasehold::cli {

class GroupGuard {
 public:
  // Forks the guard of process group `pgid`, armed to kill it at `kill_at`,
  // and waits until it runs. Safe to call with other threads running: the
  // guard makes only async-signal-safe calls. REQUIRES: `kill_at` is a
  // RealClock time (CLOCK_BOOTTIME)
  // and `log` outlives the guard.
  static Result<std::unique_ptr<GroupGuard>> start(pid_t pgid, MonoTime kill_at, Logger& log);

  GroupGuard(const GroupGuard&) = delete;
  GroupGuard& operator=(const GroupGuard&) = delete;
  // Without disarm(), the guard sees end-of-file and kills the group at once.
  ~GroupGuard();

  // Moves the kill deadline (later as the lease is renewed). Does nothing if
  // the guard has exited.
  void move_deadline(MonoTime kill_at);

  // Tells the guard to exit without killing anything and reaps it. Call it
  // before reaping the group's leader: once the leader is reaped, the group's
  // id may be reused, and the guard must not signal it any more. Waits a
  // second at most for the guard to exit; one that does not (someone stopped
  // it) is left behind, with a warning.
  void disarm();

 private:
  GroupGuard(pid_t pid, int fd, Logger& log) : pid_(pid), fd_(fd), log_(log) {}

  pid_t pid_;
  int fd_;  // -1 once disarmed
  Logger& log_;
};

}  // namespace leasehold::cli
