#include "cli/conn_commands.h"

#include <boost/json.hpp>
#include <iostream>
#include <thread>

#include "base/duration.h"
#include "fleet/schema.h"

namespace leasehold::cli {
namespace {

fleet::Connections connections_of(Context& ctx) {
  return fleet::Connections(ctx.store(), ctx.clock());
}

// As report(), but a connection that does not exist is bad input (exit 2),
// not a store failure, as for the `user` commands.
int report_conn(const Status& status) {
  if (status.code() == Code::kNotFound) {
    std::cerr << "leasehold: " << status.message() << "\n";
    return kExitUsage;
  }
  return report(status);
}

int run_set_desired(Context& ctx, const std::string& id, fleet::DesiredState state) {
  auto connection = connections_of(ctx).set_desired(id, state);
  if (!connection.ok()) return report_conn(connection.status());
  print_line(connection_json(*connection));
  return kExitOk;
}

// The removed connection's worker has not let go since `tombstone` was
// written: the tombstone is still there, with the same lease, held.
bool still_holding(const fleet::Connection& now, const fleet::Connection& tombstone,
                   int64_t now_ms) {
  return now.desired_state == fleet::DesiredState::kRemoved && now.token == tombstone.token &&
         fleet::lease_held(now, now_ms);
}

// Reads the tombstone until its worker lets go (nullopt) or `wait` passes
// (the last read, still held). REQUIRES: a worker held it when written.
Result<std::optional<fleet::Connection>> wait_for_holder(Context& ctx,
                                                         fleet::Connections& connections,
                                                         const fleet::Connection& tombstone,
                                                         Duration wait) {
  Clock& clock = ctx.clock();
  const MonoTime deadline = clock.mono_now() + wait;
  std::cerr << "leasehold: connection '" << tombstone.id << "' is removed; waiting up to "
            << format_duration(wait) << " for worker " << tombstone.owner << " to let go\n";
  fleet::Connection last = tombstone;
  do {
    const MonoTime now = clock.mono_now();
    if (now >= deadline) return std::optional<fleet::Connection>(last);
    // No event announces a write by another process to the store: poll.
    std::this_thread::sleep_for(std::min<Duration>(kConnRmPollEvery, deadline - now));
    auto read = connections.inspect(tombstone.id);
    if (read.status().code() == Code::kNotFound) break;
    LEASEHOLD_RETURN_IF_ERROR(
        read.status().with_context("connection '" + tombstone.id +
                                   "' is removed, but reading whether its worker "
                                   "let go failed"));
    last = *std::move(read);
  } while (still_holding(last, tombstone, to_unix_ms(clock.wall_now())));
  return std::optional<fleet::Connection>();
}

}  // namespace

TableSpec conn_table_spec() { return fleet::connections_table_spec(); }

Result<fleet::NewConnection> make_conn_add(const ConnArgs& args) {
  LEASEHOLD_RETURN_IF_ERROR(fleet::validate_connection_id(args.id));
  LEASEHOLD_RETURN_IF_ERROR(fleet::validate_url_template(args.url).with_context("--url"));
  LEASEHOLD_RETURN_IF_ERROR(fleet::validate_seq_field(args.seq_field).with_context("--seq-field"));
  return fleet::NewConnection{args.id, args.url, args.seq_field, args.stopped};
}

Result<ConnSetRequest> make_conn_set(const ConnArgs& args) {
  LEASEHOLD_RETURN_IF_ERROR(fleet::validate_connection_id(args.id));
  if (!args.new_url && !args.new_seq_field) {
    return invalid_argument("conn set: nothing to change; give --url, --seq-field or both");
  }
  if (args.new_url) {
    LEASEHOLD_RETURN_IF_ERROR(fleet::validate_url_template(*args.new_url).with_context("--url"));
  }
  if (args.new_seq_field) {
    LEASEHOLD_RETURN_IF_ERROR(
        fleet::validate_seq_field(*args.new_seq_field).with_context("--seq-field"));
  }
  return ConnSetRequest{args.id, fleet::ConnectionChange{args.new_url, args.new_seq_field}};
}

Result<ConnRmRequest> make_conn_rm(const ConnArgs& args) {
  LEASEHOLD_RETURN_IF_ERROR(fleet::validate_connection_id(args.id));
  if (args.wait == "0") return ConnRmRequest{args.id, Duration::zero()};
  const Result<Duration> wait = parse_duration(args.wait);
  if (!wait.ok()) return wait.status().with_context("--wait");
  if (*wait > kConnRmWaitMax) {
    return invalid_argument("--wait " + args.wait + ": at most " + format_duration(kConnRmWaitMax) +
                            " (0: do not wait)");
  }
  return ConnRmRequest{args.id, *wait};
}

Result<std::string> make_conn_id(const ConnArgs& args) {
  LEASEHOLD_RETURN_IF_ERROR(fleet::validate_connection_id(args.id));
  return args.id;
}

std::string connection_json(const fleet::Connection& c) {
  return boost::json::serialize(
      boost::json::object{{"id", c.id},
                          {"desired_state", fleet::desired_state_name(c.desired_state)},
                          {"ws_url", c.ws_url},
                          {"owner", c.owner},
                          {"expires_at_ms", c.expires_at_ms},
                          {"last_seq", c.last_seq},
                          {"epoch", c.epoch},
                          {"last_error", c.last_error}});
}

int run_conn_add(Context& ctx, const fleet::NewConnection& connection) {
  auto added = connections_of(ctx).add(connection);
  if (!added.ok()) return report(added.status());
  print_line(connection_json(*added));
  return kExitOk;
}

int run_conn_start(Context& ctx, const std::string& id) {
  return run_set_desired(ctx, id, fleet::DesiredState::kStarted);
}

int run_conn_stop(Context& ctx, const std::string& id) {
  return run_set_desired(ctx, id, fleet::DesiredState::kStopped);
}

int run_conn_set(Context& ctx, const ConnSetRequest& request) {
  auto connection = connections_of(ctx).set(request.id, request.change);
  if (!connection.ok()) return report_conn(connection.status());
  print_line(connection_json(*connection));
  return kExitOk;
}

int run_conn_rm(Context& ctx, const ConnRmRequest& request) {
  fleet::Connections connections = connections_of(ctx);
  auto tombstone = connections.remove(request.id);
  if (!tombstone.ok()) return report_conn(tombstone.status());
  if (request.wait > Duration::zero() &&
      fleet::lease_held(*tombstone, to_unix_ms(ctx.clock().wall_now()))) {
    auto held = wait_for_holder(ctx, connections, *tombstone, request.wait);
    if (!held.ok()) return report(held.status());
    if (held->has_value()) {
      const fleet::Connection& last = **held;
      std::cerr << "leasehold: connection '" << request.id << "' is removed, but worker "
                << last.owner << " still holds it after " << format_duration(request.wait)
                << "; 'conn add " << request.id
                << "' is refused until it lets go (at the latest when its lease ends at "
                << fleet::format_utc_ms(last.expires_at_ms) << ")\n";
      return kExitNotYours;
    }
  }
  print_line(boost::json::serialize(boost::json::object{{"id", request.id}, {"removed", true}}));
  return kExitOk;
}

// Page by page, each printed as it is read: the first lines come at once
// and memory stays a page's, however many connections there are.
int run_conn_list(Context& ctx) {
  fleet::Connections connections = connections_of(ctx);
  fleet::ListQuery query;
  query.limit = fleet::kListPageMax;
  do {
    Result<fleet::ConnectionPage> page = connections.list_page(query);
    if (!page.ok()) return report(page.status().with_context("cannot list connections"));
    for (const fleet::Connection& c : page->items) print_line(connection_json(c));
    query.after = page->next_after;
  } while (!query.after.empty());
  return kExitOk;
}

}  // namespace leasehold::cli
