// The IAM actions a process sends, held to the list its role grants.
//
// Every AWS request here names the IAM action that authorises it
// ("dynamodb:GetItem", "sqs:ReceiveMessage", "s3:GetObject") and asks
// check_action() before it is sent. A process that runs with a role of its
// own (`worker`, `serve`, `trace-worker`: cli/permissions.h) calls
// limit_actions() once at start with the actions its role grants; from then
// on a request for any other action is refused before it is sent, as the
// role's policy would refuse it, but saying that leasehold, not the
// deployment, is wrong. So every test that runs those processes holds the
// code to the list the deployment's policies are written from
// (deploy/aws), and each action sent is counted for /metrics. A process
// that never calls limit_actions() (the operator's commands, the tests of
// the libraries) may send anything.
//
// Thread-safe; limit_actions() must run before any request is sent.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "leasehold/status.h"

namespace leasehold::aws {

// The IAM action that authorises the operation `op` of `service` ("sqs",
// "dynamodb"; S3 names its actions at each call): "<service>:<op>", but for
// SQS's batch operations, which IAM authorises by their single action
// (ChangeMessageVisibilityBatch by sqs:ChangeMessageVisibility).
std::string iam_action(std::string_view service, std::string_view op);

// From now on, only `allowed` (IAM actions) may be sent by this process.
// REQUIRES: called once, before the first request.
void limit_actions(std::vector<std::string> allowed);

// OK if `action` may be sent, and counts it; else kPermissionDenied, naming
// it as a bug: the process's list (cli/permissions.cc) lacks it.
Status check_action(std::string_view action);

// Each allowed action and how many requests for it were sent (each attempt
// of a retried request counts once); empty unless limit_actions() ran.
std::vector<std::pair<std::string, uint64_t>> actions_sent();

namespace internal {
// Lifts the limit, so that a test may set another (the unit tests of other
// suites may share the process). REQUIRES: no other thread is in
// check_action() or actions_sent().
void forget_limit_for_test();
}  // namespace internal

}  // namespace leasehold::aws
