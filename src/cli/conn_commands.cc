#include "cli/conn_commands.h"

#include <boost/json.hpp>
#include <iostream>

#include "fleet/schema.h"

namespace leasehold::cli {
namespace {

fleet::Connections connections_of(Session& session) {
  return fleet::Connections(session.store(), session.clock());
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

int run_set_desired(Session& session, const std::string& id, fleet::DesiredState state) {
  auto connection = connections_of(session).set_desired(id, state);
  if (!connection.ok()) return report_conn(connection.status());
  print_line(connection_json(*connection));
  return kExitOk;
}

}  // namespace

TableSpec conn_table_spec() { return fleet::connections_table_spec(); }

Result<fleet::NewConnection> make_conn_add(const ConnArgs& args) {
  RETURN_IF_ERROR(fleet::validate_connection_id(args.id));
  RETURN_IF_ERROR(fleet::validate_url_template(args.url).with_context("--url"));
  RETURN_IF_ERROR(fleet::validate_seq_field(args.seq_field).with_context("--seq-field"));
  return fleet::NewConnection{args.id, args.url, args.seq_field, args.stopped};
}

Result<std::string> make_conn_id(const ConnArgs& args) {
  RETURN_IF_ERROR(fleet::validate_connection_id(args.id));
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

int run_conn_add(Session& session, const fleet::NewConnection& connection) {
  auto added = connections_of(session).add(connection);
  if (!added.ok()) return report(added.status());
  print_line(connection_json(*added));
  return kExitOk;
}

int run_conn_start(Session& session, const std::string& id) {
  return run_set_desired(session, id, fleet::DesiredState::kStarted);
}

int run_conn_stop(Session& session, const std::string& id) {
  return run_set_desired(session, id, fleet::DesiredState::kStopped);
}

int run_conn_rm(Session& session, const std::string& id) {
  const Status removed = connections_of(session).remove(id);
  if (!removed.ok()) return report_conn(removed);
  print_line(boost::json::serialize(boost::json::object{{"id", id}, {"removed", true}}));
  return kExitOk;
}

int run_conn_list(Session& session) {
  auto connections = connections_of(session).list();
  if (!connections.ok()) {
    return report(connections.status().with_context("cannot list connections"));
  }
  for (const fleet::Connection& c : *connections) print_line(connection_json(c));
  return kExitOk;
}

}  // namespace leasehold::cli
