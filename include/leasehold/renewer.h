// Renewer: keeps many leases alive from a few threads.
//
// Leases are renewed every `renew_every` (with jitter, so that thousands of
// leases acquired together do not renew together), in batches through
// LeaseManager::renew_each, so that the cost per heartbeat falls as the
// number of leases grows. A failed renewal is retried with backoff until the
// lease's local deadline; a renewal refused by the store (another token, or
// expired) means the lease is lost at once.
//
// One slow store call must not cost a process its leases. So:
//   - each batch's store call is bounded by half the time left until the
//     batch's earliest loss point, so that a call that uses up its bound
//     still leaves time for another attempt;
//   - start() runs `renew_threads` renewal threads. The first takes each
//     batch as it falls due; the others take only batches overdue by a tenth
//     of their period, that is when the first is stuck in the store or cannot
//     keep up. A batch stuck in the store holds back only its own thread,
//     and the other leases keep renewing;
//   - the next renewal is scheduled a period after the batch was sent, not
//     after its reply came back (a reply later than that is followed at
//     once), and a retry's backoff never carries it past the loss point
//     while another attempt still fits before it.
//
// Loss is reported through the callback given to add(). It fires no later
// than `loss_lead` before the lease's local deadline (valid_until), from a
// watchdog thread that never waits on the store, so a stalled store cannot
// delay it; the lease is then forgotten. A renewal that lands while the
// watchdog is getting to a lease wins: that lease is not reported. Holders
// must still check Lease::valid_at() before acting: a callback cannot reach
// a process that was paused.
//
// Thread-safe. Either call start() for background threads (renew_threads
// plus one watchdog, never more), or drive it by hand with poll() (tests and
// the deterministic simulation: one thread, deterministic, and a stuck store
// call holds poll() up); not both. Callbacks run on a renewer thread (or
// inside poll()) without any renewer lock held; they may call remove().
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "leasehold/lease.h"

namespace leasehold {

// The most renewal threads a Renewer may be given.
inline constexpr size_t kRenewThreadsMax = 64;

struct RenewerOptions {
  // Zero: LeaseManager::default_renew_every(ttl) of each lease.
  Duration renew_every{};
  // Each renewal is scheduled within +-jitter_fraction of renew_every.
  double jitter_fraction = 0.1;
  // Renewals due within this window of each other go in one batch: a lease
  // may be renewed up to this early (never more than a tenth of its renew
  // period). One batch is one store round trip (one SQLite transaction) for
  // many leases: that is what keeps heartbeats cheap as leases multiply.
  Duration batch_window = std::chrono::milliseconds(250);
  size_t batch_max = 1000;
  // The first retry after a failed renewal; doubles up to renew_every, but
  // shrinks to half the time left before the loss point, never below this.
  Duration retry_backoff = std::chrono::milliseconds(100);
  // How long before the local deadline a lease is declared lost.
  Duration loss_lead = std::chrono::milliseconds(50);
  // Renewal threads started by start(), 1 to kRenewThreadsMax: as many
  // batches can be stuck in the store at once before others must wait.
  size_t renew_threads = 4;
  // Where failed renewals (one line per batch) and losses are logged
  // (leasehold/logger.h); a loss is reported to its callback all the same.
  // Not owned; must outlive the renewer. Null logs nothing.
  Logger* info_log = nullptr;
};

// Counters since the renewer was made; for operators and benchmarks.
struct RenewerStats {
  uint64_t renewals = 0;  // renewals the store accepted
  uint64_t failures = 0;  // attempts that failed and were retried
  uint64_t lost = 0;      // loss reports
  uint64_t batches = 0;   // calls to LeaseManager::renew_each
};

class Renewer {
 public:
  using Id = uint64_t;
  using LossCallback = std::function<void(const Lease& lease, const Status& why)>;
  // Called after each renewal of the lease with the item as written: what
  // others wrote to it is read with the heartbeat, at no cost of its own.
  using RenewedCallback = std::function<void(const Item& item)>;

  // REQUIRES: manager and clock outlive the renewer. `random` only seeds the
  // jitter of renewal times.
  Renewer(LeaseManager& manager, Clock& clock, Random& random, RenewerOptions options = {});
  ~Renewer();  // stops the threads; pending leases are not released

  // Starts renewing `lease`. `on_lost` fires at most once; `on_renewed`,
  // if given, after every renewal (a renewal whose outcome a read resolved
  // excepted).
  Id add(Lease lease, LossCallback on_lost, RenewedCallback on_renewed = {});
  // The next renewal of `id` also applies `update`, in the same conditional
  // write (in place of one carried before that has not gone out yet): what
  // a holder writes often beside its heartbeat costs no write of its own.
  // Kept for the renewal after if that one fails; dropped with the lease.
  void carry(Id id, Update update);
  // Stops renewing; returns the latest lease (to release it), or nullopt if
  // it was lost or unknown.
  std::optional<Lease> remove(Id id);
  // The latest renewed form of the lease, or nullopt if lost or unknown.
  std::optional<Lease> get(Id id) const;
  size_t size() const;
  RenewerStats stats() const;

  // Does everything due now (loss reports, then renewals) and returns when
  // something will next be due.
  MonoTime poll();

  void start();
  void stop();

 private:
  // The queues, the lock and the threads live in renewer.cc.
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace leasehold
