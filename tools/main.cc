// The `leasehold` binary of the build tree: runs one command and exits with
// its code.
//
// Everything happens in run_cli(), which builds the logger once the flags
// say how verbose it should be, and the runtime once the command's input is
// valid (cli/common.h, runtime/runtime.h). The commands are listed here, in
// the order --help shows them: the product's, and the demo, the upstream
// simulator and the benchmarks beside them.
#include "bench/cli/bench_command.h"
#include "cli/commands.h"
#include "tools/demo.h"
#include "tools/upstream_sim_command.h"

namespace {

namespace bench = leasehold::bench;
namespace cli = leasehold::cli;
namespace tools = leasehold::tools;

constexpr cli::CommandFactory kCommands[] = {
    cli::make_lease_command,   cli::make_store_command,        cli::make_user_command,
    cli::make_conn_command,    cli::make_serve_command,        tools::make_upstream_sim_command,
    cli::make_worker_command,  cli::make_trace_worker_command, tools::make_demo_command,
    bench::make_bench_command,
};

}  // namespace

int main(int argc, char** argv) { return cli::run_cli(argc, argv, kCommands); }
