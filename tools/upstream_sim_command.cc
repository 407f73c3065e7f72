#include "tools/upstream_sim_command.h"

#include <CLI/CLI.hpp>

#include "cli/common.h"
#include "cli/serve.h"
#include "net/endpoint.h"
#include "runtime/stderr_logger.h"
#include "tools/upstream_sim/upstream_sim.h"

namespace leasehold::tools {
namespace {

CLI::App* add_upstream_sim_command(CLI::App& app, UpstreamSimArgs& a) {
  CLI::App* sim = app.add_subcommand(
      "upstream-sim",
      "Serve sequenced WebSocket streams at /s/<conn>?from=N: a stand-in upstream for the "
      "stream fleet, for tests and benchmarks");
  sim->add_option("--listen", a.listen,
                  "Address and port (HOST:PORT; port 0 picks a free one). Loopback by default; "
                  "another address serves anyone who can reach it, with no authentication: it "
                  "is a test tool")
      ->capture_default_str();
  sim->add_option("--rate-per-conn", a.rate_per_conn,
                  "Messages per second on each stream, evenly paced (0: as fast as the client "
                  "reads)")
      ->capture_default_str();
  sim->add_option("--threads", a.threads, "I/O threads")->capture_default_str();
  sim->add_flag("--random-phase", a.random_phase,
                "Send each stream's first message after a random part of one period, not at "
                "once, so that streams opened together do not send together");
  sim->add_option("--tls-cert", a.tls_cert,
                  "TLS certificate chain (PEM): serve wss:// instead of ws:// (with --tls-key)")
      ->check(CLI::ExistingFile);
  sim->add_option("--tls-key", a.tls_key, "TLS private key (PEM) of --tls-cert")
      ->check(CLI::ExistingFile);
  return sim;
}

}  // namespace

Status check_upstream_sim(const UpstreamSimArgs& args) {
  LEASEHOLD_RETURN_IF_ERROR(cli::parse_listen(args.listen).status());
  if (!(args.rate_per_conn >= 0 && args.rate_per_conn <= kUpstreamSimRateMax)) {
    return invalid_argument("--rate-per-conn must be 0.." +
                            std::to_string(static_cast<int64_t>(kUpstreamSimRateMax)) +
                            " (0: as fast as the client reads)");
  }
  if (args.threads < 1 || args.threads > kUpstreamSimThreadsMax) {
    return invalid_argument("--threads must be 1.." + std::to_string(kUpstreamSimThreadsMax));
  }
  if (args.tls_cert.empty() != args.tls_key.empty()) {
    return invalid_argument(
        "--tls-cert and --tls-key go together: give both, or neither for ws://");
  }
  return Status::ok_status();
}

int run_upstream_sim(const UpstreamSimArgs& args, bool verbose) {
  if (const Status ok = check_upstream_sim(args); !ok.ok()) return cli::report(ok);
  const sigset_t stop_signals = cli::block_stop_signals();
  const std::unique_ptr<Logger> log =
      runtime::make_json_stderr_logger(verbose ? LogLevel::kDebug : LogLevel::kInfo);
  const cli::ListenAddress address = cli::parse_listen(args.listen).value();
  RealClock clock;
  UpstreamSimOptions options;
  options.host = address.host;
  options.port = address.port;
  options.rate_per_conn = args.rate_per_conn;
  options.threads = args.threads;
  options.random_phase = args.random_phase;
  options.clock = &clock;
  options.logger = log.get();
  options.tls_cert = args.tls_cert;
  options.tls_key = args.tls_key;
  auto sim = UpstreamSim::start(options);
  if (!sim.ok()) return cli::report(sim.status());

  const std::string bound =
      (address.host.find(':') != std::string::npos ? "[" + address.host + "]" : address.host) +
      ":" + std::to_string((*sim)->port());
  const std::string_view scheme = args.tls_cert.empty() ? "ws" : "wss";
  const LogField listening[] = {{"address", std::string_view(bound)},
                                {"scheme", scheme},
                                {"rate_per_conn", args.rate_per_conn},
                                {"threads", static_cast<int64_t>(args.threads)},
                                {"loopback", net::is_loopback_host(address.host)}};
  log->log_fields(LogLevel::kInfo, "listening", listening);
  // "listening" first: the tests and benchmarks read only it.
  // Exactly this line, as the tools that start the sim wait for it; the
  // scheme is in the log line above.
  cli::print_line(R"({"listening":")" + bound + R"("})");

  int signal = 0;
  sigwait(&stop_signals, &signal);
  const LogField stopping[] = {
      {"signal", std::string_view(signal == SIGINT ? "SIGINT" : "SIGTERM")},
      {"streams", static_cast<int64_t>((*sim)->streams())}};
  log->log_fields(LogLevel::kInfo, "stopping", stopping);
  (*sim)->stop();
  log->log(LogLevel::kInfo, "stopped");
  return cli::kExitOk;
}

std::unique_ptr<cli::Command> make_upstream_sim_command() {
  return cli::make_simple_command<UpstreamSimArgs>(
      add_upstream_sim_command, [](const UpstreamSimArgs& args, const cli::GlobalArgs& global,
                                   Logger&) { return run_upstream_sim(args, global.verbose); });
}

}  // namespace leasehold::tools
