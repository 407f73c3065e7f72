#include "cli/commands.h"

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <vector>

#include "base/crash_point.h"
#include "cli/common.h"
#include "cli/conn_commands.h"
#include "cli/hold.h"
#include "cli/lease_commands.h"
#include "cli/serve.h"
#include "cli/store_commands.h"
#include "cli/trace_worker_command.h"
#include "cli/user_commands.h"
#include "cli/worker_command.h"
#include "runtime/build_info.h"
#include "runtime/stderr_logger.h"

namespace leasehold::cli {
namespace {

constexpr const char* kDefaultStoreUri = "sqlite:leasehold.db";

// Validates, then opens the store, then runs: the order every command keeps.
template <typename Request, typename Run>
int run_on_store(const std::string& uri, Logger& logger, const Result<Request>& request, Run run,
                 TableSpec table = lease_table_spec()) {
  if (!request.ok()) return report(request.status());
  auto ctx = open_context(uri, logger, std::move(table));
  if (!ctx.ok()) return report(ctx.status());
  return run(*ctx, *request);
}

// A group's subcommands all require one of their own (`lease acquire`, ...).
int no_subcommand() { return report(invalid_argument("no command given; see --help")); }

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

// `lease acquire|renew|release|show|list|hold`.
class LeaseCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* lease = app.add_subcommand("lease", "Acquire, renew, release and inspect leases");
    lease->require_subcommand(1);
    LeaseArgs& a = args_;
    acquire_ = lease->add_subcommand("acquire", "Take a lease if nobody holds it");
    add_key(acquire_, a);
    add_owner_and_holder(acquire_, a);
    add_ttl(acquire_, a);
    add_slot(acquire_, a);

    renew_ = lease->add_subcommand("renew", "Extend a lease you hold");
    add_key(renew_, a);
    add_owner_and_token(renew_, a);
    add_ttl(renew_, a);
    add_slot(renew_, a);

    release_ = lease->add_subcommand("release", "Give up a lease you hold");
    add_key(release_, a);
    add_owner_and_token(release_, a);
    release_->add_option("--mode", a.mode, "expire (keep the owner for history) or clear")
        ->capture_default_str();
    add_slot(release_, a);

    show_ = lease->add_subcommand("show", "Print a lease as stored");
    add_key(show_, a);
    add_slot(show_, a);

    list_ = lease->add_subcommand("list", "Print every lease (slot 'lease'), by expiry");
    auto* held = list_->add_flag("--held", a.held_only, "Only leases that are held now");
    list_->add_flag("--expired", a.expired_only, "Only leases that have expired or were released")
        ->excludes(held);

    add_hold(*lease);
    return lease;
  }

  int run(const GlobalArgs& global, Logger& log) override {
    const std::string& uri = global.store_uri;
    const LeaseArgs& a = args_;
    if (acquire_->parsed()) return run_on_store(uri, log, make_acquire(a), run_acquire);
    if (renew_->parsed()) return run_on_store(uri, log, make_renew(a), run_renew);
    if (release_->parsed()) return run_on_store(uri, log, make_release(a), run_release);
    if (show_->parsed()) return run_on_store(uri, log, make_show(a), run_show);
    if (list_->parsed()) return run_on_store(uri, log, make_list(a), run_list);
    if (hold_->parsed()) {
      const auto request = make_hold(a);
      if (!request.ok()) return report(request.status());
      return run_hold(uri, log, *request);
    }
    return no_subcommand();
  }

 private:
  void add_hold(CLI::App& lease) {
    LeaseArgs& a = args_;
    hold_ = lease.add_subcommand("hold", "Run a command while holding a lease");
    add_key(hold_, a);
    add_owner_and_holder(hold_, a);
    add_ttl(hold_, a);
    add_slot(hold_, a);
    hold_->add_option("--grace", a.grace,
                      "How long a command may take to stop after SIGTERM once the lease is "
                      "lost (default 5s, or less if the ttl leaves less room)");
    hold_->add_option("COMMAND", a.command, "The command and its arguments, after --")->required();
  }

  LeaseArgs args_;
  CLI::App* acquire_ = nullptr;
  CLI::App* renew_ = nullptr;
  CLI::App* release_ = nullptr;
  CLI::App* show_ = nullptr;
  CLI::App* list_ = nullptr;
  CLI::App* hold_ = nullptr;
};

// `store init`.
class StoreCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* store = app.add_subcommand("store", "Manage the store itself");
    store->require_subcommand(1);
    init_ = store->add_subcommand(
        "init",
        "Create every table and index leasehold uses, if missing; wait until ready; with "
        "--queue, the movie service's SQS queues too");
    init_->add_option("--queue", queue_,
                      "Also create the SQS job queues of sqs://REGION/NAME[?endpoint=URL] "
                      "(NAME-movie-trace, NAME-movie-probe and their -dead queues), as "
                      "`serve` and `trace-worker` are given it");
    schema_ = store->add_subcommand(
        "schema",
        "Print what `store init` makes on DynamoDB and SQS (each table's CreateTable request, "
        "the queues) and the AWS actions `worker`, `serve` and `trace-worker` send, by "
        "resource: what a deployment's tables and roles must be. Opens no store");
    schema_->add_flag("--json", schema_json_, "One JSON object (for tools) instead of text");
    return store;
  }

  int run(const GlobalArgs& global, Logger& log) override {
    if (init_->parsed()) return run_store_init(global.store_uri, queue_, log);
    if (schema_->parsed()) return run_store_schema(schema_json_);
    return no_subcommand();
  }

 private:
  CLI::App* init_ = nullptr;
  CLI::App* schema_ = nullptr;
  std::string queue_ = "store";
  bool schema_json_ = false;
};

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

// `user add|token|passwd|list|rm`.
class UserCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* user = app.add_subcommand("user", "Manage the users of `leasehold serve`");
    user->require_subcommand(1);
    UserArgs& u = args_;
    add_ = user->add_subcommand("add", "Add a user; print its first API token");
    add_user_name(add_, u);
    add_->add_option("--display-name", u.display_name, "The name shown for the user")->required();
    add_->add_flag("--admin", u.admin, "The user may administer the server");
    add_password_stdin(add_, u);

    token_ = user->add_subcommand("token", "Print a new API token for a user");
    add_user_name(token_, u);

    passwd_ = user->add_subcommand(
        "passwd", "Set a user's password (from stdin); ends the user's browser sessions");
    add_user_name(passwd_, u);
    add_password_stdin(passwd_, u);

    list_ = user->add_subcommand("list", "Print every user, by name");
    rm_ = user->add_subcommand("rm", "Remove a user with its tokens and sessions");
    add_user_name(rm_, u);
    return user;
  }

  int run(const GlobalArgs& global, Logger& log) override {
    const std::string& uri = global.store_uri;
    const UserArgs& u = args_;
    const bool terminal = isatty(STDIN_FILENO) == 1;
    const TableSpec table = user_table_spec();
    if (add_->parsed()) {
      return run_on_store(uri, log, make_user_add(u, std::cin, terminal), run_user_add, table);
    }
    if (token_->parsed()) return run_on_store(uri, log, make_user_name(u), run_user_token, table);
    if (passwd_->parsed()) {
      return run_on_store(uri, log, make_user_passwd(u, std::cin, terminal), run_user_passwd,
                          table);
    }
    if (list_->parsed()) {
      auto ctx = open_context(uri, log, table);
      return ctx.ok() ? run_user_list(*ctx) : report(ctx.status());
    }
    if (rm_->parsed()) return run_on_store(uri, log, make_user_name(u), run_user_rm, table);
    return no_subcommand();
  }

 private:
  UserArgs args_;
  CLI::App* add_ = nullptr;
  CLI::App* token_ = nullptr;
  CLI::App* passwd_ = nullptr;
  CLI::App* list_ = nullptr;
  CLI::App* rm_ = nullptr;
};

void add_conn_id(CLI::App* sub, ConnArgs& c) {
  sub->add_option("ID", c.id, "The connection's ID: A-Z, a-z, 0-9, '.', '_', '~', '-'")->required();
}

// `conn add|set|start|stop|rm|list`.
class ConnCommand final : public Command {
 public:
  CLI::App* add_to(CLI::App& app) override {
    CLI::App* conn = app.add_subcommand("conn", "Manage the stream fleet's connections");
    conn->require_subcommand(1);
    ConnArgs& c = args_;
    add_ = conn->add_subcommand("add", "Add a connection for the workers to stream");
    add_conn_id(add_, c);
    add_->add_option("--url", c.url,
                     "The upstream ws:// or wss:// URL; {next_seq} and {last_seq} are replaced "
                     "when a worker connects")
        ->required();
    add_->add_option("--seq-field", c.seq_field,
                     "Where a message's sequence number is: a dotted path into its JSON")
        ->capture_default_str();
    add_->add_flag("--stopped", c.stopped, "Add it stopped: no worker streams it");

    set_ = conn->add_subcommand(
        "set", "Change a connection's URL and/or sequence field; it resumes from its checkpoint");
    add_conn_id(set_, c);
    set_->add_option("--url", c.new_url,
                     "The new upstream ws:// or wss:// URL, a template as for `conn add`");
    set_->add_option("--seq-field", c.new_seq_field,
                     "The new path of a message's sequence number in its JSON");

    start_ = conn->add_subcommand("start", "Ask the workers to stream a connection");
    add_conn_id(start_, c);
    stop_ = conn->add_subcommand("stop", "Ask the workers to stop streaming a connection");
    add_conn_id(stop_, c);
    rm_ = conn->add_subcommand(
        "rm", "Remove a connection; wait for the worker streaming it to close it and let go");
    add_conn_id(rm_, c);
    rm_->add_option("--wait", c.wait,
                    "How long to wait for the worker holding it to let go (5s, 2m; 0: do not "
                    "wait); the removal stays either way")
        ->capture_default_str();
    list_ = conn->add_subcommand("list", "Print every connection, by ID");
    return conn;
  }

  int run(const GlobalArgs& global, Logger& log) override {
    const std::string& uri = global.store_uri;
    const ConnArgs& c = args_;
    const TableSpec table = conn_table_spec();
    if (add_->parsed()) return run_on_store(uri, log, make_conn_add(c), run_conn_add, table);
    const auto with_id = [&](auto run) {
      return run_on_store(uri, log, make_conn_id(c), run, table);
    };
    if (set_->parsed()) return run_on_store(uri, log, make_conn_set(c), run_conn_set, table);
    if (start_->parsed()) return with_id(run_conn_start);
    if (stop_->parsed()) return with_id(run_conn_stop);
    if (rm_->parsed()) return run_on_store(uri, log, make_conn_rm(c), run_conn_rm, table);
    if (list_->parsed()) {
      auto ctx = open_context(uri, log, table);
      return ctx.ok() ? run_conn_list(*ctx) : report(ctx.status());
    }
    return no_subcommand();
  }

 private:
  ConnArgs args_;
  CLI::App* add_ = nullptr;
  CLI::App* set_ = nullptr;
  CLI::App* start_ = nullptr;
  CLI::App* stop_ = nullptr;
  CLI::App* rm_ = nullptr;
  CLI::App* list_ = nullptr;
};

CLI::App* add_serve_command(CLI::App& app, ServeArgs& a) {
  CLI::App* serve = app.add_subcommand("serve", "Run the HTTP server: the API and the web pages");
  serve->add_option("--listen", a.listen, "Address and port (HOST:PORT; loopback unless TLS)")
      ->capture_default_str();
  serve->add_option("--tls-cert", a.tls_cert, "TLS certificate chain (PEM)")
      ->check(CLI::ExistingFile);
  serve->add_option("--tls-key", a.tls_key, "TLS private key (PEM)")->check(CLI::ExistingFile);
  serve->add_option("--threads", a.threads, "I/O threads (default: the number of cores)");
  serve->add_flag("--insecure-http", a.insecure_http,
                  "Allow plain HTTP on a non-loopback address (behind a TLS proxy)");
  add_movies_flags(*serve, a.movies);
  add_metrics_output_flags(*serve, a.metrics_output);
  serve->add_option("--upload-max", a.upload_max, "The largest movie upload (2GiB, 500MiB)")
      ->capture_default_str();
  return serve;
}

}  // namespace

std::unique_ptr<Command> make_lease_command() { return std::make_unique<LeaseCommand>(); }
std::unique_ptr<Command> make_store_command() { return std::make_unique<StoreCommand>(); }
std::unique_ptr<Command> make_user_command() { return std::make_unique<UserCommand>(); }
std::unique_ptr<Command> make_conn_command() { return std::make_unique<ConnCommand>(); }

std::unique_ptr<Command> make_serve_command() {
  return make_simple_command<ServeArgs>(
      add_serve_command, [](const ServeArgs& args, const GlobalArgs& global, Logger&) {
        return run_serve(args, global.store_uri, global.verbose);
      });
}

std::unique_ptr<Command> make_worker_command() {
  return make_simple_command<WorkerArgs>(
      add_worker_command, [](const WorkerArgs& args, const GlobalArgs& global, Logger&) {
        return run_worker(args, global.store_uri, global.verbose);
      });
}

std::unique_ptr<Command> make_trace_worker_command() {
  return make_simple_command<TraceWorkerArgs>(
      add_trace_worker_command, [](const TraceWorkerArgs& args, const GlobalArgs& global, Logger&) {
        return run_trace_worker(args, global.store_uri, global.verbose);
      });
}

int run_cli(int argc, char** argv, std::span<const CommandFactory> commands) {
  // FFmpeg (under OpenCV, in the movie tracer) writes its own complaints
  // about a broken file to stderr, where they would break the JSON log;
  // the tracer reports what matters itself. Set before any thread starts,
  // unless the user asked for FFmpeg's messages.
  setenv("OPENCV_FFMPEG_LOGLEVEL", "-8", /*overwrite=*/0);  // AV_LOG_QUIET

  GlobalArgs global;
  global.store_uri = kDefaultStoreUri;
  CLI::App app("leasehold: fenced leases on an item store", "leasehold");
  app.fallthrough();  // global flags may follow the subcommand
  app.require_subcommand(1);
  CLI::Option* store_option =
      app.add_option("--store", global.store_uri,
                     "Store URI: sqlite:PATH, dynamodb://REGION/PREFIX[?endpoint=URL] or memory:")
          ->envname("LEASEHOLD_STORE")
          ->capture_default_str();
  app.add_flag("-v,--verbose", global.verbose, "Log debug messages to stderr");
  // Handled while parsing, like --help: nothing is validated or opened.
  app.set_version_flag("-V,--version", runtime::version_line(),
                       "Print the version and the build, then exit");
  std::vector<std::unique_ptr<Command>> made;
  std::vector<CLI::App*> added;
  for (const CommandFactory make : commands) {
    made.push_back(make());
    added.push_back(made.back()->add_to(app));
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help (stdout) or the error (stderr)
    return code == 0 ? kExitOk : kExitUsage;
  }
  global.store_given = store_option->count() > 0;
  // A crash point that names none (a test's typo) is bad input, not a
  // crash that never comes (base/crash_point.h).
  if (const Status crash_at = check_crash_point_env(); !crash_at.ok()) return report(crash_at);
  // Logs go to stderr so that stdout carries only the commands' JSON lines
  // (and, under `lease hold`, the command's own output).
  const std::unique_ptr<Logger> log =
      runtime::make_stderr_logger("leasehold", global.verbose ? LogLevel::kDebug : LogLevel::kWarn);
  for (size_t i = 0; i < made.size(); ++i) {
    if (added[i]->parsed()) return made[i]->run(global, *log);
  }
  return no_subcommand();
}

}  // namespace leasehold::cli
