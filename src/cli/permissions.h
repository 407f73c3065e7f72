// What each long-running process sends to AWS, and on which resources: the
// one list the deployment's task roles are written from (deploy/aws, checked
// against `leasehold store schema --json` by tests/deploy/), and that every
// test running those processes holds the code to (aws/actions.h: a request
// for an action not listed here is refused before it is sent).
#pragma once

#include <span>
#include <string_view>

namespace leasehold::cli {

struct Permission {
  std::string_view action;  // the IAM action: "dynamodb:GetItem"
  // The resources it is sent to, as a policy names them:
  //   tables   every table `store init` makes (PREFIX<name>)
  //   indexes  their indexes (PREFIX<name>/index/*)
  //   streams  their streams (PREFIX<name>/stream/*)
  //   queues   the SQS job queues and their dead-letter queues (NAME-movie-*)
  //   objects  the movie files (BUCKET/MEDIA*)
  //   bucket   the bucket itself (s3:ListBucket: without it S3 answers 403,
  //            not 404, for a key that does not exist)
  std::string_view on;
};

// The processes with a role of their own: "worker", "serve", "trace-worker".
std::span<const std::string_view> role_processes();

// What `process` sends where everything it uses exists: its role grants
// exactly these. Empty for a process that is not one of role_processes().
std::span<const Permission> process_permissions(std::string_view process);

// What `process` sends besides, only where a deployment left something
// undone: `serve` creates the tables that are missing (a deployment that
// made them, as deploy/aws does, does not grant these).
std::span<const Permission> process_permissions_if_missing(std::string_view process);

// aws::limit_actions() to both lists of `process`.
// REQUIRES: `process` is one of role_processes(); called before any request.
void limit_to_process_permissions(std::string_view process);

}  // namespace leasehold::cli
