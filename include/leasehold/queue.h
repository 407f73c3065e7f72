// A job queue with at-least-once delivery, and StoreQueue, which keeps it in
// the item store: the same queue on every backend.
//
// A message is sent once and delivered until a receiver removes it. Each
// delivery hides the message for a visibility timeout the receiver chooses
// and hands out a fresh receipt; a message not removed by then is delivered
// again, with a new receipt and a higher receive_count, and the old receipt
// can no longer remove it or extend its visibility. A message delivered
// `max_receives` times and still not removed becomes a dead letter: it is
// never delivered again, and an operator lists it, sends it back (redrive) or
// removes it. Receivers must therefore be ready for a message they have seen
// before: a job queue built on this claims its job with a conditional write of
// its own (a stale or repeated job is then a no-op).
//
// Within one visibility window a message goes to at most one receiver: every
// delivery is one conditional write, conditioned on the message being exactly
// as the receiver read it, so two receivers racing for a message cannot both
// take it. Wall time (Clock::wall_now) decides when a message is visible,
// because receivers in other processes must agree on it; a receiver whose
// clock runs ahead of the others sees a message up to that skew early. Skew
// thus only ever makes a redelivery early, which at-least-once delivery
// allows, and never loses a message.
//
// A write whose outcome is unknown is resolved by reading the message back. A
// delivery that cannot be resolved is not returned; if it did apply, the
// message is simply delivered again once its visibility ends. Nothing is lost
// for it, at worst delivered once more.
//
// Thread-safety: a StoreQueue keeps no state between calls and is safe for
// concurrent use as long as its store, clock and random source are
// (SystemRandom is; a SeededRandom belongs to one thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/clock.h"
#include "leasehold/random.h"
#include "leasehold/status.h"
#include "leasehold/store.h"

namespace leasehold {

// Where StoreQueue keeps messages by default, and the index receivers read.
inline constexpr std::string_view kQueueTable = "queue_messages";
inline constexpr std::string_view kQueueIndex = "queue_state-visible_at_ms-index";

// Queue names: 1..kQueueNameBytesMax bytes of [a-z0-9._-], starting with a
// letter or digit ('#' separates the name from the rest of a key).
inline constexpr size_t kQueueNameBytesMax = 64;
// A body is 1..kMessageBodyBytesMax bytes of UTF-8: well inside the store's
// item limit, and enough for a job description (large data belongs elsewhere,
// named by the message).
inline constexpr size_t kMessageBodyBytesMax = 64 * 1024;
// Messages one receive() may deliver. Each is one conditional write, so the
// bound also bounds how long a receive takes.
inline constexpr int kReceiveBatchMax = 10;
// Visibility timeouts are 1 ms .. kVisibilityMax. A job that runs longer
// extends its message's visibility as it goes.
inline constexpr Duration kVisibilityMax = std::chrono::hours(12);
// The most deliveries QueueOptions::max_receives may allow.
inline constexpr int kMaxReceivesMax = 1000;
// The most dead letters count_dead() counts.
inline constexpr int64_t kDeadCountMax = 100'000;

// One delivery of a message.
struct Message {
  std::string id;    // 32 hex digits, the message's for its whole life
  std::string body;  // as sent
  // Names this delivery for remove() and extend_visibility(): opaque (today
  // "<id>.<32 hex digits>", the second part 128 random bits). It stays valid
  // until the message is delivered again, even past visible_at_ms.
  std::string receipt;
  int64_t receive_count = 0;  // deliveries so far, this one included
  int64_t sent_at_ms = 0;     // Unix ms, the sender's wall clock
  // Unix ms when the message may be delivered again unless it is removed or
  // its visibility extended.
  int64_t visible_at_ms = 0;
};

// A message that was delivered max_receives times without being removed.
struct DeadLetter {
  std::string id;
  std::string body;
  int64_t receive_count = 0;
  int64_t sent_at_ms = 0;
  int64_t dead_at_ms = 0;  // Unix ms when it was found out of deliveries
};

struct DeadLetterPage {
  std::vector<DeadLetter> letters;  // oldest dead first
  std::string next_cursor;          // empty when there are no more
};

// The queue contract. Every implementation delivers at least once, as the
// file comment says; QueueConformance (tests/conformance/) holds each to it.
class Queue {
 public:
  virtual ~Queue() = default;

  // Adds a message, visible at once, and returns its ID. kInvalidArgument for
  // an empty, oversized or non-UTF-8 body (nothing is stored). kUnavailable if
  // nothing was stored. kUnknownOutcome if the store never confirmed the
  // message: it may be there, and sending it again may deliver it twice.
  virtual Result<std::string> send(std::string_view body) = 0;

  // Delivers up to `max` visible messages (roughly oldest first), each hidden
  // for `visibility` from now. Fewer, or none, when fewer are visible or other
  // receivers take them first: an empty result is not an error. A message
  // found delivered max_receives times becomes a dead letter instead of being
  // delivered. kInvalidArgument unless 1 <= max <= kReceiveBatchMax and
  // 1 ms <= visibility <= kVisibilityMax. A store failure before any message
  // was delivered is returned as such; after, the messages delivered so far
  // are returned.
  virtual Result<std::vector<Message>> receive(int max, Duration visibility) = 0;

  // Removes the message this receipt delivered. kFailedPrecondition if the
  // receipt is stale: the message was delivered again since (or became a dead
  // letter). kNotFound if there is no such message any more (removed already,
  // perhaps through this very receipt). kInvalidArgument for a malformed
  // receipt. A remove without an answer is resolved by reading back.
  virtual Status remove(std::string_view receipt) = 0;

  // Hides the message until `visibility` from now, and returns that time
  // (Unix ms). Errors as for remove(), and kInvalidArgument for a visibility
  // outside 1 ms .. kVisibilityMax.
  virtual Result<int64_t> extend_visibility(std::string_view receipt, Duration visibility) = 0;

  // Dead letters, oldest first: at most `limit` (1..kQueryLimitMax) from
  // `cursor` (empty for the first page). Index reads may lag the latest
  // writes by a moment on stores whose indexes are eventually consistent.
  virtual Result<DeadLetterPage> list_dead(int limit, std::string_view cursor) = 0;

  // How many dead letters there are, counting up to `max`
  // (1..kDeadCountMax): it reads them all, so it is for operators, not hot
  // paths.
  virtual Result<int64_t> count_dead(int64_t max) = 0;

  // Makes dead letter `id` a message again: visible at once, receive_count 0.
  // kNotFound if there is no message `id`; kFailedPrecondition if it is not a
  // dead letter.
  virtual Status redrive(std::string_view id) = 0;

  // Removes dead letter `id`. Errors as for redrive().
  virtual Status remove_dead(std::string_view id) = 0;
};

struct QueueOptions {
  std::string name;  // see kQueueNameBytesMax
  std::string table = std::string(kQueueTable);
  // Deliveries a message gets before it becomes a dead letter:
  // 1..kMaxReceivesMax.
  int max_receives = 5;
  // Consistent reads tried to resolve a write whose outcome is unknown.
  int read_back_attempts_max = 3;
};

// A Queue whose messages are items of a table (StoreQueue::table_spec()):
// one item per message, key "Q#<queue>#<id>", and an index by the queue's
// state ("<queue>#ready", "<queue>#dead") and visible_at_ms, so that a
// receive is one index query and one conditional write per message. Many
// queues share one table. docs/schema.md lists the attributes.
class StoreQueue final : public Queue {
 public:
  // kInvalidArgument for a bad name or option. Touches no store: the table
  // must exist (ItemStore::ensure_table / require_table with table_spec()).
  // REQUIRES: store, clock and random outlive the queue.
  static Result<std::unique_ptr<StoreQueue>> open(ItemStore& store, Clock& clock, Random& random,
                                                  QueueOptions options);

  // The table every queue of `table` lives in, with its index.
  static TableSpec table_spec(std::string table = std::string(kQueueTable));

  Result<std::string> send(std::string_view body) override;
  Result<std::vector<Message>> receive(int max, Duration visibility) override;
  Status remove(std::string_view receipt) override;
  Result<int64_t> extend_visibility(std::string_view receipt, Duration visibility) override;
  Result<DeadLetterPage> list_dead(int limit, std::string_view cursor) override;
  Result<int64_t> count_dead(int64_t max) override;
  Status redrive(std::string_view id) override;
  Status remove_dead(std::string_view id) override;

  const QueueOptions& options() const { return options_; }

 private:
  struct Receipt;
  struct Candidate;
  StoreQueue(ItemStore& store, Clock& clock, Random& random, QueueOptions options);

  static Result<Receipt> parse_receipt(std::string_view receipt);
  Key key_of(std::string_view id) const;
  Status take(const Candidate& c, int64_t now_ms, Duration visibility,
              std::vector<Message>& delivered);
  Status bury(const Candidate& c, int64_t now_ms);
  Status explain_refused(const Receipt& r, std::string_view op);
  Status resolve_remove(const Receipt& r);
  Status explain_dead_write(std::string_view id, std::string_view op, const Status& written,
                            bool removes);
  Result<Item> read_back(const Key& key);
  void shuffle(std::vector<Item>& items);

  ItemStore& store_;
  Clock& clock_;
  Random& random_;
  const QueueOptions options_;
  const std::string ready_state_;  // "<queue>#ready"
  const std::string dead_state_;   // "<queue>#dead"
  const std::string key_prefix_;   // "Q#<queue>#"
};

}  // namespace leasehold
