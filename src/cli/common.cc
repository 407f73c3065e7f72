#include "cli/common.h"

#include <boost/json.hpp>
#include <cstdio>
#include <iostream>

namespace leasehold::cli {

Result<Context> open_context(std::string_view uri, Logger& logger, TableSpec table) {
  Context ctx;
  ctx.table = std::move(table);
  runtime::RuntimeOptions options;
  options.store_uri = std::string(uri);
  options.logger = &logger;
  options.lease.table = std::string(kLeaseTable);
  LEASEHOLD_ASSIGN_OR_RETURN(ctx.runtime, runtime::Runtime::open(std::move(options)));
  const Status ready = ctx.store().require_table(ctx.table);
  if (ready.code() == Code::kNotFound) {
    return Status(Code::kNotFound, ready.message() + " in '" + std::string(uri) +
                                       "': create the tables with `leasehold store init` (once, " +
                                       "with the same --store)");
  }
  if (!ready.ok()) {
    return ready.with_context("cannot use table '" + ctx.table.name + "' in '" +
                              std::string(uri) + "'");
  }
  return ctx;
}

int exit_code_for(const Status& status) {
  switch (status.code()) {
    case Code::kOk:
      return kExitOk;
    case Code::kAlreadyExists:
    case Code::kFailedPrecondition:
      return kExitNotYours;
    case Code::kInvalidArgument:
      return kExitUsage;
    default:
      return kExitStoreFailed;
  }
}

int report(const Status& status) {
  std::cerr << "leasehold: " << status.message() << "\n";
  return exit_code_for(status);
}

namespace {

boost::json::object common_fields(const Key& key, std::string_view slot, std::string_view owner,
                                  std::string_view token, int64_t epoch, int64_t acquired_at_ms) {
  boost::json::object o;
  o["key"] = key.pk;
  o["slot"] = slot;
  o["owner"] = owner;
  o["token"] = token;
  o["epoch"] = epoch;
  o["acquired_at_ms"] = acquired_at_ms;
  return o;
}

}  // namespace

std::string lease_json(const Lease& lease) {
  boost::json::object o = common_fields(lease.key, lease.slot, lease.owner, lease.token,
                                        lease.epoch, lease.acquired_at_ms);
  o["expires_at_ms"] = lease.expires_at_ms;
  if (!lease.holder.empty()) o["holder"] = lease.holder;
  return boost::json::serialize(o);
}

std::string view_json(const LeaseView& view, bool with_token) {
  boost::json::object o =
      common_fields(view.key, view.slot, view.owner, view.token, view.epoch, view.acquired_at_ms);
  if (!with_token) o.erase("token");
  o["heartbeat_at_ms"] = view.heartbeat_at_ms;
  o["expires_at_ms"] = view.expires_at_ms;
  if (!view.holder.empty()) o["holder"] = view.holder;
  o["held"] = view.held;
  return boost::json::serialize(o);
}

void print_line(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

int report_not_yours(Context& ctx, const Key& key, std::string_view slot,
                     const Status& status) {
  if (exit_code_for(status) == kExitNotYours) {
    // The holder is read after the refusal, so it may have changed since;
    // it is shown to help a human or a script decide what to do next. The
    // token is left out: it is the holder's capability, not the contender's.
    auto view = ctx.leases().inspect(key, slot);
    if (view.ok() && !view->owner.empty()) print_line(view_json(*view, /*with_token=*/false));
  }
  return report(status);
}

}  // namespace leasehold::cli
