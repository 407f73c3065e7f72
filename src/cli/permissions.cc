#include "cli/permissions.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <string>
#include <vector>

#include "aws/actions.h"

namespace leasehold::cli {
namespace {

// The store's item operations (the DynamoDB backend's GetItem, BatchGetItem,
// PutItem, UpdateItem, DeleteItem and Query of an index), and the
// DescribeTable that reads a table's schema once.
constexpr Permission kItems[] = {
    {"dynamodb:DescribeTable", "tables"}, {"dynamodb:GetItem", "tables"},
    {"dynamodb:BatchGetItem", "tables"},  {"dynamodb:PutItem", "tables"},
    {"dynamodb:UpdateItem", "tables"},    {"dynamodb:DeleteItem", "tables"},
    {"dynamodb:Query", "indexes"},
};

// The stream fleet's change feed of the connections table (a worker with a
// session reads it).
constexpr Permission kFeed[] = {
    {"dynamodb:DescribeStream", "streams"},
    {"dynamodb:GetShardIterator", "streams"},
    {"dynamodb:GetRecords", "streams"},
};

// The movie service, in `serve` and in `trace-worker` alike (both run its
// probe workers, which finish removals, and its sweep): a movie's rows
// (queried by partition), its job queues on SQS and its files on S3.
constexpr Permission kMovies[] = {
    {"dynamodb:Query", "tables"},    {"sqs:GetQueueUrl", "queues"},
    {"sqs:SendMessage", "queues"},   {"sqs:ReceiveMessage", "queues"},
    {"sqs:DeleteMessage", "queues"}, {"sqs:ChangeMessageVisibility", "queues"},
    {"s3:GetObject", "objects"},     {"s3:PutObject", "objects"},
    {"s3:DeleteObject", "objects"},  {"s3:AbortMultipartUpload", "objects"},
    {"s3:ListBucket", "bucket"},
};

// `serve` makes the tables it uses if they are missing, with their indexes and
// the connections table's stream; ListStreams asks an emulator whether it has
// streams at all (never sent to AWS's own endpoint).
constexpr Permission kServeIfMissing[] = {
    {"dynamodb:CreateTable", "tables"},
    {"dynamodb:UpdateTable", "tables"},
    {"dynamodb:ListStreams", "streams"},
};

template <size_t... N>
constexpr std::array<Permission, (N + ...)> join(const Permission (&... lists)[N]) {
  std::array<Permission, (N + ...)> out{};
  auto next = out.begin();
  ((next = std::copy(std::begin(lists), std::end(lists), next)), ...);
  return out;
}

constexpr auto kWorker = join(kItems, kFeed);
constexpr auto kServe = join(kItems, kMovies);
constexpr auto kTraceWorker = join(kItems, kMovies);

constexpr std::array<std::string_view, 3> kProcesses = {"worker", "serve", "trace-worker"};

}  // namespace

std::span<const std::string_view> role_processes() { return kProcesses; }

std::span<const Permission> process_permissions(std::string_view process) {
  if (process == "worker") return kWorker;
  if (process == "serve") return kServe;
  if (process == "trace-worker") return kTraceWorker;
  return {};
}

std::span<const Permission> process_permissions_if_missing(std::string_view process) {
  if (process == "serve") return kServeIfMissing;
  return {};
}

void limit_to_process_permissions(std::string_view process) {
  assert(!process_permissions(process).empty() && "a process with a role of its own");
  std::vector<std::string> actions;
  for (const auto list : {process_permissions(process), process_permissions_if_missing(process)}) {
    for (const Permission& p : list) actions.emplace_back(p.action);
  }
  aws::limit_actions(std::move(actions));
}

}  // namespace leasehold::cli
