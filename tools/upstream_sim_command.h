// `leasehold upstream-sim`: the upstream simulator
// (tools/upstream_sim/upstream_sim.h) as a process, for tests, demos and
// benchmarks of the stream fleet. It prints
// {"listening":"HOST:PORT","scheme":"ws"} on stdout once it listens ("wss"
// with --tls-cert and --tls-key; "listening" stays the first key), logs JSON lines on stderr as
// `serve` does, and serves until SIGTERM or SIGINT, then exits 0.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "cli/command.h"
#include "leasehold/status.h"

namespace leasehold::tools {

struct UpstreamSimArgs {
  std::string listen = "127.0.0.1:0";  // port 0: any free port, printed
  double rate_per_conn = 10;
  size_t threads = 1;
  bool random_phase = false;
  std::string tls_cert;  // PEM; with tls_key, serve wss://
  std::string tls_key;
};

// Every rule on the flags, before anything is opened: --listen as `serve`
// takes it (any address: a test tool may listen beyond loopback), the rate
// and the threads within the simulator's limits, the TLS certificate and key
// both or neither.
Status check_upstream_sim(const UpstreamSimArgs& args);

// Serves until SIGTERM or SIGINT; returns the exit code.
int run_upstream_sim(const UpstreamSimArgs& args, bool verbose);

// The `upstream-sim` command (cli/command.h).
std::unique_ptr<cli::Command> make_upstream_sim_command();

}  // namespace leasehold::tools
