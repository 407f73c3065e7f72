// `leasehold demo`: the stream fleet and the dashboard on one machine, on a
// throwaway SQLite store, showing a takeover and a handover as they happen.
//
// It creates a temporary directory with the store, starts `upstream-sim`,
// `serve` (with an admin user `demo` and a random password it prints),
// uploads a sample movie through the movies API as `demo` and prints its
// address once it is ready (a movie that could not be uploaded is reported
// on stderr, and the demo goes on without it), adds connections with
// `conn add` and starts three workers, every one a child process of this
// binary in a process group of its own that the kernel kills if the demo
// dies. It prints, in plain lines on stdout, who owns what; kills
// one worker with SIGKILL and prints how long each of its connections took to
// be owned again; stops another with SIGTERM and prints the handover times;
// then reads every sink and prints each connection's gaps and duplicates.
// Then it waits for SIGINT or SIGTERM (unless --no-wait), stops every child
// (SIGTERM, then SIGKILL after a grace period) and removes the directory.
//
// Not thread-safe: one thread runs the demo, with SIGINT and SIGTERM blocked.
#pragma once

#include <memory>
#include <string>

#include "cli/command.h"
#include "leasehold/status.h"

namespace leasehold::tools {

inline constexpr int kDemoConnectionsMax = 200;

struct DemoArgs {
  std::string listen = "127.0.0.1:0";  // the dashboard's address (loopback)
  int connections = 24;
  bool no_wait = false;  // exit after the summary instead of serving on
};

// Adds the `demo` subcommand to `app`, filling `args`.
CLI::App* add_demo_command(CLI::App& app, DemoArgs& args);

// Every rule on the flags, before anything is started.
Status check_demo(const DemoArgs& args);

// Runs the demo; returns the exit code: 0 once the summary found no gap and
// duplicates only where a worker was killed (or after SIGINT/SIGTERM), 1 if
// it did not or something failed to start (the sample movie is not counted).
int run_demo(const DemoArgs& args, bool verbose);

// The `demo` command (cli/command.h): add_demo_command() and run_demo().
std::unique_ptr<cli::Command> make_demo_command();

}  // namespace leasehold::tools
