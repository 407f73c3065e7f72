// The `leasehold` command line: CLI11 wiring and dispatch to the commands.
//
// run_cli() parses argv, validates the chosen command's input in full, and
// only then opens the store. Parse errors and bad input exit 2, --help
// exits 0; see docs/cli.md for every command and exit code.
#pragma once

#include <memory>
#include <span>

#include "cli/command.h"

namespace leasehold::cli {

// Runs one of `commands` (cli/command.h; --help lists them in this order)
// and returns the process exit code. Logs to stderr (debug level with
// -v/--verbose, warnings otherwise). Call once per process, before any
// thread starts: `lease hold` takes over signal handling for the rest of the
// process's life.
int run_cli(int argc, char** argv, std::span<const CommandFactory> commands);

// The commands of the product, each with its subcommands: `lease`, `store`,
// `user`, `conn`, `serve`, `worker` and `trace-worker`.
std::unique_ptr<Command> make_lease_command();
std::unique_ptr<Command> make_store_command();
std::unique_ptr<Command> make_user_command();
std::unique_ptr<Command> make_conn_command();
std::unique_ptr<Command> make_serve_command();
std::unique_ptr<Command> make_worker_command();
std::unique_ptr<Command> make_trace_worker_command();

}  // namespace leasehold::cli
