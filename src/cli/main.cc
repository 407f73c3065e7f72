// The `leasehold` binary that `cmake --install` ships: runs one command and
// exits with its code.
//
// Everything happens in run_cli(), which builds the logger once the flags
// say how verbose it should be, and the runtime once the command's input is
// valid (cli/common.h, runtime/runtime.h). The commands are listed here, in
// the order --help shows them. The binary of the build tree adds the
// benchmarks, the demo and the upstream simulator to them (tools/main.cc).
#include "cli/commands.h"

namespace {

namespace cli = leasehold::cli;

constexpr cli::CommandFactory kCommands[] = {
    cli::make_lease_command,        cli::make_store_command, cli::make_user_command,
    cli::make_conn_command,         cli::make_serve_command, cli::make_worker_command,
    cli::make_trace_worker_command,
};

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, kCommands); }
