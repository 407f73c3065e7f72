#include "leasehold/renewer.h"

#include <algorithm>
#include <cassert>
#include <vector>

namespace leasehold {
namespace {

// Threads re-check the clock at least this often, so that a SimulatedClock
// advanced by hand is noticed without a wake-up call. With a real clock they
// sleep until the next renewal or deadline; each idle wake-up costs CPU
// across a fleet, so this is not short.
constexpr auto kPollMax = std::chrono::seconds(1);

bool means_lost(Code code) {
  return code == Code::kFailedPrecondition || code == Code::kConditionFailed ||
         code == Code::kNotFound;
}

}  // namespace

Renewer::Renewer(LeaseManager& manager, Clock& clock, Random& random, RenewerOptions options)
    : manager_(manager), clock_(clock), options_(options), jitter_(random.next_u64()) {
  assert(options_.batch_max >= 1);
  assert(options_.jitter_fraction >= 0 && options_.jitter_fraction < 0.5);
}

Renewer::~Renewer() { stop(); }

// Renewal times are rounded up to a multiple of the batch window (at most a
// tenth of the period), so that leases due close together share one batch
// instead of trickling out one by one.
MonoTime Renewer::schedule(Duration renew_every) {
  const double jitter = (jitter_.uniform01() * 2 - 1) * options_.jitter_fraction;
  const auto offset = std::chrono::duration_cast<Duration>(renew_every * (1.0 + jitter));
  const Duration at = (clock_.mono_now() + offset).time_since_epoch();
  const Duration quantum =
      std::max<Duration>(std::min<Duration>(options_.batch_window, renew_every / 10), Duration(1));
  return MonoTime((at + quantum - Duration(1)) / quantum * quantum);
}

Renewer::Id Renewer::add(Lease lease, LossCallback on_lost) {
  const Duration every = options_.renew_every > Duration::zero()
                             ? options_.renew_every
                             : manager_.default_renew_every(lease.ttl);
  assert(manager_.check_timing(lease.ttl, every).ok() &&
         "a lease whose renew period does not fit its ttl cannot be kept");
  Id id;
  {
    std::lock_guard lock(mu_);
    id = next_id_++;
    const MonoTime lost_at = lease.valid_until - options_.loss_lead;
    Entry entry{std::move(lease), std::move(on_lost),    every, schedule(every),
                lost_at,          options_.retry_backoff};
    renew_queue_.emplace(entry.next_renew_at, id);
    loss_queue_.emplace(entry.lost_at, id);
    entries_.emplace(id, std::move(entry));
  }
  wake_.notify_all();
  return id;
}

void Renewer::forget(std::unordered_map<Id, Entry>::iterator it) {
  const Entry& e = it->second;
  if (!e.in_flight) renew_queue_.erase({e.next_renew_at, it->first});
  loss_queue_.erase({e.lost_at, it->first});
  entries_.erase(it);
}

std::optional<Lease> Renewer::remove(Id id) {
  std::lock_guard lock(mu_);
  const auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  Lease lease = std::move(it->second.lease);
  forget(it);
  return lease;
}

std::optional<Lease> Renewer::get(Id id) const {
  std::lock_guard lock(mu_);
  const auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  return it->second.lease;
}

RenewerStats Renewer::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

size_t Renewer::size() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

void Renewer::lose(Id id, const Status& why) {
  Lease lease;
  LossCallback on_lost;
  {
    std::lock_guard lock(mu_);
    const auto it = entries_.find(id);
    if (it == entries_.end()) return;  // removed or already reported
    lease = std::move(it->second.lease);
    on_lost = std::move(it->second.on_lost);
    forget(it);
    ++stats_.lost;
  }
  if (on_lost) on_lost(lease, why);
}

void Renewer::fire_losses(MonoTime now) {
  std::vector<Id> due;
  {
    std::lock_guard lock(mu_);
    for (auto it = loss_queue_.begin(); it != loss_queue_.end() && it->first <= now; ++it) {
      due.push_back(it->second);
    }
  }
  for (Id id : due) {
    lose(id, deadline_exceeded("lease was not renewed before its local deadline"));
  }
}

bool Renewer::renew_batch(MonoTime now) {
  std::vector<Id> ids;
  std::vector<Lease> leases;
  {
    std::lock_guard lock(mu_);
    const MonoTime horizon = now + options_.batch_window;
    ids.reserve(options_.batch_max);
    leases.reserve(options_.batch_max);
    for (auto it = renew_queue_.begin();
         it != renew_queue_.end() && it->first <= horizon && ids.size() < options_.batch_max;) {
      Entry& e = entries_.at(it->second);
      if (it->first > now + e.renew_every / 10) {  // too early for this lease
        ++it;
        continue;
      }
      e.in_flight = true;
      ids.push_back(it->second);
      leases.push_back(e.lease);
      it = renew_queue_.erase(it);
    }
    if (ids.empty()) return false;
    ++stats_.batches;
  }
  const std::vector<Result<Lease>> results = manager_.renew_each(leases);
  assert(results.size() == ids.size());
  const MonoTime done = clock_.mono_now();
  for (size_t i = 0; i < ids.size(); ++i) {
    assert(!results[i].ok() ||
           (results[i]->epoch == leases[i].epoch && results[i]->token == leases[i].token));
    apply_result(ids[i], results[i], done);
  }
  return ids.size() == options_.batch_max;
}

void Renewer::apply_result(Id id, const Result<Lease>& result, MonoTime now) {
  {
    std::lock_guard lock(mu_);
    const auto it = entries_.find(id);
    if (it == entries_.end()) return;  // removed, or lost, while in flight
    Entry& e = it->second;
    e.in_flight = false;
    if (result.ok()) {
      // A renewal moves only the expiry; copying the whole lease would
      // allocate its strings again on every heartbeat.
      assert(result->token == e.lease.token && result->epoch == e.lease.epoch);
      e.lease.expires_at_ms = result->expires_at_ms;
      e.lease.valid_until = result->valid_until;
      e.lease.ttl = result->ttl;
      ++stats_.renewals;
      e.backoff = options_.retry_backoff;
      loss_queue_.erase({e.lost_at, id});
      e.lost_at = e.lease.valid_until - options_.loss_lead;
      loss_queue_.emplace(e.lost_at, id);
      e.next_renew_at = schedule(e.renew_every);
      renew_queue_.emplace(e.next_renew_at, id);
      return;
    }
    if (!means_lost(result.status().code())) {
      // The store is unavailable: retry soon, with backoff, until the
      // watchdog declares the lease lost at its deadline.
      ++stats_.failures;
      e.next_renew_at = now + e.backoff;
      e.backoff = std::min<Duration>(e.backoff * 2, e.renew_every);
      renew_queue_.emplace(e.next_renew_at, id);
      return;
    }
  }
  lose(id, result.status());
}

MonoTime Renewer::next_renewal() const {
  return renew_queue_.empty() ? MonoTime::max() : renew_queue_.begin()->first;
}

MonoTime Renewer::next_loss() const {
  return loss_queue_.empty() ? MonoTime::max() : loss_queue_.begin()->first;
}

MonoTime Renewer::poll() {
  fire_losses(clock_.mono_now());
  while (renew_batch(clock_.mono_now())) {
  }
  fire_losses(clock_.mono_now());
  std::lock_guard lock(mu_);
  return std::min(next_renewal(), next_loss());
}

void Renewer::start() {
  std::lock_guard lock(mu_);
  assert(!renew_thread_.joinable() && "start() called twice");
  stopping_ = false;
  renew_thread_ = std::thread([this] { renew_loop(); });
  watchdog_thread_ = std::thread([this] { watchdog_loop(); });
}

void Renewer::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (renew_thread_.joinable()) renew_thread_.join();
  if (watchdog_thread_.joinable()) watchdog_thread_.join();
}

void Renewer::renew_loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    while (renew_batch(clock_.mono_now())) {
    }
    lock.lock();
    const Duration wait = std::min<Duration>(next_renewal() - clock_.mono_now(), kPollMax);
    if (wait > Duration::zero()) wake_.wait_for(lock, wait);
  }
}

// Runs apart from renew_loop so that a renewal stuck in the store cannot
// hold back a loss report.
void Renewer::watchdog_loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    fire_losses(clock_.mono_now());
    lock.lock();
    const Duration wait = std::min<Duration>(next_loss() - clock_.mono_now(), kPollMax);
    if (wait > Duration::zero()) wake_.wait_for(lock, wait);
  }
}

}  // namespace leasehold
