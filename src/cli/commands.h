// The `leasehold` command line: CLI11 wiring and dispatch to the commands.
//
// run_cli() parses argv, validates the chosen command's input in full, and
// only then opens the store. Parse errors and bad input exit 2, --help
// exits 0; see docs/cli.md for every command and exit code.
#pragma once

namespace leasehold::cli {

// Runs one command and returns the process exit code. Replaces spdlog's
// default logger with one that writes to stderr (debug level with
// -v/--verbose, warnings otherwise). Call once per process.
int run_cli(int argc, char** argv);

}  // namespace leasehold::cli
