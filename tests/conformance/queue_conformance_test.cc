// The job queue's contract on every Queue (see queue_conformance.h), and the
// backend that runs it on a store: StoreQueue in simulated time.
#include "tests/conformance/queue_conformance.h"

#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "testing/eventually.h"

namespace leasehold::conformance {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class StoreQueueBackend final : public QueueBackend {
 public:
  explicit StoreQueueBackend(StoreFactory factory) {
    Result<std::unique_ptr<ItemStore>> made = factory.make();
    EXPECT_TRUE(made.ok()) << made.status().to_string();
    if (!made.ok()) return;
    store_ = std::move(made).value();
    EXPECT_TRUE(store_->ensure_table(StoreQueue::table_spec()).ok());
  }

  std::unique_ptr<Queue> open(const std::string& name, int max_receives) override {
    if (store_ == nullptr) return nullptr;
    // Each receiver draws its own receipts, as in a process of its own.
    randoms_.push_back(std::make_unique<SeededRandom>(randoms_.size() + 1));
    Result<std::unique_ptr<StoreQueue>> queue = StoreQueue::open(
        *store_, clock_, *randoms_.back(), {.name = name, .max_receives = max_receives});
    EXPECT_TRUE(queue.ok()) << queue.status().to_string();
    return queue.ok() ? std::move(queue).value() : nullptr;
  }
  Duration visibility() const override { return seconds(30); }
  void pass(Duration d) override { clock_.advance(d); }
  int64_t now_ms() override { return to_unix_ms(clock_.wall_now()); }
  Duration clock_tolerance() const override { return Duration::zero(); }
  int64_t held(const std::string& name) override {
    int64_t n = 0;
    for (const char* state : {"#ready", "#dead"}) {
      Result<Page> page =
          store_->query_index(kQueueTable, kQueueIndex, name + state, KeyRange::all(),
                              {.limit = kQueryLimitMax, .cursor = {}});
      EXPECT_TRUE(page.ok()) << page.status().to_string();
      if (page.ok()) n += static_cast<int64_t>(page->items.size());
    }
    return n;
  }
  bool detects_stale_receipts() const override { return true; }
  bool dead_letters_keep_ids_and_pages() const override { return true; }

 private:
  SimulatedClock clock_;
  std::vector<std::unique_ptr<SeededRandom>> randoms_;
  std::unique_ptr<ItemStore> store_;
};

constexpr int kMaxReceives = 2;

std::string sent_to(Queue& queue, std::string_view body) {
  Result<std::string> id = queue.send(body);
  EXPECT_TRUE(id.ok()) << id.status().to_string();
  return id.ok() ? *id : std::string();
}

std::vector<Message> received_now(Queue& queue, Duration visibility, int max = kReceiveBatchMax) {
  Result<std::vector<Message>> got = queue.receive(max, visibility);
  EXPECT_TRUE(got.ok()) << got.status().to_string();
  return got.ok() ? std::move(got).value() : std::vector<Message>{};
}

// Receives until `n` messages came or a few seconds passed: a queue may hand
// out fewer than are visible at a time (SQS samples its servers).
std::vector<Message> received_n(Queue& queue, Duration visibility, size_t n) {
  std::vector<Message> all;
  testing::eventually(
      [&] {
        std::vector<Message> got = received_now(queue, visibility);
        all.insert(all.end(), got.begin(), got.end());
        return all.size() >= n;
      },
      seconds(5));
  return all;
}

std::multiset<std::string> bodies_in(const std::vector<Message>& messages) {
  std::multiset<std::string> bodies;
  for (const Message& m : messages) bodies.insert(m.body);
  return bodies;
}

}  // namespace

QueueBackendFactory store_queue_backend(StoreFactory store) {
  return {store.name, [store] { return std::make_unique<StoreQueueBackend>(store); }};
}

void QueueConformance::SetUp() {
  backend_ = GetParam().make();
  ASSERT_NE(backend_, nullptr);
}

TEST_P(QueueConformance, SendReceiveRemove) {
  std::unique_ptr<Queue> queue = backend_->open("jobs", kMaxReceives);
  ASSERT_NE(queue, nullptr);
  const Duration visibility = backend_->visibility();
  const int64_t before_ms = backend_->now_ms();
  std::map<std::string, std::string> bodies;  // by message ID
  for (const char* body : {"a", "{\"job\":2}", "\xc3\xbcnicode"})
    bodies[sent_to(*queue, body)] = body;
  ASSERT_EQ(bodies.size(), 3u) << "three IDs";
  const int64_t after_ms = backend_->now_ms();
  const int64_t tolerance_ms = to_ms(backend_->clock_tolerance());
  const std::vector<Message> got = received_n(*queue, visibility, 3);
  const int64_t received_ms = backend_->now_ms();
  ASSERT_EQ(got.size(), 3u);
  std::set<std::string> receipts;
  for (const Message& m : got) {
    ASSERT_TRUE(bodies.contains(m.id));
    EXPECT_EQ(m.body, bodies[m.id]);
    EXPECT_EQ(m.receive_count, 1);
    EXPECT_GE(m.sent_at_ms, before_ms - tolerance_ms);
    EXPECT_LE(m.sent_at_ms, after_ms + tolerance_ms);
    EXPECT_GE(m.visible_at_ms, after_ms + to_ms(visibility));
    EXPECT_LE(m.visible_at_ms, received_ms + to_ms(visibility));
    receipts.insert(m.receipt);
  }
  EXPECT_EQ(receipts.size(), 3u);
  EXPECT_TRUE(received_now(*queue, visibility).empty()) << "all three are hidden";
  for (const Message& m : got) EXPECT_TRUE(queue->remove(m.receipt).ok());
  EXPECT_EQ(backend_->held("jobs"), 0) << "a removed message is gone";
}

TEST_P(QueueConformance, AMessageNotRemovedIsDeliveredAgainAfterItsVisibility) {
  std::unique_ptr<Queue> queue = backend_->open("jobs", kMaxReceives);
  ASSERT_NE(queue, nullptr);
  const Duration visibility = backend_->visibility();
  const std::string id = sent_to(*queue, "job");
  const std::vector<Message> first = received_n(*queue, visibility, 1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(received_now(*queue, visibility).empty()) << "hidden until its deadline";
  backend_->pass(visibility);
  const std::vector<Message> second = received_n(*queue, visibility, 1);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_GE(backend_->now_ms(), first[0].visible_at_ms - to_ms(backend_->clock_tolerance()))
      << "not before its deadline";
  EXPECT_EQ(second[0].id, id);
  EXPECT_EQ(second[0].body, "job");
  EXPECT_EQ(second[0].receive_count, 2);
  EXPECT_EQ(second[0].sent_at_ms, first[0].sent_at_ms);
  EXPECT_NE(second[0].receipt, first[0].receipt);

  // The first receipt no longer holds the message.
  EXPECT_EQ(queue->extend_visibility(first[0].receipt, seconds(60)).status().code(),
            Code::kFailedPrecondition);
  if (backend_->detects_stale_receipts()) {
    EXPECT_EQ(queue->remove(first[0].receipt).code(), Code::kFailedPrecondition);
  } else {
    (void)queue->remove(first[0].receipt);
  }
  EXPECT_EQ(backend_->held("jobs"), 1) << "a stale receipt removes nothing";
  ASSERT_TRUE(queue->remove(second[0].receipt).ok());
  if (backend_->detects_stale_receipts()) {
    EXPECT_EQ(queue->remove(second[0].receipt).code(), Code::kNotFound);
  }
  EXPECT_EQ(backend_->held("jobs"), 0);
}

TEST_P(QueueConformance, AnExtendedMessageStaysHiddenUntilItsNewDeadline) {
  std::unique_ptr<Queue> queue = backend_->open("jobs", kMaxReceives);
  ASSERT_NE(queue, nullptr);
  const Duration visibility = backend_->visibility();
  sent_to(*queue, "long job");
  const std::vector<Message> got = received_n(*queue, visibility, 1);
  ASSERT_EQ(got.size(), 1u);
  const int64_t asked_ms = backend_->now_ms();
  Result<int64_t> until = queue->extend_visibility(got[0].receipt, 3 * visibility);
  ASSERT_TRUE(until.ok()) << until.status().to_string();
  EXPECT_GE(*until, asked_ms + 3 * to_ms(visibility));
  EXPECT_LE(*until, backend_->now_ms() + 3 * to_ms(visibility));
  backend_->pass(visibility + visibility / 2);  // past the first deadline
  EXPECT_TRUE(received_now(*queue, visibility).empty()) << "the extension holds it";
  backend_->pass(2 * visibility);
  const std::vector<Message> again = received_n(*queue, visibility, 1);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].receive_count, 2);
}

// Two receivers in two threads (as in two processes: each its own queue
// object) drain one queue. Within one visibility window, which the test
// never leaves, each message goes to exactly one.
TEST_P(QueueConformance, TwoReceiversRacingTakeEachMessageOnce) {
  constexpr int kMessages = 100;
  std::unique_ptr<Queue> a = backend_->open("jobs", kMaxReceives);
  std::unique_ptr<Queue> b = backend_->open("jobs", kMaxReceives);
  ASSERT_TRUE(a != nullptr && b != nullptr);
  std::set<std::string> ids;
  for (int i = 0; i < kMessages; ++i) ids.insert(sent_to(*a, "job " + std::to_string(i)));
  ASSERT_EQ(ids.size(), size_t{kMessages});
  std::atomic<int> taken{0}, ready{0};
  auto drain = [&taken, &ready](Queue& queue, std::vector<Message>& got) {
    ++ready;
    while (ready.load() < 2) std::this_thread::yield();
    const auto deadline = std::chrono::steady_clock::now() + seconds(60);
    while (taken.load() < kMessages && std::chrono::steady_clock::now() < deadline) {
      Result<std::vector<Message>> batch =
          queue.receive(kReceiveBatchMax, std::chrono::minutes(10));
      if (!batch.ok()) {
        ADD_FAILURE() << batch.status().to_string();
        return;
      }
      taken += static_cast<int>(batch->size());
      got.insert(got.end(), batch->begin(), batch->end());
    }
  };
  std::vector<Message> got_a, got_b;
  std::thread thread_a(drain, std::ref(*a), std::ref(got_a));
  std::thread thread_b(drain, std::ref(*b), std::ref(got_b));
  thread_a.join();
  thread_b.join();
  std::map<std::string, int> deliveries;
  for (const auto* got : {&got_a, &got_b}) {
    for (const Message& m : *got) ++deliveries[m.id];
  }
  EXPECT_EQ(deliveries.size(), ids.size());
  for (const auto& [id, times] : deliveries) {
    EXPECT_TRUE(ids.contains(id));
    EXPECT_EQ(times, 1) << "message " << id << " went to two receivers in one window";
  }
}

TEST_P(QueueConformance, AMessageOutOfDeliveriesBecomesADeadLetterAndCanBeSentBack) {
  std::unique_ptr<Queue> queue = backend_->open("jobs", kMaxReceives);
  ASSERT_NE(queue, nullptr);
  const Duration visibility = backend_->visibility();
  const std::string id = sent_to(*queue, "poison");
  for (int i = 1; i <= kMaxReceives; ++i) {
    const std::vector<Message> got = received_n(*queue, visibility, 1);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].receive_count, i);
    backend_->pass(visibility);
  }
  sent_to(*queue, "fine");
  const std::vector<Message> got = received_n(*queue, visibility, 1);
  EXPECT_EQ(bodies_in(got), std::multiset<std::string>{"fine"}) << "the dead letter is not sent";
  for (const Message& m : got) EXPECT_TRUE(queue->remove(m.receipt).ok());
  EXPECT_TRUE(received_now(*queue, visibility).empty());

  Result<int64_t> count = queue->count_dead(100);
  ASSERT_TRUE(count.ok()) << count.status().to_string();
  EXPECT_EQ(*count, 1);
  Result<DeadLetterPage> dead = queue->list_dead(10, "");
  ASSERT_TRUE(dead.ok()) << dead.status().to_string();
  ASSERT_EQ(dead->letters.size(), 1u);
  EXPECT_EQ(dead->letters[0].id, id);
  EXPECT_EQ(dead->letters[0].body, "poison");
  EXPECT_GE(dead->letters[0].receive_count, kMaxReceives);
  EXPECT_EQ(dead->next_cursor, "");

  // Sent back, it is delivered afresh.
  ASSERT_TRUE(queue->redrive(id).ok());
  EXPECT_EQ(*queue->count_dead(100), 0);
  const std::vector<Message> again = received_n(*queue, visibility, 1);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].body, "poison");
  EXPECT_EQ(again[0].receive_count, 1);
  if (backend_->dead_letters_keep_ids_and_pages()) {
    EXPECT_EQ(again[0].id, id);
  }
  ASSERT_TRUE(queue->remove(again[0].receipt).ok());
  EXPECT_EQ(queue->remove_dead(id).code(), Code::kNotFound);
  EXPECT_EQ(backend_->held("jobs"), 0);
}

TEST_P(QueueConformance, BadInputChangesNothing) {
  std::unique_ptr<Queue> queue = backend_->open("jobs", kMaxReceives);
  ASSERT_NE(queue, nullptr);
  EXPECT_EQ(queue->send("").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(queue->send(std::string(kMessageBodyBytesMax + 1, 'x')).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(queue->send("\xff\xfe").status().code(), Code::kInvalidArgument);
  for (const auto& [max, visibility] :
       std::vector<std::pair<int, Duration>>{{0, seconds(30)},
                                             {kReceiveBatchMax + 1, seconds(30)},
                                             {1, Duration::zero()},
                                             {1, std::chrono::microseconds(999)},
                                             {1, -seconds(1)},
                                             {1, kVisibilityMax + milliseconds(1)}}) {
    EXPECT_EQ(queue->receive(max, visibility).status().code(), Code::kInvalidArgument);
  }
  for (const std::string& receipt : {std::string(), std::string("abc"), std::string("x.y")}) {
    EXPECT_EQ(queue->remove(receipt).code(), Code::kInvalidArgument) << receipt;
    EXPECT_EQ(queue->extend_visibility(receipt, seconds(1)).status().code(),
              Code::kInvalidArgument);
  }
  for (const std::string& id : {std::string(), std::string("nope")}) {
    EXPECT_EQ(queue->redrive(id).code(), Code::kInvalidArgument);
    EXPECT_EQ(queue->remove_dead(id).code(), Code::kInvalidArgument);
  }
  EXPECT_EQ(queue->list_dead(0, "").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(queue->list_dead(kQueryLimitMax + 1, "").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(queue->count_dead(0).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(backend_->held("jobs"), 0);

  // Bad input aimed at a real message changes nothing either.
  sent_to(*queue, "job");
  const std::vector<Message> got = received_n(*queue, backend_->visibility(), 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(queue->extend_visibility(got[0].receipt, Duration::zero()).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(
      queue->extend_visibility(got[0].receipt, kVisibilityMax + milliseconds(1)).status().code(),
      Code::kInvalidArgument);
  EXPECT_TRUE(received_now(*queue, backend_->visibility()).empty()) << "still hidden";
  EXPECT_EQ(backend_->held("jobs"), 1);

  // The largest body goes through whole.
  const std::string largest(kMessageBodyBytesMax, 'b');
  sent_to(*queue, largest);
  const std::vector<Message> big = received_n(*queue, backend_->visibility(), 1);
  ASSERT_EQ(big.size(), 1u);
  EXPECT_EQ(big[0].body, largest);
}

TEST_P(QueueConformance, QueuesAreApart) {
  std::unique_ptr<Queue> jobs = backend_->open("jobs", kMaxReceives);
  std::unique_ptr<Queue> other = backend_->open("other", kMaxReceives);
  ASSERT_TRUE(jobs != nullptr && other != nullptr);
  sent_to(*jobs, "for jobs");
  sent_to(*other, "for other");
  const Duration visibility = backend_->visibility();
  EXPECT_EQ(bodies_in(received_n(*other, visibility, 1)), std::multiset<std::string>{"for other"});
  const std::vector<Message> got = received_n(*jobs, visibility, 1);
  EXPECT_EQ(bodies_in(got), std::multiset<std::string>{"for jobs"});
  EXPECT_TRUE(received_now(*other, visibility).empty());
  EXPECT_EQ(*other->count_dead(10), 0);
}

}  // namespace leasehold::conformance
