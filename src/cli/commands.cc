#include "cli/commands.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "base/duration.h"
#include "cli/bench_http.h"
#include "cli/bench_leases.h"
#include "cli/bench_movies.h"
#include "cli/common.h"
#include "cli/conn_commands.h"
#include "cli/demo.h"
#include "cli/hold.h"
#include "cli/lease_commands.h"
#include "cli/serve.h"
#include "cli/store_commands.h"
#include "cli/trace_worker_command.h"
#include "cli/upstream_sim_command.h"
#include "cli/user_commands.h"
#include "cli/worker_command.h"
#include "runtime/build_info.h"
#include "runtime/stderr_logger.h"

namespace leasehold::cli {
namespace {

constexpr const char* kDefaultStoreUri = "sqlite:leasehold.db";

struct CliArgs {
  std::string store_uri = kDefaultStoreUri;
  bool verbose = false;
  LeaseArgs lease;
  UserArgs user;
  ConnArgs conn;
  BenchLeasesOptions bench;
  BenchRenewerOptions bench_renewer;
  ServeArgs serve;
  BenchHttpOptions bench_http;
  BenchMoviesOptions bench_movies;
  UpstreamSimArgs upstream_sim;
  WorkerArgs worker;
  TraceWorkerArgs trace_worker;
  DemoArgs demo;
  bool store_given = false;  // --store or LEASEHOLD_STORE, rather than the default
};

struct Subcommands {
  CLI::App* acquire = nullptr;
  CLI::App* renew = nullptr;
  CLI::App* release = nullptr;
  CLI::App* show = nullptr;
  CLI::App* list = nullptr;
  CLI::App* hold = nullptr;
  CLI::App* bench_leases = nullptr;
  CLI::App* bench_renewer = nullptr;
  CLI::App* bench_http = nullptr;
  CLI::App* bench_movies = nullptr;
  CLI::App* store_init = nullptr;
  CLI::App* user_add = nullptr;
  CLI::App* user_token = nullptr;
  CLI::App* user_passwd = nullptr;
  CLI::App* user_list = nullptr;
  CLI::App* user_rm = nullptr;
  CLI::App* conn_add = nullptr;
  CLI::App* conn_set = nullptr;
  CLI::App* conn_start = nullptr;
  CLI::App* conn_stop = nullptr;
  CLI::App* conn_rm = nullptr;
  CLI::App* conn_list = nullptr;
  CLI::App* serve = nullptr;
  CLI::App* upstream_sim = nullptr;
  CLI::App* worker = nullptr;
  CLI::App* trace_worker = nullptr;
  CLI::App* demo = nullptr;
};

void add_key(CLI::App* sub, LeaseArgs& a) {
  sub->add_option("KEY", a.key, "The item the lease is on")->required();
}
void add_slot(CLI::App* sub, LeaseArgs& a) {
  sub->add_option("--slot", a.slot, "The lease's slot within the item")->capture_default_str();
}
void add_ttl(CLI::App* sub, LeaseArgs& a) {
  sub->add_option("--ttl", a.ttl, "How long the lease lasts without renewal (1500ms, 20s, 15m)")
      ->capture_default_str();
}
void add_owner_and_holder(CLI::App* sub, LeaseArgs& a) {
  sub->add_option("--owner", a.owner, "Who takes the lease (a worker name)")->required();
  sub->add_option("--holder", a.holder, "Display data stored with the lease");
}
// Renew and release name the lease by its owner as well as its token: a
// writer that knows nothing of tokens may have taken it over and left the
// old token in place.
void add_owner_and_token(CLI::App* sub, LeaseArgs& a) {
  sub->add_option("--owner", a.owner, "The owner the lease was acquired as")->required();
  sub->add_option("--token", a.token, "The token `lease acquire` printed")->required();
}

void add_lease_commands(CLI::App& lease, CliArgs& args, Subcommands& subs) {
  LeaseArgs& a = args.lease;
  subs.acquire = lease.add_subcommand("acquire", "Take a lease if nobody holds it");
  add_key(subs.acquire, a);
  add_owner_and_holder(subs.acquire, a);
  add_ttl(subs.acquire, a);
  add_slot(subs.acquire, a);

  subs.renew = lease.add_subcommand("renew", "Extend a lease you hold");
  add_key(subs.renew, a);
  add_owner_and_token(subs.renew, a);
  add_ttl(subs.renew, a);
  add_slot(subs.renew, a);

  subs.release = lease.add_subcommand("release", "Give up a lease you hold");
  add_key(subs.release, a);
  add_owner_and_token(subs.release, a);
  subs.release->add_option("--mode", a.mode, "expire (keep the owner for history) or clear")
      ->capture_default_str();
  add_slot(subs.release, a);

  subs.show = lease.add_subcommand("show", "Print a lease as stored");
  add_key(subs.show, a);
  add_slot(subs.show, a);

  subs.list = lease.add_subcommand("list", "Print every lease (slot 'lease'), by expiry");
  auto* held = subs.list->add_flag("--held", a.held_only, "Only leases that are held now");
  subs.list->add_flag("--expired", a.expired_only, "Only leases that have expired or were released")
      ->excludes(held);

  subs.hold = lease.add_subcommand("hold", "Run a command while holding a lease");
  add_key(subs.hold, a);
  add_owner_and_holder(subs.hold, a);
  add_ttl(subs.hold, a);
  add_slot(subs.hold, a);
  subs.hold->add_option("--grace", a.grace,
                        "How long a command may take to stop after SIGTERM once the lease is "
                        "lost (default 5s, or less if the ttl leaves less room)");
  subs.hold->add_option("COMMAND", a.command, "The command and its arguments, after --")
      ->required();
}

void add_user_name(CLI::App* sub, UserArgs& u) {
  sub->add_option("NAME", u.name, "The user's name: a-z, 0-9, '.', '_', '-'")->required();
}
// Passwords come only from stdin. A --password is accepted by the parser
// (hidden) so that the command can refuse it with advice instead of the
// parser echoing it back in an error.
void add_password_stdin(CLI::App* sub, UserArgs& u) {
  sub->add_flag("--password-stdin", u.password_stdin,
                "Read the password from stdin (one line; the newline is removed)");
  sub->add_option("--password", u.password_argument)->group("");
}

void add_user_commands(CLI::App& user, CliArgs& args, Subcommands& subs) {
  UserArgs& u = args.user;
  subs.user_add = user.add_subcommand("add", "Add a user; print its first API token");
  add_user_name(subs.user_add, u);
  subs.user_add->add_option("--display-name", u.display_name, "The name shown for the user")
      ->required();
  subs.user_add->add_flag("--admin", u.admin, "The user may administer the server");
  add_password_stdin(subs.user_add, u);

  subs.user_token = user.add_subcommand("token", "Print a new API token for a user");
  add_user_name(subs.user_token, u);

  subs.user_passwd = user.add_subcommand(
      "passwd", "Set a user's password (from stdin); ends the user's browser sessions");
  add_user_name(subs.user_passwd, u);
  add_password_stdin(subs.user_passwd, u);

  subs.user_list = user.add_subcommand("list", "Print every user, by name");
  subs.user_rm = user.add_subcommand("rm", "Remove a user with its tokens and sessions");
  add_user_name(subs.user_rm, u);
}

void add_conn_id(CLI::App* sub, ConnArgs& c) {
  sub->add_option("ID", c.id, "The connection's ID: A-Z, a-z, 0-9, '.', '_', '~', '-'")->required();
}

void add_conn_commands(CLI::App& conn, CliArgs& args, Subcommands& subs) {
  ConnArgs& c = args.conn;
  subs.conn_add = conn.add_subcommand("add", "Add a connection for the workers to stream");
  add_conn_id(subs.conn_add, c);
  subs.conn_add
      ->add_option("--url", c.url,
                   "The upstream ws:// or wss:// URL; {next_seq} and {last_seq} are replaced "
                   "when a worker connects")
      ->required();
  subs.conn_add
      ->add_option("--seq-field", c.seq_field,
                   "Where a message's sequence number is: a dotted path into its JSON")
      ->capture_default_str();
  subs.conn_add->add_flag("--stopped", c.stopped, "Add it stopped: no worker streams it");

  subs.conn_set = conn.add_subcommand(
      "set", "Change a connection's URL and/or sequence field; it resumes from its checkpoint");
  add_conn_id(subs.conn_set, c);
  subs.conn_set->add_option("--url", c.new_url,
                            "The new upstream ws:// or wss:// URL, a template as for `conn add`");
  subs.conn_set->add_option("--seq-field", c.new_seq_field,
                            "The new path of a message's sequence number in its JSON");

  subs.conn_start = conn.add_subcommand("start", "Ask the workers to stream a connection");
  add_conn_id(subs.conn_start, c);
  subs.conn_stop = conn.add_subcommand("stop", "Ask the workers to stop streaming a connection");
  add_conn_id(subs.conn_stop, c);
  subs.conn_rm = conn.add_subcommand(
      "rm", "Remove a connection; wait for the worker streaming it to close it and let go");
  add_conn_id(subs.conn_rm, c);
  subs.conn_rm
      ->add_option("--wait", c.wait,
                   "How long to wait for the worker holding it to let go (5s, 2m; 0: do not "
                   "wait); the removal stays either way")
      ->capture_default_str();
  subs.conn_list = conn.add_subcommand("list", "Print every connection, by ID");
}

void add_bench_commands(CLI::App& bench, CliArgs& args, Subcommands& subs) {
  BenchLeasesOptions& b = args.bench;
  subs.bench_leases = bench.add_subcommand("leases", "Keep many leases alive; report throughput");
  subs.bench_leases->add_option("--leases", b.leases, "How many leases")->capture_default_str();
  subs.bench_leases->add_option("--seconds", b.seconds, "How long to run")->capture_default_str();
  subs.bench_leases->add_option("--threads", b.threads, "Client threads")->capture_default_str();
  subs.bench_leases
      ->add_option("--sdk-baseline", b.sdk_script,
                   "DynamoDB only: also measure the AWS SDK for JavaScript with this script "
                   "(bench/sdk_renew_loop.mjs; needs node)")
      ->check(CLI::ExistingFile);

  BenchRenewerOptions& r = args.bench_renewer;
  subs.bench_renewer = bench.add_subcommand(
      "renewer", "One process renews many leases with one Renewer; report its CPU and memory");
  subs.bench_renewer->add_option("--leases", r.leases, "How many leases")->capture_default_str();
  subs.bench_renewer->add_option("--every", r.every, "Renew period (1500ms, 5s)")
      ->capture_default_str();
  subs.bench_renewer->add_option("--seconds", r.seconds, "How long to measure")
      ->capture_default_str();

  BenchHttpOptions& h = args.bench_http;
  subs.bench_http = bench.add_subcommand(
      "http",
      "Authenticated GET /api/me on the server of `serve` against a minimal Beast server; "
      "without --store, on a fresh SQLite file in a temporary directory");
  subs.bench_http->add_option("--seconds", h.seconds, "Timed seconds per server and level")
      ->capture_default_str();
  subs.bench_http
      ->add_option("--connections", h.connections, "Concurrent keep-alive connections, per level")
      ->capture_default_str();

  BenchMoviesOptions& m = args.bench_movies;
  subs.bench_movies = bench.add_subcommand(
      "movies",
      "Viewers polling a movie's metadata while a trace of it runs, against the same polling "
      "while nothing runs; without --store, on a fresh SQLite file in a temporary directory");
  subs.bench_movies->add_option("--viewers", m.viewers, "Viewers, each a keep-alive connection")
      ->capture_default_str();
  subs.bench_movies->add_option("--every", m.every, "Each viewer's polling period")
      ->capture_default_str();
  subs.bench_movies->add_option("--seconds", m.seconds, "Timed seconds per kind of round")
      ->capture_default_str();
  subs.bench_movies
      ->add_option("--trace-nice", m.trace_nice,
                   "The trace worker's nice value (serve's is 10; 0 runs it at the server's)")
      ->capture_default_str();
}

void add_serve_command(CLI::App& app, ServeArgs& a, Subcommands& subs) {
  subs.serve = app.add_subcommand("serve", "Run the HTTP server: the API and the web pages");
  subs.serve->add_option("--listen", a.listen, "Address and port (HOST:PORT; loopback unless TLS)")
      ->capture_default_str();
  subs.serve->add_option("--tls-cert", a.tls_cert, "TLS certificate chain (PEM)")
      ->check(CLI::ExistingFile);
  subs.serve->add_option("--tls-key", a.tls_key, "TLS private key (PEM)")->check(CLI::ExistingFile);
  subs.serve->add_option("--threads", a.threads, "I/O threads (default: the number of cores)");
  subs.serve->add_flag("--insecure-http", a.insecure_http,
                       "Allow plain HTTP on a non-loopback address (behind a TLS proxy)");
  add_movies_flags(*subs.serve, a.movies);
  subs.serve->add_option("--upload-max", a.upload_max, "The largest movie upload (2GiB, 500MiB)")
      ->capture_default_str();
}

void add_upstream_sim_command(CLI::App& app, UpstreamSimArgs& a, Subcommands& subs) {
  subs.upstream_sim = app.add_subcommand(
      "upstream-sim",
      "Serve sequenced WebSocket streams at /s/<conn>?from=N: a stand-in upstream for the "
      "stream fleet, for tests and benchmarks");
  subs.upstream_sim
      ->add_option("--listen", a.listen,
                   "Address and port (HOST:PORT; port 0 picks a free one). Loopback by default; "
                   "another address serves anyone who can reach it, with no TLS and no "
                   "authentication: it is a test tool")
      ->capture_default_str();
  subs.upstream_sim
      ->add_option("--rate-per-conn", a.rate_per_conn,
                   "Messages per second on each stream, evenly paced (0: as fast as the client "
                   "reads)")
      ->capture_default_str();
  subs.upstream_sim->add_option("--threads", a.threads, "I/O threads")->capture_default_str();
}

Status check_bench(const BenchLeasesOptions& b) {
  const auto check = [](std::string_view flag, int64_t v, int64_t max) {
    if (v >= 1 && v <= max) return Status::ok_status();
    return invalid_argument(std::string(flag) + " " + std::to_string(v) + ": must be 1.." +
                            std::to_string(max));
  };
  RETURN_IF_ERROR(check("--leases", b.leases, kBenchLeasesMax));
  RETURN_IF_ERROR(check("--seconds", b.seconds, kBenchSecondsMax));
  RETURN_IF_ERROR(check("--threads", b.threads, kBenchThreadsMax));
  if (b.threads > b.leases) return invalid_argument("--threads may not exceed --leases");
  return {};
}

Status check_bench_renewer(const BenchRenewerOptions& b) {
  if (b.leases < 1 || b.leases > kBenchLeasesMax) {
    return invalid_argument("--leases must be 1.." + std::to_string(kBenchLeasesMax));
  }
  if (b.seconds < 1 || b.seconds > kBenchSecondsMax) {
    return invalid_argument("--seconds must be 1.." + std::to_string(kBenchSecondsMax));
  }
  ASSIGN_OR_RETURN(const Duration every, parse_duration(b.every));
  if (every < std::chrono::milliseconds(100))
    return invalid_argument("--every must be at least 100ms");
  return {};
}

Status check_bench_movies(const BenchMoviesOptions& m) {
  if (m.viewers < 1 || m.viewers > kBenchViewersMax) {
    return invalid_argument("--viewers must be 1.." + std::to_string(kBenchViewersMax));
  }
  if (m.seconds < 2 || m.seconds > kBenchSecondsMax) {
    return invalid_argument("--seconds must be 2.." + std::to_string(kBenchSecondsMax));
  }
  if (m.trace_nice < 0 || m.trace_nice > 19) return invalid_argument("--trace-nice must be 0..19");
  const Result<Duration> every = parse_duration(m.every);
  if (!every.ok()) return every.status().with_context("--every");
  if (*every < std::chrono::milliseconds(10))
    return invalid_argument("--every must be at least 10ms");
  return {};
}

Status check_bench_http(const BenchHttpOptions& h) {
  if (h.seconds < 1 || h.seconds > kBenchSecondsMax) {
    return invalid_argument("--seconds must be 1.." + std::to_string(kBenchSecondsMax));
  }
  return parse_connection_levels(h.connections).status();
}

// Validates, then opens the store, then runs: the order every command keeps.
template <typename Request, typename Run>
int with_session(const std::string& uri, Logger& logger, const Result<Request>& request, Run run,
                 TableSpec table = lease_table_spec()) {
  if (!request.ok()) return report(request.status());
  auto session = open_session(uri, logger, std::move(table));
  if (!session.ok()) return report(session.status());
  return run(*session, *request);
}

// The exit code of the `user` command given, or -1 if none was.
int dispatch_user(const CliArgs& args, const Subcommands& subs, Logger& log) {
  const std::string& uri = args.store_uri;
  const UserArgs& u = args.user;
  const bool terminal = isatty(STDIN_FILENO) == 1;
  const TableSpec table = user_table_spec();
  if (subs.user_add->parsed()) {
    return with_session(uri, log, make_user_add(u, std::cin, terminal), run_user_add, table);
  }
  if (subs.user_token->parsed()) {
    return with_session(uri, log, make_user_name(u), run_user_token, table);
  }
  if (subs.user_passwd->parsed()) {
    return with_session(uri, log, make_user_passwd(u, std::cin, terminal), run_user_passwd, table);
  }
  if (subs.user_list->parsed()) {
    auto session = open_session(uri, log, table);
    return session.ok() ? run_user_list(*session) : report(session.status());
  }
  if (subs.user_rm->parsed()) return with_session(uri, log, make_user_name(u), run_user_rm, table);
  return -1;
}

// The exit code of the `conn` command given, or -1 if none was.
int dispatch_conn(const CliArgs& args, const Subcommands& subs, Logger& log) {
  const std::string& uri = args.store_uri;
  const ConnArgs& c = args.conn;
  const TableSpec table = conn_table_spec();
  if (subs.conn_add->parsed()) return with_session(uri, log, make_conn_add(c), run_conn_add, table);
  const auto with_id = [&](auto run) {
    return with_session(uri, log, make_conn_id(c), run, table);
  };
  if (subs.conn_set->parsed()) return with_session(uri, log, make_conn_set(c), run_conn_set, table);
  if (subs.conn_start->parsed()) return with_id(run_conn_start);
  if (subs.conn_stop->parsed()) return with_id(run_conn_stop);
  if (subs.conn_rm->parsed()) return with_session(uri, log, make_conn_rm(c), run_conn_rm, table);
  if (subs.conn_list->parsed()) {
    auto session = open_session(uri, log, table);
    return session.ok() ? run_conn_list(*session) : report(session.status());
  }
  return -1;
}

int dispatch(const CliArgs& args, const Subcommands& subs, Logger& log) {
  const std::string& uri = args.store_uri;
  const LeaseArgs& a = args.lease;
  if (subs.acquire->parsed()) return with_session(uri, log, make_acquire(a), run_acquire);
  if (subs.renew->parsed()) return with_session(uri, log, make_renew(a), run_renew);
  if (subs.release->parsed()) return with_session(uri, log, make_release(a), run_release);
  if (subs.show->parsed()) return with_session(uri, log, make_show(a), run_show);
  if (subs.list->parsed()) return with_session(uri, log, make_list(a), run_list);
  if (subs.hold->parsed()) {
    const auto request = make_hold(a);
    if (!request.ok()) return report(request.status());
    return run_hold(uri, log, *request);
  }
  if (subs.bench_leases->parsed()) {
    if (const Status ok = check_bench(args.bench); !ok.ok()) return report(ok);
    BenchLeasesOptions options = args.bench;
    options.store_uri = uri;
    if (!options.sdk_script.empty() && !uri.starts_with("dynamodb:")) {
      return report(invalid_argument("--sdk-baseline needs a dynamodb:// store"));
    }
    return run_bench_leases(options, log);
  }
  if (subs.store_init->parsed()) return run_store_init(uri, log);
  if (subs.serve->parsed()) return run_serve(args.serve, uri, args.verbose);
  if (subs.upstream_sim->parsed()) return run_upstream_sim(args.upstream_sim, args.verbose);
  if (subs.worker->parsed()) return run_worker(args.worker, uri, args.verbose);
  if (subs.trace_worker->parsed()) return run_trace_worker(args.trace_worker, uri, args.verbose);
  if (subs.demo->parsed()) return run_demo(args.demo, args.verbose);
  if (const int code = dispatch_user(args, subs, log); code >= 0) return code;
  if (const int code = dispatch_conn(args, subs, log); code >= 0) return code;
  if (subs.bench_renewer->parsed()) {
    if (const Status ok = check_bench_renewer(args.bench_renewer); !ok.ok()) return report(ok);
    BenchRenewerOptions options = args.bench_renewer;
    options.store_uri = uri;
    return run_bench_renewer(options, log);
  }
  if (subs.bench_http->parsed()) {
    if (const Status ok = check_bench_http(args.bench_http); !ok.ok()) return report(ok);
    BenchHttpOptions options = args.bench_http;
    if (args.store_given) options.store_uri = uri;
    return run_bench_http(options, log);
  }
  if (subs.bench_movies->parsed()) {
    if (const Status ok = check_bench_movies(args.bench_movies); !ok.ok()) return report(ok);
    BenchMoviesOptions options = args.bench_movies;
    if (args.store_given) options.store_uri = uri;
    return run_bench_movies(options, log);
  }
  return report(invalid_argument("no command given; see --help"));
}

}  // namespace

int run_cli(int argc, char** argv) {
  CliArgs args;
  Subcommands subs;
  CLI::App app("leasehold: fenced leases on an item store", "leasehold");
  app.fallthrough();  // global flags may follow the subcommand
  app.require_subcommand(1);
  CLI::Option* store_option =
      app.add_option("--store", args.store_uri,
                     "Store URI: sqlite:PATH, dynamodb://REGION/PREFIX[?endpoint=URL] or memory:")
          ->envname("LEASEHOLD_STORE")
          ->capture_default_str();
  app.add_flag("-v,--verbose", args.verbose, "Log debug messages to stderr");
  // Handled while parsing, like --help: nothing is validated or opened.
  app.set_version_flag("-V,--version", runtime::version_line(),
                       "Print the version and the build, then exit");
  CLI::App* lease = app.add_subcommand("lease", "Acquire, renew, release and inspect leases");
  lease->require_subcommand(1);
  add_lease_commands(*lease, args, subs);
  CLI::App* store = app.add_subcommand("store", "Manage the store itself");
  store->require_subcommand(1);
  subs.store_init = store->add_subcommand(
      "init", "Create every table and index leasehold uses, if missing; wait until ready");
  CLI::App* user = app.add_subcommand("user", "Manage the users of `leasehold serve`");
  user->require_subcommand(1);
  add_user_commands(*user, args, subs);
  CLI::App* conn = app.add_subcommand("conn", "Manage the stream fleet's connections");
  conn->require_subcommand(1);
  add_conn_commands(*conn, args, subs);
  add_serve_command(app, args.serve, subs);
  add_upstream_sim_command(app, args.upstream_sim, subs);
  subs.worker = add_worker_command(app, args.worker);
  subs.trace_worker = add_trace_worker_command(app, args.trace_worker);
  subs.demo = add_demo_command(app, args.demo);
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks");
  bench->require_subcommand(1);
  add_bench_commands(*bench, args, subs);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help (stdout) or the error (stderr)
    return code == 0 ? kExitOk : kExitUsage;
  }
  args.store_given = store_option->count() > 0;
  // Logs go to stderr so that stdout carries only the commands' JSON lines
  // (and, under `lease hold`, the command's own output).
  const std::unique_ptr<Logger> log =
      runtime::make_stderr_logger("leasehold", args.verbose ? LogLevel::kDebug : LogLevel::kWarn);
  return dispatch(args, subs, *log);
}

}  // namespace leasehold::cli
