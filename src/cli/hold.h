// `leasehold lease hold KEY --owner NAME -- COMMAND [ARGS...]`: runs a
// command for exactly as long as this process holds a lease.
//
// The lease is acquired first (exit 3 with the holder on stdout if that
// fails; the command is not run). The command then runs with LEASEHOLD_TOKEN
// and LEASEHOLD_EPOCH in its environment, inheriting stdio, while a Renewer
// keeps the lease alive. One poll() waits on three things: the command's exit
// and signals to this process (a signalfd), and the loss of the lease (a pipe
// the Renewer's loss callback writes to).
//   - The command exits: the lease is released (expire mode) and its exit
//     code is returned (128+N if signal N killed it).
//   - The lease is lost: the command gets SIGTERM at once and SIGKILL after
//     the grace period; the reason goes to stderr; exit 3.
//   - SIGINT, SIGTERM, SIGHUP or SIGQUIT: forwarded to the command, which is
//     then waited for as above.
// A lease that is lost at any point before it is released makes the exit
// code 3, even if the command finished, because part of its run was not
// protected.
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

// Opens the store at `store_uri` and runs the command under the lease.
// Blocks SIGCHLD, SIGINT, SIGTERM, SIGHUP and SIGQUIT for the rest of the
// process's life (they are read from a signalfd), so it must be called from
// the main thread before any other thread is started, and the process should
// exit with its result.
int run_hold(const std::string& store_uri, const HoldRequest& request);

}  // namespace leasehold::cli
