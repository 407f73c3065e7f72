// A top-level command of the `leasehold` binary, as run_cli() sees it: it
// adds itself to the parser, and runs if the parse chose it. main() lists the
// commands the binary offers, in the order --help shows them, so that commands
// whose code lives above the CLI (the benchmarks, the demo) join the binary
// without the CLI knowing of them.
//
// A Command is used by one thread: run_cli() makes it, adds it, parses, and
// runs the one the parse chose.
#pragma once

#include <memory>
#include <string>

#include "leasehold/logger.h"

namespace CLI {
class App;
}

namespace leasehold::cli {

// The global flags, parsed.
struct GlobalArgs {
  std::string store_uri;     // --store, LEASEHOLD_STORE or the default
  bool store_given = false;  // --store or LEASEHOLD_STORE, rather than the default
  bool verbose = false;      // -v: debug messages on stderr
};

class Command {
 public:
  virtual ~Command() = default;

  // Adds the command to `app` as a subcommand, with subcommands and flags of
  // its own that fill members of this object, and returns it. Called once,
  // before parsing.
  virtual CLI::App* add_to(CLI::App& app) = 0;

  // Runs the command once the parse chose it (or one of its subcommands):
  // validates its input, then does its work, logging to `log` if it has no
  // logger of its own. Returns the process exit code (cli/common.h).
  virtual int run(const GlobalArgs& global, Logger& log) = 0;
};

// Makes one command, ready to be added.
using CommandFactory = std::unique_ptr<Command> (*)();

// A command with no subcommands of its own: `add` adds it to the app, its
// flags filling an `Args`, and `run` runs it with them.
template <typename Args>
class SimpleCommand final : public Command {
 public:
  using AddFn = CLI::App* (*)(CLI::App& app, Args& args);
  using RunFn = int (*)(const Args& args, const GlobalArgs& global, Logger& log);

  SimpleCommand(AddFn add, RunFn run) : add_(add), run_(run) {}

  CLI::App* add_to(CLI::App& app) override { return add_(app, args_); }
  int run(const GlobalArgs& global, Logger& log) override { return run_(args_, global, log); }

 private:
  const AddFn add_;
  const RunFn run_;
  Args args_;
};

template <typename Args>
std::unique_ptr<Command> make_simple_command(typename SimpleCommand<Args>::AddFn add,
                                             typename SimpleCommand<Args>::RunFn run) {
  return std::make_unique<SimpleCommand<Args>>(add, run);
}

}  // namespace leasehold::cli
