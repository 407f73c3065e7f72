#include "cli/lease_commands.h"

#include <iostream>

#include "cli/lease_table.h"
#include "cli/validate.h"

namespace leasehold::cli {

Result<AcquireRequest> make_acquire(const LeaseArgs& args) {
  LEASEHOLD_RETURN_IF_ERROR(check_key(args.key));
  LEASEHOLD_RETURN_IF_ERROR(check_owner(args.owner));
  LEASEHOLD_RETURN_IF_ERROR(check_holder(args.holder));
  LEASEHOLD_RETURN_IF_ERROR(check_slot(args.slot));
  LEASEHOLD_ASSIGN_OR_RETURN(const Duration ttl, parse_ttl(args.ttl));
  AcquireRequest request;
  request.key = Key{args.key, ""};
  request.options.owner = args.owner;
  request.options.holder = args.holder;
  request.options.slot = args.slot;
  request.options.ttl = ttl;
  request.options.extra_update.set(std::string(kLeaseKindAttr), std::string(kLeaseKindValue));
  return request;
}

namespace {
// The lease named by KEY, --owner, --token and --slot (renew and release).
Result<LeaseRef> make_ref(const LeaseArgs& args) {
  LEASEHOLD_RETURN_IF_ERROR(check_key(args.key));
  LEASEHOLD_RETURN_IF_ERROR(check_owner(args.owner));
  LEASEHOLD_RETURN_IF_ERROR(check_token(args.token));
  LEASEHOLD_RETURN_IF_ERROR(check_slot(args.slot));
  return LeaseRef{Key{args.key, ""}, args.slot, args.owner, args.token};
}
}  // namespace

Result<RenewRequest> make_renew(const LeaseArgs& args) {
  LEASEHOLD_ASSIGN_OR_RETURN(LeaseRef ref, make_ref(args));
  LEASEHOLD_ASSIGN_OR_RETURN(const Duration ttl, parse_ttl(args.ttl));
  return RenewRequest{std::move(ref), ttl};
}

Result<ReleaseRequest> make_release(const LeaseArgs& args) {
  LEASEHOLD_ASSIGN_OR_RETURN(LeaseRef ref, make_ref(args));
  LEASEHOLD_ASSIGN_OR_RETURN(const ReleaseMode mode, parse_mode(args.mode));
  return ReleaseRequest{std::move(ref), mode};
}

Result<ShowRequest> make_show(const LeaseArgs& args) {
  LEASEHOLD_RETURN_IF_ERROR(check_key(args.key));
  LEASEHOLD_RETURN_IF_ERROR(check_slot(args.slot));
  return ShowRequest{Key{args.key, ""}, args.slot};
}

Result<ListFilter> make_list(const LeaseArgs& args) {
  if (args.held_only && args.expired_only) {
    return invalid_argument("--held and --expired exclude each other");
  }
  if (args.held_only) return ListFilter::kHeld;
  if (args.expired_only) return ListFilter::kExpired;
  return ListFilter::kAll;
}

int run_acquire(Context& ctx, const AcquireRequest& request) {
  auto lease = ctx.leases().acquire(request.key, request.options);
  if (!lease.ok()) {
    return report_not_yours(ctx, request.key, request.options.slot, lease.status());
  }
  print_line(lease_json(*lease));
  return kExitOk;
}

int run_renew(Context& ctx, const RenewRequest& request) {
  auto lease = ctx.leases().renew(request.ref, request.ttl);
  if (!lease.ok()) {
    return report_not_yours(ctx, request.ref.key, request.ref.slot, lease.status());
  }
  print_line(lease_json(*lease));
  return kExitOk;
}

int run_release(Context& ctx, const ReleaseRequest& request) {
  const Status released = ctx.leases().release(request.ref, request.mode);
  if (!released.ok()) {
    return report_not_yours(ctx, request.ref.key, request.ref.slot, released);
  }
  return kExitOk;
}

int run_show(Context& ctx, const ShowRequest& request) {
  auto view = ctx.leases().inspect(request.key, request.slot);
  // A slot without an owner (never acquired, or released with --mode clear)
  // has no lease to show; that is "not yours" rather than success, so that
  // `show` exits 0 exactly when it printed a lease.
  if ((view.ok() && view->owner.empty()) || view.status().code() == Code::kNotFound) {
    std::cerr << "leasehold: no lease on '" << request.key.pk << "' (slot " << request.slot
              << ")\n";
    return kExitNotYours;
  }
  if (!view.ok()) return report(view.status());
  print_line(view_json(*view));
  return kExitOk;
}

int run_list(Context& ctx, ListFilter filter) {
  const int64_t now_ms = to_unix_ms(ctx.clock().wall_now());
  KeyRange range = KeyRange::all();
  if (filter == ListFilter::kHeld) range = KeyRange::gt(now_ms);
  if (filter == ListFilter::kExpired) range = KeyRange::le(now_ms);
  QueryOptions query;
  query.limit = kQueryLimitMax;
  do {
    auto page =
        ctx.store().query_index(ctx.table.name, kLeaseIndex, kLeaseKindValue, range, query);
    if (!page.ok()) return report(page.status().with_context("cannot list leases"));
    for (const Item& item : page->items) {
      const std::string* pk = get_string(item, ctx.table.pk_attr);
      if (pk == nullptr) continue;
      LeaseView view = ctx.leases().view_of(item, Key{*pk, ""}, kDefaultSlot);
      // Judged at the same instant as the filter, so the two never disagree.
      view.held = !view.owner.empty() && view.expires_at_ms > now_ms;
      print_line(view_json(view));
    }
    if (!page->next_cursor.empty() && page->next_cursor == query.cursor) {
      return report(internal_error("the store returned the same page cursor twice"));
    }
    query.cursor = page->next_cursor;
  } while (!query.cursor.empty());
  return kExitOk;
}

}  // namespace leasehold::cli
