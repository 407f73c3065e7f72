// Deterministic simulation of a fleet of lease holders on one thread.
//
// Several workers, each with its own skewed wall clock and monotonic origin,
// race for a few keys through a store that fails requests, loses replies
// after committing them, answers 500 after applying them, delays them, and
// holds some on their way to deliver them later, after newer writes. Most
// workers use the lease layer: they acquire, keep leases alive with a
// poll-driven Renewer, write fenced data, release, pause for longer than a
// ttl (a GC pause or SIGSTOP), and now and then release a lease they have
// already lost (a late cleanup, `lease release --token OLD`). Others are
// writers of the stream fleet's reference pattern, sharing the table and
// knowing nothing of tokens: they take an expired lease by setting only the
// owner and the expiry, renew on `owner = me` and release by zeroing the
// expiry. Some lease-layer workers hold a *session* (a short lease of their
// own, renewed by their Renewer) and bind the keys they take to it, with a
// ttl ten times as long: they trust a key only while its session is valid
// too, and take another's key once its session has expired, by ending that
// session and then acquiring on its owner and token, whatever the key's own
// expiry. A session holder paused past its session's ttl finds it ended
// when it wakes, and starts a new one. After every step, and every time simulated time moves inside
// a store call, the checker asserts:
//   1. no two workers, of either kind, consider themselves valid holders of
//      one key at once;
//   2. every acquisition's epoch is above every epoch seen before on its key,
//      and the stored epoch never goes down;
// and, as each write reaches the store (an observer under the faults):
//   3. a fenced write lands only under its writer's own lease (owner and
//      token), in epoch order, and at most once.
// Every choice comes from one seeded generator: a failing run prints its
// seed, and LEASEHOLD_SIM_SEED=<seed> replays exactly that run.
#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "leasehold/renewer.h"
#include "store/memory/memory_store.h"
#include "store/store_wrapper.h"
#include "testing/faulty_store.h"
#include "testing/machine_clock.h"

namespace leasehold {
namespace {

using std::chrono::milliseconds;

struct SimOptions {
  int workers = 5;
  int foreign_workers = 1;  // of `workers`, how many run the reference pattern
  int session_workers = 0;  // of the others, how many hold their keys through a session
  int keys = 2;
  int steps = 3000;
  Duration ttl = std::chrono::seconds(2);
  Duration config_skew = milliseconds(500);  // what the lease layer is told
  Duration actual_skew = milliseconds(500);  // how far clocks really spread
  store::FaultOptions faults{.unavailable_probability = 0.05,
                             .drop_reply_probability = 0.05,
                             .delay_probability = 0.2,
                             .delay_max = milliseconds(250),
                             .lose_request_probability = 0.03,
                             .applied_then_failed_probability = 0.03,
                             .deliver_late_probability = 0.03};
  // Per step, the chance that each worker's oldest held write arrives.
  double late_delivery_probability = 0.1;
  // A planted bug: the lease layer's conditions lose every comparison on
  // this attribute (none if empty).
  std::string blind_to;
  // A planted bug: a key bound to a session is trusted on its own deadline
  // alone, as if the session did not bound it.
  bool ignore_sessions = false;
};

using WorkerClock = testing::MachineClock;

// The planted bugs of SimOptions::blind_to: drops every comparison on one
// attribute from the conditions that pass through, as a lease layer that
// forgot to check it would send them (`lease_owner`: only the token is
// checked; `lease_heartbeat_at_ms`: a late renewal may undo a later one).
class BlindStore final : public store::StoreWrapper {
 public:
  BlindStore(ItemStore& inner, std::string attr) : StoreWrapper(inner), attr_(std::move(attr)) {}
  Result<Item> update(std::string_view table, const Key& key, const Update& update,
                      const Condition& condition) override {
    return StoreWrapper::update(table, key, update, blind(condition));
  }
  // One by one through update(), so that batched renewals are blinded too.
  using StoreWrapper::update_each;
  std::vector<Result<Item>> update_each(std::string_view table,
                                        std::span<const UpdateRequest> requests,
                                        Duration timeout) override {
    return ItemStore::update_each(table, requests, timeout);
  }

 private:
  Condition blind(const Condition& c) const {
    if (c.kind == Condition::Kind::kCompare && c.attr == attr_) return {};
    if (c.kind == Condition::Kind::kAnd) {
      Condition out;
      for (const Condition& child : c.children) out = std::move(out) && blind(child);
      return out;
    }
    if (c.kind == Condition::Kind::kOr) {
      Condition out = blind(c.children.at(0));
      for (size_t i = 1; i < c.children.size(); ++i) out = std::move(out) || blind(c.children[i]);
      return out;
    }
    return c;
  }

  const std::string attr_;
};

// Sees every write that reaches the store, after all faults, and checks the
// fenced ones (invariant 3 in the file comment).
class Observer final : public store::StoreWrapper {
 public:
  Observer(ItemStore& inner, std::function<void(const std::string&)> fail)
      : StoreWrapper(inner), fail_(std::move(fail)) {}

  Result<Item> update(std::string_view table, const Key& key, const Update& update,
                      const Condition& condition) override {
    Result<Item> written = StoreWrapper::update(table, key, update, condition);
    if (written.ok()) check_fenced(key, update, *written);
    return written;
  }

 private:
  static const Value* set_value(const Update& update, std::string_view attr) {
    for (const UpdateAction& a : update.actions()) {
      if (a.kind == UpdateAction::Kind::kSet && a.attr == attr) return &a.value;
    }
    return nullptr;
  }

  void check_fenced(const Key& key, const Update& update, const Item& after) {
    const Value* id = set_value(update, "fence_id");
    if (id == nullptr) return;
    const auto& owner = std::get<std::string>(*set_value(update, "fence_owner"));
    const auto& token = std::get<std::string>(*set_value(update, "fence_token"));
    const int64_t epoch = std::get<int64_t>(*set_value(update, "fence_epoch"));
    if (!applied_.insert(std::get<int64_t>(*id)).second) {
      fail_("fenced write " + std::to_string(std::get<int64_t>(*id)) + " applied twice");
    }
    const std::string* stored_owner = get_string(after, "lease_owner");
    const std::string* stored_token = get_string(after, "lease_token");
    if (stored_owner == nullptr || *stored_owner != owner || stored_token == nullptr ||
        *stored_token != token) {
      fail_("a fenced write of " + owner + " landed on " + key.pk + " under the lease of " +
            (stored_owner ? *stored_owner : std::string("nobody")));
    }
    int64_t& last = landed_epoch_[key.pk];
    if (epoch < last) {
      fail_("fenced write of epoch " + std::to_string(epoch) + " landed on " + key.pk +
            " after epoch " + std::to_string(last));
    }
    last = std::max(last, epoch);
  }

  std::function<void(const std::string&)> fail_;
  std::set<int64_t> applied_;
  std::map<std::string, int64_t> landed_epoch_;
};

constexpr size_t kLostRememberedMax = 8;

struct Worker {
  std::string name;
  bool foreign = false;   // runs the reference pattern instead of the lease layer
  bool sessions = false;  // binds its keys to a session of its own
  std::unique_ptr<WorkerClock> clock;
  std::unique_ptr<store::FaultyStore> store;
  std::unique_ptr<BlindStore> blind;
  std::unique_ptr<LeaseManager> leases;
  std::unique_ptr<Renewer> renewer;
  std::map<int, Renewer::Id> held;           // key index -> renewer entry
  std::map<int, MonoTime> foreign_held;      // key index -> local deadline (foreign workers)
  std::map<int, Lease> known;                // key index -> the lease as acquired
  std::deque<Lease> lost;                    // leases this worker no longer holds
  std::optional<Renewer::Id> session;        // its session's renewer entry (session workers)
  std::optional<std::string> known_session;  // the token of its current one
  std::set<std::string> past_sessions;       // the tokens of its sessions before it
  MonoTime paused_until{};                   // in true time
};

class Simulation {
 public:
  Simulation(uint64_t seed, SimOptions options) : seed_(seed), o_(options), random_(seed) {
    memory_ = store::make_memory_store();
    EXPECT_TRUE(memory_->ensure_table(TableSpec{"leases", "pk", "", {}}).ok());
    observer_ =
        std::make_unique<Observer>(*memory_, [this](const std::string& what) { fail(what); });
    for (int i = 0; i < o_.workers; ++i) workers_.push_back(make_worker(i));
  }

  // Runs the whole simulation; returns the first violation, if any.
  std::optional<std::string> run() {
    for (step_ = 0; step_ < o_.steps && !violation_; ++step_) {
      advance(Duration(random_.uniform(0, to_ms(milliseconds(60)) * 1'000'000)));
      if (random_.chance(0.01)) {
        const int w = static_cast<int>(random_.uniform(0, o_.workers - 1));
        workers_[w].clock->set_wall_offset(random_offset());
        note(workers_[w].name + " wall clock stepped");
      }
      deliver_late_writes();
      act(static_cast<int>(random_.uniform(0, o_.workers - 1)));
      check();
    }
    return violation_;
  }

  int acquisitions() const { return acquisitions_; }
  int foreign_acquisitions() const { return foreign_acquisitions_; }
  int fenced_writes() const { return fenced_writes_; }
  int late_releases() const { return late_releases_; }
  int sessions_started() const { return sessions_started_; }
  int sessions_ended() const { return sessions_ended_; }
  int session_takeovers() const { return session_takeovers_; }

 private:
  Worker make_worker(int i) {
    Worker w;
    w.foreign = i >= o_.workers - o_.foreign_workers;
    w.sessions = !w.foreign && i >= o_.workers - o_.foreign_workers - o_.session_workers;
    w.name = (w.foreign ? "f" : "w") + std::to_string(i);
    w.clock = std::make_unique<WorkerClock>(truth_, random_offset(),
                                            Duration(random_.uniform(0, int64_t{1} << 40)));
    store::FaultOptions faults = o_.faults;
    // The reference pattern cannot survive its own writes arriving late: a
    // release on `owner = me` held on its way would end a later lease of the
    // same owner. That is its limit, not ours, so its writes are never held.
    if (w.foreign) faults.deliver_late_probability = 0;
    w.store = std::make_unique<store::FaultyStore>(*observer_, random_, faults,
                                                   [this](Duration d) { advance(d); });
    ItemStore* below = w.store.get();
    if (!o_.blind_to.empty()) {
      w.blind = std::make_unique<BlindStore>(*w.store, o_.blind_to);
      below = w.blind.get();
    }
    LeaseConfig config;
    config.max_clock_skew = o_.config_skew;
    w.leases = std::make_unique<LeaseManager>(*below, *w.clock, random_, config);
    w.renewer = std::make_unique<Renewer>(*w.leases, *w.clock, random_);
    return w;
  }

  Duration random_offset() {
    const int64_t half = o_.actual_skew.count() / 2;
    return Duration(random_.uniform(-half, half));
  }

  void advance(Duration d) {
    check();
    truth_.advance(d);
    check();
  }

  void note(std::string event) {
    trace_.push_back("step " + std::to_string(step_) + ": " + std::move(event));
    if (trace_.size() > 40) trace_.pop_front();
  }

  static Key key_of(int key) { return {"key" + std::to_string(key), ""}; }
  static Key session_key(const std::string& owner) { return {"session-" + owner, ""}; }

  // Writes held on their way arrive, oldest first, long after they were sent.
  void deliver_late_writes() {
    for (Worker& w : workers_) {
      if (w.store->late_writes() > 0 && random_.chance(o_.late_delivery_probability)) {
        w.store->deliver_late(1);
        note(w.name + ": a write held on its way arrived");
      }
    }
  }

  // A session worker's session, while it may trust it.
  std::optional<Lease> session_of(Worker& w) {
    if (!w.session) return std::nullopt;
    auto session = w.renewer->get(*w.session);
    if (!session || !session->valid_at(w.clock->mono_now())) return std::nullopt;
    return session;
  }

  // A lease may be trusted until its own deadline and, if it belongs to a
  // session, its session's.
  bool trusted(Worker& w, const std::optional<Lease>& lease) {
    if (!lease || !lease->valid_at(w.clock->mono_now())) return false;
    if (lease->session.empty() || o_.ignore_sessions) return true;
    const auto session = session_of(w);
    return session && session->token == lease->session;
  }

  // The lease a worker believes it holds and may act on, if any.
  std::optional<Lease> believed(Worker& w, int key) {
    const auto it = w.held.find(key);
    if (it == w.held.end()) return std::nullopt;
    auto lease = w.renewer->get(it->second);
    if (!trusted(w, lease)) {
      // Reported lost, or past its deadline: forget it, but remember it for
      // a late release.
      w.renewer->remove(it->second);
      w.lost.push_back(w.known.at(key));
      if (w.lost.size() > kLostRememberedMax) w.lost.pop_front();
      w.known.erase(key);
      w.held.erase(it);
      return std::nullopt;
    }
    return lease;
  }

  bool foreign_valid(Worker& w, int key) {
    const auto it = w.foreign_held.find(key);
    return it != w.foreign_held.end() && w.clock->mono_now() < it->second;
  }

  void act(int wi) {
    Worker& w = workers_[wi];
    if (truth_.mono_now() < w.paused_until) return;  // a paused process does nothing
    const int key = static_cast<int>(random_.uniform(0, o_.keys - 1));
    const double roll = random_.uniform01();
    if (roll < 0.02) {
      w.paused_until = truth_.mono_now() + Duration(random_.uniform(0, 3 * o_.ttl.count()));
      note(w.name + " paused");
      return;
    }
    if (w.foreign) {
      act_foreign(w, key, roll);
      return;
    }
    w.renewer->poll();
    if (w.sessions && !session_of(w)) start_session(w);
    const std::optional<Lease> mine = believed(w, key);
    if (!mine && !w.held.contains(key) && roll < 0.40) {
      try_acquire(w, key);
    } else if (mine && roll < 0.75) {
      fenced_write(w, *mine);
    } else if (mine && roll < 0.80) {
      release(w, key);
    } else if (!w.lost.empty() && roll > 0.97) {
      release_lost(w);
    }
  }

  // A session lost (expired, ended by another while this worker was paused,
  // or never started) is never renewed again: a new one takes its place.
  void start_session(Worker& w) {
    if (w.session) {
      if (w.known_session) w.past_sessions.insert(*w.known_session);
      (void)w.renewer->remove(*w.session);
    }
    w.session.reset();
    w.known_session.reset();
    AcquireOptions o;
    o.owner = w.name;
    o.ttl = o_.ttl;
    Result<Lease> session = w.leases->acquire(session_key(w.name), o);
    if (!session.ok()) return;
    w.session = w.renewer->add(*session, nullptr);
    w.known_session = session->token;
    ++sessions_started_;
    note(w.name + " started session " + session->token.substr(0, 6));
  }

  void try_acquire(Worker& w, int key) {
    AcquireOptions o;
    o.owner = w.name;
    o.ttl = o_.ttl;
    if (w.sessions) {
      const auto session = session_of(w);
      if (!session) return;
      o.ttl = 10 * o_.ttl;
      o.session = session->token;
    }
    Result<Lease> lease = w.leases->acquire(key_of(key), o);
    if (!lease.ok() && lease.status().code() == Code::kAlreadyExists && w.sessions) {
      lease = take_from_dead_session(w, key, o);
    }
    if (!lease.ok()) return;
    ++acquisitions_;
    note(w.name + " acquired key" + std::to_string(key) + " epoch " + std::to_string(lease->epoch) +
         (lease->session.empty() ? "" : " in session " + lease->session.substr(0, 6)));
    int64_t& seen = epoch_seen_[key];
    if (lease->epoch <= seen) {
      fail("epoch " + std::to_string(lease->epoch) + " on key" + std::to_string(key) +
           " is not above the " + std::to_string(seen) + " seen before");
    }
    seen = lease->epoch;
    w.held[key] = w.renewer->add(*lease, nullptr);
    w.known[key] = *lease;
    check();
  }

  // A key bound to a session that has expired (by this worker's clock), or
  // to one of this worker's own earlier sessions: the session is ended, then
  // the key taken on its owner and token. A session is known to be its
  // owner's only from the owner's session item (or its own memory): the
  // key's owner and session may be a token-less writer's owner beside the
  // session an earlier holder left.
  Result<Lease> take_from_dead_session(Worker& w, int key, AcquireOptions o) {
    const Result<LeaseView> view = w.leases->inspect(key_of(key));
    if (!view.ok() || view->session.empty() || view->owner.empty()) {
      return already_exists("not a session's");
    }
    const LeaseRef session{session_key(view->owner), "lease", view->owner, view->session};
    bool dead = false;
    if (view->owner == w.name) {
      dead = w.past_sessions.contains(session.token);
    } else {
      const Result<LeaseView> stored = w.leases->inspect(session.key);
      dead = stored.ok() && stored->token == session.token &&
             stored->expires_at_ms < to_unix_ms(w.clock->wall_now());
    }
    if (!dead) return already_exists("its session is live, or not known to be a session");
    const Status ended = w.leases->end_session(session);
    if (!ended.ok()) return ended;
    ++sessions_ended_;
    note(w.name + " ended session " + session.token.substr(0, 6) + " of " + session.owner);
    o.ended_session = AcquireOptions::SessionRef{session.owner, session.token};
    Result<Lease> lease = w.leases->acquire(key_of(key), o);
    if (lease.ok()) ++session_takeovers_;
    return lease;
  }

  void fenced_write(Worker& w, Lease lease) {
    // Not sent past the session's deadline either.
    if (!lease.session.empty()) {
      const auto session = session_of(w);
      if (!session) return;
      lease.valid_until = std::min(lease.valid_until, session->valid_until);
    }
    Update update;
    update.set("fence_epoch", lease.epoch)
        .set("fence_id", int64_t{++fence_ids_})
        .set("fence_owner", lease.owner)
        .set("fence_token", lease.token)
        .add("fence_count", 1);
    if (w.leases->fenced_write(lease, update).ok()) ++fenced_writes_;
  }

  void release(Worker& w, int key) {
    const auto lease = w.renewer->remove(w.held.at(key));
    w.held.erase(key);
    w.known.erase(key);
    if (!lease) return;
    const auto mode = random_.chance(0.5) ? ReleaseMode::kExpire : ReleaseMode::kClear;
    (void)w.leases->release(*lease, mode);  // a failed release just lets it expire
    note(w.name + " released key" + std::to_string(key));
  }

  // A lease already lost, released late by its old owner: a cleanup that ran
  // after a pause, or an operator's `lease release --owner W --token OLD`.
  // By then another worker may hold the lease, a token-less one among them.
  void release_lost(Worker& w) {
    const Lease old = w.lost.front();
    w.lost.pop_front();
    const auto mode = random_.chance(0.5) ? ReleaseMode::kExpire : ReleaseMode::kClear;
    const Status released = w.leases->release(old, mode);
    ++late_releases_;
    note(w.name + " released a lost lease on " + old.key.pk + ": " + released.to_string());
  }

  // The reference pattern: acquire with `attribute_not_exists(lease_owner) OR
  // lease_expires_at_ms < :now`, setting only the owner and the expiry; renew
  // and release on `lease_owner = :me`. It trusts its lease as the lease
  // layer does (from the send time, less the skew and margin), so that the
  // checker holds it to the same standard.
  void act_foreign(Worker& w, int key, double roll) {
    const bool valid = foreign_valid(w, key);
    if (!valid) w.foreign_held.erase(key);
    const MonoTime sent = w.clock->mono_now();
    const int64_t now_ms = to_unix_ms(w.clock->wall_now());
    const Key k = key_of(key);
    Update take;
    take.set("lease_owner", w.name).set("lease_expires_at_ms", now_ms + to_ms(o_.ttl));
    if (!valid && roll < 0.40) {
      const Condition free =
          cond::not_exists("lease_owner") || cond::lt("lease_expires_at_ms", now_ms);
      if (!w.store->update("leases", k, take, free).ok()) return;
      ++foreign_acquisitions_;
      note(w.name + " (token-less) took key" + std::to_string(key));
    } else if (valid && roll < 0.80) {
      const Status renewed =
          w.store->update("leases", k, take, cond::eq("lease_owner", w.name)).status();
      if (renewed.code() == Code::kConditionFailed) w.foreign_held.erase(key);
      if (!renewed.ok()) return;
    } else if (valid && roll < 0.85) {
      w.foreign_held.erase(key);
      (void)w.store->update("leases", k, Update().set("lease_expires_at_ms", int64_t{0}),
                            cond::eq("lease_owner", w.name));
      note(w.name + " (token-less) released key" + std::to_string(key));
      return;
    } else {
      return;
    }
    w.foreign_held[key] = sent + w.leases->validity(o_.ttl);
    check();
  }

  bool holds(Worker& w, int key) {
    if (w.foreign) return foreign_valid(w, key);
    const auto it = w.held.find(key);
    if (it == w.held.end()) return false;
    return trusted(w, w.renewer->get(it->second));
  }

  void check() {
    if (violation_) return;
    for (int key = 0; key < o_.keys; ++key) {
      std::vector<std::string> holders;
      for (Worker& w : workers_) {
        if (holds(w, key)) holders.push_back(w.name);
      }
      if (holders.size() > 1) {
        fail("workers " + holders[0] + " and " + holders[1] +
             " both consider themselves holders of key" + std::to_string(key));
      }
      auto item = memory_->get("leases", key_of(key), true);
      if (item.ok()) {
        const int64_t* epoch = get_int(*item, "lease_epoch");
        if (epoch && *epoch < stored_epoch_[key]) fail("the stored epoch went down");
        if (epoch) stored_epoch_[key] = *epoch;
      }
    }
  }

  void fail(const std::string& what) {
    if (violation_) return;
    std::ostringstream out;
    out << "seed " << seed_ << ", step " << step_ << ": " << what
        << "\n  replay: LEASEHOLD_SIM_SEED=" << seed_ << "\n  last events:\n";
    for (const auto& e : trace_) out << "    " << e << "\n";
    violation_ = out.str();
  }

  const uint64_t seed_;
  const SimOptions o_;
  SeededRandom random_;
  SimulatedClock truth_;
  std::unique_ptr<ItemStore> memory_;
  std::unique_ptr<Observer> observer_;
  std::vector<Worker> workers_;
  std::map<int, int64_t> epoch_seen_, stored_epoch_;
  std::deque<std::string> trace_;
  std::optional<std::string> violation_;
  int step_ = 0;
  int acquisitions_ = 0;
  int foreign_acquisitions_ = 0;
  int fenced_writes_ = 0;
  int late_releases_ = 0;
  int sessions_started_ = 0;
  int sessions_ended_ = 0;
  int session_takeovers_ = 0;
  int64_t fence_ids_ = 0;
};

std::vector<uint64_t> lease_seeds(int default_count) {
  if (const char* one = std::getenv("LEASEHOLD_SIM_SEED")) return {std::strtoull(one, nullptr, 10)};
  int count = default_count;
  if (const char* n = std::getenv("LEASEHOLD_SIM_SEEDS")) count = std::atoi(n);
  std::vector<uint64_t> out;
  for (int i = 1; i <= count; ++i) out.push_back(static_cast<uint64_t>(i) * 7919);
  return out;
}

TEST(LeaseSimulation, MutualExclusionAndMonotonicEpochsUnderFaults) {
  int acquisitions = 0, foreign = 0, writes = 0, late_releases = 0;
  for (uint64_t seed : lease_seeds(150)) {
    Simulation sim(seed, SimOptions{});
    const auto violation = sim.run();
    ASSERT_FALSE(violation.has_value()) << *violation;
    acquisitions += sim.acquisitions();
    foreign += sim.foreign_acquisitions();
    writes += sim.fenced_writes();
    late_releases += sim.late_releases();
  }
  std::cout << "  " << acquisitions << " acquisitions, " << foreign << " token-less takeovers, "
            << writes << " fenced writes, " << late_releases << " late releases\n";
  // The runs must have exercised contention, not idled.
  EXPECT_GT(acquisitions, 1000);
  EXPECT_GT(foreign, 200);
  EXPECT_GT(writes, 10000);
  EXPECT_GT(late_releases, 100);
}

TEST(LeaseSimulation, SessionsKeepOneHolderUnderFaultsPausesAndSkew) {
  SimOptions o;
  o.session_workers = 2;
  int acquisitions = 0, started = 0, ended = 0, takeovers = 0, writes = 0;
  for (uint64_t seed : lease_seeds(60)) {
    Simulation sim(seed, o);
    const auto violation = sim.run();
    ASSERT_FALSE(violation.has_value()) << *violation;
    acquisitions += sim.acquisitions();
    started += sim.sessions_started();
    ended += sim.sessions_ended();
    takeovers += sim.session_takeovers();
    writes += sim.fenced_writes();
  }
  std::cout << "  " << acquisitions << " acquisitions, " << started << " sessions started, "
            << ended << " ended, " << takeovers << " keys taken from ended sessions, " << writes
            << " fenced writes\n";
  // Sessions were lost to pauses and faults, and their keys moved with them.
  EXPECT_GT(started, 400);
  EXPECT_GT(ended, 100);
  EXPECT_GT(takeovers, 100);
  EXPECT_GT(writes, 5000);
}

TEST(LeaseSimulation, SameSeedSameRun) {
  Simulation a(12345, SimOptions{}), b(12345, SimOptions{});
  EXPECT_EQ(a.run(), b.run());
  EXPECT_EQ(a.acquisitions(), b.acquisitions());
  EXPECT_EQ(a.fenced_writes(), b.fenced_writes());
}

// The checker is not vacuous: each planted fault below must produce a
// violation in some run.
// Runs seeds until one is caught, and prints what was caught.
bool caught_in_some_run(const SimOptions& o, const std::vector<uint64_t>& seeds) {
  for (uint64_t seed : seeds) {
    const auto violation = Simulation(seed, o).run();
    if (!violation) continue;
    std::cout << "  caught: " << violation->substr(0, violation->find('\n')) << "\n";
    return true;
  }
  return false;
}

// Clocks skewed far beyond what the lease layer was told.
TEST(LeaseSimulation, CheckerCatchesSkewBeyondTheConfiguredBound) {
  SimOptions o;
  o.actual_skew = std::chrono::seconds(4);
  EXPECT_TRUE(caught_in_some_run(o, lease_seeds(20)));
}

// The owner left out of the holder-side conditions: a lost lease's late
// release (or a late renewal) lands on a token-less writer's lease.
TEST(LeaseSimulation, CheckerCatchesTheOwnerLeftOutOfTheConditions) {
  SimOptions o;
  o.blind_to = "lease_owner";
  EXPECT_TRUE(caught_in_some_run(o, lease_seeds(20)));
}

// Renewals without the heartbeat guard: a renewal held on its way lands
// after a later one and moves the expiry back under what the holder trusts.
TEST(LeaseSimulation, CheckerCatchesALateRenewalUndoingALaterOne) {
  SimOptions o;
  o.blind_to = "lease_heartbeat_at_ms";
  EXPECT_TRUE(caught_in_some_run(o, lease_seeds(150)));
}

// A backend that re-sends a write answered 500 after it had applied: a
// fenced write applies twice.
TEST(LeaseSimulation, CheckerCatchesAWriteResentAfterAServerError) {
  SimOptions o;
  o.faults.resend_after_server_error = true;
  EXPECT_TRUE(caught_in_some_run(o, lease_seeds(20)));
}

// A key trusted past its session's deadline.
TEST(LeaseSimulation, CheckerCatchesAKeyTrustedWithoutItsSession) {
  SimOptions o;
  o.session_workers = 3;
  o.ignore_sessions = true;
  EXPECT_TRUE(caught_in_some_run(o, lease_seeds(20)));
}

}  // namespace
}  // namespace leasehold
