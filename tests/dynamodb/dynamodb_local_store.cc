// The shared DynamoDB Local and stores on it; see dynamodb_local_store.h.
#include "tests/dynamodb/dynamodb_local_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>

namespace leasehold::testing {

const DynamoDbLocal* shared_dynamodb_local() {
  static const std::unique_ptr<DynamoDbLocal> server = [] {
    auto started = DynamoDbLocal::start();
    if (!started.ok()) {
      ADD_FAILURE() << "DynamoDB Local: " << started.status().to_string();
      return std::unique_ptr<DynamoDbLocal>();
    }
    return std::move(started).value();
  }();
  return server.get();
}

store::dynamodb::DynamoDbOptions dynamodb_local_options(const DynamoDbLocal& server) {
  static std::atomic<int> next_prefix{0};
  store::dynamodb::DynamoDbOptions options;
  options.region = "us-east-1";
  options.table_prefix = "l" + std::to_string(next_prefix++) + "_";
  options.endpoint = server.endpoint();
  options.credentials = {"AKIDDYNAMODBLOCAL", "dynamodb-local-does-not-check-secrets", ""};
  options.table_active_timeout = std::chrono::seconds(10);
  return options;
}

Result<std::unique_ptr<ItemStore>> open_on_dynamodb_local() {
  const DynamoDbLocal* server = shared_dynamodb_local();
  if (server == nullptr) return unavailable("DynamoDB Local did not start");
  return store::dynamodb::open_dynamodb_store(dynamodb_local_options(*server));
}

}  // namespace leasehold::testing
