// Tests for the worker on the memory store, with a fake upstream that the
// test drives message by message (or batch by batch) and a sink that keeps
// its lines and writes: what is streamed, checkpointed, stopped and lost.
// Membership, balancing and hand-overs are in worker_handover_test.cc. The
// real upstream and real processes are in tests/process/fleet_test.cc.
#include "fleet/worker.h"

#include <gtest/gtest.h>

#include "fleet/worker_test_fixture.h"

namespace leasehold::fleet::testing {
namespace {

TEST_F(WorkerTest, StreamsInOrderDropsRepeatsAndBadMessagesAndCheckpoints) {
  add("a");
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }, kWaitMax));
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
  EXPECT_TRUE(eventually([&] { return stored("a").last_seq == 4; }, kWaitMax));
}

// A batch of messages is one sink write of the lines that go forward:
// repeats and going back are judged against what the batch already holds.
TEST_F(WorkerTest, ABatchIsOneSinkWriteOfTheMessagesThatGoForward) {
  add("a");
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }, kWaitMax));
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
  EXPECT_TRUE(eventually([&] { return stored("a").last_seq == 7; }, kWaitMax));
}

// The lease is checked when the batch is written, not when its messages came
// in: a batch that waited past the local deadline writes nothing, and the
// stream is lost.
TEST_F(WorkerTest, ABatchWhoseLeaseLapsedWhileItWaitedWritesNothing) {
  OutageStore store(*store_);
  add("a");
  CapturingSink sink;
  auto w = start("w1", sink, &store);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }, kWaitMax));
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
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) == nullptr; }, kWaitMax))
      << "the stream is closed";
  EXPECT_TRUE(eventually([&] { return w->stats().losses == 1; }, kWaitMax));
  EXPECT_EQ(w->stats().messages, 1u);
}

// Once an upstream connection has ended (it failed, or the connection was
// stopped and handed over), a batch that still reaches the worker from it
// writes nothing.
TEST_F(WorkerTest, ABatchFromAClosedUpstreamConnectionWritesNothing) {
  add("a");
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }, kWaitMax));
  ASSERT_TRUE(upstream_.send(prefix("a"), msg(1)));
  auto failed = upstream_.find(prefix("a"));
  ASSERT_NE(failed, nullptr);
  failed->fail(unavailable("upstream went away"));
  ASSERT_TRUE(eventually(
      [&] {
        auto again = upstream_.find(prefix("a"));
        return again != nullptr && again != failed;
      },
      kWaitMax))
      << "reconnected";
  failed->deliver_anyway({msg(2), msg(3)});  // late, from the connection that failed
  EXPECT_EQ(sink.seqs("a"), std::vector<int64_t>{1});

  auto stopped = upstream_.find(prefix("a"));
  Connections connections(*store_, clock_);
  ASSERT_TRUE(connections.set_desired("a", DesiredState::kStopped).ok());
  ASSERT_TRUE(eventually([&] { return w->owned().empty(); }, kWaitMax));
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
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }, kWaitMax));
  sink.fail_next_write_after(1);  // line 1, and part of line 2
  ASSERT_TRUE(upstream_.send_batch(prefix("a"), {msg(1), msg(2), msg(3)}));
  EXPECT_EQ(sink.seqs("a"), std::vector<int64_t>{1});
  EXPECT_EQ(w->stats().messages, 1u);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) == nullptr; }, kWaitMax))
      << "the stream stops until the sink may work again";
  EXPECT_TRUE(eventually([&] { return stored("a").last_seq == 1; }, kWaitMax));
  ASSERT_EQ(w->owned().size(), 1u);
  EXPECT_EQ(w->owned().front().written_seq, 1);
}

TEST_F(WorkerTest, AStoppedConnectionIsClosedAndReleased) {
  add("a");
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }, kWaitMax));
  ASSERT_TRUE(upstream_.send(prefix("a"), msg(1)));
  Connections connections(*store_, clock_);
  ASSERT_TRUE(connections.set_desired("a", DesiredState::kStopped).ok());
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) == nullptr; }, kWaitMax));
  EXPECT_TRUE(eventually([&] { return w->owned().empty(); }, kWaitMax));
  const Connection c = stored("a");
  EXPECT_EQ(c.expires_at_ms, 0);
  EXPECT_EQ(c.last_seq, 1);
}

TEST_F(WorkerTest, AForeignTakeoverStopsTheStreamAndNothingMoreIsWritten) {
  add("a");
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }, kWaitMax));
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
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) == nullptr; }, kWaitMax));
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
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }, kWaitMax));
  for (int64_t seq = 1; seq <= 3; ++seq) ASSERT_TRUE(upstream_.send(prefix("a"), msg(seq)));
  upstream_.find(prefix("a"))->fail(unavailable("upstream went away"));
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }, kWaitMax));
  EXPECT_EQ(upstream_.urls().back(), "ws://upstream.test/s/a?from=4");
  // Said until the new connection has stayed up a while, then cleared.
  EXPECT_TRUE(eventually([&] { return stored("a").last_error == "upstream went away"; }, kWaitMax));
  EXPECT_TRUE(eventually([&] { return stored("a").last_error.empty(); }, kWaitMax));
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
  ASSERT_TRUE(eventually([&] { return !upstream_.connected_at().empty(); }, kWaitMax));
  // The scenario: three seconds of a flapping peer.
  std::this_thread::sleep_until(upstream_.connected_at().front() + seconds(3));
  const auto at = upstream_.connected_at();
  ASSERT_GE(at.size(), 3u) << "it retries";
  // 100 + 200 + 400 + 800 + 1600 ms of the shortest waits pass 3 s.
  EXPECT_LE(at.size(), 6u) << "retried without backing off";
  for (size_t i = 2; i < at.size(); ++i) {
    EXPECT_GE(at[i] - at[i - 1], at[i - 1] - at[i - 2]) << "try " << i;
  }
  EXPECT_TRUE(eventually([&] { return stored("a").last_error == "the upstream closed at once"; },
                         kWaitMax));
  EXPECT_LE(counting.error_writes(), 1u);
}

TEST_F(WorkerTest, CheckpointsOfManyConnectionsShareStoreCalls) {
  OutageStore store(*store_);
  const int n = 20;
  for (int i = 0; i < n; ++i) add("c" + std::to_string(i));
  CapturingSink sink;
  auto w = start("w1", sink, &store);
  ASSERT_TRUE(eventually([&] { return upstream_.open_streams() == n; }, kWaitMax));
  for (int i = 0; i < n; ++i) ASSERT_TRUE(upstream_.send(prefix("c" + std::to_string(i)), msg(1)));
  ASSERT_TRUE(eventually(
      [&] {
        for (int i = 0; i < n; ++i) {
          if (stored("c" + std::to_string(i)).last_seq != 1) return false;
        }
        return true;
      },
      kWaitMax));
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
  ASSERT_TRUE(eventually([&] { return upstream_.open_streams() == ids.size(); }, kWaitMax));
  int64_t seq = 1;
  for (const auto& id : ids) ASSERT_TRUE(upstream_.send(prefix(id), msg(seq)));
  ASSERT_TRUE(eventually(
      [&] {
        return std::all_of(ids.begin(), ids.end(),
                           [&](auto& id) { return stored(id).last_seq == 1; });
      },
      kWaitMax));

  const auto down_at = std::chrono::steady_clock::now();
  store.set_down(true);
  // Messages keep coming while the leases run out.
  ASSERT_TRUE(eventually(
      [&] {
        ++seq;
        for (const auto& id : ids) upstream_.send(prefix(id), msg(seq));
        return upstream_.open_streams() == 0;
      },
      kWaitMax));
  // The last renewal was sent before the outage: every local deadline is
  // earlier than a ttl after it.
  EXPECT_LT(sink.last_write_at(), down_at + options("w1").lease_ttl);
  EXPECT_EQ(w->stats().losses, ids.size());
  const size_t written = sink.lines().size();
  for (const auto& id : ids) EXPECT_FALSE(upstream_.send(prefix(id), msg(seq + 1)));

  store.set_down(false);
  ASSERT_TRUE(eventually([&] { return upstream_.open_streams() == ids.size(); }, kWaitMax));
  for (const auto& id : ids) {
    EXPECT_EQ(stored(id).owner, "w1");
    EXPECT_EQ(stored(id).epoch, 2) << id << " was taken again after its lease expired";
    EXPECT_TRUE(upstream_.send(prefix(id), msg(seq + 1)));
  }
  EXPECT_EQ(sink.lines().size(), written + ids.size());
  EXPECT_EQ(sink.seqs("a").back(), seq + 1);
  EXPECT_TRUE(eventually(
      [&] {
        auto member = store_->get(kWorkersTable, worker_key("w1"), true);
        const int64_t* expires_at_ms =
            member.ok() ? get_int(*member, "lease_expires_at_ms") : nullptr;
        return expires_at_ms != nullptr && *expires_at_ms > to_unix_ms(clock_.wall_now());
      },
      kWaitMax))
      << "the worker rejoined the fleet";
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
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }, kWaitMax));
  ASSERT_TRUE(upstream_.send_batch(prefix("a"), {msg(1), msg(2), msg(3)}));
  sink.hold_flushes();
  const size_t entered = sink.flushes_entered();
  ASSERT_TRUE(eventually([&] { return sink.flushes_entered() > entered; }, kWaitMax));
  // The checkpoint's flush is under way: more lines arrive meanwhile.
  ASSERT_TRUE(upstream_.send_batch(prefix("a"), {msg(4), msg(5), msg(6)}));
  ASSERT_TRUE(eventually([&] { return sink.lines().size() == 6; }, kWaitMax));
  sink.let_flushes_go();
  ASSERT_TRUE(eventually([&] { return stored("a").last_seq == 6; }, kWaitMax));
  EXPECT_LE(worst.load(), 0) << "a checkpoint covered lines no flush had made durable";
}

// A write that waited for the sink (another stream's write, a slow disk)
// until past its lease's local deadline writes nothing.
TEST_F(WorkerTest, ABatchThatWaitedForTheSinkPastItsDeadlineWritesNothing) {
  add("a");
  CapturingSink sink;
  auto w = start("w1", sink);
  ASSERT_TRUE(eventually([&] { return upstream_.find(prefix("a")) != nullptr; }, kWaitMax));
  ASSERT_TRUE(upstream_.send(prefix("a"), msg(1)));
  sink.hold_writes();
  std::thread late([&] { upstream_.send(prefix("a"), msg(2)); });
  ASSERT_TRUE(eventually([&] { return sink.writes_waiting() == 1; }, kWaitMax));
  clock_.jump(seconds(10));  // past the deadline while the write waits
  sink.let_writes_go();
  late.join();
  EXPECT_EQ(sink.seqs("a"), std::vector<int64_t>{1});
  EXPECT_TRUE(eventually([&] { return w->stats().losses == 1; }, kWaitMax));
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
  ASSERT_TRUE(eventually(
      [&] {
        return upstream_.find(prefix("a")) != nullptr && upstream_.find(prefix("b")) != nullptr;
      },
      kWaitMax));
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
  ASSERT_TRUE(eventually([&] { return w.health().stalled == 2; }, kWaitMax));
  h = w.health();
  EXPECT_FALSE(h.ok);
  EXPECT_NE(::testing::PrintToString(h.problems).find("has had a message"), std::string::npos);
  ASSERT_TRUE(upstream_.send(prefix("b"), msg(2)));
  h = w.health();
  EXPECT_EQ(h.stalled, 1u);
  EXPECT_TRUE(h.ok) << ::testing::PrintToString(h.problems);

  outage.set_down(true);
  ASSERT_TRUE(eventually(
      [&] {
        return ::testing::PrintToString(w.health().problems).find("the store has not answered") !=
               std::string::npos;
      },
      kWaitMax));
  outage.set_down(false);
  EXPECT_TRUE(eventually(
      [&] {
        return ::testing::PrintToString(w.health().problems).find("the store") == std::string::npos;
      },
      kWaitMax));
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
}  // namespace leasehold::fleet::testing
