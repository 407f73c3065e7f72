#include "leasehold/renewer.h"

#include <algorithm>
#include <cassert>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/logging.h"
#include "base/mutex.h"

namespace leasehold {
namespace {

// Threads re-check the clock at least this often, so that a clock which
// cannot wake a waiter when it moves (Clock::wait_until's default: one that
// jumps) is noticed without a wake-up call. Otherwise they sleep until the
// next renewal or deadline; each idle wake-up costs CPU across a fleet, so
// this is not short.
constexpr auto kPollMax = std::chrono::seconds(1);

bool means_lost(Code code) {
  return code == Code::kFailedPrecondition || code == Code::kConditionFailed ||
         code == Code::kNotFound;
}

// Info, not a warning: the loss callback is how a holder learns of it, and
// the holder decides how loud to be; this line is the library's record. The
// token stays out of it (it is the holder's capability).
void log_loss(Logger* log, const Lease& lease, const Status& why) {
  log_to(log, LogLevel::kInfo, "lease on '{}{}{}' (slot {}, epoch {}, owner {}) lost: {}",
         lease.key.pk, lease.key.sk.empty() ? "" : "/", lease.key.sk, lease.slot, lease.epoch,
         lease.owner, why.message());
}

// One line per batch, not per lease: a store outage fails every renewal of a
// round, and a line for each of thousands of leases would bury the rest.
void log_retries(Logger* log, std::span<const Result<Lease>> results) {
  if (log == nullptr || !log->enabled(LogLevel::kInfo)) return;  // spares the count
  size_t retried = 0;
  const Status* first = nullptr;
  for (const Result<Lease>& r : results) {
    if (r.ok() || means_lost(r.status().code())) continue;
    if (retried++ == 0) first = &r.status();
  }
  if (retried == 0) return;
  log_to(log, LogLevel::kInfo, "{} of {} renewals failed and will be retried: {}", retried,
         results.size(), first->message());
}

}  // namespace

// The renewer itself: Renewer forwards to it, so that the public header
// holds only the contract.
class Renewer::Impl {
 public:
  Impl(LeaseManager& manager, Clock& clock, Random& random, RenewerOptions options);
  ~Impl();

  Id add(Lease lease, LossCallback on_lost, RenewedCallback on_renewed) EXCLUDES(mu_);
  void carry(Id id, Update update) EXCLUDES(mu_);
  std::optional<Lease> remove(Id id) EXCLUDES(mu_);
  std::optional<Lease> get(Id id) const EXCLUDES(mu_);
  size_t size() const EXCLUDES(mu_);
  RenewerStats stats() const EXCLUDES(mu_);
  MonoTime poll() EXCLUDES(mu_);
  void start() EXCLUDES(mu_);
  void stop() EXCLUDES(mu_);

 private:
  struct Entry {
    Lease lease;
    LossCallback on_lost;
    Duration renew_every{};
    MonoTime next_renew_at{};  // its key in renew_queue_, unless in flight
    MonoTime lost_at{};        // its key in loss_queue_: valid_until - loss_lead
    Duration backoff{};
    bool in_flight = false;
    RenewedCallback on_renewed;
    Update carried;          // for its next renewal (carry())
    uint64_t carried_n = 0;  // carry() calls so far
  };
  using Entries = std::unordered_map<Id, Entry>;
  // (time, id) pairs in time order: the next renewal or loss is at begin(),
  // so a batch of k renewals among n leases costs O(k log n), not O(n).
  using Queue = std::set<std::pair<MonoTime, Id>>;
  // Leases taken from renew_queue_ for one store call.
  struct Batch {
    std::vector<Id> ids;
    std::vector<Lease> leases;
    std::vector<Update> carried;  // with each lease's renewal
    std::vector<uint64_t> carried_n;
    std::vector<char> wants_item;  // it has an on_renewed callback
    bool plain = true;             // nothing carried, no item wanted
    MonoTime sent{};
    MonoTime lost_at_min = MonoTime::max();
  };
  // What a loss report needs once the entry is forgotten.
  struct Loss {
    Lease lease;
    LossCallback on_lost;
    void report(const Status& why) const {
      if (on_lost) on_lost(lease, why);
    }
  };

  MonoTime schedule(MonoTime from, Duration renew_every) REQUIRES(mu_);
  void fire_losses(MonoTime now);
  // Reports `id` lost if it is still due at `now`: a renewal may have landed
  // since the watchdog saw it due, and then it wins.
  void lose_if_due(Id id, MonoTime now, const Status& why);
  Loss take_lost(Entries::iterator it) REQUIRES(mu_);
  void forget(Entries::iterator it) REQUIRES(mu_);
  // Which renewals a thread takes. The first renewal thread (and poll())
  // takes them on time, up to a tenth of their period early. The others take
  // only those a tenth of their period late, which happens only when the
  // first is stuck in the store or cannot keep up: so a healthy store sees
  // one call at a time from one thread (one SQLite connection, one cache).
  enum class Turn { kOnTime, kLate };
  Batch take_batch(MonoTime now, Turn turn);
  bool renew_batch(MonoTime now, Turn turn);
  void apply_result(Id id, const Result<Lease>& result, uint64_t carried_n, const Item* item,
                    MonoTime sent, MonoTime done);
  void renewed(Id id, Entry& e, const Lease& lease, uint64_t carried_n, MonoTime sent)
      REQUIRES(mu_);
  void retry_later(Id id, Entry& e, MonoTime done) REQUIRES(mu_);
  MonoTime next_renewal(Turn turn) const REQUIRES(mu_);
  MonoTime next_loss() const REQUIRES(mu_);
  void renew_loop(Turn turn) EXCLUDES(mu_);
  void watchdog_loop() EXCLUDES(mu_);
  void wait_until_due(MonoTime due) REQUIRES(mu_);

  LeaseManager& manager_;
  Clock& clock_;
  const RenewerOptions options_;
  // Jitter needs no CSPRNG; drawing it from one costs more than a renewal's
  // own bookkeeping. Seeded from the Random given, so simulations replay.
  SeededRandom jitter_ GUARDED_BY(mu_);

  mutable Mutex mu_;
  CondVar wake_;
  Entries entries_ GUARDED_BY(mu_);
  Queue renew_queue_ GUARDED_BY(mu_);  // entries not in flight, by next_renew_at
  Queue loss_queue_ GUARDED_BY(mu_);   // every entry, by lost_at
  Id next_id_ GUARDED_BY(mu_) = 1;
  RenewerStats stats_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  // Started by start() and joined by stop(), which only the renewer's owner
  // calls, one at a time.
  std::vector<std::thread> renew_threads_;
  std::thread watchdog_thread_;
};

Renewer::Impl::Impl(LeaseManager& manager, Clock& clock, Random& random, RenewerOptions options)
    : manager_(manager), clock_(clock), options_(options), jitter_(random.next_u64()) {
  assert(options_.batch_max >= 1);
  assert(options_.jitter_fraction >= 0 && options_.jitter_fraction < 0.5);
  assert(options_.renew_threads >= 1 && options_.renew_threads <= kRenewThreadsMax);
  assert(options_.retry_backoff > Duration::zero());
}

Renewer::Impl::~Impl() { stop(); }

// Renewal times are rounded up to a multiple of the batch window (at most a
// tenth of the period), so that leases due close together share one batch
// instead of trickling out one by one.
MonoTime Renewer::Impl::schedule(MonoTime from, Duration renew_every) {
  const double jitter = (jitter_.uniform01() * 2 - 1) * options_.jitter_fraction;
  const auto offset = std::chrono::duration_cast<Duration>(renew_every * (1.0 + jitter));
  const Duration at = (from + offset).time_since_epoch();
  const Duration quantum =
      std::max<Duration>(std::min<Duration>(options_.batch_window, renew_every / 10), Duration(1));
  return MonoTime((at + quantum - Duration(1)) / quantum * quantum);
}

Renewer::Id Renewer::Impl::add(Lease lease, LossCallback on_lost, RenewedCallback on_renewed) {
  const Duration every = options_.renew_every > Duration::zero()
                             ? options_.renew_every
                             : manager_.default_renew_every(lease.ttl);
  assert(manager_.check_timing(lease.ttl, every).ok() &&
         "a lease whose renew period does not fit its ttl cannot be kept");
  Id id;
  {
    MutexLock lock(mu_);
    id = next_id_++;
    const MonoTime lost_at = lease.valid_until - options_.loss_lead;
    Entry entry;
    entry.lease = std::move(lease);
    entry.on_lost = std::move(on_lost);
    entry.renew_every = every;
    entry.next_renew_at = schedule(clock_.mono_now(), every);
    entry.lost_at = lost_at;
    entry.backoff = options_.retry_backoff;
    entry.on_renewed = std::move(on_renewed);
    renew_queue_.emplace(entry.next_renew_at, id);
    loss_queue_.emplace(entry.lost_at, id);
    entries_.emplace(id, std::move(entry));
  }
  wake_.notify_all();
  return id;
}

void Renewer::Impl::carry(Id id, Update update) {
  MutexLock lock(mu_);
  const auto it = entries_.find(id);
  if (it == entries_.end()) return;
  it->second.carried = std::move(update);
  ++it->second.carried_n;
}

void Renewer::Impl::forget(Entries::iterator it) {
  const Entry& e = it->second;
  if (!e.in_flight) renew_queue_.erase({e.next_renew_at, it->first});
  loss_queue_.erase({e.lost_at, it->first});
  entries_.erase(it);
}

std::optional<Lease> Renewer::Impl::remove(Id id) {
  MutexLock lock(mu_);
  const auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  Lease lease = std::move(it->second.lease);
  forget(it);
  return lease;
}

std::optional<Lease> Renewer::Impl::get(Id id) const {
  MutexLock lock(mu_);
  const auto it = entries_.find(id);
  if (it == entries_.end()) return std::nullopt;
  return it->second.lease;
}

RenewerStats Renewer::Impl::stats() const {
  MutexLock lock(mu_);
  return stats_;
}

size_t Renewer::Impl::size() const {
  MutexLock lock(mu_);
  return entries_.size();
}

Renewer::Impl::Loss Renewer::Impl::take_lost(Entries::iterator it) {
  Loss loss{std::move(it->second.lease), std::move(it->second.on_lost)};
  forget(it);
  ++stats_.lost;
  return loss;
}

void Renewer::Impl::lose_if_due(Id id, MonoTime now, const Status& why) {
  Loss loss;
  {
    MutexLock lock(mu_);
    const auto it = entries_.find(id);
    if (it == entries_.end()) return;      // removed or already reported
    if (it->second.lost_at > now) return;  // renewed since it was seen due
    loss = take_lost(it);
  }
  log_loss(options_.info_log, loss.lease, why);
  loss.report(why);
}

// Collects the due ids under the lock, then reports each without it, so that
// a callback may call back into the renewer. lose_if_due() looks again.
void Renewer::Impl::fire_losses(MonoTime now) {
  std::vector<Id> due;
  {
    MutexLock lock(mu_);
    for (auto it = loss_queue_.begin(); it != loss_queue_.end() && it->first <= now; ++it) {
      due.push_back(it->second);
    }
  }
  if (due.empty()) return;
  const Status why = deadline_exceeded("lease was not renewed before its local deadline");
  for (Id id : due) lose_if_due(id, now, why);
}

Renewer::Impl::Batch Renewer::Impl::take_batch(MonoTime now, Turn turn) {
  Batch batch;
  batch.sent = now;
  MutexLock lock(mu_);
  const MonoTime horizon = turn == Turn::kOnTime ? now + options_.batch_window : now;
  for (auto it = renew_queue_.begin();
       it != renew_queue_.end() && it->first <= horizon && batch.ids.size() < options_.batch_max;) {
    Entry& e = entries_.at(it->second);
    const Duration slack = e.renew_every / 10;
    if (turn == Turn::kOnTime ? it->first > now + slack : it->first + slack > now) {
      ++it;  // too early for this lease, or not late enough for this turn
      continue;
    }
    if (batch.ids.empty()) {  // reserved only now: most wake-ups find nothing due
      const size_t expected = std::min(options_.batch_max, renew_queue_.size());
      batch.ids.reserve(expected);
      batch.leases.reserve(expected);
    }
    assert(!e.in_flight);
    e.in_flight = true;
    batch.ids.push_back(it->second);
    batch.leases.push_back(e.lease);
    batch.carried.push_back(e.carried);
    batch.carried_n.push_back(e.carried_n);
    batch.wants_item.push_back(e.on_renewed ? 1 : 0);
    batch.plain = batch.plain && e.carried.empty() && !e.on_renewed;
    batch.lost_at_min = std::min(batch.lost_at_min, e.lost_at);
    it = renew_queue_.erase(it);
  }
  if (!batch.ids.empty()) ++stats_.batches;
  return batch;
}

bool Renewer::Impl::renew_batch(MonoTime now, Turn turn) {
  const Batch batch = take_batch(now, turn);
  if (batch.ids.empty()) return false;
  // Half the time left before the earliest loss point: a call that uses up
  // its bound (a store retrying inside it, a lock held elsewhere) returns
  // with as much time again for another attempt.
  const Duration timeout = std::max((batch.lost_at_min - now) / 2, Duration::zero());
  std::vector<Item> items(batch.plain ? 0 : batch.ids.size());
  std::vector<Result<Lease>> results;
  if (batch.plain) {
    results = manager_.renew_each(batch.leases, timeout);
  } else {
    std::vector<Renewal> renewals(batch.ids.size());
    for (size_t i = 0; i < batch.ids.size(); ++i) {
      renewals[i] = {&batch.leases[i], std::move(batch.carried[i]),
                     batch.wants_item[i] ? &items[i] : nullptr};
    }
    results = manager_.renew_each(std::span<const Renewal>(renewals), timeout);
  }
  assert(results.size() == batch.ids.size());
  const MonoTime done = clock_.mono_now();
  assert(done >= batch.sent);
  for (size_t i = 0; i < batch.ids.size(); ++i) {
    const Lease& sent = batch.leases[i];
    assert(!results[i].ok() ||
           (results[i]->epoch == sent.epoch && results[i]->token == sent.token));
    const Item* item = batch.wants_item[i] && !items[i].empty() ? &items[i] : nullptr;
    apply_result(batch.ids[i], results[i], batch.carried_n[i], item, batch.sent, done);
  }
  log_retries(options_.info_log, results);
  return batch.ids.size() == options_.batch_max;
}

void Renewer::Impl::apply_result(Id id, const Result<Lease>& result, uint64_t carried_n,
                                 const Item* item, MonoTime sent, MonoTime done) {
  Loss loss;
  {
    MutexLock lock(mu_);
    const auto it = entries_.find(id);
    if (it == entries_.end()) return;  // removed, or lost, while in flight
    Entry& e = it->second;
    assert(e.in_flight);
    if (result.ok()) {
      renewed(id, e, *result, carried_n, sent);
      RenewedCallback on_renewed = item != nullptr ? e.on_renewed : nullptr;
      lock.unlock();
      if (on_renewed) on_renewed(*item);
      return;
    }
    if (!means_lost(result.status().code())) {
      retry_later(id, e, done);
      return;
    }
    loss = take_lost(it);
  }
  log_loss(options_.info_log, loss.lease, result.status());
  loss.report(result.status());
}

void Renewer::Impl::renewed(Id id, Entry& e, const Lease& lease, uint64_t carried_n,
                            MonoTime sent) {
  // A renewal moves only the expiry; copying the whole lease would allocate
  // its strings again on every heartbeat.
  assert(lease.token == e.lease.token && lease.epoch == e.lease.epoch);
  assert(lease.valid_until >= e.lease.valid_until && "a renewal never moves the deadline back");
  e.in_flight = false;
  e.lease.expires_at_ms = lease.expires_at_ms;
  e.lease.valid_until = lease.valid_until;
  e.lease.ttl = lease.ttl;
  ++stats_.renewals;
  if (e.carried_n == carried_n) e.carried = Update();  // it went out
  e.backoff = options_.retry_backoff;
  loss_queue_.erase({e.lost_at, id});
  e.lost_at = e.lease.valid_until - options_.loss_lead;
  loss_queue_.emplace(e.lost_at, id);
  // From the send, as the new deadline is: a slow reply must not push the
  // next renewal towards the loss point. If that time has passed, the
  // renewal is due at once.
  e.next_renew_at = schedule(sent, e.renew_every);
  renew_queue_.emplace(e.next_renew_at, id);
}

// The store is unavailable: retry, until the watchdog declares the lease lost
// at its deadline. The backoff spares a struggling store, but must not carry
// the next attempt past the loss point while one more still fits before it:
// the gap shrinks to half the time left, though never below retry_backoff.
void Renewer::Impl::retry_later(Id id, Entry& e, MonoTime done) {
  ++stats_.failures;
  e.in_flight = false;
  const Duration half_left = (e.lost_at - done) / 2;
  e.next_renew_at = done + std::min(e.backoff, std::max(options_.retry_backoff, half_left));
  e.backoff = std::min<Duration>(e.backoff * 2, e.renew_every);
  renew_queue_.emplace(e.next_renew_at, id);
}

MonoTime Renewer::Impl::next_renewal(Turn turn) const {
  if (renew_queue_.empty()) return MonoTime::max();
  const auto& [at, id] = *renew_queue_.begin();
  return turn == Turn::kOnTime ? at : at + entries_.at(id).renew_every / 10;
}

MonoTime Renewer::Impl::next_loss() const {
  return loss_queue_.empty() ? MonoTime::max() : loss_queue_.begin()->first;
}

MonoTime Renewer::Impl::poll() {
  fire_losses(clock_.mono_now());
  while (renew_batch(clock_.mono_now(), Turn::kOnTime)) {
  }
  fire_losses(clock_.mono_now());
  MutexLock lock(mu_);
  return std::min(next_renewal(Turn::kOnTime), next_loss());
}

void Renewer::Impl::start() {
  MutexLock lock(mu_);
  assert(renew_threads_.empty() && !watchdog_thread_.joinable() && "start() called twice");
  stopping_ = false;
  for (size_t i = 0; i < options_.renew_threads; ++i) {
    const Turn turn = i == 0 ? Turn::kOnTime : Turn::kLate;
    renew_threads_.emplace_back([this, turn] { renew_loop(turn); });
  }
  watchdog_thread_ = std::thread([this] { watchdog_loop(); });
}

void Renewer::Impl::stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : renew_threads_) t.join();
  renew_threads_.clear();
  if (watchdog_thread_.joinable()) watchdog_thread_.join();
}

// Sleeps until `due` on the renewer's clock, or kPollMax, or a wake-up.
// Not once stop() has been called: its wake-up may have come while the
// caller was out of the lock, and a simulated clock may never move again.
void Renewer::Impl::wait_until_due(MonoTime due) {
  const MonoTime now = clock_.mono_now();
  if (stopping_ || due <= now) return;
  wake_.wait_until(mu_, clock_, std::min<MonoTime>(due, now + kPollMax));
}

// Each renewal thread takes the next batch due in its turn, so one stuck in
// the store holds back only the thread that sent it.
void Renewer::Impl::renew_loop(Turn turn) {
  MutexLock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    while (renew_batch(clock_.mono_now(), turn)) {
    }
    lock.lock();
    wait_until_due(next_renewal(turn));
  }
}

// Runs apart from renew_loop so that a renewal stuck in the store cannot
// hold back a loss report.
void Renewer::Impl::watchdog_loop() {
  MutexLock lock(mu_);
  while (!stopping_) {
    lock.unlock();
    fire_losses(clock_.mono_now());
    lock.lock();
    wait_until_due(next_loss());
  }
}

Renewer::Renewer(LeaseManager& manager, Clock& clock, Random& random, RenewerOptions options)
    : impl_(std::make_unique<Impl>(manager, clock, random, options)) {}
Renewer::~Renewer() = default;
Renewer::Id Renewer::add(Lease lease, LossCallback on_lost, RenewedCallback on_renewed) {
  return impl_->add(std::move(lease), std::move(on_lost), std::move(on_renewed));
}
void Renewer::carry(Id id, Update update) { impl_->carry(id, std::move(update)); }
std::optional<Lease> Renewer::remove(Id id) { return impl_->remove(id); }
std::optional<Lease> Renewer::get(Id id) const { return impl_->get(id); }
size_t Renewer::size() const { return impl_->size(); }
RenewerStats Renewer::stats() const { return impl_->stats(); }
MonoTime Renewer::poll() { return impl_->poll(); }
void Renewer::start() { impl_->start(); }
void Renewer::stop() { impl_->stop(); }

}  // namespace leasehold
