#include "cli/store_commands.h"

#include <boost/json.hpp>

#include "accounts/accounts.h"
#include "cli/common.h"
#include "cli/lease_table.h"
#include "cli/trace_worker_command.h"
#include "fleet/members.h"
#include "fleet/schema.h"
#include "leasehold/queue.h"
#include "movies/schema.h"
#include "movies/service.h"
#include "runtime/runtime.h"
#include "sqs/sqs_queue.h"

namespace leasehold::cli {

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
    print_line(boost::json::serialize(boost::json::object{
        {"table", spec.name}, {"indexes", spec.indexes.size()}, {"status", "ready"}}));
  }
  if (!queue->empty()) {
    const Status created = movies::create_sqs_job_queues(*queue);
    if (!created.ok()) return report(created.with_context("cannot create the SQS job queues"));
    const sqs::SqsQueueOptions parsed = *sqs::parse_sqs_uri(*queue);
    for (std::string_view kind : {movies::kTraceQueueName, movies::kProbeQueueName}) {
      const std::string name = movies::sqs_job_queue_name(parsed.queue_name, kind);
      print_line(boost::json::serialize(boost::json::object{
          {"queue", name}, {"dead_letters", name + "-dead"}, {"status", "ready"}}));
    }
  }
  return kExitOk;
}

}  // namespace leasehold::cli
