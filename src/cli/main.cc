// The `leasehold` binary: runs one command and exits with its code.
//
// Everything, logging set-up included, happens in run_cli(): this file is
// compiled in the executable's target, which does not link spdlog itself,
// and a logger configured here would land in a different spdlog registry.
#include "cli/commands.h"

int main(int argc, char** argv) { return leasehold::cli::run_cli(argc, argv); }
