#include "cli/upstream_sim_command.h"

#include "cli/common.h"
#include "cli/serve.h"
#include "fleet/upstream_sim.h"
#include "net/endpoint.h"
#include "runtime/stderr_logger.h"

namespace leasehold::cli {

Status check_upstream_sim(const UpstreamSimArgs& args) {
  RETURN_IF_ERROR(parse_listen(args.listen).status());
  if (!(args.rate_per_conn >= 0 && args.rate_per_conn <= fleet::kUpstreamSimRateMax)) {
    return invalid_argument("--rate-per-conn must be 0.." +
                            std::to_string(static_cast<int64_t>(fleet::kUpstreamSimRateMax)) +
                            " (0: as fast as the client reads)");
  }
  if (args.threads < 1 || args.threads > fleet::kUpstreamSimThreadsMax) {
    return invalid_argument("--threads must be 1.." +
                            std::to_string(fleet::kUpstreamSimThreadsMax));
  }
  return Status::ok_status();
}

int run_upstream_sim(const UpstreamSimArgs& args, bool verbose) {
  if (const Status ok = check_upstream_sim(args); !ok.ok()) return report(ok);
  const sigset_t stop_signals = block_stop_signals();
  const std::unique_ptr<Logger> log =
      runtime::make_json_stderr_logger(verbose ? LogLevel::kDebug : LogLevel::kInfo);
  const ListenAddress address = parse_listen(args.listen).value();
  RealClock clock;
  fleet::UpstreamSimOptions options;
  options.host = address.host;
  options.port = address.port;
  options.rate_per_conn = args.rate_per_conn;
  options.threads = args.threads;
  options.clock = &clock;
  options.logger = log.get();
  auto sim = fleet::UpstreamSim::start(options);
  if (!sim.ok()) return report(sim.status());

  const std::string bound =
      (address.host.find(':') != std::string::npos ? "[" + address.host + "]" : address.host) +
      ":" + std::to_string((*sim)->port());
  const LogField listening[] = {{"address", std::string_view(bound)},
                                {"rate_per_conn", args.rate_per_conn},
                                {"threads", static_cast<int64_t>(args.threads)},
                                {"loopback", net::is_loopback_host(address.host)}};
  log->log_fields(LogLevel::kInfo, "listening", listening);
  print_line(R"({"listening":")" + bound + R"("})");

  int signal = 0;
  sigwait(&stop_signals, &signal);
  const LogField stopping[] = {
      {"signal", std::string_view(signal == SIGINT ? "SIGINT" : "SIGTERM")},
      {"streams", static_cast<int64_t>((*sim)->streams())}};
  log->log_fields(LogLevel::kInfo, "stopping", stopping);
  (*sim)->stop();
  log->log(LogLevel::kInfo, "stopped");
  return kExitOk;
}

}  // namespace leasehold::cli
