#include "cli/worker_command.h"

#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>

#include "base/duration.h"
#include "cli/common.h"
#include "cli/permissions.h"
#include "cli/serve.h"
#include "cli/worker_process.h"
#include "fleet/sink.h"
#include "fleet/worker.h"
#include "leasehold/random.h"
#include "net/websocket.h"

namespace leasehold::cli {
namespace {

constexpr size_t kUpstreamThreads = 2;

Result<Duration> flag_duration(std::string_view flag, const std::string& text) {
  Result<Duration> d = parse_duration(text);
  if (!d.ok()) return invalid_argument(std::string(flag) + ": " + d.status().message());
  return d;
}

// A name for a worker given no --id: its host's (in a container, the
// task's) and a random suffix, so that tasks started from one definition
// differ, and a restarted one joins as a new member rather than waiting out
// its previous run's session.
std::string default_worker_id() {
  char host[256] = {};
  std::string id = gethostname(host, sizeof host - 1) == 0 ? host : "worker";
  id.erase(std::remove_if(id.begin(), id.end(),
                          [](char c) {
                            return !std::isalnum(static_cast<unsigned char>(c)) && c != '.' &&
                                   c != '-' && c != '_';
                          }),
           id.end());
  if (id.empty()) id = "worker";
  SystemRandom random;
  const std::string suffix = random_token(random).substr(0, 8);
  id.resize(std::min(id.size(), fleet::kWorkerIdBytesMax - suffix.size() - 1));
  return id + "-" + suffix;
}

Result<fleet::WorkerOptions> worker_options(const WorkerArgs& a) {
  fleet::WorkerOptions o;
  o.id = a.id.value_or("");
  o.max_connections = a.max_connections;
  LEASEHOLD_ASSIGN_OR_RETURN(o.session_ttl, flag_duration("--session-ttl", a.session_ttl));
  const bool session = o.session_ttl > Duration::zero();
  if (!a.session_renew_every.empty()) {
    LEASEHOLD_ASSIGN_OR_RETURN(o.session_renew_every,
                               flag_duration("--session-renew-every", a.session_renew_every));
  }
  // With a session, a connection's own lease is what writers without
  // sessions wait for: long, and renewed rarely.
  const std::string lease_ttl = !a.lease_ttl.empty() ? a.lease_ttl : session ? "2h" : "20s";
  const std::string renew_every = !a.renew_every.empty() ? a.renew_every : session ? "40m" : "5s";
  LEASEHOLD_ASSIGN_OR_RETURN(o.lease_ttl, flag_duration("--lease-ttl", lease_ttl));
  LEASEHOLD_ASSIGN_OR_RETURN(o.renew_every, flag_duration("--renew-every", renew_every));
  LEASEHOLD_ASSIGN_OR_RETURN(o.reconcile_every,
                             flag_duration("--reconcile-every", a.reconcile_every));
  if (!a.checkpoint_every.empty()) {
    LEASEHOLD_ASSIGN_OR_RETURN(o.checkpoint_every,
                               flag_duration("--checkpoint-every", a.checkpoint_every));
  }
  if (!a.poll_every.empty()) {
    LEASEHOLD_ASSIGN_OR_RETURN(o.poll_every, flag_duration("--poll-every", a.poll_every));
  }
  if (!a.nudge_read_every.empty()) {
    LEASEHOLD_ASSIGN_OR_RETURN(o.nudge_read_every,
                               flag_duration("--nudge-read-every", a.nudge_read_every));
  }
  LEASEHOLD_ASSIGN_OR_RETURN(o.lease.max_clock_skew,
                             flag_duration("--max-clock-skew", a.max_clock_skew));
  LEASEHOLD_ASSIGN_OR_RETURN(o.stall_after, flag_duration("--stall-after", a.stall_after));
  LEASEHOLD_RETURN_IF_ERROR(fleet::validate_worker_options(o));
  // The lease layer's timing rules, the skew given included.
  LEASEHOLD_RETURN_IF_ERROR(check_timing(o.lease, o.lease_ttl, o.renew_every));
  if (session) {
    const Duration renew = o.session_renew_every > Duration::zero()
                               ? o.session_renew_every
                               : default_renew_every(o.lease, o.session_ttl);
    LEASEHOLD_RETURN_IF_ERROR(
        check_timing(o.lease, o.session_ttl, renew).with_context("--session-ttl"));
  } else if (!a.session_renew_every.empty()) {
    return invalid_argument("--session-renew-every needs a session (--session-ttl above 0)");
  } else if (!a.nudge_read_every.empty()) {
    return invalid_argument("--nudge-read-every needs a session (--session-ttl above 0)");
  }
  return o;
}

Health health_of(const fleet::WorkerHealth& h) {
  return Health{h.ok,
                h.problems,
                {{"owned", static_cast<int64_t>(h.owned)},
                 {"streaming", static_cast<int64_t>(h.streaming)},
                 {"stalled", static_cast<int64_t>(h.stalled)},
                 {"store_silent_ms", h.store_silent_ms}}};
}

}  // namespace

CLI::App* add_worker_command(CLI::App& app, WorkerArgs& a) {
  CLI::App* w = app.add_subcommand(
      "worker", "Own upstream WebSocket connections of the stream fleet and stream them to a sink");
  w->add_option("--id", a.id,
                "This worker's name, unique in the fleet (default: its host's name and 8 random "
                "hex digits, new at each start)");
  w->add_option("--max-connections", a.max_connections, "The most connections to own")
      ->capture_default_str();
  w->add_option("--session-ttl", a.session_ttl,
                "How long this worker's session lasts unrenewed; its connections move about this "
                "long after it dies. 0: no session, each connection's lease is renewed on its own")
      ->capture_default_str();
  w->add_option("--session-renew-every", a.session_renew_every,
                "Session heartbeat period (default: a third of the session's ttl less the "
                "clock-skew allowance and margin)");
  w->add_option("--lease-ttl", a.lease_ttl,
                "How long a connection's own lease lasts unrenewed (default: 2h with a session, "
                "20s without)");
  w->add_option("--renew-every", a.renew_every,
                "Renewal period of the connections' own leases (default: 40m with a session, 5s "
                "without)");
  w->add_option("--reconcile-every", a.reconcile_every,
                "How often to look for orphaned connections and desired-state changes")
      ->capture_default_str();
  w->add_option("--checkpoint-every", a.checkpoint_every,
                "How often to checkpoint (default: 5s with a session, the renew period without)");
  w->add_option("--poll-every", a.poll_every,
                "How often to read the desired state of the connections it owns when no command "
                "nudged it (default: 10s with a session on DynamoDB, every reconcile otherwise)");
  w->add_option(
      "--nudge-read-every", a.nudge_read_every,
      "With a session on DynamoDB, how often to read this worker's member item for a "
      "nudge between heartbeats, which read it back anyway (default: 0.6 heartbeat periods, "
      "one read between two; at or above a period: only with heartbeats)");
  w->add_option("--max-clock-skew", a.max_clock_skew,
                "The most any two wall clocks of the fleet may differ; a lease is trusted "
                "for its ttl less this and a 100 ms margin")
      ->capture_default_str();
  w->add_option("--stall-after", a.stall_after,
                "A connection without a message for this long counts as stalled (0: never)")
      ->capture_default_str();
  w->add_option("--sink", a.sink, "Where messages go: jsonl:PATH or stdout")->capture_default_str();
  w->add_option("--metrics-listen", a.metrics_listen,
                "Serve GET /metrics and /healthz on HOST:PORT (loopback)");
  add_metrics_output_flags(*w, a.metrics_output);
  w->add_option("--ca-file", a.ca_file, "PEM CAs to trust for wss:// (default: the system's)")
      ->check(CLI::ExistingFile);
  return w;
}

Status check_worker(const WorkerArgs& args) {
  LEASEHOLD_RETURN_IF_ERROR(worker_options(args).status());
  LEASEHOLD_RETURN_IF_ERROR(fleet::validate_sink_spec(args.sink));
  if (!args.metrics_listen.empty())
    LEASEHOLD_RETURN_IF_ERROR(check_metrics_listen(args.metrics_listen));
  return parse_metrics_output(args.metrics_output).status();
}

int run_worker(const WorkerArgs& given, const std::string& store_uri, bool verbose) {
  WorkerArgs args = given;
  if (!args.id) args.id = default_worker_id();
  if (const Status ok = check_worker(args); !ok.ok()) return report(ok);
  limit_to_process_permissions("worker");
  const sigset_t stop_signals = block_stop_signals();
  auto process = start_worker_process(store_uri, verbose, args.metrics_listen);
  if (!process.ok()) return report(process.status());
  WorkerProcess& p = **process;
  runtime::Runtime& rt = *p.runtime;

  auto sink = fleet::open_sink(args.sink);
  if (!sink.ok()) return report(sink.status());
  net::WsClientOptions wo;
  wo.threads = kUpstreamThreads;
  wo.ca_file = args.ca_file;
  wo.logger = p.log.get();
  auto upstream = net::WsClient::open(std::move(wo));
  if (!upstream.ok()) return report(upstream.status());

  fleet::WorkerOptions options = worker_options(args).value();
  const Duration skew = options.lease.max_clock_skew;
  options.lease = rt.leases().config();
  options.lease.max_clock_skew = skew;
  options.logger = p.log.get();
  options.metrics = &p.registry;
  auto worker = fleet::Worker::start(rt.store(), rt.clock(), rt.random(), **upstream, **sink,
                                     std::move(options));
  if (!worker.ok()) return report(worker.status());
  const LogField started[] = {{"worker", std::string_view(*args.id)},
                              {"store", std::string_view(rt.store().backend_name())},
                              {"sink", std::string_view(args.sink)},
                              {"metrics_port", static_cast<int64_t>(p.metrics_port())}};
  p.log->log_fields(LogLevel::kInfo, "worker started", started);

  fleet::Worker& running = **worker;
  p.health.set([&running] { return health_of(running.health()); });
  // On the worker's sink when that is stdout: one lock orders both lines.
  auto emf = start_emf_output(parse_metrics_output(args.metrics_output).value(), "worker",
                              p.registry, rt.clock(), args.sink == "stdout" ? sink->get() : nullptr,
                              nullptr, p.log.get());
  if (!emf.ok()) return report(emf.status());

  wait_for_stop_signal(stop_signals, *p.log);
  (*worker)->stop();
  // The last line, with what the handovers counted.
  if (*emf) (*emf)->stop();
  p.health.set(nullptr);  // before the worker goes
  return kExitOk;
}

}  // namespace leasehold::cli
