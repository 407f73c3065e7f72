// StoreQueue on every backend (see store_conformance.h): it must deliver the
// same way on any store, down to the items it keeps, and under store faults.
// Time is simulated (SimulatedClock, moved by the test).
// queue_conformance_test.cc holds every Queue to the contract itself,
// StoreQueue included (two receivers racing on real threads are there).
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <utility>

#include "leasehold/queue.h"
#include "store/store_wrapper.h"
#include "testing/faulty_store.h"
#include "tests/conformance/store_conformance.h"

namespace leasehold::conformance {

using std::chrono::milliseconds;
using std::chrono::seconds;

void StoreQueueConformance::SetUp() {
  Result<std::unique_ptr<ItemStore>> made = GetParam().make();
  ASSERT_TRUE(made.ok()) << made.status().to_string();
  inner_ = std::move(made).value();
  faulty_ = std::make_unique<store::FaultyStore>(*inner_, random_);
  ASSERT_TRUE(faulty_->ensure_table(StoreQueue::table_spec()).ok());
  queue_ = open(*faulty_, random_);
  ASSERT_NE(queue_, nullptr);
}

std::unique_ptr<StoreQueue> StoreQueueConformance::open(ItemStore& store, Random& random,
                                                        const std::string& name) {
  QueueOptions options;
  options.name = name;
  options.max_receives = kMaxReceives;
  Result<std::unique_ptr<StoreQueue>> queue = StoreQueue::open(store, clock_, random, options);
  EXPECT_TRUE(queue.ok()) << queue.status().to_string();
  return queue.ok() ? std::move(queue).value() : nullptr;
}

Item StoreQueueConformance::stored(const std::string& id) {
  Result<Item> item = inner_->get(kQueueTable, {"Q#jobs#" + id, ""}, true);
  return item.ok() ? std::move(item).value() : Item{};
}

size_t StoreQueueConformance::items_in_table() {
  size_t n = 0;
  for (const char* state : {"jobs#ready", "jobs#dead"}) {
    QueryOptions query;
    query.limit = kQueryLimitMax;
    Result<Page> page =
        inner_->query_index(kQueueTable, kQueueIndex, state, KeyRange::all(), query);
    EXPECT_TRUE(page.ok()) << page.status().to_string();
    if (page.ok()) n += page->items.size();
  }
  return n;
}

namespace {

constexpr Duration kVisibility = seconds(30);

std::vector<Message> received(Queue& queue, int max = kReceiveBatchMax,
                              Duration visibility = kVisibility) {
  Result<std::vector<Message>> got = queue.receive(max, visibility);
  EXPECT_TRUE(got.ok()) << got.status().to_string();
  return got.ok() ? std::move(got).value() : std::vector<Message>{};
}

std::string sent(Queue& queue, std::string_view body) {
  Result<std::string> id = queue.send(body);
  EXPECT_TRUE(id.ok()) << id.status().to_string();
  return id.ok() ? *id : std::string();
}

// The part of a receipt that the store keeps (receipts are "<id>.<token>").
std::string token_of(const Message& m) { return m.receipt.substr(m.receipt.find('.') + 1); }

std::multiset<std::string> bodies_of(const std::vector<Message>& messages) {
  std::multiset<std::string> bodies;
  for (const Message& m : messages) bodies.insert(m.body);
  return bodies;
}

TEST_P(StoreQueueConformance, SendReceiveRemove) {
  std::map<std::string, std::string> bodies;  // by message ID
  for (const char* body : {"a", "{\"job\":2}", "\xc3\xbcnicode"}) {
    const std::string id = sent(*queue_, body);
    EXPECT_TRUE(is_well_formed_token(id));
    bodies[id] = body;
  }
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  const std::vector<Message> got = received(*queue_);
  ASSERT_EQ(got.size(), 3u);
  std::set<std::string> receipts;
  for (const Message& m : got) {
    ASSERT_TRUE(bodies.contains(m.id));
    EXPECT_EQ(m.body, bodies[m.id]);
    EXPECT_EQ(m.receive_count, 1);
    EXPECT_EQ(m.sent_at_ms, now_ms);
    EXPECT_EQ(m.visible_at_ms, now_ms + to_ms(kVisibility));
    EXPECT_EQ(*get_string(stored(m.id), "receipt"), token_of(m));
    receipts.insert(m.receipt);
  }
  EXPECT_EQ(receipts.size(), 3u);
  EXPECT_TRUE(received(*queue_).empty()) << "all three are invisible";
  for (const Message& m : got) EXPECT_TRUE(queue_->remove(m.receipt).ok());
  clock_.advance(kVisibility + seconds(1));
  EXPECT_TRUE(received(*queue_).empty()) << "a removed message never comes back";
  EXPECT_EQ(items_in_table(), 0u);
}

TEST_P(StoreQueueConformance, AMessageNotRemovedIsDeliveredAgainAtItsDeadline) {
  const std::string id = sent(*queue_, "job");
  const std::vector<Message> first = received(*queue_, 1, seconds(10));
  ASSERT_EQ(first.size(), 1u);
  clock_.advance(seconds(10) - milliseconds(1));
  EXPECT_TRUE(received(*queue_).empty()) << "invisible until its deadline";
  clock_.advance(milliseconds(1));
  const std::vector<Message> second = received(*queue_, 1, seconds(10));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].id, id);
  EXPECT_EQ(second[0].body, "job");
  EXPECT_EQ(second[0].receive_count, 2);
  EXPECT_EQ(second[0].sent_at_ms, first[0].sent_at_ms);
  EXPECT_NE(second[0].receipt, first[0].receipt);

  // The first receipt no longer holds the message.
  const Item before = stored(id);
  EXPECT_EQ(queue_->remove(first[0].receipt).code(), Code::kFailedPrecondition);
  EXPECT_EQ(queue_->extend_visibility(first[0].receipt, seconds(60)).status().code(),
            Code::kFailedPrecondition);
  EXPECT_EQ(stored(id), before);

  ASSERT_TRUE(queue_->remove(second[0].receipt).ok());
  EXPECT_EQ(queue_->remove(second[0].receipt).code(), Code::kNotFound);
  EXPECT_EQ(queue_->remove(first[0].receipt).code(), Code::kNotFound);
  EXPECT_EQ(queue_->extend_visibility(second[0].receipt, seconds(1)).status().code(),
            Code::kNotFound);
  EXPECT_TRUE(stored(id).empty()) << "nothing brings a removed message back";
}

// Past its deadline a message is anyone's, but until someone takes it the
// last receipt still holds it: a job that finished late is still removed.
TEST_P(StoreQueueConformance, AReceiptHoldsItsMessageUntilItIsDeliveredAgain) {
  const std::string id = sent(*queue_, "job");
  const std::vector<Message> got = received(*queue_, 1, seconds(10));
  ASSERT_EQ(got.size(), 1u);
  clock_.advance(seconds(15));
  ASSERT_TRUE(queue_->remove(got[0].receipt).ok());
  EXPECT_TRUE(received(*queue_).empty());
  EXPECT_EQ(items_in_table(), 0u);
}

TEST_P(StoreQueueConformance, ExtendVisibility) {
  const std::string id = sent(*queue_, "long job");
  const std::vector<Message> got = received(*queue_, 1, seconds(10));
  ASSERT_EQ(got.size(), 1u);
  clock_.advance(seconds(8));
  Result<int64_t> until = queue_->extend_visibility(got[0].receipt, seconds(10));
  ASSERT_TRUE(until.ok()) << until.status().to_string();
  EXPECT_EQ(*until, to_unix_ms(clock_.wall_now()) + 10'000);
  EXPECT_EQ(*get_int(stored(id), "visible_at_ms"), *until);
  clock_.advance(seconds(5));  // past the first deadline, inside the extension
  EXPECT_TRUE(received(*queue_).empty());
  clock_.advance(seconds(5));
  const std::vector<Message> again = received(*queue_, 1, seconds(10));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].receive_count, 2);
}

// Runs `after_next_query` once, right after the next index query returns: a
// rival acting between a receiver's read and its writes.
class InterleavingStore final : public store::StoreWrapper {
 public:
  using StoreWrapper::StoreWrapper;
  Result<Page> query_index(std::string_view table, std::string_view index,
                           std::string_view hash_value, const KeyRange& range,
                           const QueryOptions& options) override {
    Result<Page> page = StoreWrapper::query_index(table, index, hash_value, range, options);
    if (auto rival = std::exchange(after_next_query, nullptr)) rival();
    return page;
  }
  std::function<void()> after_next_query;
};

TEST_P(StoreQueueConformance, AReceiverSkipsWhatARivalTookAfterItsRead) {
  for (int i = 0; i < 4; ++i) sent(*queue_, "job " + std::to_string(i));
  InterleavingStore interleaving(*inner_);
  SeededRandom random_a{21}, random_rival{22};
  std::unique_ptr<StoreQueue> a = open(interleaving, random_a);
  std::unique_ptr<StoreQueue> rival = open(*inner_, random_rival);
  std::vector<Message> rival_got;
  interleaving.after_next_query = [&] { rival_got = received(*rival, 2); };
  // `a` read all four, then the rival took two of them: `a` gets the others.
  const std::vector<Message> got = received(*a);
  ASSERT_EQ(rival_got.size(), 2u);
  ASSERT_EQ(got.size(), 2u);
  std::set<std::string> ids;
  for (const Message& m : rival_got) ids.insert(m.id);
  for (const Message& m : got) EXPECT_FALSE(ids.contains(m.id)) << "delivered twice";
  for (const Message& m : got) EXPECT_EQ(m.receive_count, 1);

  // Once their visibility ends, all four are anyone's again.
  clock_.advance(kVisibility);
  interleaving.after_next_query = [&] { rival_got = received(*rival); };
  EXPECT_TRUE(received(*a).empty()) << "the rival took all it read";
  EXPECT_EQ(rival_got.size(), 4u);
}

TEST_P(StoreQueueConformance, AMessageOutOfDeliveriesBecomesADeadLetter) {
  const std::string id = sent(*queue_, "poison");
  std::vector<Message> last;
  for (int i = 1; i <= kMaxReceives; ++i) {
    last = received(*queue_, 1, seconds(10));
    ASSERT_EQ(last.size(), 1u);
    EXPECT_EQ(last[0].receive_count, i);
    clock_.advance(seconds(10));
  }
  const int64_t dead_at_ms = to_unix_ms(clock_.wall_now());
  sent(*queue_, "fine");
  const std::vector<Message> got = received(*queue_);
  EXPECT_EQ(bodies_of(got), std::multiset<std::string>{"fine"}) << "the dead letter is not sent";
  for (const Message& m : got) EXPECT_TRUE(queue_->remove(m.receipt).ok());
  clock_.advance(std::chrono::minutes(5));
  EXPECT_TRUE(received(*queue_).empty()) << "a dead letter is never delivered again";
  EXPECT_EQ(queue_->remove(last[0].receipt).code(), Code::kFailedPrecondition);
  EXPECT_EQ(queue_->extend_visibility(last[0].receipt, seconds(1)).status().code(),
            Code::kFailedPrecondition);

  Result<DeadLetterPage> dead = queue_->list_dead(10, "");
  ASSERT_TRUE(dead.ok()) << dead.status().to_string();
  ASSERT_EQ(dead->letters.size(), 1u);
  EXPECT_EQ(dead->letters[0].id, id);
  EXPECT_EQ(dead->letters[0].body, "poison");
  EXPECT_EQ(dead->letters[0].receive_count, kMaxReceives);
  EXPECT_EQ(dead->letters[0].sent_at_ms, last[0].sent_at_ms);
  EXPECT_EQ(dead->letters[0].dead_at_ms, dead_at_ms);
  EXPECT_EQ(dead->next_cursor, "");
  EXPECT_EQ(*queue_->count_dead(100), 1);

  // Sent back, it is delivered afresh.
  ASSERT_TRUE(queue_->redrive(id).ok());
  EXPECT_EQ(queue_->redrive(id).code(), Code::kFailedPrecondition) << "no longer dead";
  EXPECT_EQ(queue_->remove_dead(id).code(), Code::kFailedPrecondition);
  EXPECT_EQ(*queue_->count_dead(100), 0);
  const std::vector<Message> again = received(*queue_, 1, seconds(10));
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].id, id);
  EXPECT_EQ(again[0].receive_count, 1);

  // Dead once more, then removed for good.
  for (int i = 2; i <= kMaxReceives + 1; ++i) {
    clock_.advance(seconds(10));
    EXPECT_EQ(received(*queue_, 1, seconds(10)).size(), i <= kMaxReceives ? 1u : 0u);
  }
  EXPECT_EQ(*queue_->count_dead(100), 1);
  ASSERT_TRUE(queue_->remove_dead(id).ok());
  EXPECT_EQ(queue_->remove_dead(id).code(), Code::kNotFound);
  EXPECT_EQ(queue_->redrive(id).code(), Code::kNotFound);
  EXPECT_TRUE(stored(id).empty());
}

TEST_P(StoreQueueConformance, DeadLettersArePagedAndCounted) {
  for (int i = 0; i < 3; ++i) sent(*queue_, "poison " + std::to_string(i));
  for (int i = 0; i < kMaxReceives; ++i) {
    EXPECT_EQ(received(*queue_, kReceiveBatchMax, seconds(1)).size(), 3u);
    clock_.advance(seconds(1));
  }
  EXPECT_TRUE(received(*queue_).empty());
  std::set<std::string> bodies;
  std::string cursor;
  int pages = 0;
  do {
    Result<DeadLetterPage> page = queue_->list_dead(2, cursor);
    ASSERT_TRUE(page.ok()) << page.status().to_string();
    EXPECT_LE(page->letters.size(), 2u);
    for (const DeadLetter& letter : page->letters) bodies.insert(letter.body);
    cursor = page->next_cursor;
    ASSERT_LT(++pages, 5);
  } while (!cursor.empty());
  EXPECT_EQ(bodies, (std::set<std::string>{"poison 0", "poison 1", "poison 2"}));
  EXPECT_EQ(*queue_->count_dead(100), 3);
  EXPECT_EQ(*queue_->count_dead(2), 2);
}

// Many queues share the table; none sees another's messages.
TEST_P(StoreQueueConformance, QueuesInOneTableAreApart) {
  std::unique_ptr<StoreQueue> other = open(*faulty_, random_, "other.queue");
  sent(*queue_, "for jobs");
  sent(*other, "for other");
  EXPECT_EQ(bodies_of(received(*other)), std::multiset<std::string>{"for other"});
  const std::vector<Message> got = received(*queue_);
  EXPECT_EQ(bodies_of(got), std::multiset<std::string>{"for jobs"});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(other->remove(got[0].receipt).code(), Code::kNotFound);
  EXPECT_EQ(*other->count_dead(10), 0);
}

// A receiver whose wall clock is ahead sees a message early by that much: a
// redelivery comes early, never late, and nothing is lost.
TEST_P(StoreQueueConformance, ClockSkewOnlyMakesARedeliveryEarly) {
  OffsetClock ahead(clock_, milliseconds(300));
  QueueOptions options;
  options.name = "jobs";
  Result<std::unique_ptr<StoreQueue>> fast = StoreQueue::open(*inner_, ahead, random_, options);
  ASSERT_TRUE(fast.ok());
  sent(*queue_, "job");
  ASSERT_EQ(received(*queue_, 1, seconds(10)).size(), 1u);
  clock_.advance(seconds(10) - milliseconds(300));
  EXPECT_TRUE(received(*queue_).empty());
  EXPECT_EQ(received(**fast).size(), 1u) << "early by the skew";
}

TEST_P(StoreQueueConformance, BadInputChangesNothing) {
  QueueOptions options;
  for (const std::string& name :
       {std::string(), std::string("Jobs"), std::string("a#b"), std::string("-x"),
        std::string(".x"), std::string("a b"), std::string("\xc3\xbc"),
        std::string(kQueueNameBytesMax + 1, 'a')}) {
    options.name = name;
    EXPECT_EQ(StoreQueue::open(*faulty_, clock_, random_, options).status().code(),
              Code::kInvalidArgument)
        << name;
  }
  options.name = std::string(kQueueNameBytesMax, 'a');
  EXPECT_TRUE(StoreQueue::open(*faulty_, clock_, random_, options).ok());
  options.name = "jobs";
  for (int max_receives : {0, -1, kMaxReceivesMax + 1}) {
    options.max_receives = max_receives;
    EXPECT_EQ(StoreQueue::open(*faulty_, clock_, random_, options).status().code(),
              Code::kInvalidArgument);
  }

  EXPECT_EQ(queue_->send("").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(queue_->send(std::string(kMessageBodyBytesMax + 1, 'x')).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(queue_->send("\xff\xfe").status().code(), Code::kInvalidArgument);
  for (const auto& [max, visibility] :
       std::vector<std::pair<int, Duration>>{{0, kVisibility},
                                             {kReceiveBatchMax + 1, kVisibility},
                                             {1, Duration::zero()},
                                             {1, std::chrono::microseconds(999)},
                                             {1, -seconds(1)},
                                             {1, kVisibilityMax + milliseconds(1)}}) {
    EXPECT_EQ(queue_->receive(max, visibility).status().code(), Code::kInvalidArgument);
  }
  const std::string unknown = random_token(random_) + "." + random_token(random_);
  for (const std::string& receipt :
       {std::string(), std::string("abc"), unknown.substr(0, 32), unknown + "0",
        unknown.substr(0, 33) + "ZZ" + unknown.substr(35)}) {
    EXPECT_EQ(queue_->remove(receipt).code(), Code::kInvalidArgument) << receipt;
    EXPECT_EQ(queue_->extend_visibility(receipt, seconds(1)).status().code(),
              Code::kInvalidArgument);
  }
  for (const std::string& id : {std::string(), std::string("nope"), unknown}) {
    EXPECT_EQ(queue_->redrive(id).code(), Code::kInvalidArgument);
    EXPECT_EQ(queue_->remove_dead(id).code(), Code::kInvalidArgument);
  }
  EXPECT_EQ(queue_->list_dead(0, "").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(queue_->list_dead(kQueryLimitMax + 1, "").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(queue_->count_dead(0).status().code(), Code::kInvalidArgument);
  // A well-formed receipt of no message: nothing there, and nothing made.
  EXPECT_EQ(queue_->remove(unknown).code(), Code::kNotFound);
  EXPECT_EQ(queue_->extend_visibility(unknown, seconds(1)).status().code(), Code::kNotFound);
  EXPECT_EQ(items_in_table(), 0u);

  // Bad input aimed at a real message changes nothing either.
  const std::string id = sent(*queue_, "job");
  const std::vector<Message> got = received(*queue_, 1);
  ASSERT_EQ(got.size(), 1u);
  const Item before = stored(id);
  EXPECT_EQ(queue_->extend_visibility(got[0].receipt, Duration::zero()).status().code(),
            Code::kInvalidArgument);
  EXPECT_EQ(
      queue_->extend_visibility(got[0].receipt, kVisibilityMax + milliseconds(1)).status().code(),
      Code::kInvalidArgument);
  EXPECT_EQ(stored(id), before);
  EXPECT_EQ(items_in_table(), 1u);

  // The largest body goes through whole.
  const std::string largest(kMessageBodyBytesMax, 'b');
  sent(*queue_, largest);
  const std::vector<Message> big = received(*queue_);
  ASSERT_EQ(big.size(), 1u);
  EXPECT_EQ(big[0].body, largest);
}

// ---------------------------------------------------------------- store faults

TEST_P(StoreQueueConformance, ASendWithoutAnAnswerIsStoredOnce) {
  faulty_->inject_next(store::Fault::kDropReply);  // stored; the retry finds it there
  EXPECT_TRUE(is_well_formed_token(sent(*queue_, "a")));
  faulty_->inject_next(store::Fault::kLoseRequest);  // lost; the retry stores it
  EXPECT_TRUE(is_well_formed_token(sent(*queue_, "b")));
  faulty_->inject_next(store::Fault::kUnavailable);
  EXPECT_EQ(queue_->send("c").status().code(), Code::kUnavailable);
  for (int i = 0; i < 3; ++i) faulty_->inject_next(store::Fault::kLoseRequest);
  EXPECT_EQ(queue_->send("d").status().code(), Code::kUnknownOutcome);
  EXPECT_EQ(items_in_table(), 2u);
  EXPECT_EQ(bodies_of(received(*queue_)), (std::multiset<std::string>{"a", "b"}));
}

// A delivery whose write got no answer is the receiver's only if a read-back
// shows its receipt. Otherwise it is not returned, and the message, if the
// write applied, comes back when that delivery's visibility ends.
TEST_P(StoreQueueConformance, AReceiveWithoutAnAnswerNeverLosesTheMessage) {
  // Four deliveries happen here, one of them unseen: more than queue_ allows.
  QueueOptions options;
  options.name = "jobs";
  options.max_receives = 4;
  Result<std::unique_ptr<StoreQueue>> opened = StoreQueue::open(*faulty_, clock_, random_, options);
  ASSERT_TRUE(opened.ok());
  queue_ = std::move(opened).value();
  const std::string id = sent(*queue_, "job");
  faulty_->inject_next(store::Fault::kNone);  // the index query
  faulty_->inject_next(store::Fault::kDropReply);
  std::vector<Message> got = received(*queue_, 1, seconds(10));
  ASSERT_EQ(got.size(), 1u) << "applied: the read-back shows the receipt";
  EXPECT_EQ(got[0].receive_count, 1);
  EXPECT_EQ(*get_string(stored(id), "receipt"), token_of(got[0]));

  clock_.advance(seconds(10));
  faulty_->inject_next(store::Fault::kNone);
  faulty_->inject_next(store::Fault::kLoseRequest);
  EXPECT_TRUE(received(*queue_, 1, seconds(10)).empty());
  got = received(*queue_, 1, seconds(10));
  ASSERT_EQ(got.size(), 1u) << "lost on its way: still visible";
  EXPECT_EQ(got[0].receive_count, 2);

  clock_.advance(seconds(10));
  faulty_->inject_next(store::Fault::kNone);
  faulty_->inject_next(store::Fault::kDropReply);
  for (int i = 0; i < 3; ++i) faulty_->inject_next(store::Fault::kUnavailable);
  EXPECT_TRUE(received(*queue_, 1, seconds(10)).empty()) << "applied, but nothing shows it";
  EXPECT_TRUE(received(*queue_).empty());
  clock_.advance(seconds(10));
  got = received(*queue_, 1, seconds(10));
  ASSERT_EQ(got.size(), 1u) << "redelivered once that visibility ended";
  EXPECT_EQ(got[0].id, id);
  EXPECT_EQ(got[0].receive_count, 4);
}

TEST_P(StoreQueueConformance, AnOutageEndsAReceiveButKeepsWhatItDelivered) {
  for (int i = 0; i < 3; ++i) sent(*queue_, "job " + std::to_string(i));
  faulty_->inject_next(store::Fault::kUnavailable);
  EXPECT_EQ(queue_->receive(3, kVisibility).status().code(), Code::kUnavailable);
  faulty_->inject_next(store::Fault::kNone);
  faulty_->inject_next(store::Fault::kNone);
  faulty_->inject_next(store::Fault::kUnavailable);
  const std::vector<Message> first = received(*queue_, 3);
  EXPECT_EQ(first.size(), 1u);
  const std::vector<Message> rest = received(*queue_);
  EXPECT_EQ(rest.size(), 2u) << "the others were left visible";
  for (const Message& m : rest) EXPECT_EQ(m.receive_count, 1);
}

TEST_P(StoreQueueConformance, RemovesAndExtensionsWithoutAnAnswerAreResolved) {
  const std::string id = sent(*queue_, "job");
  const std::vector<Message> got = received(*queue_, 1, seconds(10));
  ASSERT_EQ(got.size(), 1u);
  faulty_->inject_next(store::Fault::kLoseRequest);
  EXPECT_EQ(queue_->extend_visibility(got[0].receipt, seconds(20)).status().code(),
            Code::kUnavailable);
  faulty_->inject_next(store::Fault::kDropReply);
  Result<int64_t> until = queue_->extend_visibility(got[0].receipt, seconds(20));
  ASSERT_TRUE(until.ok()) << until.status().to_string();
  EXPECT_EQ(*get_int(stored(id), "visible_at_ms"), *until);

  faulty_->inject_next(store::Fault::kLoseRequest);
  EXPECT_EQ(queue_->remove(got[0].receipt).code(), Code::kUnavailable) << "did not apply: retry";
  EXPECT_FALSE(stored(id).empty());
  faulty_->inject_next(store::Fault::kDropReply);
  EXPECT_TRUE(queue_->remove(got[0].receipt).ok());
  EXPECT_TRUE(stored(id).empty());
}

}  // namespace
}  // namespace leasehold::conformance
