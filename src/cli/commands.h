// The `leasehold` command line: CLI11 wiring and dispatch to the commands.
//
// run_cli() parses argv, validates the chosen command's input in full, and
// only then opens the store. Parse errors and bad input exit 2, --help
// exits 0; see docs/cli.md for every command and exit code.
#pragma once

namespace leasehold::cli {

// Runs one command and returns the process exit code. Logs to stderr (debug
// level with -v/--verbose, warnings otherwise). Call once per process: `lease
// hold` takes over signal handling for the rest of the process's life.
int run_cli(int argc, char** argv);

}  // namespace leasehold::cli
