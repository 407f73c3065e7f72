#include "leasehold/queue.h"

#include <algorithm>
#include <cassert>
#include <optional>
#include <utility>

namespace leasehold {
namespace {

// The attributes of a message item (docs/schema.md, `queue_messages`).
constexpr std::string_view kPkAttr = "pk";
constexpr std::string_view kStateAttr = "queue_state";
constexpr std::string_view kVisibleAtAttr = "visible_at_ms";
constexpr std::string_view kBodyAttr = "body";
constexpr std::string_view kSentAtAttr = "sent_at_ms";
constexpr std::string_view kReceiveCountAttr = "receive_count";
constexpr std::string_view kReceiptAttr = "receipt";
constexpr std::string_view kReceivedAtAttr = "received_at_ms";
constexpr std::string_view kDeadAtAttr = "dead_at_ms";

// A receive reads this many candidates per message it may deliver, so that a
// receiver that loses some of them to a rival still finds others to take.
constexpr int kCandidatesPerMessage = 4;
// A send whose outcome is unknown is sent again (the same ID, conditioned on
// its absence) this many times in all.
constexpr int kSendAttemptsMax = 3;

std::string attr(std::string_view name) { return std::string(name); }

Status check_name(std::string_view name) {
  const bool ok =
      !name.empty() && name.size() <= kQueueNameBytesMax &&
      name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789._-") == std::string_view::npos &&
      name.front() != '.' && name.front() != '_' && name.front() != '-';
  if (!ok) {
    return invalid_argument("queue name '" + std::string(name) + "' must be 1.." +
                            std::to_string(kQueueNameBytesMax) +
                            " bytes of [a-z0-9._-] starting with a letter or digit");
  }
  return {};
}

Status check_visibility(Duration visibility) {
  if (visibility < std::chrono::milliseconds(1) || visibility > kVisibilityMax) {
    return invalid_argument("visibility timeout of " + std::to_string(to_ms(visibility)) +
                            "ms is outside 1ms.." + std::to_string(to_ms(kVisibilityMax)) + "ms");
  }
  return {};
}

Status check_id(std::string_view id) {
  if (!is_well_formed_token(id)) {
    return invalid_argument("malformed message ID (expected 32 lowercase hex digits)");
  }
  return {};
}

}  // namespace

// A receipt as the caller hands it back: the message it names, and the token
// the delivery wrote into the message.
struct StoreQueue::Receipt {
  std::string id;
  std::string token;
};

// A message as a receive read it from the index. Every write a receive makes
// is conditioned on the message still being exactly so.
struct StoreQueue::Candidate {
  std::string id;
  Key key;
  std::string body;
  int64_t sent_at_ms = 0;
  int64_t visible_at_ms = 0;
  int64_t receive_count = 0;
  std::optional<std::string> receipt;
};

namespace {

// What a read of a message says of a receipt's hold on it.
enum class Hold { kMine, kStale, kGone, kUnread };

Hold hold_of(const Result<Item>& item, const std::string& ready_state, const std::string& token) {
  if (!item.ok()) return item.status().code() == Code::kNotFound ? Hold::kGone : Hold::kUnread;
  const std::string* state = get_string(*item, kStateAttr);
  const std::string* receipt = get_string(*item, kReceiptAttr);
  const bool mine =
      state != nullptr && *state == ready_state && receipt != nullptr && *receipt == token;
  return mine ? Hold::kMine : Hold::kStale;
}

}  // namespace

Result<StoreQueue::Receipt> StoreQueue::parse_receipt(std::string_view receipt) {
  const size_t dot = receipt.find('.');
  if (dot == std::string_view::npos || !is_well_formed_token(receipt.substr(0, dot)) ||
      !is_well_formed_token(receipt.substr(dot + 1))) {
    return invalid_argument("malformed receipt (expected one that receive() returned)");
  }
  return Receipt{std::string(receipt.substr(0, dot)), std::string(receipt.substr(dot + 1))};
}

StoreQueue::StoreQueue(ItemStore& store, Clock& clock, Random& random, QueueOptions options)
    : store_(store),
      clock_(clock),
      random_(random),
      options_(std::move(options)),
      ready_state_(options_.name + "#ready"),
      dead_state_(options_.name + "#dead"),
      key_prefix_("Q#" + options_.name + "#") {}

Result<std::unique_ptr<StoreQueue>> StoreQueue::open(ItemStore& store, Clock& clock, Random& random,
                                                     QueueOptions options) {
  LEASEHOLD_RETURN_IF_ERROR(check_name(options.name));
  if (options.table.empty()) return invalid_argument("queue table name is empty");
  if (options.max_receives < 1 || options.max_receives > kMaxReceivesMax) {
    return invalid_argument("max_receives " + std::to_string(options.max_receives) +
                            " is outside 1.." + std::to_string(kMaxReceivesMax));
  }
  if (options.read_back_attempts_max < 1) {
    return invalid_argument("read_back_attempts_max must be at least 1");
  }
  return std::unique_ptr<StoreQueue>(new StoreQueue(store, clock, random, std::move(options)));
}

TableSpec StoreQueue::table_spec(std::string table) {
  return TableSpec{std::move(table),
                   attr(kPkAttr),
                   "",
                   {IndexSpec{std::string(kQueueIndex), attr(kStateAttr), attr(kVisibleAtAttr),
                              AttrType::kInt}}};
}

Key StoreQueue::key_of(std::string_view id) const { return Key{key_prefix_ + std::string(id), ""}; }

Result<std::string> StoreQueue::send(std::string_view body) {
  if (body.empty()) return invalid_argument("message body is empty");
  if (body.size() > kMessageBodyBytesMax) {
    return invalid_argument("message body of " + std::to_string(body.size()) +
                            " bytes is longer than " + std::to_string(kMessageBodyBytesMax));
  }
  const std::string id = random_token(random_);
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  const Item item{{attr(kPkAttr), key_of(id).pk}, {attr(kStateAttr), ready_state_},
                  {attr(kVisibleAtAttr), now_ms}, {attr(kBodyAttr), std::string(body)},
                  {attr(kSentAtAttr), now_ms},    {attr(kReceiveCountAttr), int64_t{0}}};
  const std::string what = "send to queue '" + options_.name + "'";
  // The same item (the same ID) is sent again after an unknown outcome: its
  // condition lets it apply once while it is there. Should a receiver have
  // taken and removed it in between, it is stored again: a duplicate, which
  // at-least-once delivery allows, rather than a message lost.
  bool maybe_stored = false;
  for (int attempt = 0; attempt < kSendAttemptsMax; ++attempt) {
    const Status put = store_.put(options_.table, item, cond::not_exists(attr(kPkAttr)));
    if (put.ok()) return id;
    switch (put.code()) {
      case Code::kConditionFailed:
        // The ID is ours alone (128 random bits): an earlier attempt stored it.
        if (maybe_stored) return id;
        return internal_error(what + ": message ID " + id +
                              " is taken; the random source repeats itself");
      case Code::kUnknownOutcome:
        maybe_stored = true;
        continue;
      default:
        if (!maybe_stored) return put.with_context(what);
        return unknown_outcome(what + ": the message may have been stored (" + put.message() +
                               "); sending it again may deliver it twice");
    }
  }
  return unknown_outcome(what + ": the store never confirmed the message; it may have been " +
                         "stored, and sending it again may deliver it twice");
}

// Shuffles the candidates, so that receivers reading the same index page at
// once try its messages in different orders rather than all fight for the
// oldest.
void StoreQueue::shuffle(std::vector<Item>& items) {
  for (size_t i = items.size(); i > 1; --i) {
    std::swap(items[i - 1], items[static_cast<size_t>(random_.uniform(0, int64_t(i) - 1))]);
  }
}

Result<std::vector<Message>> StoreQueue::receive(int max, Duration visibility) {
  if (max < 1 || max > kReceiveBatchMax) {
    return invalid_argument("receive of " + std::to_string(max) + " messages: ask for 1.." +
                            std::to_string(kReceiveBatchMax));
  }
  LEASEHOLD_RETURN_IF_ERROR(check_visibility(visibility));
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  QueryOptions query;
  query.limit = std::min(kQueryLimitMax, max * kCandidatesPerMessage);
  Result<Page> page =
      store_.query_index(options_.table, kQueueIndex, ready_state_, KeyRange::le(now_ms), query);
  if (!page.ok()) return page.status().with_context("receive from queue '" + options_.name + "'");
  shuffle(page->items);
  std::vector<Message> delivered;
  for (const Item& item : page->items) {
    if (delivered.size() == static_cast<size_t>(max)) break;
    // The index holds what this queue wrote; anything else is left alone.
    const std::string* pk = get_string(item, kPkAttr);
    const std::string* body = get_string(item, kBodyAttr);
    const int64_t* visible_at_ms = get_int(item, kVisibleAtAttr);
    if (pk == nullptr || body == nullptr || visible_at_ms == nullptr ||
        !pk->starts_with(key_prefix_) || !is_well_formed_token(pk->substr(key_prefix_.size()))) {
      continue;
    }
    Candidate c{pk->substr(key_prefix_.size()),
                Key{*pk, ""},
                *body,
                get_int_or(item, kSentAtAttr),
                *visible_at_ms,
                get_int_or(item, kReceiveCountAttr),
                std::nullopt};
    if (const std::string* receipt = get_string(item, kReceiptAttr)) c.receipt = *receipt;
    const Status taken = take(c, now_ms, visibility, delivered);
    // Messages already delivered are the caller's now: a failure after them
    // ends the batch rather than hides them until their visibility ends.
    if (!taken.ok()) {
      if (delivered.empty()) return taken;
      break;
    }
  }
  return delivered;
}

namespace {

// The message is still exactly as the candidate read it: ready, with the same
// visibility deadline and receipt. Every delivery changes both, so of two
// receivers that read the same message, one write applies and the other is
// refused.
Condition unchanged(const std::string& ready_state, int64_t visible_at_ms,
                    const std::optional<std::string>& receipt) {
  return cond::eq(attr(kStateAttr), ready_state) && cond::eq(attr(kVisibleAtAttr), visible_at_ms) &&
         (receipt ? cond::eq(attr(kReceiptAttr), *receipt) : cond::not_exists(attr(kReceiptAttr)));
}

}  // namespace

// Delivers one candidate (appending it to `delivered`), or buries it if it is
// out of deliveries. A candidate another receiver took first is skipped.
Status StoreQueue::take(const Candidate& c, int64_t now_ms, Duration visibility,
                        std::vector<Message>& delivered) {
  if (c.receive_count >= options_.max_receives) return bury(c, now_ms);
  const std::string token = random_token(random_);
  const int64_t visible_at_ms = now_ms + to_ms(visibility);
  Update update;
  update.set(attr(kVisibleAtAttr), visible_at_ms)
      .set(attr(kReceiptAttr), token)
      .set(attr(kReceivedAtAttr), now_ms)
      .add(attr(kReceiveCountAttr), 1)
      .returning_updated_only();
  Result<Item> written = store_.update(options_.table, c.key, update,
                                       unchanged(ready_state_, c.visible_at_ms, c.receipt));
  if (!written.ok()) {
    switch (written.status().code()) {
      case Code::kConditionFailed:
        return {};
      case Code::kUnknownOutcome:
        // Ours only if our token is there. If it cannot be read, the message
        // is not delivered now; should the write have applied, it comes back
        // when this delivery's visibility ends. Never lost, at worst late.
        written = read_back(c.key);
        if (hold_of(written, ready_state_, token) != Hold::kMine) return {};
        break;
      default:
        return written.status().with_context("receive message " + c.id + " from queue '" +
                                             options_.name + "'");
    }
  }
  const int64_t* count = get_int(*written, kReceiveCountAttr);
  assert(count == nullptr || *count > c.receive_count);
  delivered.push_back(Message{c.id, c.body, c.id + "." + token,
                              count ? *count : c.receive_count + 1, c.sent_at_ms, visible_at_ms});
  return {};
}

// Makes a candidate out of deliveries a dead letter. Refused, or without an
// answer, is left to the next receive: another receiver got there first, or
// the next one finds the message as it is and tries again.
Status StoreQueue::bury(const Candidate& c, int64_t now_ms) {
  Update update;
  update.set(attr(kStateAttr), dead_state_)
      .set(attr(kVisibleAtAttr), now_ms)
      .set(attr(kDeadAtAttr), now_ms)
      .remove(attr(kReceiptAttr))
      .returning_updated_only();
  const Result<Item> written = store_.update(options_.table, c.key, update,
                                             unchanged(ready_state_, c.visible_at_ms, c.receipt));
  const Code code = written.status().code();
  if (written.ok() || code == Code::kConditionFailed || code == Code::kUnknownOutcome) return {};
  return written.status().with_context("move message " + c.id + " of queue '" + options_.name +
                                       "' to the dead letters");
}

Result<Item> StoreQueue::read_back(const Key& key) {
  Result<Item> item = not_found("");
  for (int i = 0; i < options_.read_back_attempts_max; ++i) {
    item = store_.get(options_.table, key, /*consistent=*/true);
    if (item.ok() || item.status().code() == Code::kNotFound) return item;
  }
  return item;
}

// A write under a receipt was refused: the message is gone, or the receipt
// no longer holds it.
Status StoreQueue::explain_refused(const Receipt& r, std::string_view op) {
  const std::string what =
      std::string(op) + " message " + r.id + " of queue '" + options_.name + "'";
  if (hold_of(read_back(key_of(r.id)), ready_state_, r.token) == Hold::kGone) {
    return not_found(what + ": no such message (removed already?)");
  }
  return failed_precondition(what + ": the receipt is stale (the message was delivered again " +
                             "since, or became a dead letter)");
}

Status StoreQueue::remove(std::string_view receipt) {
  LEASEHOLD_ASSIGN_OR_RETURN(const Receipt r, parse_receipt(receipt));
  const Status removed = store_.remove(
      options_.table, key_of(r.id),
      cond::eq(attr(kStateAttr), ready_state_) && cond::eq(attr(kReceiptAttr), r.token));
  if (removed.ok()) return {};
  switch (removed.code()) {
    case Code::kConditionFailed:
      return explain_refused(r, "remove");
    case Code::kUnknownOutcome:
      return resolve_remove(r);
    default:
      return removed.with_context("remove message " + r.id + " of queue '" + options_.name + "'");
  }
}

// A remove without an answer: gone means it applied (nothing else removes a
// ready message); still held by the receipt means it did not.
Status StoreQueue::resolve_remove(const Receipt& r) {
  const std::string what = "remove message " + r.id + " of queue '" + options_.name + "'";
  switch (hold_of(read_back(key_of(r.id)), ready_state_, r.token)) {
    case Hold::kGone:
      return {};
    case Hold::kMine:
      return unavailable(what + ": the remove did not apply; retry");
    case Hold::kStale:
      return failed_precondition(what + ": the receipt is stale");
    case Hold::kUnread:
      break;
  }
  return unknown_outcome(what + ": no answer came, and the message could not be read back; " +
                         "removing it again answers kNotFound if this remove applied");
}

Result<int64_t> StoreQueue::extend_visibility(std::string_view receipt, Duration visibility) {
  LEASEHOLD_ASSIGN_OR_RETURN(const Receipt r, parse_receipt(receipt));
  LEASEHOLD_RETURN_IF_ERROR(check_visibility(visibility));
  const int64_t visible_at_ms = to_unix_ms(clock_.wall_now()) + to_ms(visibility);
  const Key key = key_of(r.id);
  Update update;
  update.set(attr(kVisibleAtAttr), visible_at_ms).returning_updated_only();
  Result<Item> written = store_.update(
      options_.table, key, update,
      cond::eq(attr(kStateAttr), ready_state_) && cond::eq(attr(kReceiptAttr), r.token));
  if (written.ok()) return visible_at_ms;
  const std::string what =
      "extend visibility of message " + r.id + " of queue '" + options_.name + "'";
  switch (written.status().code()) {
    case Code::kConditionFailed:
      return explain_refused(r, "extend visibility of");
    case Code::kUnknownOutcome:
      break;
    default:
      return written.status().with_context(what);
  }
  // Extending again is harmless, so an unresolved outcome is the caller's to
  // retry.
  written = read_back(key);
  switch (hold_of(written, ready_state_, r.token)) {
    case Hold::kMine:
      if (get_int_or(*written, kVisibleAtAttr) == visible_at_ms) return visible_at_ms;
      return unavailable(what + ": the extension did not apply; retry");
    case Hold::kGone:
      return not_found(what + ": no such message (removed already?)");
    case Hold::kStale:
      return failed_precondition(what + ": the receipt is stale");
    case Hold::kUnread:
      break;
  }
  return unknown_outcome(what + ": no answer came, and the message could not be read back; " +
                         "extending again is safe");
}

Result<DeadLetterPage> StoreQueue::list_dead(int limit, std::string_view cursor) {
  if (limit < 1 || limit > kQueryLimitMax) {
    return invalid_argument("list of " + std::to_string(limit) + " dead letters: ask for 1.." +
                            std::to_string(kQueryLimitMax));
  }
  QueryOptions query;
  query.limit = limit;
  query.cursor = std::string(cursor);
  Result<Page> page =
      store_.query_index(options_.table, kQueueIndex, dead_state_, KeyRange::all(), query);
  if (!page.ok()) {
    return page.status().with_context("list dead letters of queue '" + options_.name + "'");
  }
  DeadLetterPage out;
  out.next_cursor = std::move(page->next_cursor);
  for (Item& item : page->items) {
    const std::string* pk = get_string(item, kPkAttr);
    const std::string* body = get_string(item, kBodyAttr);
    if (pk == nullptr || body == nullptr || !pk->starts_with(key_prefix_)) continue;
    out.letters.push_back(
        DeadLetter{pk->substr(key_prefix_.size()), *body, get_int_or(item, kReceiveCountAttr),
                   get_int_or(item, kSentAtAttr), get_int_or(item, kDeadAtAttr)});
  }
  return out;
}

Result<int64_t> StoreQueue::count_dead(int64_t max) {
  if (max < 1 || max > kDeadCountMax) {
    return invalid_argument("count of dead letters up to " + std::to_string(max) + ": ask for 1.." +
                            std::to_string(kDeadCountMax));
  }
  int64_t count = 0;
  QueryOptions query;
  do {
    query.limit = static_cast<int>(std::min<int64_t>(kQueryLimitMax, max - count));
    Result<Page> page =
        store_.query_index(options_.table, kQueueIndex, dead_state_, KeyRange::all(), query);
    if (!page.ok()) {
      return page.status().with_context("count dead letters of queue '" + options_.name + "'");
    }
    count += static_cast<int64_t>(page->items.size());
    query.cursor = std::move(page->next_cursor);
  } while (!query.cursor.empty() && count < max);
  return std::min(count, max);
}

Status StoreQueue::redrive(std::string_view id) {
  LEASEHOLD_RETURN_IF_ERROR(check_id(id));
  Update update;
  update.set(attr(kStateAttr), ready_state_)
      .set(attr(kVisibleAtAttr), to_unix_ms(clock_.wall_now()))
      .set(attr(kReceiveCountAttr), int64_t{0})
      .remove(attr(kDeadAtAttr))
      .returning_updated_only();
  const Result<Item> written =
      store_.update(options_.table, key_of(id), update, cond::eq(attr(kStateAttr), dead_state_));
  return explain_dead_write(id, "redrive", written.status(), /*removes=*/false);
}

Status StoreQueue::remove_dead(std::string_view id) {
  LEASEHOLD_RETURN_IF_ERROR(check_id(id));
  const Status removed =
      store_.remove(options_.table, key_of(id), cond::eq(attr(kStateAttr), dead_state_));
  return explain_dead_write(id, "remove dead letter", removed, /*removes=*/true);
}

// The outcome of a write to a dead letter (`removes`: it removes it; else it
// makes it ready again). A refused write found the message gone or not dead;
// a write without an answer may have made it so itself, and the message as it
// is now says which.
Status StoreQueue::explain_dead_write(std::string_view id, std::string_view op,
                                      const Status& written, bool removes) {
  const Code code = written.code();
  const std::string what =
      std::string(op) + " " + std::string(id) + " of queue '" + options_.name + "'";
  if (written.ok()) return {};
  if (code != Code::kConditionFailed && code != Code::kUnknownOutcome) {
    return written.with_context(what);
  }
  const bool unknown = code == Code::kUnknownOutcome;
  const Result<Item> item = read_back(key_of(id));
  if (!item.ok() && item.status().code() != Code::kNotFound) {
    if (unknown) {
      return unknown_outcome(what + ": no answer came, and the message could not be read back; " +
                             "retry");
    }
    return failed_precondition(what + ": the message is not a dead letter, or is gone");
  }
  if (!item.ok()) return unknown && removes ? Status() : not_found(what + ": no such message");
  const std::string* state = get_string(*item, kStateAttr);
  if (state != nullptr && *state == dead_state_) {
    return unavailable(what + ": the write did not apply; retry");
  }
  if (unknown && !removes) return {};
  return failed_precondition(what + ": the message is not a dead letter");
}

}  // namespace leasehold
