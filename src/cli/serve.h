// `leasehold serve`: the HTTP server (server/app.h) on the runtime, until
// SIGTERM or SIGINT.
#pragma once

#include <signal.h>

#include <cstddef>
#include <string>

#include "cli/trace_worker_command.h"
#include "leasehold/status.h"

namespace leasehold::cli {

inline constexpr size_t kServeThreadsMax = 256;

struct ServeArgs {
  std::string listen = "127.0.0.1:8080";
  std::string tls_cert, tls_key;
  size_t threads = 0;  // 0: the number of cores
  bool insecure_http = false;
  MoviesArgs movies;
  std::string upload_max = "2GiB";
  MetricsOutputArgs metrics_output;
};

// Where to listen, checked: an IP literal (or localhost) and a port.
struct ListenAddress {
  std::string host;  // an IP literal, without brackets
  uint16_t port = 0;
};
Result<ListenAddress> parse_listen(std::string_view text);

// Every rule on the flags, before anything is opened: a loopback address, or
// TLS, or --insecure-http; both TLS files or neither; 1..kServeThreadsMax
// threads; the movie flags (trace_worker_command.h), --upload-max and the
// metrics output's (metrics_output.h).
Status check_serve(const ServeArgs& args);

// Blocks SIGTERM and SIGINT in this thread and every thread it starts after
// this, so that they wait for sigwait() in the main thread instead of
// interrupting a random one. Returns the set, for sigwait().
sigset_t block_stop_signals();

// Serves until SIGTERM or SIGINT, then drains and returns the exit code.
int run_serve(const ServeArgs& args, const std::string& store_uri, bool verbose);

}  // namespace leasehold::cli
