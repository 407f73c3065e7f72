// The DynamoDB Local of a test binary, and stores on it, shared by the files
// of dynamodb_local_tests (the conformance suites, the change feed): one
// JVM per binary, started on first use and kept until the process exits,
// since it takes seconds to start. Each store gets a table prefix of its
// own, so that tests never see each other's tables. Safe to call from any
// thread.
#pragma once

#include <memory>

#include "leasehold/store.h"
#include "store/dynamodb/dynamodb_store.h"
#include "tests/dynamodb/dynamodb_local_fixture.h"

namespace leasehold::testing {

// The binary's DynamoDB Local; null, with a test failure, if it did not
// start.
const DynamoDbLocal* shared_dynamodb_local();

// The options of a store on `server`, with a fresh table prefix: stores
// opened with the same options share their tables.
store::dynamodb::DynamoDbOptions dynamodb_local_options(const DynamoDbLocal& server);

// A store on the binary's DynamoDB Local, with a fresh table prefix;
// kUnavailable if the server did not start.
Result<std::unique_ptr<ItemStore>> open_on_dynamodb_local();

}  // namespace leasehold::testing
