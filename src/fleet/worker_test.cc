// Tests for the worker on the memory store, with a fake upstream that the
// test drives message by message (or batch by batch) and a sink that keeps
// its lines and writes: what is streamed, checkpointed, handed over, stopped
// and lost. The real upstream
// and real processes are in tests/process/fleet_test.cc.
#include "fleet/worker.h"

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
#include "net/websocket.h"
#include "store/memory/memory_store.h"
#include "store/store_wrapper.h"

namespace leasehold::fleet {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Waits for `done` to hold, up to `limit`.
template <typename F>
bool eventually(F done, Duration limit = seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
  return true;
}

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
  void set_down(bool down) { down_ = down; }

  // Checkpoint writes sent one by one, and the most sent in one batch.
  size_t single_checkpoints() const { return single_.load(); }
  // Writes that set last_error, alone or in a batch.
  size_t error_writes() const { return error_writes_.load(); }
  // Called with each last_seq a write sets, as it is sent.
  void on_checkpoint(std::function<void(int64_t)> f) { on_checkpoint_ = std::move(f); }
  size_t largest_checkpoint_batch() const { return largest_batch_.load(); }

  Result<Item> get(std::string_view t, const Key& k, bool consistent) override {
    if (down_) return down();
    return StoreWrapper::get(t, k, consistent);
  }
  Result<std::vector<Item>> batch_get(std::string_view t, std::span<const Key> keys) override {
    if (down_) return down();
    return StoreWrapper::batch_get(t, keys);
  }
  Status put(std::string_view t, const Item& item, const Condition& c) override {
    if (down_) return down();
    return StoreWrapper::put(t, item, c);
  }
  Result<Item> update(std::string_view t, const Key& k, const Update& u,
                      const Condition& c) override {
    if (down_) return down();
    if (sets_last_seq(u)) ++single_;
    if (sets(u, "last_error")) ++error_writes_;
    report_checkpoint(u);
    return StoreWrapper::update(t, k, u, c);
  }
  Status remove(std::string_view t, const Key& k, const Condition& c) override {
    if (down_) return down();
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
    if (down_) return std::vector<Result<Item>>(r.size(), Result<Item>(down()));
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
  std::function<void(int64_t)> on_checkpoint_;
  std::atomic<bool> down_{false};
  std::atomic<size_t> single_{0}, largest_batch_{0}, error_writes_{0};
};

std::string msg(int64_t seq) { return "{\"seq\":" + std::to_string(seq) + ",\"v\":\"x\"}"; }

class WorkerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(store_->ensure_table(connections_table_spec()).ok()); }

  WorkerOptions options(const std::string& id) {
    WorkerOptions o;
    o.id = id;
    o.lease_ttl = seconds(3);
    o.renew_every = milliseconds(500);
    o.reconcile_every = milliseconds(100);
    o.checkpoint_every = milliseconds(100);
    o.lease.max_clock_skew = milliseconds(100);
    o.lease.safety_margin = milliseconds(50);
    o.upstream_stable_after = milliseconds(300);
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
    return eventually([&] {
      for (const auto& id : ids) {
        if (!taken.contains(id) && conns.acquire(connection_key(id), o).ok()) taken.insert(id);
      }
      return taken.size() == count;
    });
  }

  JumpClock clock_;
  SystemRandom random_;
  std::unique_ptr<ItemStore> store_ = store::make_memory_store();
  FakeUpstream upstream_;
};

TEST_F(WorkerTest, StreamsInOrderDropsRepeatsAndBadMessagesAndCheckpoints) {
  add("a");
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }));
  EXPECT_EQ(upstream_.urls().front(), "ws://upstream.test/s/a?from=1");
  for (int64_t seq : {1, 2, 2, 3}) ASSERT_TRUE(upstream_.send(prefix("a"), msg(seq)));
  for (std::string bad : {"not json", "{\"other\":1}", "{\"seq\":1}"}) {
    ASSERT_TRUE(upstream_.send(prefix("a"), bad));
  }
  ASSERT_TRUE(upstream_.send(prefix("a"), msg(4)));
  EXPECT_EQ(sink.seqs("a"), (std::vector<int64_t>{1, 2, 3, 4}));
  const WorkerStats s = w->stats();
  EXPECT_EQ(s.messages, 4u);
  EXPECT_EQ(s.repeats_dropped, 1u);
  EXPECT_EQ(s.bad_messages, 3u);

  const auto line = boost::json::parse(sink.lines().front());
  EXPECT_EQ(line.at("worker").as_string(), "w1");
  EXPECT_EQ(line.at("epoch").as_int64(), 1);
  EXPECT_EQ(line.at("msg").at("v").as_string(), "x");
  EXPECT_TRUE(eventually([&] { return stored("a").last_seq == 4; }));
}

// A batch of messages is one sink write of the lines that go forward:
// repeats and going back are judged against what the batch already holds.
TEST_F(WorkerTest, ABatchIsOneSinkWriteOfTheMessagesThatGoForward) {
  add("a");
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }));
  ASSERT_TRUE(upstream_.send_batch(prefix("a"),
                                   {msg(1), msg(2), msg(2), msg(1), "not json", msg(3), msg(5)}));
  EXPECT_EQ(sink.writes(), 1u);
  EXPECT_EQ(sink.seqs("a"), (std::vector<int64_t>{1, 2, 3, 5}));
  // A batch of nothing new writes nothing.
  ASSERT_TRUE(upstream_.send_batch(prefix("a"), {msg(5), msg(4)}));
  EXPECT_EQ(sink.writes(), 1u);
  ASSERT_TRUE(upstream_.send_batch(prefix("a"), {msg(6), msg(7)}));
  EXPECT_EQ(sink.writes(), 2u);
  EXPECT_EQ(sink.seqs("a"), (std::vector<int64_t>{1, 2, 3, 5, 6, 7}));
  const WorkerStats s = w->stats();
  EXPECT_EQ(s.messages, 6u);
  EXPECT_EQ(s.repeats_dropped, 2u);
  EXPECT_EQ(s.bad_messages, 3u);  // 1 after 2, "not json", 4 after 5
  EXPECT_TRUE(eventually([&] { return stored("a").last_seq == 7; }));
}

// The lease is checked when the batch is written, not when its messages came
// in: a batch that waited past the local deadline writes nothing, and the
// stream is lost.
TEST_F(WorkerTest, ABatchWhoseLeaseLapsedWhileItWaitedWritesNothing) {
  OutageStore store(*store_);
  add("a");
  CapturingSink sink;
  auto w = start("w1", sink, &store);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }));
  ASSERT_TRUE(upstream_.send(prefix("a"), msg(1)));
  auto stream = upstream_.find(prefix("a"));
  ASSERT_NE(stream, nullptr);
  // Messages 2 and 3 have arrived under a valid lease; before they are
  // handed over, the lease can no longer be renewed and its deadline passes.
  store.set_down(true);
  clock_.jump(options("w1").lease_ttl);
  stream->deliver_anyway({msg(2), msg(3)});
  EXPECT_EQ(sink.seqs("a"), std::vector<int64_t>{1});
  EXPECT_EQ(sink.writes(), 1u);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) == nullptr; }))
      << "the stream is closed";
  EXPECT_TRUE(eventually([&] { return w->stats().losses == 1; }));
  EXPECT_EQ(w->stats().messages, 1u);
}

// Once an upstream connection has ended (it failed, or the connection was
// stopped and handed over), a batch that still reaches the worker from it
// writes nothing.
TEST_F(WorkerTest, ABatchFromAClosedUpstreamConnectionWritesNothing) {
  add("a");
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }));
  ASSERT_TRUE(upstream_.send(prefix("a"), msg(1)));
  auto failed = upstream_.find(prefix("a"));
  ASSERT_NE(failed, nullptr);
  failed->fail(unavailable("upstream went away"));
  ASSERT_TRUE(eventually([&] {
    auto again = upstream_.find(prefix("a"));
    return again != nullptr && again != failed;
  })) << "reconnected";
  failed->deliver_anyway({msg(2), msg(3)});  // late, from the connection that failed
  EXPECT_EQ(sink.seqs("a"), std::vector<int64_t>{1});

  auto stopped = upstream_.find(prefix("a"));
  Connections connections(*store_, clock_);
  ASSERT_TRUE(connections.set_desired("a", DesiredState::kStopped).ok());
  ASSERT_TRUE(eventually([&] { return w->owned().empty(); }));
  EXPECT_EQ(stored("a").last_seq, 1);
  stopped->deliver_anyway({msg(2), msg(3)});
  EXPECT_EQ(sink.seqs("a"), std::vector<int64_t>{1});
  EXPECT_EQ(sink.writes(), 1u);
}

// A write that the sink took only part of counts the lines wholly in: the
// checkpoint covers them and nothing after.
TEST_F(WorkerTest, APartWrittenBatchCountsOnlyItsWholeLines) {
  add("a");
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }));
  sink.fail_next_write_after(1);  // line 1, and part of line 2
  ASSERT_TRUE(upstream_.send_batch(prefix("a"), {msg(1), msg(2), msg(3)}));
  EXPECT_EQ(sink.seqs("a"), std::vector<int64_t>{1});
  EXPECT_EQ(w->stats().messages, 1u);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) == nullptr; }))
      << "the stream stops until the sink may work again";
  EXPECT_TRUE(eventually([&] { return stored("a").last_seq == 1; }));
  ASSERT_EQ(w->owned().size(), 1u);
  EXPECT_EQ(w->owned().front().written_seq, 1);
}

TEST_F(WorkerTest, StopHandsOverWithTheFinalCheckpointAndTheNextOwnerResumesAfterIt) {
  add("a");
  CapturingSink sink1, sink2;
  auto w1 = start("w1", sink1);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }));
  for (int64_t seq = 1; seq <= 5; ++seq) ASSERT_TRUE(upstream_.send(prefix("a"), msg(seq)));
  w1->stop();
  EXPECT_EQ(upstream_.open_streams(), 0u);
  const Connection after = stored("a");
  EXPECT_EQ(after.last_seq, 5) << "the release carries the final checkpoint";
  EXPECT_EQ(after.expires_at_ms, 0) << "handed over: the orphan index shows it at once";

  auto w2 = start("w2", sink2);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }));
  EXPECT_EQ(upstream_.urls().back(), "ws://upstream.test/s/a?from=6");
  ASSERT_TRUE(upstream_.send(prefix("a"), msg(5)));  // a repeat of what w1 wrote
  ASSERT_TRUE(upstream_.send(prefix("a"), msg(6)));
  EXPECT_EQ(sink2.seqs("a"), std::vector<int64_t>{6});
  EXPECT_EQ(boost::json::parse(sink2.lines().front()).at("epoch").as_int64(), 2);
}

TEST_F(WorkerTest, AStoppedConnectionIsClosedAndReleased) {
  add("a");
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }));
  ASSERT_TRUE(upstream_.send(prefix("a"), msg(1)));
  Connections connections(*store_, clock_);
  ASSERT_TRUE(connections.set_desired("a", DesiredState::kStopped).ok());
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) == nullptr; }));
  EXPECT_TRUE(eventually([&] { return w->owned().empty(); }));
  const Connection c = stored("a");
  EXPECT_EQ(c.expires_at_ms, 0);
  EXPECT_EQ(c.last_seq, 1);
}

TEST_F(WorkerTest, AForeignTakeoverStopsTheStreamAndNothingMoreIsWritten) {
  add("a");
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }));
  ASSERT_TRUE(upstream_.send(prefix("a"), msg(1)));
  // The reference pattern's own code takes the lease by setting only the
  // owner and the expiry (here over a live lease, as a writer with a wrong
  // clock would).
  const int64_t later = to_unix_ms(clock_.wall_now()) + 60'000;
  ASSERT_TRUE(
      store_
          ->update(kConnectionsTable, connection_key("a"),
                   Update().set("lease_owner", std::string("F")).set("lease_expires_at_ms", later),
                   {})
          .ok());
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) == nullptr; }));
  EXPECT_FALSE(upstream_.send(prefix("a"), msg(2)));
  EXPECT_EQ(sink.seqs("a"), std::vector<int64_t>{1});
  EXPECT_EQ(w->stats().losses, 1u);
  const Connection c = stored("a");
  EXPECT_EQ(c.owner, "F");
  EXPECT_EQ(c.expires_at_ms, later) << "F's lease is untouched";
}

TEST_F(WorkerTest, AnUpstreamFailureReconnectsFromTheCheckpointAndKeepsTheLease) {
  add("a");
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }));
  for (int64_t seq = 1; seq <= 3; ++seq) ASSERT_TRUE(upstream_.send(prefix("a"), msg(seq)));
  upstream_.find(prefix("a"))->fail(unavailable("upstream went away"));
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }));
  EXPECT_EQ(upstream_.urls().back(), "ws://upstream.test/s/a?from=4");
  // Said until the new connection has stayed up a while, then cleared.
  EXPECT_TRUE(eventually([&] { return stored("a").last_error == "upstream went away"; }));
  EXPECT_TRUE(eventually([&] { return stored("a").last_error.empty(); }));
  EXPECT_EQ(stored("a").epoch, 1) << "the lease was kept";
  EXPECT_EQ(w->stats().reconnects, 1u);
}

// A peer that accepts and closes at once: each try is one more failure, so
// the waits between tries double (each drawn between half and all of 200 ms,
// 400 ms, ...), and the error is written once, not twice a try.
TEST_F(WorkerTest, AFlappingUpstreamIsRetriedEverMoreSlowlyAndWritesItsErrorOnce) {
  add("a");
  upstream_.set_flapping(true);
  OutageStore counting(*store_);
  CapturingSink sink;
  auto w = start("w1", sink, &counting);
  ASSERT_TRUE(eventually([&] { return !upstream_.connected_at().empty(); }));
  // The scenario: three seconds of a flapping peer.
  std::this_thread::sleep_until(upstream_.connected_at().front() + seconds(3));
  const auto at = upstream_.connected_at();
  ASSERT_GE(at.size(), 3u) << "it retries";
  // 100 + 200 + 400 + 800 + 1600 ms of the shortest waits pass 3 s.
  EXPECT_LE(at.size(), 6u) << "retried without backing off";
  for (size_t i = 2; i < at.size(); ++i) {
    EXPECT_GE(at[i] - at[i - 1], at[i - 1] - at[i - 2]) << "try " << i;
  }
  EXPECT_TRUE(eventually([&] { return stored("a").last_error == "the upstream closed at once"; }));
  EXPECT_LE(counting.error_writes(), 1u);
}

TEST_F(WorkerTest, ASecondWorkerSharesTheConnectionsByHandover) {
  for (int i = 0; i < 6; ++i) add("c" + std::to_string(i));
  CapturingSink sink1, sink2;
  auto w1 = start("w1", sink1);
  ASSERT_TRUE(eventually([&] { return w1->owned().size() == 6; }));
  auto w2 = start("w2", sink2);
  ASSERT_TRUE(eventually([&] { return w1->owned().size() == 3 && w2->owned().size() == 3; }));
  EXPECT_EQ(w2->stats().takeovers, 0u) << "handed over, not taken";
  EXPECT_EQ(w1->stats().handovers, 3u);
}

// A worker that has just handed connections over waits for the others'
// figures to count them: a member's count written before it took them
// would give a share one too small and a second, needless handover.
TEST_F(WorkerTest, AfterAHandoverTheWorkerWaitsForTheOthersFiguresBeforeBalancingAgain) {
  ASSERT_TRUE(store_->ensure_table(workers_table_spec()).ok());
  const std::vector<std::string> ids = {"c0", "c1", "c2", "c3", "c4", "c5"};
  for (const auto& id : ids) add(id);
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return w->owned().size() == ids.size(); }));

  // Another member joins with nothing (and room for its share of 3).
  LeaseManager members = leases_on(kWorkersTable);
  ASSERT_TRUE(join(members, "slow", 0, to_unix_ms(clock_.wall_now())).ok());
  ASSERT_TRUE(eventually([&] { return w->stats().handovers == 3; }));

  // It takes what was handed over, but has not yet written its figures.
  LeaseManager conns = leases_on(kConnectionsTable);
  ASSERT_TRUE(take(conns, ids, "slow", 3));
  // Several reconciles of w1 later (each writes its figures), nothing more
  // was handed over: slow's count is older than the handover.
  const auto w1_updated = [&] {
    Result<Item> item = store_->get(kWorkersTable, worker_key("w1"), true);
    const int64_t* at = item.ok() ? get_int(*item, "updated_at_ms") : nullptr;
    return at != nullptr ? *at : int64_t{0};
  };
  for (int i = 0; i < 3; ++i) {
    const int64_t before = w1_updated();
    ASSERT_TRUE(eventually([&] { return w1_updated() > before; }));
  }
  EXPECT_EQ(w->stats().handovers, 3u);
  EXPECT_EQ(w->owned().size(), 3u);
}

// "Written its figures since the handover" does not read the other
// member's clock: one whose clock is an hour behind writes figures that look
// older than the handover, and balancing must still go on once it has
// written them.
TEST_F(WorkerTest, AMemberWhoseClockIsBehindDoesNotHoldBalancingBack) {
  ASSERT_TRUE(store_->ensure_table(workers_table_spec()).ok());
  const std::vector<std::string> ids = {"c0", "c1", "c2", "c3", "c4", "c5"};
  for (const auto& id : ids) add(id);
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return w->owned().size() == ids.size(); }));

  LeaseManager members = leases_on(kWorkersTable);
  const int64_t hour_behind = to_unix_ms(clock_.wall_now()) - 3'600'000;
  Result<Lease> behind = join(members, "behind", 0, hour_behind);
  ASSERT_TRUE(behind.ok());
  ASSERT_TRUE(eventually([&] { return w->stats().handovers == 3; }));

  // It takes its three and writes its figures, by its own clock.
  LeaseManager conns = leases_on(kConnectionsTable);
  ASSERT_TRUE(take(conns, ids, "behind", 3));
  ASSERT_TRUE(members.fenced_write(*behind, member_figures(3, 1000, 0, 0, hour_behind + 1)).ok());

  // A third member joins: w1's share is now 2, and it hands one more over.
  ASSERT_TRUE(join(members, "third", 0, to_unix_ms(clock_.wall_now())).ok());
  ASSERT_TRUE(eventually([&] { return w->stats().handovers == 4; }));
  EXPECT_EQ(w->owned().size(), 2u);
}

// A worker that died still counts as a member until its membership lease
// expires; its connections must not wait for that.
TEST_F(WorkerTest, ACrashedOwnersConnectionsAreTakenBeyondTheShareAtOnce) {
  ASSERT_TRUE(store_->ensure_table(workers_table_spec()).ok());
  for (int i = 0; i < 4; ++i) add("c" + std::to_string(i));
  LeaseManager conns = leases_on(kConnectionsTable);
  LeaseManager members = leases_on(kWorkersTable);
  ASSERT_TRUE(join(members, "dead", 2, to_unix_ms(clock_.wall_now())).ok());
  AcquireOptions dead;
  dead.owner = "dead";
  dead.ttl = milliseconds(1500);
  for (const char* id : {"c0", "c1"}) ASSERT_TRUE(conns.acquire(connection_key(id), dead).ok());

  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return w->owned().size() == 2; }));  // its share of 4
  ASSERT_TRUE(eventually([&] { return w->owned().size() == 4; }, seconds(5)))
      << "the dead worker's connections were not taken while its membership lives";
  EXPECT_EQ(w->stats().takeovers, 2u);
}

TEST_F(WorkerTest, CheckpointsOfManyConnectionsShareStoreCalls) {
  OutageStore store(*store_);
  const int n = 20;
  for (int i = 0; i < n; ++i) add("c" + std::to_string(i));
  CapturingSink sink;
  auto w = start("w1", sink, &store);
  ASSERT_TRUE(eventually([&] { return upstream_.open_streams() == n; }));
  for (int i = 0; i < n; ++i) ASSERT_TRUE(upstream_.send(prefix("c" + std::to_string(i)), msg(1)));
  ASSERT_TRUE(eventually([&] {
    for (int i = 0; i < n; ++i) {
      if (stored("c" + std::to_string(i)).last_seq != 1) return false;
    }
    return true;
  }));
  EXPECT_EQ(store.single_checkpoints(), 0u) << "each checkpoint was a store call of its own";
  EXPECT_GT(store.largest_checkpoint_batch(), 1u);
}

// The store goes away for longer than the validity window: nothing is
// written past the leases' local deadlines, every stream closes, and when
// the store answers again the worker takes its connections back by itself.
TEST_F(WorkerTest, AStoreOutageStopsEveryStreamInTimeAndTheWorkerRecovers) {
  ASSERT_TRUE(store_->ensure_table(workers_table_spec()).ok());
  OutageStore store(*store_);
  const std::vector<std::string> ids = {"a", "b", "c"};
  for (const auto& id : ids) add(id);
  CapturingSink sink;
  auto w = start("w1", sink, &store);
  ASSERT_TRUE(eventually([&] { return upstream_.open_streams() == ids.size(); }));
  int64_t seq = 1;
  for (const auto& id : ids) ASSERT_TRUE(upstream_.send(prefix(id), msg(seq)));
  ASSERT_TRUE(eventually([&] {
    return std::all_of(ids.begin(), ids.end(), [&](auto& id) { return stored(id).last_seq == 1; });
  }));

  const auto down_at = std::chrono::steady_clock::now();
  store.set_down(true);
  // Messages keep coming while the leases run out.
  ASSERT_TRUE(eventually([&] {
    ++seq;
    for (const auto& id : ids) upstream_.send(prefix(id), msg(seq));
    return upstream_.open_streams() == 0;
  }));
  // The last renewal was sent before the outage: every local deadline is
  // earlier than a ttl after it.
  EXPECT_LT(sink.last_write_at(), down_at + options("w1").lease_ttl);
  EXPECT_EQ(w->stats().losses, ids.size());
  const size_t written = sink.lines().size();
  for (const auto& id : ids) EXPECT_FALSE(upstream_.send(prefix(id), msg(seq + 1)));

  store.set_down(false);
  ASSERT_TRUE(eventually([&] { return upstream_.open_streams() == ids.size(); }));
  for (const auto& id : ids) {
    EXPECT_EQ(stored(id).owner, "w1");
    EXPECT_EQ(stored(id).epoch, 2) << id << " was taken again after its lease expired";
    EXPECT_TRUE(upstream_.send(prefix(id), msg(seq + 1)));
  }
  EXPECT_EQ(sink.lines().size(), written + ids.size());
  EXPECT_EQ(sink.seqs("a").back(), seq + 1);
  EXPECT_TRUE(eventually([&] {
    auto member = store_->get(kWorkersTable, worker_key("w1"), true);
    const int64_t* expires_at_ms = member.ok() ? get_int(*member, "lease_expires_at_ms") : nullptr;
    return expires_at_ms != nullptr && *expires_at_ms > to_unix_ms(clock_.wall_now());
  })) << "the worker rejoined the fleet";
}

// A checkpoint covers only what a finished flush made durable: lines written
// while the flush ran are left to the next one.
TEST_F(WorkerTest, ACheckpointNeverCoversALineWrittenDuringItsFlush) {
  add("a");
  OutageStore checking(*store_);
  CapturingSink sink;
  std::atomic<int64_t> worst{0};  // the most a checkpoint ran past the durable lines
  checking.on_checkpoint([&](int64_t seq) {
    const int64_t over = seq - static_cast<int64_t>(sink.durable_lines());
    int64_t was = worst.load();
    while (over > was && !worst.compare_exchange_weak(was, over)) {
    }
  });
  auto w = start("w1", sink, &checking);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }));
  ASSERT_TRUE(upstream_.send_batch(prefix("a"), {msg(1), msg(2), msg(3)}));
  sink.hold_flushes();
  const size_t entered = sink.flushes_entered();
  ASSERT_TRUE(eventually([&] { return sink.flushes_entered() > entered; }));
  // The checkpoint's flush is under way: more lines arrive meanwhile.
  ASSERT_TRUE(upstream_.send_batch(prefix("a"), {msg(4), msg(5), msg(6)}));
  ASSERT_TRUE(eventually([&] { return sink.lines().size() == 6; }));
  sink.let_flushes_go();
  ASSERT_TRUE(eventually([&] { return stored("a").last_seq == 6; }));
  EXPECT_LE(worst.load(), 0) << "a checkpoint covered lines no flush had made durable";
}

// A write that waited for the sink (another stream's write, a slow disk)
// until past its lease's local deadline writes nothing.
TEST_F(WorkerTest, ABatchThatWaitedForTheSinkPastItsDeadlineWritesNothing) {
  add("a");
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }));
  ASSERT_TRUE(upstream_.send(prefix("a"), msg(1)));
  sink.hold_writes();
  std::thread late([&] { upstream_.send(prefix("a"), msg(2)); });
  ASSERT_TRUE(eventually([&] { return sink.writes_waiting() == 1; }));
  clock_.jump(seconds(10));  // past the deadline while the write waits
  sink.let_writes_go();
  late.join();
  EXPECT_EQ(sink.seqs("a"), std::vector<int64_t>{1});
  EXPECT_TRUE(eventually([&] { return w->stats().losses == 1; }));
}

// One worker of 5 with 6 connections streams 5, not 1; a second of 5 takes
// the sixth; when the first stops, the second fills its 5 at once.
TEST_F(WorkerTest, OverCapacityEverySlotIsUsed) {
  ASSERT_TRUE(store_->ensure_table(workers_table_spec()).ok());
  for (int i = 0; i < 8; ++i) add("c" + std::to_string(i));
  CapturingSink sink1, sink2;
  WorkerOptions o1 = options("w1");
  o1.max_connections = 5;
  auto w1 = Worker::start(*store_, clock_, random_, upstream_, sink1, o1);
  ASSERT_TRUE(w1.ok());
  ASSERT_TRUE(eventually([&] { return (*w1)->owned().size() == 5; })) << (*w1)->owned().size();
  WorkerOptions o2 = options("w2");
  o2.max_connections = 5;
  auto w2 = Worker::start(*store_, clock_, random_, upstream_, sink2, o2);
  ASSERT_TRUE(w2.ok());
  ASSERT_TRUE(eventually([&] { return (*w2)->owned().size() == 3; }));
  EXPECT_EQ((*w1)->owned().size(), 5u);
  (*w1)->stop();  // scale-in: what it releases fills w2
  ASSERT_TRUE(eventually([&] { return (*w2)->owned().size() == 5; }, seconds(5)))
      << (*w2)->owned().size();
}

// A member that was handed connections and never takes them (its figures
// are fresh, it just does not take) holds nothing up for long: they are
// taken back once stranded, and balancing then waits before trying it again.
TEST_F(WorkerTest, ConnectionsHandedToAMemberThatNeverTakesThemAreTakenBack) {
  ASSERT_TRUE(store_->ensure_table(workers_table_spec()).ok());
  const std::vector<std::string> ids = {"c0", "c1", "c2", "c3", "c4", "c5"};
  for (const auto& id : ids) add(id);
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return w->owned().size() == ids.size(); }));
  LeaseManager members = leases_on(kWorkersTable);
  Result<Lease> lazy = join(members, "lazy", 0, to_unix_ms(clock_.wall_now()));
  ASSERT_TRUE(lazy.ok());
  std::atomic<bool> done{false};
  std::thread figures([&] {  // fresh figures every 50 ms, and it never takes
    while (!done) {
      (void)members.fenced_write(*lazy,
                                 member_figures(0, 1000, 0, 0, to_unix_ms(clock_.wall_now())));
      std::this_thread::sleep_for(milliseconds(50));
    }
  });
  ASSERT_TRUE(eventually([&] { return w->stats().handovers >= 3; }));
  EXPECT_TRUE(eventually([&] { return w->owned().size() == ids.size(); }, seconds(5)))
      << "stranded with a member that never takes them";
  const uint64_t handovers = w->stats().handovers;
  // Five of w1's reconciles later it has not handed them over again (it
  // waits ten after a handover nobody took, then twenty, ...).
  const uint64_t acquired = w->stats().acquired;
  std::this_thread::sleep_for(5 * options("w1").reconcile_every);
  EXPECT_EQ(w->stats().handovers, handovers);
  EXPECT_EQ(w->stats().acquired, acquired);
  done = true;
  figures.join();
}

// After a crash, each orphan is tried by one worker at first, not by every
// worker in the same order at once: failed acquisitions stay far below one
// per worker per orphan.
TEST_F(WorkerTest, TakeoversAfterACrashAreSpreadWithFewConflicts) {
  ASSERT_TRUE(store_->ensure_table(workers_table_spec()).ok());
  constexpr int kOrphans = 40;
  LeaseManager conns = leases_on(kConnectionsTable);
  AcquireOptions dead;
  dead.owner = "dead";
  dead.ttl = seconds(3);
  const MonoTime orphaned = clock_.mono_now();
  for (int i = 0; i < kOrphans; ++i) {
    add("c" + std::to_string(i));
    ASSERT_TRUE(conns.acquire(connection_key("c" + std::to_string(i)), dead).ok());
  }
  std::vector<std::unique_ptr<CapturingSink>> sinks;
  std::vector<std::unique_ptr<Worker>> workers;
  for (int i = 0; i < 4; ++i) {
    sinks.push_back(std::make_unique<CapturingSink>());
    workers.push_back(start("w" + std::to_string(i), *sinks.back()));
  }
  // Every worker knows the other three before the orphans expire: each has
  // written its figures twice since all four were members, so its latest
  // reconcile read all four.
  const auto figures_after = [&](int64_t ms) {
    auto members = list_members(*store_, clock_, /*alive_only=*/true);
    if (!members.ok() || members->size() != 4) return false;
    return std::all_of(members->begin(), members->end(),
                       [&](const Member& m) { return m.updated_at_ms > ms; });
  };
  ASSERT_TRUE(eventually([&] { return figures_after(0); }, seconds(10)));
  const int64_t all_in = to_unix_ms(clock_.wall_now());
  ASSERT_TRUE(eventually([&] { return figures_after(all_in); }, seconds(10)));
  ASSERT_LT(clock_.mono_now(), orphaned + seconds(2))
      << "the workers took too long to start to see the takeovers spread";

  const auto owned = [&] {
    size_t n = 0;
    for (const auto& w : workers) n += w->owned().size();
    return n;
  };
  ASSERT_TRUE(eventually([&] { return owned() == kOrphans; }, seconds(10))) << owned();
  uint64_t conflicts = 0;
  for (const auto& w : workers) {
    conflicts += w->stats().conflicts;
    EXPECT_GT(w->owned().size(), 0u) << w->id() << ": the takeovers are spread";
  }
  EXPECT_LE(conflicts, static_cast<uint64_t>(kOrphans) / 4) << "of " << kOrphans << " orphans";
}

// health() says what is wrong: a sink that fails (until it takes a write
// again), streams without a message for stall_after, a store that does not
// answer.
TEST_F(WorkerTest, HealthSaysWhenTheSinkTheStreamsOrTheStoreFail) {
  add("a");
  add("b");
  OutageStore outage(*store_);
  CapturingSink sink;
  WorkerOptions o = options("w1");
  o.stall_after = milliseconds(300);
  auto made = Worker::start(outage, clock_, random_, upstream_, sink, o);
  ASSERT_TRUE(made.ok());
  Worker& w = **made;
  ASSERT_TRUE(eventually([&] {
    return upstream_.find(prefix("a")) != nullptr && upstream_.find(prefix("b")) != nullptr;
  }));
  ASSERT_TRUE(upstream_.send(prefix("a"), msg(1)));
  WorkerHealth h = w.health();
  EXPECT_TRUE(h.ok) << ::testing::PrintToString(h.problems);
  EXPECT_EQ(h.owned, 2u);
  EXPECT_EQ(h.streaming, 2u);

  // A write fails: failing until a write goes through.
  sink.fail_next_write_after(0);
  ASSERT_TRUE(upstream_.send(prefix("a"), msg(2)));
  h = w.health();
  EXPECT_FALSE(h.ok);
  ASSERT_EQ(h.problems.size(), 1u);
  EXPECT_EQ(h.problems[0], "the sink fails: the disk is full (test)");
  ASSERT_TRUE(upstream_.send(prefix("b"), msg(1)));
  EXPECT_TRUE(w.health().ok) << ::testing::PrintToString(w.health().problems);

  // No message on either for stall_after: no progress. One message: some.
  ASSERT_TRUE(eventually([&] { return w.health().stalled == 2; }));
  h = w.health();
  EXPECT_FALSE(h.ok);
  EXPECT_NE(::testing::PrintToString(h.problems).find("has had a message"), std::string::npos);
  ASSERT_TRUE(upstream_.send(prefix("b"), msg(2)));
  h = w.health();
  EXPECT_EQ(h.stalled, 1u);
  EXPECT_TRUE(h.ok) << ::testing::PrintToString(h.problems);

  outage.set_down(true);
  ASSERT_TRUE(eventually([&] {
    return ::testing::PrintToString(w.health().problems).find("the store has not answered") !=
           std::string::npos;
  }));
  outage.set_down(false);
  EXPECT_TRUE(eventually([&] {
    return ::testing::PrintToString(w.health().problems).find("the store") == std::string::npos;
  }));
}

TEST_F(WorkerTest, BadOptionsAreRefused) {
  CapturingSink sink;
  for (const char* id : {"", "a b", "w/1"}) {
    WorkerOptions o = options(id);
    EXPECT_EQ(Worker::start(*store_, clock_, random_, upstream_, sink, o).status().code(),
              Code::kInvalidArgument)
        << id;
  }
  WorkerOptions o = options("w1");
  o.renew_every = seconds(3);  // does not fit in the validity window
  EXPECT_EQ(Worker::start(*store_, clock_, random_, upstream_, sink, o).status().code(),
            Code::kInvalidArgument);
  auto w = start("w1", sink);
  EXPECT_EQ(Worker::start(*store_, clock_, random_, upstream_, sink, options("w1")).status().code(),
            Code::kAlreadyExists)
      << "one live worker per id";
}

}  // namespace
}  // namespace leasehold::fleet
