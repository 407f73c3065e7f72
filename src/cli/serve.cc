#include "cli/serve.h"

#include <signal.h>

#include <charconv>

#include "app/serving.h"
#include "cli/common.h"
#include "cli/permissions.h"
#include "cli/validate.h"
#include "net/endpoint.h"
#include "runtime/stderr_logger.h"

namespace leasehold::cli {

sigset_t block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return set;
}

Result<ListenAddress> parse_listen(std::string_view text) {
  const Status bad = invalid_argument("--listen '" + std::string(text) +
                                      "': expected HOST:PORT, e.g. 127.0.0.1:8080 or [::1]:8080");
  const size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return bad;
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  if (host.front() == '[') {
    if (host.size() < 3 || host.back() != ']') return bad;
    host = host.substr(1, host.size() - 2);
  }
  unsigned port = 0;
  const auto [end, ec] =
      std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port > 65535) return bad;
  ListenAddress out;
  out.host = host == "localhost" ? "127.0.0.1" : std::string(host);
  out.port = static_cast<uint16_t>(port);
  if (!net::is_ip_literal(out.host)) {
    return invalid_argument("--listen '" + std::string(text) +
                            "': the host must be an IP address or localhost");
  }
  return out;
}

Status check_serve(const ServeArgs& args) {
  LEASEHOLD_ASSIGN_OR_RETURN(const ListenAddress address, parse_listen(args.listen));
  if (args.tls_cert.empty() != args.tls_key.empty()) {
    return invalid_argument("--tls-cert and --tls-key go together");
  }
  const bool tls = !args.tls_cert.empty();
  if (!tls && !args.insecure_http && !net::is_loopback_host(address.host)) {
    return invalid_argument("refusing to serve plain HTTP on " + address.host +
                            ", which is not loopback: give --tls-cert and --tls-key, or "
                            "--insecure-http when a TLS proxy in front of it is the only way in");
  }
  if (args.threads > kServeThreadsMax) {
    return invalid_argument("--threads must be 1.." + std::to_string(kServeThreadsMax));
  }
  LEASEHOLD_RETURN_IF_ERROR(movies_serving_options(args.movies).status());
  LEASEHOLD_RETURN_IF_ERROR(parse_metrics_output(args.metrics_output).status());
  return parse_byte_size("--upload-max", args.upload_max).status();
}

int run_serve(const ServeArgs& args, const std::string& store_uri, bool verbose) {
  if (const Status ok = check_serve(args); !ok.ok()) return report(ok);
  limit_to_process_permissions("serve");
  const sigset_t stop_signals = block_stop_signals();
  const std::unique_ptr<Logger> log =
      runtime::make_json_stderr_logger(verbose ? LogLevel::kDebug : LogLevel::kInfo);

  const ListenAddress address = parse_listen(args.listen).value();
  app::ServingOptions options;
  options.store_uri = store_uri;
  options.log = log.get();
  options.server.host = address.host;
  options.server.port = address.port;
  options.server.threads = args.threads;
  options.server.tls_cert_file = args.tls_cert;
  options.server.tls_key_file = args.tls_key;
  options.movies = movies_serving_options(args.movies).value();
  options.movies.upload_bytes_max = parse_byte_size("--upload-max", args.upload_max).value();
  auto serving = app::Serving::start(std::move(options));
  if (!serving.ok()) return report(serving.status());
  app::Serving& s = **serving;

  const std::string bound =
      (address.host.find(':') != std::string::npos ? "[" + address.host + "]" : address.host) +
      ":" + std::to_string(s.server().port());
  const LogField listening[] = {{"address", std::string_view(bound)},
                                {"tls", !args.tls_cert.empty()},
                                {"threads", static_cast<int64_t>(s.threads())},
                                {"store", std::string_view(s.runtime().store().backend_name())}};
  log->log_fields(LogLevel::kInfo, "listening", listening);
  // The fleet's figures are read (as often as the API's pacing allows)
  // before each line: the alarm on STARTED connections not streaming needs
  // them whether or not a page is open.
  auto emf = start_emf_output(
      parse_metrics_output(args.metrics_output).value(), "serve", s.registry(), s.runtime().clock(),
      nullptr,
      [&s, &log] {
        if (const Status read = s.read_fleet_figures(); !read.ok()) {
          log->log(LogLevel::kWarn, "reading the fleet summary for the metrics: " + read.message());
        }
      },
      log.get());
  if (!emf.ok()) return report(emf.status());

  int signal = 0;
  sigwait(&stop_signals, &signal);
  const LogField stopping[] = {
      {"signal", std::string_view(signal == SIGINT ? "SIGINT" : "SIGTERM")}};
  log->log_fields(LogLevel::kInfo, "stopping", stopping);
  s.stop();
  if (*emf) (*emf)->stop();  // the last line, with what the drain counted
  log->log(LogLevel::kInfo, "stopped");
  return kExitOk;
}

}  // namespace leasehold::cli
