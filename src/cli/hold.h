// `leasehold lease hold KEY --owner NAME -- COMMAND [ARGS...]`: runs a
// command for exactly as long as this process holds a lease.
//
// The lease is acquired first (exit 3 with the holder on stdout if that
// fails; the command is not run). The command then runs in a process group
// of its own, with LEASEHOLD_TOKEN and LEASEHOLD_EPOCH in its environment,
// inheriting stdio, while a Renewer keeps the lease alive. Every signal this
// process sends goes to that whole group. A guard process (group_guard.h)
// kills the group if this process dies, even by SIGKILL, or is frozen past
// the lease's local deadline; the command itself also dies with this process
// through PR_SET_PDEATHSIG. The command is started only once the guard runs,
// and only if the lease still leaves it its whole grace period (the store may
// have answered late); otherwise the lease is released and the exit code is 3.
//
// One poll() waits on three things: the command's exit and signals to this
// process (a signalfd), and the loss of the lease (a pipe the Renewer's loss
// callback writes to). With V the lease's local deadline:
//   - The command exits: whatever it left running in its group is killed
//     (with a warning), then the lease is released (expire mode) and the
//     command's exit code is returned (128+N if signal N killed it).
//   - The lease is lost: declared at V - grace - kKillLead at the latest (the
//     Renewer's loss_lead), or at once if the store refused a renewal. The
//     group gets SIGTERM, then SIGKILL when the grace period ends or at
//     V - kKillLead, whichever is first; at once if that has passed (this
//     process was paused). The reason goes to stderr; exit 3.
//   - SIGINT, SIGTERM, SIGHUP or SIGQUIT: forwarded to the group; the command
//     is then waited for as above.
// A lease that is lost at any point before it is released makes the exit
// code 3, even if the command finished, because part of its run was not
// protected. The group's id is never signalled after the command is reaped,
// so no signal can reach a group that reuses the id.
//
// The command is not in the terminal's foreground process group: keyboard
// signals reach this process, which forwards them, and the command should
// not expect to read an interactive terminal. What leaves the group (setsid,
// setpgid, a daemon) escapes all of this.
#pragma once

#include <string>
#include <vector>

#include "cli/lease_commands.h"

namespace leasehold::cli {

struct HoldRequest {
  AcquireRequest acquire;
  Duration grace{};
  std::vector<std::string> command;  // argv; command[0] is looked up in $PATH
};

// Validates every flag and that COMMAND names an executable, without opening
// any store.
Result<HoldRequest> make_hold(const LeaseArgs& args);

// Opens the store at `store_uri` and runs the command under the lease,
// logging to `logger`.
// Blocks SIGCHLD, SIGINT, SIGTERM, SIGHUP and SIGQUIT for the rest of the
// process's life (they are read from a signalfd), so it must be called from
// the main thread before any other thread is started, and the process should
// exit with its result. Runs on RealClock: the guard reads the same
// CLOCK_BOOTTIME.
int run_hold(const std::string& store_uri, Logger& logger, const HoldRequest& request);

}  // namespace leasehold::cli
