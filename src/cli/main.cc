// The `leasehold` binary: runs one command and exits with its code.
//
// Everything happens in run_cli(), which builds the logger once the flags
// say how verbose it should be, and the runtime once the command's input is
// valid (cli/common.h, runtime/runtime.h).
#include "cli/commands.h"

int main(int argc, char** argv) { return leasehold::cli::run_cli(argc, argv); }
