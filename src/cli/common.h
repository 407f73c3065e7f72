// Shared pieces of the `leasehold` commands: exit codes, the store a command runs on,
// and the JSON lines the commands print.
//
// Every command follows one shape: validate all of its input (exit 2 on the
// first problem, before the store is even opened, so that a bad flag never
// creates a database file), open the store, do one thing, print JSON lines
// on stdout, and map the outcome onto the exit codes below. Messages for
// humans go to stderr. Nothing here is shared between threads except where
// noted.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "cli/lease_table.h"
#include "leasehold/clock.h"
#include "leasehold/lease.h"
#include "leasehold/logger.h"
#include "leasehold/status.h"
#include "leasehold/store.h"
#include "runtime/runtime.h"

namespace leasehold::cli {

// The exit codes of every command (docs/cli.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitStoreFailed = 1;  // the store failed; message on stderr
inline constexpr int kExitUsage = 2;        // bad usage or input; nothing was written
inline constexpr int kExitNotYours = 3;     // held by someone else, or no longer yours

// The runtime a command runs on (runtime/runtime.h), with the table the
// command uses (the CLI's lease table unless it says otherwise) required.
struct Context {
  std::unique_ptr<runtime::Runtime> runtime;
  TableSpec table = lease_table_spec();

  LeaseManager& leases() { return runtime->leases(); }
  ItemStore& store() { return runtime->store(); }
  Clock& clock() { return runtime->clock(); }
  Logger& logger() { return runtime->logger(); }
};

// Opens the runtime on the store at `uri`, logging to `logger`, and requires
// `table` (ItemStore::require_table: created on SQLite, never on DynamoDB).
// kInvalidArgument for a malformed URI (nothing created); kNotFound, with
// what to do, if the table is missing; kUnavailable and others otherwise.
// REQUIRES: `logger` outlives the context.
Result<Context> open_context(std::string_view uri, Logger& logger,
                             TableSpec table = lease_table_spec());

// The exit code for a failed operation: kAlreadyExists and
// kFailedPrecondition are kExitNotYours, kInvalidArgument is kExitUsage, the
// rest kExitStoreFailed.
int exit_code_for(const Status& status);

// Prints "leasehold: MESSAGE" on stderr and returns exit_code_for(status).
// REQUIRES: !status.ok().
int report(const Status& status);

// A lease this process just acquired or renewed, as one JSON line:
// key, slot, owner, token, epoch, acquired_at_ms, expires_at_ms[, holder].
std::string lease_json(const Lease& lease);

// What the store says about a slot: the fields of lease_json() plus
// heartbeat_at_ms and held. `with_token` false leaves out the token (for
// output shown to someone who does not hold the lease).
std::string view_json(const LeaseView& view, bool with_token = true);

// Writes `line` and a newline to stdout and flushes, so that a reader on a
// pipe sees it before this process does anything else.
void print_line(const std::string& line);

// After an operation failed with `status`: if it says the lease belongs to
// someone else (or to nobody any more), prints the slot's current holder on
// stdout when one is known. Reports `status` on stderr and returns its exit
// code.
int report_not_yours(Context& ctx, const Key& key, std::string_view slot, const Status& status);

}  // namespace leasehold::cli
