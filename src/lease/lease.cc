#include "leasehold/lease.h"

#include <cassert>
#include <map>

#include "base/logging.h"
#include "base/mutex.h"
#include "base/text.h"

namespace leasehold {
namespace {

using std::chrono::milliseconds;

// The shortest validity window worth holding a lease for: enough for a few
// renewals to be tried before the holder must stop.
constexpr Duration kValidityMin = milliseconds(300);

Status validate_slot(std::string_view slot) {
  const bool ok =
      !slot.empty() && slot.size() <= 32 && slot[0] >= 'a' && slot[0] <= 'z' &&
      slot.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string_view::npos;
  if (!ok)
    return invalid_argument("slot '" + std::string(slot) + "' must match [a-z][a-z0-9_]{0,31}");
  return {};
}

Status validate_token(std::string_view token) {
  if (!is_well_formed_token(token)) {
    return invalid_argument("malformed token (expected 32 lowercase hex digits)");
  }
  return {};
}

Status validate_ref(const LeaseRef& ref) {
  LEASEHOLD_RETURN_IF_ERROR(validate_slot(ref.slot));
  LEASEHOLD_RETURN_IF_ERROR(validate_text("owner", ref.owner, kOwnerBytesMax, false));
  return validate_token(ref.token);
}

std::string describe_key(const Key& key, std::string_view slot) {
  return "'" + key.pk + (key.sk.empty() ? "" : "/" + key.sk) + "' (slot " + std::string(slot) + ")";
}

// The condition under which slot `names` may be taken at wall time `now_ms`:
// nobody holds it, or the holder's lease has expired (a released lease has
// expires_at 0).
Condition acquirable(const SlotNames& names, int64_t now_ms) {
  return cond::not_exists(names.owner) || cond::lt(names.expires_at_ms, now_ms);
}

// The slot is still the holder's: its owner and its token. The owner is
// checked because a token-less writer takes a lease by setting only the owner
// and the expiry, leaving the old token in place.
Condition still_mine(const SlotNames& n, const std::string& owner, const std::string& token) {
  return cond::eq(n.owner, owner) && cond::eq(n.token, token);
}

bool is_mine(const Item& item, const SlotNames& n, std::string_view owner, std::string_view token) {
  const std::string* o = get_string(item, n.owner);
  const std::string* t = get_string(item, n.token);
  return o != nullptr && t != nullptr && *o == owner && *t == token;
}

// Mine and, if unexpired_at_ms is not 0, not expired at that wall time: a
// lease held elsewhere (a browser's) has no local deadline to check, so the
// write checks its expiry.
Condition held_by(const SlotNames& n, const LeaseRef& ref, int64_t unexpired_at_ms) {
  Condition c = still_mine(n, ref.owner, ref.token);
  if (unexpired_at_ms != 0) c = std::move(c) && cond::gt(n.expires_at_ms, unexpired_at_ms);
  return c;
}

bool is_held_by(const Item& item, const SlotNames& n, const LeaseRef& ref,
                int64_t unexpired_at_ms) {
  if (!is_mine(item, n, ref.owner, ref.token)) return false;
  return unexpired_at_ms == 0 || get_int_or(item, n.expires_at_ms) > unexpired_at_ms;
}

LeaseRef ref_of(const Lease& lease) { return {lease.key, lease.slot, lease.owner, lease.token}; }

// `what_then` says what became of the request, when it says anything.
Status past_deadline(const Key& key, std::string_view slot, std::string_view what_then = "") {
  return failed_precondition("lease on " + describe_key(key, slot) + " is past its local deadline" +
                             std::string(what_then));
}

Status no_longer_yours(const Key& key, std::string_view slot) {
  return failed_precondition("lease on " + describe_key(key, slot) +
                             " is no longer yours (taken over, released or expired)");
}

// A write that got no answer, and what reading the item back decided. The
// caller sees only the decision; operators want to know how often the store
// leaves outcomes unknown. Rare, so built only when the logger wants it.
void log_read_back(Logger* log, std::string_view op, const Key& key, std::string_view slot,
                   const Status& decided) {
  if (log == nullptr || !log->enabled(LogLevel::kInfo)) return;
  log_to(log, LogLevel::kInfo, "no answer from the store to {} {}; read back: {}", op,
         describe_key(key, slot), decided.ok() ? "it applied" : decided.message());
}

// What a read-back says of a renewal that got no answer: it applied (ok), or
// why not. `what` names the renewal.
Status renewal_outcome(const Result<Item>& item, const SlotNames& n, const LeaseRef& ref,
                       int64_t expires_at_ms, const std::string& what) {
  if (!item.ok()) return unavailable(what + ": outcome unknown and the read-back failed");
  if (!is_mine(*item, n, ref.owner, ref.token)) return no_longer_yours(ref.key, ref.slot);
  if (get_int_or(*item, n.expires_at_ms) != expires_at_ms) {
    return unavailable(what + ": the renewal did not apply; retry");
  }
  return {};
}

// What a read-back says of a release that got no answer: done (ok), or why
// not. A slot no longer ours, or ours with expiry 0, needs nothing more.
// With an extra update the release counts as done only if it is seen to have
// applied (the slot still ours, expired), since then so has the update.
Status release_outcome(const Result<Item>& item, const SlotNames& n, const LeaseRef& ref,
                       bool with_update) {
  if (!item.ok()) return unavailable("release has an unknown outcome and the read-back failed");
  const bool mine = is_mine(*item, n, ref.owner, ref.token);
  const bool still_live = mine && get_int_or(*item, n.expires_at_ms) != 0;
  if (still_live) return unavailable("release did not apply; retry");
  if (with_update && !mine) {
    return failed_precondition("lease on " + describe_key(ref.key, ref.slot) +
                               " was taken over; the release's update may not have applied");
  }
  return {};
}

// Removes every field of the slot but its epoch, which must never go back.
void clear_slot(const SlotNames& n, Update& update) {
  for (const std::string* attr : {&n.owner, &n.token, &n.acquired_at_ms, &n.heartbeat_at_ms,
                                  &n.expires_at_ms, &n.holder, &n.session}) {
    update.remove(*attr);
  }
}

}  // namespace

SlotNames::SlotNames(std::string_view slot)
    : owner(std::string(slot) + "_owner"),
      token(std::string(slot) + "_token"),
      epoch(std::string(slot) + "_epoch"),
      acquired_at_ms(std::string(slot) + "_acquired_at_ms"),
      heartbeat_at_ms(std::string(slot) + "_heartbeat_at_ms"),
      expires_at_ms(std::string(slot) + "_expires_at_ms"),
      holder(std::string(slot) + "_holder"),
      session(std::string(slot) + "_session") {}

// The attribute names of each slot a manager has used, built once. Slots are
// few (a service names them in code); the bound guards against a caller that
// makes them up. Callers keep their own reference, so a cleared cache never
// pulls names from under them. Thread-safe.
class SlotNamesCache {
 public:
  std::shared_ptr<const SlotNames> get(std::string_view slot) {
    MutexLock lock(mu_);
    auto it = names_.find(slot);
    if (it == names_.end()) {
      if (names_.size() >= kCachedMax) names_.clear();
      it = names_.emplace(std::string(slot), std::make_shared<const SlotNames>(slot)).first;
    }
    return it->second;
  }

 private:
  static constexpr size_t kCachedMax = 64;

  Mutex mu_;
  std::map<std::string, std::shared_ptr<const SlotNames>, std::less<>> names_ GUARDED_BY(mu_);
};

LeaseManager::LeaseManager(ItemStore& store, Clock& clock, Random& random, LeaseConfig config)
    : store_(store),
      clock_(clock),
      random_(random),
      config_(std::move(config)),
      names_(std::make_unique<SlotNamesCache>()) {
  assert(config_.max_clock_skew >= Duration::zero());
  assert(config_.safety_margin >= Duration::zero());
}

LeaseManager::~LeaseManager() = default;

std::shared_ptr<const SlotNames> LeaseManager::names(std::string_view slot) {
  return names_->get(slot);
}

Duration validity(const LeaseConfig& config, Duration ttl) {
  return ttl - config.max_clock_skew - config.safety_margin;
}

Status check_timing(const LeaseConfig& config, Duration ttl, Duration renew_every) {
  if (config.max_clock_skew < Duration::zero()) {
    return invalid_argument("the clock-skew allowance must not be negative");
  }
  const Duration window = validity(config, ttl);
  if (window < kValidityMin) {
    const auto min_ttl = kValidityMin + config.max_clock_skew + config.safety_margin;
    return invalid_argument(
        "ttl " + std::to_string(to_ms(ttl)) + "ms is too short: after the " +
        std::to_string(to_ms(config.max_clock_skew)) + "ms clock-skew allowance and " +
        std::to_string(to_ms(config.safety_margin)) + "ms margin the holder could trust it for " +
        std::to_string(to_ms(window)) + "ms; use a ttl of at least " +
        std::to_string(to_ms(min_ttl)) + "ms");
  }
  if (renew_every <= Duration::zero() || renew_every * 2 > window) {
    return invalid_argument("renew period " + std::to_string(to_ms(renew_every)) +
                            "ms must fit at least twice into the " + std::to_string(to_ms(window)) +
                            "ms validity window of a " + std::to_string(to_ms(ttl)) + "ms ttl");
  }
  return {};
}

// A planted bug, built only with -DLEASEHOLD_PLANT=lease-overtrust, to show
// that the nemesis catches a holder that trusts its lease 1 s too long
// (docs/reliability.md). Zero in every other build.
#ifdef LEASEHOLD_PLANT_LEASE_OVERTRUST
constexpr Duration kPlantedOvertrust = std::chrono::seconds(1);
#else
constexpr Duration kPlantedOvertrust = Duration::zero();
#endif

Duration LeaseManager::validity(Duration ttl) const {
  return leasehold::validity(config_, ttl) + kPlantedOvertrust;
}

Duration default_renew_every(const LeaseConfig& config, Duration ttl) {
  return validity(config, ttl) / 3;
}

Duration LeaseManager::default_renew_every(Duration ttl) const {
  return leasehold::default_renew_every(config_, ttl);
}

Status LeaseManager::check_timing(Duration ttl, Duration renew_every) const {
  return leasehold::check_timing(config_, ttl, renew_every);
}

Result<Lease> LeaseManager::acquire(const Key& key, const AcquireOptions& o) {
  bool late = false;
  return acquire(key, o, &late);
}

Result<Lease> LeaseManager::acquire(const Key& key, const AcquireOptions& o, bool* late) {
  assert(late != nullptr);
  *late = false;
  LEASEHOLD_RETURN_IF_ERROR(validate_slot(o.slot));
  LEASEHOLD_RETURN_IF_ERROR(validate_text("owner", o.owner, kOwnerBytesMax, false));
  LEASEHOLD_RETURN_IF_ERROR(validate_text("holder", o.holder, kHolderBytesMax, true));
  LEASEHOLD_RETURN_IF_ERROR(check_timing(o.ttl, default_renew_every(o.ttl)));
  if (!o.token.empty()) LEASEHOLD_RETURN_IF_ERROR(validate_token(o.token));
  if (!o.session.empty()) LEASEHOLD_RETURN_IF_ERROR(validate_token(o.session));
  if (o.ended_session) {
    LEASEHOLD_RETURN_IF_ERROR(
        validate_text("session owner", o.ended_session->owner, kOwnerBytesMax, false));
    LEASEHOLD_RETURN_IF_ERROR(validate_token(o.ended_session->token));
  }

  const auto names_n = names(o.slot);
  const SlotNames& n = *names_n;
  Lease lease{key, o.slot,   o.owner, o.holder, o.token.empty() ? random_token(random_) : o.token,
              0,   0,        0,       0,        o.ttl,
              {},  o.session};
  const MonoTime sent = clock_.mono_now();
  lease.acquired_at_ms = to_unix_ms(clock_.wall_now());
  lease.heartbeat_at_ms = lease.acquired_at_ms;
  lease.expires_at_ms = lease.acquired_at_ms + to_ms(o.ttl);
  lease.valid_until = sent + validity(o.ttl);

  Update update;
  update.set(n.owner, o.owner)
      .set(n.token, lease.token)
      .set(n.acquired_at_ms, lease.acquired_at_ms)
      .set(n.heartbeat_at_ms, lease.acquired_at_ms)
      .set(n.expires_at_ms, lease.expires_at_ms)
      .add(n.epoch, 1);
  if (o.holder.empty())
    update.remove(n.holder);
  else
    update.set(n.holder, o.holder);
  if (o.session.empty())
    update.remove(n.session);
  else
    update.set(n.session, o.session);
  update.append(o.extra_update);
  Condition free = acquirable(n, lease.acquired_at_ms);
  if (o.ended_session) {
    free = std::move(free) || (cond::eq(n.owner, o.ended_session->owner) &&
                               cond::eq(n.session, o.ended_session->token));
  }
  const Condition condition = std::move(free) && o.extra_condition;

  Result<Item> written = store_.update(config_.table, key, update, condition);
  if (written.ok()) {
    lease.epoch = get_int_or(*written, n.epoch);
    assert(lease.epoch >= 1);
    Result<Lease> in_time = check_acquired_in_time(std::move(lease));
    *late = in_time.status().code() == Code::kDeadlineExceeded;
    return in_time;
  }
  switch (written.status().code()) {
    case Code::kConditionFailed:
      return already_exists("lease on " + describe_key(key, o.slot) + " is held by another owner");
    case Code::kUnknownOutcome: {
      Result<Lease> resolved = resolve_acquire(key, lease);
      log_read_back(config_.info_log, "acquire", key, o.slot, resolved.status());
      if (!resolved.ok()) {
        *late = true;
        return resolved.status();
      }
      Result<Lease> in_time = check_acquired_in_time(std::move(resolved).value());
      *late = !in_time.ok();
      return in_time;
    }
    default:
      return written.status().with_context("acquire " + describe_key(key, o.slot));
  }
}

// A store stuck behind a lock (or a slow network) can answer after the
// lease's local deadline; by then its stored expiry may have passed and
// another owner may hold it. Such a lease is never handed to the caller,
// whatever it would do with it: it is given back, so that the next taker
// need not wait for the expiry either.
Result<Lease> LeaseManager::check_acquired_in_time(Lease lease) {
  if (lease.valid_at(clock_.mono_now())) return lease;
  const Status released = release(lease, ReleaseMode::kExpire);
  return deadline_exceeded(
      "acquire " + describe_key(lease.key, lease.slot) +
      ": the store answered after the lease's local deadline (" +
      std::to_string(to_ms(validity(lease.ttl))) + "ms after sending); " +
      (released.ok() ? "the lease was given back"
                     : "it expires unused at " + std::to_string(lease.expires_at_ms) + " ms"));
}

// The acquire write may or may not have applied: our fresh token in the slot
// says it did. If the read-back fails too, the lease is reported unavailable;
// should the write have applied, the lease simply expires unused. A write
// that did not apply is "held by another owner" only when another owner's
// lease is there and live; otherwise the store lost the request, and the
// caller may try again.
Result<Lease> LeaseManager::resolve_acquire(const Key& key, const Lease& attempt) {
  Result<Item> item = read_back(key);
  const std::string what = "acquire of " + describe_key(key, attempt.slot);
  if (!item.ok() && item.status().code() != Code::kNotFound) {
    return unavailable(what + " has an unknown outcome: " + item.status().message());
  }
  const auto names_n = names(attempt.slot);
  const SlotNames& n = *names_n;
  if (!item.ok() || !is_mine(*item, n, attempt.owner, attempt.token)) {
    // Any live owner counts, a token-less writer's included.
    const bool held = item.ok() && !get_string_or(*item, n.owner).empty() &&
                      get_int_or(*item, n.expires_at_ms) > to_unix_ms(clock_.wall_now());
    if (held) {
      return already_exists("lease on " + describe_key(key, attempt.slot) +
                            " is held by another owner");
    }
    return unavailable(what + " did not reach the store; retry");
  }
  Lease lease = attempt;
  lease.epoch = get_int_or(*item, n.epoch);
  assert(lease.epoch >= 1);
  return lease;
}

Result<Item> LeaseManager::read_back(const Key& key) {
  Result<Item> item = not_found("");
  for (int i = 0; i < config_.read_back_attempts_max; ++i) {
    item = store_.get(config_.table, key, /*consistent=*/true);
    if (item.ok() || item.status().code() == Code::kNotFound) return item;
  }
  return item;
}

struct LeaseManager::RenewPlan {
  LeaseRef ref;
  Duration ttl{};
  MonoTime sent{};
  std::optional<MonoTime> deadline;  // the old local deadline, when known
  // The lease being renewed, when the caller has it: its owner, holder, epoch
  // and acquisition time cannot change while its token holds, so the store
  // need only return what the renewal sets.
  const Lease* base = nullptr;
  int64_t now_ms = 0;
  int64_t heartbeat_at_ms = 0;
  int64_t expires_at_ms = 0;
  Update update;
  Condition condition;
  std::shared_ptr<const SlotNames> names;  // looked up once per renewal
};

// The heartbeat never goes back (`heartbeat_floor_ms` is the last one this
// holder wrote, in case its wall clock stepped back), and the condition
// refuses a stored heartbeat later than this one: a renewal that reaches the
// store late, after a later renewal of the same lease, must not shorten the
// expiry that later renewal set, which its holder already trusts.
LeaseManager::RenewPlan LeaseManager::plan_renewal(LeaseRef ref, Duration ttl,
                                                   int64_t heartbeat_floor_ms) {
  RenewPlan p;
  p.names = names(ref.slot);
  const SlotNames& n = *p.names;
  p.ref = std::move(ref);
  p.ttl = ttl;
  p.sent = clock_.mono_now();
  p.now_ms = to_unix_ms(clock_.wall_now());
  p.heartbeat_at_ms = std::max(p.now_ms, heartbeat_floor_ms);
  p.expires_at_ms = p.now_ms + to_ms(ttl);
  p.update.set(n.heartbeat_at_ms, p.heartbeat_at_ms).set(n.expires_at_ms, p.expires_at_ms);
  // still_mine() && ... without the copies of chained &&: this runs on
  // every heartbeat.
  p.condition.kind = Condition::Kind::kAnd;
  auto& terms = p.condition.children;
  terms.reserve(4);
  terms.push_back(cond::eq(n.owner, p.ref.owner));
  terms.push_back(cond::eq(n.token, p.ref.token));
  terms.push_back(cond::gt(n.expires_at_ms, p.now_ms));
  terms.push_back(cond::le(n.heartbeat_at_ms, p.heartbeat_at_ms));
  return p;
}

// A refused renewal usually means the lease is gone. The one exception is a
// lease still ours and live whose stored heartbeat is ahead of this one (an
// earlier renewal of ours was written by a clock ahead of this one, or this
// clock stepped back): that is a failure to retry, not a loss.
Result<Lease> LeaseManager::explain_refused_renewal(const RenewPlan& p) {
  const SlotNames& n = *p.names;
  Result<Item> item = read_back(p.ref.key);
  if (item.ok() && is_mine(*item, n, p.ref.owner, p.ref.token) &&
      get_int_or(*item, n.expires_at_ms) > p.now_ms &&
      get_int_or(*item, n.heartbeat_at_ms) > p.heartbeat_at_ms) {
    return unavailable("renew " + describe_key(p.ref.key, p.ref.slot) +
                       ": a renewal with a later heartbeat is already stored (a wall clock " +
                       "ahead of this one wrote it); retry");
  }
  return no_longer_yours(p.ref.key, p.ref.slot);
}

Result<Lease> LeaseManager::finish_renewal(const RenewPlan& p, Result<Item> written) {
  const SlotNames& n = *p.names;
  // Past the deadline nothing can save the lease, so a failed renewal is not
  // worth the reads that would explain it (they could block a heartbeat
  // round well past its bound).
  const bool late = p.deadline && clock_.mono_now() >= *p.deadline;
  if (!written.ok() && !late) {
    // Built only on failure: a successful renewal allocates no message.
    const std::string what = "renew " + describe_key(p.ref.key, p.ref.slot);
    switch (written.status().code()) {
      case Code::kConditionFailed:
        return explain_refused_renewal(p);
      case Code::kUnknownOutcome: {
        written = read_back(p.ref.key);
        const Status outcome = renewal_outcome(written, n, p.ref, p.expires_at_ms, what);
        log_read_back(config_.info_log, "renew", p.ref.key, p.ref.slot, outcome);
        if (!outcome.ok()) return outcome;
        break;
      }
      default:
        return written.status().with_context(what);
    }
  }
  // A reply that comes back after the old deadline does not revive the lease.
  if (late || (p.deadline && clock_.mono_now() >= *p.deadline)) {
    return past_deadline(p.ref.key, p.ref.slot, " (it passed while renewing)");
  }
  const Item& item = *written;
  assert((p.base != nullptr || get_string_or(item, n.token) == p.ref.token) &&
         "a renewal applies only under the renewer's token");
  Lease lease;
  if (p.base != nullptr) {
    lease = *p.base;
  } else {
    lease.key = p.ref.key;
    lease.slot = p.ref.slot;
    lease.owner = p.ref.owner;
    lease.holder = get_string_or(item, n.holder);
    lease.token = p.ref.token;
    lease.epoch = get_int_or(item, n.epoch);
    lease.acquired_at_ms = get_int_or(item, n.acquired_at_ms);
  }
  lease.ttl = p.ttl;
  lease.heartbeat_at_ms = p.heartbeat_at_ms;
  lease.expires_at_ms = p.expires_at_ms;
  lease.valid_until = p.sent + validity(p.ttl);
  return lease;
}

Result<Lease> LeaseManager::renew(const Lease& lease, std::optional<Duration> ttl) {
  const Duration t = ttl.value_or(lease.ttl);
  LEASEHOLD_RETURN_IF_ERROR(check_timing(t, default_renew_every(t)));
  if (!lease.valid_at(clock_.mono_now())) {
    return past_deadline(lease.key, lease.slot);
  }
  RenewPlan plan = plan_renewal(ref_of(lease), t, lease.heartbeat_at_ms);
  plan.deadline = lease.valid_until;
  plan.base = &lease;
  plan.update.returning_updated_only();
  Result<Lease> renewed =
      finish_renewal(plan, store_.update(config_.table, plan.ref.key, plan.update, plan.condition));
  if (renewed.ok()) assert(renewed->epoch == lease.epoch && "renewal never changes the epoch");
  return renewed;
}

Result<Lease> LeaseManager::renew(const LeaseRef& ref, Duration ttl) {
  LEASEHOLD_RETURN_IF_ERROR(validate_ref(ref));
  LEASEHOLD_RETURN_IF_ERROR(check_timing(ttl, default_renew_every(ttl)));
  const RenewPlan plan = plan_renewal(ref, ttl, 0);
  return finish_renewal(plan,
                        store_.update(config_.table, plan.ref.key, plan.update, plan.condition));
}

std::vector<Result<Lease>> LeaseManager::renew_each(std::span<const Lease> leases,
                                                    Duration timeout) {
  std::vector<Renewal> renewals(leases.size());
  for (size_t i = 0; i < leases.size(); ++i) renewals[i].lease = &leases[i];
  return renew_each(std::span<const Renewal>(renewals), timeout);
}

std::vector<Result<Lease>> LeaseManager::renew_each(std::span<const Renewal> renewals,
                                                    Duration timeout) {
  std::vector<Result<Lease>> results(renewals.size(), Result<Lease>(internal_error("unset")));
  std::vector<RenewPlan> plans;
  std::vector<size_t> sent_index;
  const MonoTime now = clock_.mono_now();
  for (size_t i = 0; i < renewals.size(); ++i) {
    assert(renewals[i].lease != nullptr);
    const Lease& lease = *renewals[i].lease;
    if (!lease.valid_at(now)) {
      results[i] = past_deadline(lease.key, lease.slot);
      continue;
    }
    timeout = std::min(timeout, lease.valid_until - now);
    plans.push_back(plan_renewal(ref_of(lease), lease.ttl, lease.heartbeat_at_ms));
    plans.back().deadline = lease.valid_until;
    plans.back().base = &lease;
    plans.back().update.append(renewals[i].extra_update);
    if (renewals[i].item == nullptr) plans.back().update.returning_updated_only();
    sent_index.push_back(i);
  }
  std::vector<UpdateRequest> requests;
  requests.reserve(plans.size());
  // finish_renewal() needs neither the update nor the condition: move them.
  for (auto& p : plans)
    requests.push_back({p.ref.key, std::move(p.update), std::move(p.condition)});
  std::vector<Result<Item>> written = store_.update_each(config_.table, requests, timeout);
  assert(written.size() == plans.size());
  for (size_t j = 0; j < plans.size(); ++j) {
    Item* item = renewals[sent_index[j]].item;
    std::optional<Item> as_written;
    if (item != nullptr && written[j].ok()) as_written = *written[j];
    results[sent_index[j]] = finish_renewal(plans[j], std::move(written[j]));
    if (as_written && results[sent_index[j]].ok()) *item = std::move(*as_written);
  }
  return results;
}

Status LeaseManager::release(const LeaseRef& ref, ReleaseMode mode, const Update& extra_update) {
  LEASEHOLD_RETURN_IF_ERROR(validate_ref(ref));
  if (!extra_update.empty() && mode != ReleaseMode::kExpire) {
    return invalid_argument("a release with an update must use mode expire");
  }
  const auto names_n = names(ref.slot);
  Result<Item> written =
      store_.update(config_.table, ref.key, release_update(*names_n, mode, extra_update),
                    still_mine(*names_n, ref.owner, ref.token));
  return release_result(ref, *names_n, !extra_update.empty(), std::move(written));
}

Update LeaseManager::release_update(const SlotNames& n, ReleaseMode mode,
                                    const Update& extra_update) {
  Update update;
  if (mode == ReleaseMode::kExpire) {
    update.set(n.expires_at_ms, int64_t{0}).set(n.heartbeat_at_ms, to_unix_ms(clock_.wall_now()));
    update.append(extra_update);
  } else {
    clear_slot(n, update);
  }
  return update;
}

Status LeaseManager::release_result(const LeaseRef& ref, const SlotNames& n, bool with_update,
                                    Result<Item> written) {
  if (written.ok()) return {};
  switch (written.status().code()) {
    case Code::kConditionFailed:
      return no_longer_yours(ref.key, ref.slot);
    case Code::kUnknownOutcome: {
      const Status outcome = release_outcome(read_back(ref.key), n, ref, with_update);
      log_read_back(config_.info_log, "release", ref.key, ref.slot, outcome);
      return outcome;
    }
    default:
      return written.status().with_context("release " + describe_key(ref.key, ref.slot));
  }
}

std::vector<Status> LeaseManager::release_each(std::span<const Release> releases) {
  std::vector<Status> results(releases.size());
  std::vector<UpdateRequest> requests;
  std::vector<size_t> sent_index;
  std::vector<std::shared_ptr<const SlotNames>> sent_names;
  for (size_t i = 0; i < releases.size(); ++i) {
    assert(releases[i].lease != nullptr);
    const Lease& lease = *releases[i].lease;
    const LeaseRef ref = ref_of(lease);
    if (Status valid = validate_ref(ref); !valid.ok()) {
      results[i] = std::move(valid);
      continue;
    }
    const auto names_n = names(lease.slot);
    requests.push_back({lease.key,
                        release_update(*names_n, ReleaseMode::kExpire, releases[i].extra_update),
                        still_mine(*names_n, lease.owner, lease.token)});
    sent_index.push_back(i);
    sent_names.push_back(names_n);
  }
  std::vector<Result<Item>> written = store_.update_each(config_.table, requests);
  assert(written.size() == requests.size());
  for (size_t j = 0; j < requests.size(); ++j) {
    const Release& r = releases[sent_index[j]];
    results[sent_index[j]] = release_result(ref_of(*r.lease), *sent_names[j],
                                            !r.extra_update.empty(), std::move(written[j]));
  }
  return results;
}

Status LeaseManager::release(const Lease& lease, ReleaseMode mode, const Update& extra_update) {
  return release(ref_of(lease), mode, extra_update);
}

Result<Lease> LeaseManager::replace(const Lease& from, const AcquireOptions& to) {
  if (!from.valid_at(clock_.mono_now())) {
    return past_deadline(from.key, from.slot);
  }
  return replace_held(ref_of(from), /*unexpired_at_ms=*/0, to);
}

Result<Lease> LeaseManager::replace(const LeaseRef& from, const AcquireOptions& to) {
  LEASEHOLD_RETURN_IF_ERROR(validate_ref(from));
  return replace_held(from, to_unix_ms(clock_.wall_now()), to);
}

// `from` must be mine and, if unexpired_at_ms is not 0, not expired at that
// wall time.
Result<Lease> LeaseManager::replace_held(const LeaseRef& from, int64_t unexpired_at_ms,
                                         const AcquireOptions& to) {
  if (to.slot == from.slot) return invalid_argument("replace needs two different slots");
  LEASEHOLD_RETURN_IF_ERROR(validate_slot(to.slot));
  const auto names_f = names(from.slot);
  const SlotNames& f = *names_f;
  Update clear;
  clear_slot(f, clear);
  AcquireOptions options = to;
  options.extra_condition = held_by(f, from, unexpired_at_ms) && to.extra_condition;
  options.extra_update = clear.append(to.extra_update);
  Result<Lease> lease = acquire(from.key, options);
  if (lease.ok() || lease.status().code() != Code::kAlreadyExists) return lease;
  // Tell "the old lease is gone" apart from "the new slot is taken".
  Result<Item> item = store_.get(config_.table, from.key, true);
  if (item.ok() && !is_held_by(*item, f, from, unexpired_at_ms)) {
    return no_longer_yours(from.key, from.slot);
  }
  return lease;
}

Result<Item> LeaseManager::fenced_write(const Lease& lease, const Update& update,
                                        const Condition& extra_condition) {
  if (!lease.valid_at(clock_.mono_now())) {
    return past_deadline(lease.key, lease.slot, "; the write was not sent");
  }
  return fenced_write_held(ref_of(lease), /*unexpired_at_ms=*/0, update, extra_condition);
}

Result<Item> LeaseManager::fenced_write(const LeaseRef& ref, const Update& update,
                                        const Condition& extra_condition) {
  LEASEHOLD_RETURN_IF_ERROR(validate_ref(ref));
  return fenced_write_held(ref, to_unix_ms(clock_.wall_now()), update, extra_condition);
}

Result<Item> LeaseManager::fenced_write_held(const LeaseRef& ref, int64_t unexpired_at_ms,
                                             const Update& update,
                                             const Condition& extra_condition) {
  const auto names_n = names(ref.slot);
  Result<Item> written = store_.update(config_.table, ref.key, update,
                                       held_by(*names_n, ref, unexpired_at_ms) && extra_condition);
  return explain_fenced_write(ref, unexpired_at_ms, extra_condition, std::move(written));
}

std::vector<Result<Item>> LeaseManager::fenced_write_each(std::span<const FencedWrite> writes) {
  std::vector<Result<Item>> results(writes.size(), Result<Item>(internal_error("unset")));
  std::vector<UpdateRequest> requests;
  std::vector<size_t> sent_index;
  const MonoTime now = clock_.mono_now();
  for (size_t i = 0; i < writes.size(); ++i) {
    assert(writes[i].lease != nullptr);
    const Lease& lease = *writes[i].lease;
    if (!lease.valid_at(now)) {
      results[i] = past_deadline(lease.key, lease.slot, "; the write was not sent");
      continue;
    }
    const auto names_n = names(lease.slot);
    requests.push_back(
        {lease.key, writes[i].update,
         still_mine(*names_n, lease.owner, lease.token) && writes[i].extra_condition});
    sent_index.push_back(i);
  }
  std::vector<Result<Item>> written = store_.update_each(config_.table, requests);
  assert(written.size() == requests.size());
  for (size_t j = 0; j < requests.size(); ++j) {
    const FencedWrite& w = writes[sent_index[j]];
    results[sent_index[j]] =
        explain_fenced_write(ref_of(*w.lease), 0, w.extra_condition, std::move(written[j]));
  }
  return results;
}

// A fenced write that failed on its condition or got no answer: only a read
// can say which part of the condition failed, or whether a write without an
// answer could still have been ours to make.
Result<Item> LeaseManager::explain_fenced_write(const LeaseRef& ref, int64_t unexpired_at_ms,
                                                const Condition& extra_condition,
                                                Result<Item> written) {
  if (written.ok()) return written;
  const Code code = written.status().code();
  if (code != Code::kConditionFailed && code != Code::kUnknownOutcome) return written;
  const auto names_n = names(ref.slot);
  const bool ask =
      code == Code::kUnknownOutcome || !extra_condition.is_true() || unexpired_at_ms != 0;
  Result<Item> item = ask ? read_back(ref.key) : Result<Item>(not_found(""));
  if (item.ok() && is_held_by(*item, *names_n, ref, unexpired_at_ms)) {
    if (code == Code::kConditionFailed) {
      // Held, yet the write failed: the extra condition, unless the lease
      // expired between the write and the read.
      if (extra_condition.is_true()) return no_longer_yours(ref.key, ref.slot);
      return written.status();
    }
    return unknown_outcome("fenced write on " + describe_key(ref.key, ref.slot) +
                           ": no answer came; the lease is still yours, the write may or may " +
                           "not have applied");
  }
  if (code == Code::kUnknownOutcome && !item.ok()) return written.status();
  return no_longer_yours(ref.key, ref.slot);
}

Status LeaseManager::end_session(const LeaseRef& session) {
  LEASEHOLD_RETURN_IF_ERROR(validate_ref(session));
  const auto names_n = names(session.slot);
  const SlotNames& n = *names_n;
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  Result<Item> written = store_.update(
      config_.table, session.key, Update().set(n.expires_at_ms, int64_t{0}),
      still_mine(n, session.owner, session.token) && cond::lt(n.expires_at_ms, now_ms));
  if (written.ok()) return {};
  const Code code = written.status().code();
  if (code != Code::kConditionFailed && code != Code::kUnknownOutcome) {
    return written.status().with_context("end session " + describe_key(session.key, session.slot));
  }
  // Refused, or no answer: what the item says now decides.
  Result<Item> item = read_back(session.key);
  if (!item.ok() && item.status().code() == Code::kNotFound) return {};
  if (!item.ok()) {
    return unavailable("end session " + describe_key(session.key, session.slot) +
                       ": the read-back failed: " + item.status().message());
  }
  if (!is_mine(*item, n, session.owner, session.token)) return {};  // replaced: never renewed again
  const int64_t expires_at_ms = get_int_or(*item, n.expires_at_ms);
  if (expires_at_ms == 0) return {};
  if (expires_at_ms >= now_ms) {
    return failed_precondition("session " + describe_key(session.key, session.slot) +
                               " is live until " + std::to_string(expires_at_ms) + " ms");
  }
  return unavailable("end session " + describe_key(session.key, session.slot) +
                     " did not reach the store; retry");
}

Status LeaseManager::release_ended(const Key& key, const AcquireOptions::SessionRef& ended,
                                   std::string_view slot, const Update& extra_update) {
  LEASEHOLD_RETURN_IF_ERROR(validate_slot(slot));
  LEASEHOLD_RETURN_IF_ERROR(validate_text("session owner", ended.owner, kOwnerBytesMax, false));
  LEASEHOLD_RETURN_IF_ERROR(validate_token(ended.token));
  const auto names_n = names(slot);
  const SlotNames& n = *names_n;
  Update update;
  update.set(n.expires_at_ms, int64_t{0}).remove(n.token).remove(n.session);
  update.append(extra_update);
  const Condition of_session = cond::eq(n.owner, ended.owner) && cond::eq(n.session, ended.token);
  Result<Item> written = store_.update(config_.table, key, update, of_session);
  if (written.ok()) return {};
  const std::string what = "release " + describe_key(key, slot) + " of an ended session";
  switch (written.status().code()) {
    case Code::kConditionFailed:
    case Code::kNotFound:
      return failed_precondition(what + ": it no longer belongs to that session");
    case Code::kUnknownOutcome: {
      // Applied if the slot no longer belongs to the session: nobody but a
      // releaser of it removes the session from a lease of its owner.
      Result<Item> item = read_back(key);
      if (!item.ok() && item.status().code() != Code::kNotFound) {
        return unavailable(what + ": outcome unknown and the read-back failed");
      }
      const bool still = item.ok() && get_string_or(*item, n.owner) == ended.owner &&
                         get_string_or(*item, n.session) == ended.token;
      if (still) return unavailable(what + " did not reach the store; retry");
      return {};
    }
    default:
      return written.status().with_context(what);
  }
}

LeaseView LeaseManager::view_of(const Item& item, const Key& key, std::string_view slot) {
  const auto names_n = names(slot);
  const SlotNames& n = *names_n;
  LeaseView v;
  v.key = key;
  v.slot = std::string(slot);
  v.owner = get_string_or(item, n.owner);
  v.holder = get_string_or(item, n.holder);
  v.token = get_string_or(item, n.token);
  v.epoch = get_int_or(item, n.epoch);
  v.acquired_at_ms = get_int_or(item, n.acquired_at_ms);
  v.heartbeat_at_ms = get_int_or(item, n.heartbeat_at_ms);
  v.expires_at_ms = get_int_or(item, n.expires_at_ms);
  v.session = get_string_or(item, n.session);
  v.held = !v.owner.empty() && v.expires_at_ms > to_unix_ms(clock_.wall_now());
  return v;
}

Result<LeaseView> LeaseManager::inspect(const Key& key, std::string_view slot) {
  LEASEHOLD_RETURN_IF_ERROR(validate_slot(slot));
  LEASEHOLD_ASSIGN_OR_RETURN(Item item, store_.get(config_.table, key, /*consistent=*/true));
  const auto names_n = names(slot);
  const SlotNames& n = *names_n;
  if (!item.contains(n.owner) && !item.contains(n.epoch)) {
    return not_found("no lease on " + describe_key(key, slot));
  }
  return view_of(item, key, slot);
}

}  // namespace leasehold
