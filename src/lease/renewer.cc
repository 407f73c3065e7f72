#include "leasehold/renewer.h"

#include <algorithm>
#include <cassert>
#include <vector>

namespace leasehold {
namespace {

// Threads re-check the clock at least this often, so that a SimulatedClock
// advanced by a test is noticed without a wake-up call.
constexpr auto kPollMax = std::chrono::milliseconds(100);

bool means_lost(Code code) {
  return code == Code::kFailedPrecondition || code == Code::kConditionFailed ||
         code == Code::kNotFound;
}

}  // namespace

Renewer::Renewer(LeaseManager& manager, Clock& clock, Random& random, RenewerOptions options)
    : manager_(manager), clock_(clock), random_(random), options_(options) {
  assert(options_.batch_max >= 1);
  assert(options_.jitter_fraction >= 0 && options_.jitter_fraction < 0.5);
}

Renewer::~Renewer() { stop(); }

// Renewal times are rounded up to a multiple of batch_window, so that leases
// due close together share one batch instead of trickling out one by one.
MonoTime Renewer::schedule(Duration renew_every) {
  const double jitter = (random_.uniform01() * 2 - 1) * options_.jitter_fraction;
  const auto offset = std::chrono::duration_cast<Duration>(renew_every * (1.0 + jitter));
  const Duration at = (clock_.mono_now() + offset).time_since_epoch();
  const Duration quantum = std::max<Duration>(options_.batch_window, Duration(1));
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
    Entry entry{std::move(lease), std::move(on_lost), every, schedule(every),
                options_.retry_backoff};
    entries_.emplace(id, std::move(entry));
  }
  wake_.notify_all();
  return id;
}

std::optional<Lease> Renewer::remove(Id id) {
  std::lock_guard lock(mu_);
  const auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  Lease lease = std::move(it->second.lease);
  entries_.erase(it);
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
  Entry entry;
  {
    std::lock_guard lock(mu_);
    const auto it = entries_.find(id);
    if (it == entries_.end()) return;  // removed or already reported
    entry = std::move(it->second);
    entries_.erase(it);
    ++stats_.lost;
  }
  if (entry.on_lost) entry.on_lost(entry.lease, why);
}

void Renewer::fire_losses(MonoTime now) {
  std::vector<Id> due;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, e] : entries_) {
      if (now + options_.loss_lead >= e.lease.valid_until) due.push_back(id);
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
    std::vector<std::pair<MonoTime, Id>> due;
    for (const auto& [id, e] : entries_) {
      if (!e.in_flight && e.next_renew_at <= now + options_.batch_window) {
        due.emplace_back(e.next_renew_at, id);
      }
    }
    if (due.empty()) return false;
    ++stats_.batches;
    std::sort(due.begin(), due.end());
    if (due.size() > options_.batch_max) due.resize(options_.batch_max);
    for (const auto& [at, id] : due) {
      Entry& e = entries_.at(id);
      e.in_flight = true;
      ids.push_back(id);
      leases.push_back(e.lease);
    }
  }
  const std::vector<Result<Lease>> results = manager_.renew_each(leases);
  assert(results.size() == ids.size());
  const MonoTime done = clock_.mono_now();
  for (size_t i = 0; i < ids.size(); ++i) apply_result(ids[i], leases[i], results[i], done);
  return ids.size() == options_.batch_max;
}

void Renewer::apply_result(Id id, [[maybe_unused]] const Lease& sent, const Result<Lease>& result, MonoTime now) {
  {
    std::lock_guard lock(mu_);
    const auto it = entries_.find(id);
    if (it == entries_.end()) return;  // removed, or lost, while in flight
    Entry& e = it->second;
    e.in_flight = false;
    if (result.ok()) {
      assert(result->epoch == sent.epoch && result->token == sent.token);
      assert(result->valid_until >= sent.valid_until || result->valid_until > now);
      e.lease = *result;
      ++stats_.renewals;
      e.backoff = options_.retry_backoff;
      e.next_renew_at = schedule(e.renew_every);
      return;
    }
    if (!means_lost(result.status().code())) {
      // The store is unavailable: retry soon, with backoff, until the
      // watchdog declares the lease lost at its deadline.
      ++stats_.failures;
      e.next_renew_at = now + e.backoff;
      e.backoff = std::min<Duration>(e.backoff * 2, e.renew_every);
      return;
    }
  }
  lose(id, result.status());
}

MonoTime Renewer::next_due() const {
  MonoTime next = MonoTime::max();
  for (const auto& [id, e] : entries_) {
    if (!e.in_flight) next = std::min(next, e.next_renew_at);
    next = std::min(next, e.lease.valid_until - options_.loss_lead);
  }
  return next;
}

MonoTime Renewer::poll() {
  fire_losses(clock_.mono_now());
  while (renew_batch(clock_.mono_now())) {
  }
  fire_losses(clock_.mono_now());
  std::lock_guard lock(mu_);
  return next_due();
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
    MonoTime next = MonoTime::max();
    for (const auto& [id, e] : entries_) {
      if (!e.in_flight) next = std::min(next, e.next_renew_at);
    }
    const Duration wait = std::min<Duration>(next - clock_.mono_now(), kPollMax);
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
    MonoTime next = MonoTime::max();
    for (const auto& [id, e] : entries_) next = std::min(next, e.lease.valid_until - options_.loss_lead);
    const Duration wait = std::min<Duration>(next - clock_.mono_now(), kPollMax);
    if (wait > Duration::zero()) wake_.wait_for(lock, wait);
  }
}

}  // namespace leasehold
