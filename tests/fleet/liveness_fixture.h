// The fleet's liveness suite (liveness_test.cc): workers on a real backend
// (SQLite, DynamoDB on dynalite; one INSTANTIATE line each, as for the
// conformance suites), each through a store of its own that a test can
// script faults into or cut off altogether (a crash, as the fleet sees one:
// the worker writes nothing more and its session runs out), over a store
// whose indexes can be made to lag as DynamoDB's do.
#pragma once

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fleet/connections.h"
#include "fleet/members.h"
#include "fleet/schema.h"
#include "fleet/worker.h"
#include "fleet/worker_test_fixture.h"
#include "store/store_wrapper.h"
#include "testing/capturing_logger.h"
#include "testing/faulty_store.h"
#include "testing/index_lag_store.h"
#include "tests/conformance/store_conformance.h"

namespace leasehold::fleet::testing {

// A store whose calls the test scripts: a rule's next `times` matching
// calls get its fault (store::Fault: kUnavailable, nothing applied;
// kDropReply, applied and kUnknownOutcome; kLoseRequest, not applied and
// kUnknownOutcome). cut() fails every call. Thread-safe.
class ScriptedStore final : public store::StoreWrapper {
 public:
  enum class Op { kGet, kWrite, kQuery };
  struct Rule {
    Op op = Op::kWrite;
    std::string table;  // empty: any
    // Which calls of that kind (the key, and the update of a write); null:
    // every one.
    std::function<bool(const Key&, const Update*)> matches;
    store::Fault fault = store::Fault::kUnavailable;
    int times = 1;  // negative: every one
  };

  using StoreWrapper::StoreWrapper;

  void add(Rule rule) {
    std::lock_guard lock(mu_);
    rules_.push_back(std::move(rule));
  }
  void cut(bool cut = true) {
    std::lock_guard lock(mu_);
    cut_ = cut;
  }
  // Calls that got a rule's fault.
  int faults() const {
    std::lock_guard lock(mu_);
    return faults_;
  }

  Result<Item> get(std::string_view t, const Key& k, bool consistent) override {
    if (auto f = fault(Op::kGet, t, k, nullptr)) return unavailable("scripted (test)");
    return StoreWrapper::get(t, k, consistent);
  }
  Result<std::vector<Item>> batch_get(std::string_view t, std::span<const Key> keys) override {
    if (auto f = fault(Op::kGet, t, Key{}, nullptr)) return unavailable("scripted (test)");
    return StoreWrapper::batch_get(t, keys);
  }
  Status put(std::string_view t, const Item& item, const Condition& c) override {
    if (auto f = fault(Op::kWrite, t, Key{}, nullptr)) return unavailable("scripted (test)");
    return StoreWrapper::put(t, item, c);
  }
  Result<Item> update(std::string_view t, const Key& k, const Update& u,
                      const Condition& c) override {
    switch (fault(Op::kWrite, t, k, &u).value_or(store::Fault::kNone)) {
      case store::Fault::kNone:
        return StoreWrapper::update(t, k, u, c);
      case store::Fault::kDropReply:
        (void)StoreWrapper::update(t, k, u, c);
        return unknown_outcome("the reply was lost (test)");
      case store::Fault::kLoseRequest:
        return unknown_outcome("the request was lost (test)");
      default:
        return unavailable("scripted (test)");
    }
  }
  Status remove(std::string_view t, const Key& k, const Condition& c) override {
    if (auto f = fault(Op::kWrite, t, k, nullptr)) return unavailable("scripted (test)");
    return StoreWrapper::remove(t, k, c);
  }
  Result<Page> query_index(std::string_view t, std::string_view index, std::string_view hash,
                           const KeyRange& range, const QueryOptions& o) override {
    if (auto f = fault(Op::kQuery, t, Key{}, nullptr)) return unavailable("scripted (test)");
    return StoreWrapper::query_index(t, index, hash, range, o);
  }
  // One write at a time, through update(), so that each meets the rules.
  using StoreWrapper::update_each;
  std::vector<Result<Item>> update_each(std::string_view t, std::span<const UpdateRequest> r,
                                        Duration timeout) override {
    return ItemStore::update_each(t, r, timeout);
  }

 private:
  std::optional<store::Fault> fault(Op op, std::string_view table, const Key& key,
                                    const Update* update) {
    std::lock_guard lock(mu_);
    if (cut_) return store::Fault::kUnavailable;
    for (auto it = rules_.begin(); it != rules_.end(); ++it) {
      if (it->op != op || (!it->table.empty() && it->table != table)) continue;
      if (it->matches && !it->matches(key, update)) continue;
      const store::Fault f = it->fault;
      if (it->times > 0 && --it->times == 0) rules_.erase(it);
      ++faults_;
      return f;
    }
    return std::nullopt;
  }

  mutable std::mutex mu_;
  std::deque<Rule> rules_;
  bool cut_ = false;
  int faults_ = 0;
};

// What a write does, for rules.
inline bool sets_int(const Update& u, std::string_view attr, int64_t value) {
  for (const UpdateAction& a : u.actions()) {
    if (a.kind == UpdateAction::Kind::kSet && a.attr == attr &&
        std::holds_alternative<int64_t>(a.value) && std::get<int64_t>(a.value) == value) {
      return true;
    }
  }
  return false;
}
inline bool adds(const Update& u, std::string_view attr) {
  for (const UpdateAction& a : u.actions()) {
    if (a.kind == UpdateAction::Kind::kAdd && a.attr == attr) return true;
  }
  return false;
}
// A release of connection `id`'s lease (expires_at set to 0).
inline std::function<bool(const Key&, const Update*)> release_of(const std::string& id) {
  return [pk = connection_key(id).pk](const Key& k, const Update* u) {
    return k.pk == pk && u != nullptr && sets_int(*u, "lease_expires_at_ms", 0);
  };
}
// An acquisition of connection `id`'s lease (the epoch goes up).
inline std::function<bool(const Key&, const Update*)> acquire_of(const std::string& id) {
  return [pk = connection_key(id).pk](const Key& k, const Update* u) {
    return k.pk == pk && u != nullptr && adds(*u, "lease_epoch");
  };
}
inline std::function<bool(const Key&, const Update*)> key_is(const std::string& id) {
  return [pk = connection_key(id).pk](const Key& k, const Update*) { return k.pk == pk; };
}

class FleetLiveness : public ::testing::TestWithParam<conformance::StoreFactory> {
 protected:
  // One worker of the test, with its own store, sink and log.
  struct Running {
    std::string id;
    std::unique_ptr<ScriptedStore> store;
    std::unique_ptr<CapturingSink> sink;
    std::unique_ptr<leasehold::CapturingLogger> log;
    std::unique_ptr<Worker> worker;
  };

  void SetUp() override;
  void TearDown() override;

  WorkerOptions options(const std::string& id) const;
  // Starts worker `id` with `o` (options(id) if not given), its store
  // scripted first by `script` if given. Fails the test if it cannot.
  Running& start(const std::string& id, std::function<void(ScriptedStore&)> script = {},
                 std::optional<WorkerOptions> o = std::nullopt);
  // The worker dies as far as the fleet can tell: it reaches the store no
  // more, so its session runs out and it writes nothing after.
  void crash(Running& r) { r.store->cut(); }

  void add(const std::string& id);
  void set_state(const std::string& id, DesiredState state);
  Connection stored(const std::string& id);
  // The worker that streams `id` now: a running worker whose upstream
  // connection for it is open, under the lease the store holds (its owner,
  // epoch and the worker's session). "" if none.
  std::string streamer(const std::string& id);
  // Waits up to `within` for `id` to be streamed; the worker, or "".
  std::string streamed_within(const std::string& id, Duration within);
  std::string session_of(const std::string& worker);

  Duration reconcile_every_ = std::chrono::milliseconds(100);
  Duration session_ttl_ = std::chrono::seconds(1);
  JumpClock clock_;
  SystemRandom random_;
  std::unique_ptr<ItemStore> backend_;
  std::unique_ptr<leasehold::testing::IndexLagStore> lagging_;
  FakeUpstream upstream_;
  std::vector<std::unique_ptr<Running>> running_;
};

}  // namespace leasehold::fleet::testing
