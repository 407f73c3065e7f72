// What the worker's tests share (worker_test.cc, worker_handover_test.cc):
// a clock whose monotonic time the test can jump, an upstream the test
// drives message by message (or batch by batch), a sink that keeps its lines
// and writes and can be told to fail, a store the test can take down that
// counts checkpoints, and the WorkerTest fixture on the memory store.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <boost/json/parse.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "fleet/connections.h"
#include "fleet/members.h"
#include "fleet/schema.h"
#include "fleet/worker.h"
#include "net/websocket.h"
#include "store/memory/memory_store.h"
#include "store/store_wrapper.h"
#include "testing/eventually.h"

namespace leasehold::fleet::testing {

using std::chrono::milliseconds;
using std::chrono::seconds;

using leasehold::testing::eventually;

// How long a test waits for the worker's threads, unless it says.
inline constexpr milliseconds kWaitMax = seconds(10);

// Real time, with a jump of the monotonic clock that the test can add: a
// lease's local deadline passes at once.
class JumpClock final : public Clock {
 public:
  WallTime wall_now() override { return real_.wall_now(); }
  MonoTime mono_now() override { return real_.mono_now() + Duration(jump_ns_.load()); }
  void jump(Duration d) { jump_ns_ += d.count(); }

 private:
  RealClock real_;
  std::atomic<int64_t> jump_ns_{0};
};

// An upstream the test drives: each connect() opens at once; send() delivers
// a message (send_batch() several, as one batch) to the open stream of a URL
// on the test's thread.
class FakeUpstream final : public net::WsClient {
 public:
  class Stream final : public net::WsStream {
   public:
    Stream(FakeUpstream& owner, std::string url, net::WsHandlers h)
        : owner_(owner), url_(std::move(url)), handlers_(std::move(h)) {}
    void close() override {
      {
        // Waits for a batch being delivered; from inside one, as the
        // WsClient does, makes it the last.
        std::unique_lock lock(mu_, std::defer_lock);
        if (delivering_.load() != std::this_thread::get_id()) lock.lock();
        if (closed_) return;
        closed_ = true;
      }
      owner_.closed(url_);
      handlers_.on_closed(Status::ok_status());
    }
    bool deliver(const std::vector<std::string>& messages) {
      std::lock_guard lock(mu_);
      if (closed_) return false;
      deliver_anyway(messages);
      return true;
    }
    // As a late handler would: even after close() (the worker must ignore it).
    void deliver_anyway(const std::vector<std::string>& messages) {
      std::vector<net::WsMessage> batch;
      for (const auto& m : messages) batch.push_back({m, true});
      delivering_ = std::this_thread::get_id();
      handlers_.on_messages(batch);
      delivering_ = std::thread::id();
    }
    void fail(const Status& why) {
      {
        std::lock_guard lock(mu_);
        if (closed_) return;
        closed_ = true;
      }
      owner_.closed(url_);
      handlers_.on_closed(why);
    }

   private:
    FakeUpstream& owner_;
    const std::string url_;
    net::WsHandlers handlers_;
    std::mutex mu_;
    bool closed_ = false;
    std::atomic<std::thread::id> delivering_{};  // the thread in on_messages
  };

  Result<std::shared_ptr<net::WsStream>> connect(std::string_view url,
                                                 net::WsHandlers handlers) override {
    auto on_open = handlers.on_open;
    auto stream = std::make_shared<Stream>(*this, std::string(url), std::move(handlers));
    {
      std::lock_guard lock(mu_);
      open_[std::string(url)] = stream;
      urls_.push_back(std::string(url));
      connected_at_.push_back(std::chrono::steady_clock::now());
    }
    if (on_open) on_open();
    if (flapping_) stream->fail(unavailable("the upstream closed at once"));
    return std::shared_ptr<net::WsStream>(stream);
  }
  size_t open_streams() const override {
    std::lock_guard lock(mu_);
    return open_.size();
  }

  // The open stream whose URL starts with `prefix`, if any.
  std::shared_ptr<Stream> find(const std::string& prefix) {
    std::lock_guard lock(mu_);
    for (auto& [url, s] : open_) {
      if (url.starts_with(prefix)) return s;
    }
    return nullptr;
  }
  bool send(const std::string& prefix, std::string_view message) {
    return send_batch(prefix, {std::string(message)});
  }
  bool send_batch(const std::string& prefix, const std::vector<std::string>& messages) {
    auto s = find(prefix);
    return s != nullptr && s->deliver(messages);
  }
  std::vector<std::string> urls() {
    std::lock_guard lock(mu_);
    return urls_;
  }
  std::vector<std::chrono::steady_clock::time_point> connected_at() {
    std::lock_guard lock(mu_);
    return connected_at_;
  }
  // Every connection from now on opens and closes at once.
  void set_flapping(bool flapping) { flapping_ = flapping; }
  void closed(const std::string& url) {
    std::lock_guard lock(mu_);
    open_.erase(url);
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Stream>> open_;
  std::vector<std::string> urls_;
  std::vector<std::chrono::steady_clock::time_point> connected_at_;
  std::atomic<bool> flapping_{false};
};

// Keeps the lines written, and how many writes carried them. It can be told
// to fail the next write part way: after `lines` whole lines and a few bytes
// of the next.
class CapturingSink final : public Sink {
 public:
  Status write(BeforeWrite& before, size_t* written_bytes) override {
    *written_bytes = 0;
    std::unique_lock lock(mu_);
    ++writes_waiting_;
    gate_cv_.wait(lock, [&] { return !hold_writes_; });
    --writes_waiting_;
    Result<std::string_view> ready = before.lines();
    if (!ready.ok()) return ready.status();
    const std::string_view lines = *ready;
    EXPECT_TRUE(!lines.empty() && lines.back() == '\n');
    ++writes_;
    std::string_view taken = lines;
    if (fail_after_lines_) {
      size_t end = 0;
      for (size_t i = 0; i < *fail_after_lines_; ++i) end = lines.find('\n', end) + 1;
      taken = lines.substr(0, end + 10);
    }
    *written_bytes = taken.size();
    partial_ += taken;
    for (size_t end = partial_.find('\n'); end != std::string::npos; end = partial_.find('\n')) {
      lines_.push_back(partial_.substr(0, end));
      partial_.erase(0, end + 1);
    }
    last_write_at_ = std::chrono::steady_clock::now();
    if (fail_after_lines_) {
      fail_after_lines_.reset();
      return unavailable("the disk is full (test)");
    }
    return {};
  }
  void fail_next_write_after(size_t lines) {
    std::lock_guard lock(mu_);
    fail_after_lines_ = lines;
  }
  size_t writes() {
    std::lock_guard lock(mu_);
    return writes_;
  }
  std::chrono::steady_clock::time_point last_write_at() {
    std::lock_guard lock(mu_);
    return last_write_at_;
  }
  // Each flush makes durable the lines written before it began.
  Status flush() override {
    size_t at_entry = 0;
    {
      std::unique_lock lock(mu_);
      at_entry = lines_.size();
      ++flushes_entered_;
      gate_cv_.wait(lock, [&] { return !hold_flushes_; });
    }
    durable_lines_ = std::max(durable_lines_.load(), at_entry);
    return {};
  }
  // Flushes wait until let_flushes_go().
  void hold_flushes() { set_gate(hold_flushes_, true); }
  void let_flushes_go() { set_gate(hold_flushes_, false); }
  size_t flushes_entered() {
    std::lock_guard lock(mu_);
    return flushes_entered_;
  }
  // Lines a completed flush made durable.
  size_t durable_lines() const { return durable_lines_.load(); }
  // The next write waits, before its last moment, until let_writes_go(): as
  // one waits for another's write to the same sink.
  void hold_writes() { set_gate(hold_writes_, true); }
  void let_writes_go() { set_gate(hold_writes_, false); }
  size_t writes_waiting() {
    std::lock_guard lock(mu_);
    return writes_waiting_;
  }
  std::string describe() const override { return "capture"; }
  std::vector<std::string> lines() {
    std::lock_guard lock(mu_);
    return lines_;
  }
  // The sequence numbers written for `conn`, in order.
  std::vector<int64_t> seqs(const std::string& conn) {
    std::vector<int64_t> out;
    for (const auto& line : lines()) {
      auto v = boost::json::parse(line);
      if (v.at("conn").as_string() == conn) out.push_back(v.at("seq").as_int64());
    }
    return out;
  }

 private:
  void set_gate(bool& hold, bool value) {
    {
      std::lock_guard lock(mu_);
      hold = value;
    }
    gate_cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable gate_cv_;
  bool hold_flushes_ = false, hold_writes_ = false;
  size_t flushes_entered_ = 0, writes_waiting_ = 0;
  std::atomic<size_t> durable_lines_{0};
  std::vector<std::string> lines_;
  std::string partial_;  // a line a failed write left unfinished
  size_t writes_ = 0;
  std::optional<size_t> fail_after_lines_;
  std::chrono::steady_clock::time_point last_write_at_{};
};

// A store the test can take down (every call kUnavailable, nothing
// applied) and bring back, that also counts the checkpoints it writes: a
// write that sets last_seq, alone or in a batch. Thread-safe.
class OutageStore final : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  // `spare_positions`: down for every call but those on a session's
  // positions (as SQLite locked by another process, but for those).
  void set_down(bool down, bool spare_positions = false) {
    spare_positions_ = spare_positions;
    down_ = down;
  }

  // Checkpoint writes sent one by one, and the most sent in one batch.
  size_t single_checkpoints() const { return single_.load(); }
  // Writes that set last_error, alone or in a batch.
  size_t error_writes() const { return error_writes_.load(); }
  // Called with each last_seq a write sets, as it is sent.
  void on_checkpoint(std::function<void(int64_t)> f) { on_checkpoint_ = std::move(f); }
  size_t largest_checkpoint_batch() const { return largest_batch_.load(); }

  Result<Item> get(std::string_view t, const Key& k, bool consistent) override {
    if (refused(k)) return down();
    return StoreWrapper::get(t, k, consistent);
  }
  Result<std::vector<Item>> batch_get(std::string_view t, std::span<const Key> keys) override {
    if (std::any_of(keys.begin(), keys.end(), [&](const Key& k) { return refused(k); })) {
      return down();
    }
    return StoreWrapper::batch_get(t, keys);
  }
  Status put(std::string_view t, const Item& item, const Condition& c) override {
    if (down_) return down();
    return StoreWrapper::put(t, item, c);
  }
  Result<Item> update(std::string_view t, const Key& k, const Update& u,
                      const Condition& c) override {
    if (refused(k)) return down();
    if (sets_last_seq(u)) ++single_;
    if (sets(u, "last_error")) ++error_writes_;
    report_checkpoint(u);
    return StoreWrapper::update(t, k, u, c);
  }
  Status remove(std::string_view t, const Key& k, const Condition& c) override {
    if (refused(k)) return down();
    return StoreWrapper::remove(t, k, c);
  }
  Result<Page> query_index(std::string_view t, std::string_view index, std::string_view hash,
                           const KeyRange& range, const QueryOptions& o) override {
    if (down_) return down();
    return StoreWrapper::query_index(t, index, hash, range, o);
  }
  using StoreWrapper::update_each;
  std::vector<Result<Item>> update_each(std::string_view t, std::span<const UpdateRequest> r,
                                        Duration timeout) override {
    if (std::any_of(r.begin(), r.end(), [&](const UpdateRequest& w) { return refused(w.key); })) {
      return std::vector<Result<Item>>(r.size(), Result<Item>(down()));
    }
    for (const UpdateRequest& w : r) report_checkpoint(w.update);
    error_writes_ += static_cast<size_t>(std::count_if(
        r.begin(), r.end(), [](const auto& w) { return sets(w.update, "last_error"); }));
    const size_t checkpoints = static_cast<size_t>(
        std::count_if(r.begin(), r.end(), [](const auto& w) { return sets_last_seq(w.update); }));
    size_t largest = largest_batch_.load();
    while (checkpoints > largest && !largest_batch_.compare_exchange_weak(largest, checkpoints)) {
    }
    return StoreWrapper::update_each(t, r, timeout);
  }

 private:
  static Status down() { return unavailable("the store is down (test)"); }
  static bool sets(const Update& u, std::string_view attr) {
    return std::any_of(u.actions().begin(), u.actions().end(),
                       [&](const UpdateAction& a) { return a.attr == attr; });
  }
  static bool sets_last_seq(const Update& u) { return sets(u, "last_seq"); }
  void report_checkpoint(const Update& u) {
    if (!on_checkpoint_) return;
    for (const UpdateAction& a : u.actions()) {
      if (a.attr == "last_seq") on_checkpoint_(std::get<int64_t>(a.value));
    }
  }
  bool refused(const Key& k) const {
    return down_ && !(spare_positions_ && k.pk.starts_with("POSITIONS#"));
  }
  std::function<void(int64_t)> on_checkpoint_;
  std::atomic<bool> down_{false};
  std::atomic<bool> spare_positions_{false};
  std::atomic<size_t> single_{0}, largest_batch_{0}, error_writes_{0};
};

inline std::string msg(int64_t seq) { return "{\"seq\":" + std::to_string(seq) + ",\"v\":\"x\"}"; }

class WorkerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(store_->ensure_table(connections_table_spec()).ok()); }

  WorkerOptions options(const std::string& id) {
    WorkerOptions o;
    o.id = id;
    o.lease_ttl = seconds(3);
    o.renew_every = milliseconds(500);
    o.reconcile_every = reconcile_every_;
    o.checkpoint_every = milliseconds(100);
    o.lease.max_clock_skew = milliseconds(100);
    o.lease.safety_margin = milliseconds(50);
    o.upstream_stable_after = milliseconds(300);
    if (session_ttl_ > Duration::zero()) {
      // The connections' own leases last long and are renewed rarely: the
      // session keeps them.
      o.session_ttl = session_ttl_;
      o.lease_ttl = seconds(60);
      o.renew_every = seconds(20);
    }
    return o;
  }

  std::unique_ptr<Worker> start(const std::string& id, Sink& sink, ItemStore* store = nullptr) {
    auto w = Worker::start(store != nullptr ? *store : *store_, clock_, random_, upstream_, sink,
                           options(id));
    EXPECT_TRUE(w.ok()) << w.status().to_string();
    return w.ok() ? std::move(w).value() : nullptr;
  }

  void add(const std::string& id) {
    Connections connections(*store_, clock_);
    NewConnection c;
    c.id = id;
    c.url = "ws://upstream.test/s/" + id + "?from={next_seq}";
    ASSERT_TRUE(connections.add(c).ok());
  }

  Connection stored(const std::string& id) {
    auto item = store_->get(kConnectionsTable, connection_key(id), true);
    EXPECT_TRUE(item.ok());
    auto c = parse_connection(*item);
    EXPECT_TRUE(c.ok());
    // Where a taker would resume: with a session, its positions say.
    EXPECT_TRUE(show_positions(*store_, std::span<Connection>(&*c, 1), true).ok());
    return *c;
  }

  std::string prefix(const std::string& id) { return "ws://upstream.test/s/" + id + "?"; }

  // A lease manager on `table` of the test's store, for a member the test
  // plays itself.
  LeaseManager leases_on(const std::string& table) {
    LeaseConfig c;
    c.table = table;
    return LeaseManager(*store_, clock_, random_, c);
  }

  // Member `id` joins the fleet, saying it owns `owned` connections, with
  // figures written at `updated_at_ms` by its clock.
  Result<Lease> join(LeaseManager& members, const std::string& id, int64_t owned,
                     int64_t updated_at_ms) {
    AcquireOptions o;
    o.owner = id;
    o.ttl = seconds(60);
    o.extra_update.set("kind", std::string(kWorkerKind))
        .append(member_figures(owned, 1000, 0, 0, updated_at_ms));
    return members.acquire(worker_key(id), o);
  }

  // `owner` takes `count` of the connections `ids` (those handed over to
  // it); false if it could not within the deadline.
  bool take(LeaseManager& conns, const std::vector<std::string>& ids, const std::string& owner,
            size_t count) {
    AcquireOptions o;
    o.owner = owner;
    o.ttl = seconds(60);
    std::set<std::string> taken;
    return eventually(
        [&] {
          for (const auto& id : ids) {
            if (!taken.contains(id) && conns.acquire(connection_key(id), o).ok()) taken.insert(id);
          }
          return taken.size() == count;
        },
        kWaitMax);
  }

  // The workers' reconcile period; their takeovers are staggered by half of it.
  Duration reconcile_every_ = milliseconds(100);
  // The workers' session ttl; zero: they run without sessions.
  Duration session_ttl_{};
  JumpClock clock_;
  SystemRandom random_;
  std::unique_ptr<ItemStore> store_ = store::make_memory_store();
  FakeUpstream upstream_;
};

}  // namespace leasehold::fleet::testing
