// `leasehold bench leases|renewer|http|movies`: the benchmarks as a command
// of the binary (cli/command.h). Each validates its flags before anything is
// opened, runs, and prints its figures as JSON lines (docs/benchmarks.md).
#pragma once

#include <memory>

#include "cli/command.h"

namespace leasehold::bench {

std::unique_ptr<cli::Command> make_bench_command();

}  // namespace leasehold::bench
