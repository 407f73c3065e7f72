#include "cli/store_commands.h"

#include <boost/json.hpp>
#include <map>
#include <span>

#include "accounts/accounts.h"
#include "cli/common.h"
#include "cli/lease_table.h"
#include "cli/permissions.h"
#include "cli/trace_worker_command.h"
#include "fleet/members.h"
#include "fleet/schema.h"
#include "leasehold/queue.h"
#include "movies/schema.h"
#include "movies/service.h"
#include "runtime/runtime.h"
#include "sqs/sqs_queue.h"
#include "store/dynamodb/dynamodb_store.h"

namespace leasehold::cli {

namespace json = boost::json;

std::vector<TableSpec> store_tables() {
  std::vector<TableSpec> specs = {lease_table_spec(), fleet::connections_table_spec(),
                                  fleet::workers_table_spec(), accounts::Accounts::table_spec(),
                                  StoreQueue::table_spec()};
  for (TableSpec& spec : movies::movie_table_specs()) specs.push_back(std::move(spec));
  return specs;
}

int run_store_init(const std::string& store_uri, const std::string& queue_flag, Logger& logger) {
  // The queue is checked before anything is made.
  const Result<std::string> queue = queue_uri(queue_flag);
  if (!queue.ok()) return report(queue.status());
  runtime::RuntimeOptions options;
  options.store_uri = store_uri;
  options.logger = &logger;
  auto runtime = runtime::Runtime::open(std::move(options));
  if (!runtime.ok()) return report(runtime.status());
  ItemStore& store = (*runtime)->store();
  for (const TableSpec& spec : store_tables()) {
    const Status ensured = store.ensure_table(spec);
    if (!ensured.ok())
      return report(ensured.with_context("cannot create table '" + spec.name + "'"));
    print_line(json::serialize(
        json::object{{"table", spec.name}, {"indexes", spec.indexes.size()}, {"status", "ready"}}));
  }
  if (!queue->empty()) {
    const Status created = movies::create_sqs_job_queues(*queue);
    if (!created.ok()) return report(created.with_context("cannot create the SQS job queues"));
    const sqs::SqsQueueOptions parsed = *sqs::parse_sqs_uri(*queue);
    for (std::string_view kind : {movies::kTraceQueueName, movies::kProbeQueueName}) {
      const std::string name = movies::sqs_job_queue_name(parsed.queue_name, kind);
      print_line(json::serialize(
          json::object{{"queue", name}, {"dead_letters", name + "-dead"}, {"status", "ready"}}));
    }
  }
  return kExitOk;
}

namespace {

json::array permissions_json(std::span<const Permission> permissions) {
  json::array out;
  for (const Permission& p : permissions) out.push_back({{"action", p.action}, {"on", p.on}});
  return out;
}

// The schema as text: a table's keys, indexes and stream, a queue's
// dead-letter queue, a process's actions on each kind of resource.
void print_schema_text(const json::array& tables, const json::array& queues,
                       const json::object& processes) {
  const auto keys = [](const json::value& schema) {
    std::string out;
    for (const json::value& k : schema.as_array()) {
      if (!out.empty()) out += ", ";
      out += std::string(k.at("AttributeName").as_string()) + " (" +
             (k.at("KeyType") == "HASH" ? "partition" : "sort") + ")";
    }
    return out;
  };
  for (const json::value& t : tables) {
    const json::object& table = t.as_object();
    print_line("table " + std::string(table.at("TableName").as_string()) + ": " +
               keys(table.at("KeySchema")));
    if (const json::value* gsis = table.if_contains("GlobalSecondaryIndexes")) {
      for (const json::value& g : gsis->as_array()) {
        const json::object& projection = g.at("Projection").as_object();
        std::string projected(projection.at("ProjectionType").as_string());
        if (const json::value* attrs = projection.if_contains("NonKeyAttributes")) {
          projected += " " + json::serialize(*attrs);
        }
        print_line("  index " + std::string(g.at("IndexName").as_string()) + ": " +
                   keys(g.at("KeySchema")) + "; projects " + projected);
      }
    }
    if (const json::value* stream = table.if_contains("StreamSpecification")) {
      print_line("  stream " + std::string(stream->at("StreamViewType").as_string()));
    }
  }
  for (const json::value& q : queues) {
    print_line("queue NAME-" + std::string(q.at("name").as_string()) + ": dead letters to NAME-" +
               std::string(q.at("dead_letter_queue").as_string()) + " after " +
               std::to_string(q.at("max_receive_count").as_int64()) + " deliveries");
  }
  for (const auto& [process, permissions] : processes) {
    std::map<std::string, std::string> by_resource;
    for (const json::value& p : permissions.as_array()) {
      std::string& actions = by_resource[std::string(p.at("on").as_string())];
      if (!actions.empty()) actions += " ";
      actions += p.at("action").as_string();
    }
    for (const auto& [on, actions] : by_resource) {
      print_line(std::string(process) + " on " + on + ": " + actions);
    }
  }
}

}  // namespace

int run_store_schema(bool json_out) {
  json::array tables;
  for (const TableSpec& spec : store_tables()) {
    const Result<std::string> request = store::dynamodb::create_table_request(spec, spec.name);
    if (!request.ok()) return report(request.status().with_context("table '" + spec.name + "'"));
    tables.push_back(json::parse(*request));
  }
  json::array queues;
  for (const movies::SqsJobQueueSpec& q : movies::sqs_job_queue_specs()) {
    queues.push_back({{"name", q.name},
                      {"dead_letter_queue", q.dead_letter_name},
                      {"max_receive_count", q.max_receives},
                      {"dead_letter_retention_seconds", q.dead_letter_retention_seconds}});
  }
  json::object processes, if_missing;
  for (std::string_view process : role_processes()) {
    processes[process] = permissions_json(process_permissions(process));
    if (!process_permissions_if_missing(process).empty()) {
      if_missing[process] = permissions_json(process_permissions_if_missing(process));
    }
  }
  if (!json_out) {
    print_schema_text(tables, queues, processes);
    return kExitOk;
  }
  print_line(json::serialize(json::object{{"tables", std::move(tables)},
                                          {"queues", std::move(queues)},
                                          {"processes", std::move(processes)},
                                          {"processes_if_missing", std::move(if_missing)}}));
  return kExitOk;
}

}  // namespace leasehold::cli
