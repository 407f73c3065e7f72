// The `leasehold lease ...` commands other than `hold` (see hold.h).
//
// Each command comes in two halves: make_*() turns the raw flags into a
// validated request without touching any store (so bad input exits 2 and
// creates nothing), and run_*() carries the request out on an open Context
// and returns the process exit code (common.h). Output goes to stdout as one
// JSON object per line; messages go to stderr.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/common.h"
#include "leasehold/lease.h"

namespace leasehold::cli {

// The flags of every `lease` subcommand, as CLI11 parsed them. Each
// subcommand reads the ones it declares.
struct LeaseArgs {
  std::string key;
  std::string owner;
  std::string holder;
  std::string token;
  std::string slot = std::string(kDefaultSlot);
  std::string ttl = "20s";
  std::string mode = "expire";
  std::optional<std::string> grace;  // nullopt: not given (lease hold picks one)
  bool held_only = false;
  bool expired_only = false;
  std::vector<std::string> command;
};

struct AcquireRequest {
  Key key;
  AcquireOptions options;  // carries kind = "lease" so that `list` finds it
};
struct RenewRequest {
  LeaseRef ref;
  Duration ttl{};
};
struct ReleaseRequest {
  LeaseRef ref;
  ReleaseMode mode = ReleaseMode::kExpire;
};
struct ShowRequest {
  Key key;
  std::string slot;
};
enum class ListFilter { kAll, kHeld, kExpired };

Result<AcquireRequest> make_acquire(const LeaseArgs& args);
Result<RenewRequest> make_renew(const LeaseArgs& args);
Result<ReleaseRequest> make_release(const LeaseArgs& args);
Result<ShowRequest> make_show(const LeaseArgs& args);
Result<ListFilter> make_list(const LeaseArgs& args);

// Prints the new lease; exit 3 with the holder if the slot is held.
int run_acquire(Context& ctx, const AcquireRequest& request);
// Prints the renewed lease; exit 3 with the holder if the token is stale.
int run_renew(Context& ctx, const RenewRequest& request);
// Prints nothing; exit 3 with the holder if the token is stale.
int run_release(Context& ctx, const ReleaseRequest& request);
// Prints the slot as stored; exit 3 if the slot has no owner at all.
int run_show(Context& ctx, const ShowRequest& request);
// Prints every lease of slot "lease" in the table, by expiry, one per line.
int run_list(Context& ctx, ListFilter filter);

}  // namespace leasehold::cli
