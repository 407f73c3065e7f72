#include "sqs/sqs_fifo_wire.h"

#include <array>
#include <boost/json.hpp>
#include <cassert>

#include "aws/sigv4.h"
#include "base/text.h"
#include "sqs/sqs_wire.h"

namespace leasehold::sqs {
namespace {

namespace json = boost::json;

// SQS's alphanumerics and punctuation, !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~:
// every printable ASCII character but the space.
bool valid_fifo_id(std::string_view id) {
  if (id.empty() || id.size() > kFifoIdBytesMax) return false;
  for (const char c : id) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

// What the answer lists of one place of the batch.
struct Listing {
  int times = 0;         // how often its Id is listed, in both lists
  bool taken = false;    // its (last) listing is a Successful one with a MessageId
  bool refused = false;  // its (last) listing is a Failed one with SenderFault true
  std::string code;      // of a refusal: Code and Message, printable
  std::string message;
};

// The place in the batch an entry's Id names: its canonical decimal text,
// "0" to "9", below `places`; else -1.
int place_of(const json::object& entry, size_t places) {
  const json::value* id = entry.if_contains("Id");
  if (id == nullptr || !id->is_string()) return -1;
  const json::string& text = id->get_string();
  if (text.size() != 1 || text[0] < '0' || text[0] > '9') return -1;
  const int place = text[0] - '0';
  return static_cast<size_t>(place) < places ? place : -1;
}

std::string readable(const json::object& entry, std::string_view key, size_t bytes_max) {
  const json::value* v = entry.if_contains(key);
  if (v == nullptr || !v->is_string()) return "(none)";
  return printable(v->get_string(), bytes_max);
}

// Records the entries of the answer's list `key` in `listings`.
void read_list(const json::object& answer, std::string_view key, bool successful,
               std::span<Listing> listings) {
  const json::value* list = answer.if_contains(key);
  if (list == nullptr || !list->is_array()) return;
  for (const json::value& v : list->get_array()) {
    if (!v.is_object()) continue;
    const json::object& entry = v.get_object();
    const int place = place_of(entry, listings.size());
    if (place < 0) continue;
    // An entry listed twice is unknown whatever its listings say: only the
    // last one is kept.
    Listing& l = listings[static_cast<size_t>(place)];
    l = Listing{.times = l.times + 1, .taken = false, .refused = false, .code = {}, .message = {}};
    if (successful) {
      const json::value* id = entry.if_contains("MessageId");
      l.taken = id != nullptr && id->is_string() && !id->get_string().empty();
      continue;
    }
    const json::value* fault = entry.if_contains("SenderFault");
    if (fault == nullptr || !fault->is_bool()) continue;
    // SenderFault false: SQS's own failure, to be sent again like an unknown.
    l.refused = fault->get_bool();
    if (l.refused) {
      l.code = readable(entry, "Code", 128);
      l.message = readable(entry, "Message", 300);
    }
  }
}

}  // namespace

Result<FifoMessage> fifo_message(std::string_view connection_id, int64_t seq, std::string body) {
  if (!valid_fifo_id(connection_id)) {
    return invalid_argument(
        "connection ID '" + printable(connection_id, 64) + "' is no SQS message group ID (1 to " +
        std::to_string(kFifoIdBytesMax) + " letters, digits and ASCII punctuation)");
  }
  if (body.empty()) return invalid_argument("message body is empty");
  if (body.size() > kFifoBodyBytesMax) {
    return invalid_argument("message body of " + std::to_string(body.size()) +
                            " bytes is longer than SQS's " + std::to_string(kFifoBodyBytesMax));
  }
  if (!sqs_accepts(body)) {
    return invalid_argument(
        "message body is not UTF-8 of the characters SQS accepts (no control characters but "
        "tab, newline and carriage return)");
  }
  std::string dedup = std::string(connection_id) + ":" + std::to_string(seq);
  if (dedup.size() > kFifoIdBytesMax) dedup = aws::sha256_hex(dedup);
  return FifoMessage{.group_id = std::string(connection_id),
                     .deduplication_id = std::move(dedup),
                     .body = std::move(body)};
}

std::vector<std::vector<size_t>> fifo_batches(std::span<const FifoMessage> messages) {
  std::vector<std::vector<size_t>> batches;
  size_t bytes = 0;
  for (size_t i = 0; i < messages.size(); ++i) {
    const size_t size = messages[i].body.size();
    const bool fits = !batches.empty() && batches.back().size() < kFifoBatchEntriesMax &&
                      bytes + size <= kFifoBatchBytesMax;
    if (!fits) {
      batches.emplace_back();
      bytes = 0;
    }
    batches.back().push_back(i);
    bytes += size;
  }
  return batches;
}

json::object send_batch_request(std::string_view queue_url, std::span<const FifoMessage> messages,
                                std::span<const size_t> batch) {
  assert(!batch.empty() && batch.size() <= kFifoBatchEntriesMax);
  json::array entries;
  entries.reserve(batch.size());
  for (size_t place = 0; place < batch.size(); ++place) {
    assert(batch[place] < messages.size());
    const FifoMessage& m = messages[batch[place]];
    entries.push_back({{"Id", std::to_string(place)},
                       {"MessageBody", m.body},
                       {"MessageGroupId", m.group_id},
                       {"MessageDeduplicationId", m.deduplication_id}});
  }
  return {{"QueueUrl", queue_url}, {"Entries", std::move(entries)}};
}

BatchOutcome batch_outcome(const json::object& answer, std::span<const size_t> batch) {
  assert(batch.size() <= kFifoBatchEntriesMax);
  std::array<Listing, kFifoBatchEntriesMax> listings;
  const std::span<Listing> places(listings.data(), batch.size());
  read_list(answer, "Successful", true, places);
  read_list(answer, "Failed", false, places);

  BatchOutcome out;
  size_t refusals = 0;
  std::string first;
  for (size_t place = 0; place < batch.size(); ++place) {
    const Listing& l = places[place];
    if (l.times == 1 && l.taken) {
      out.sent.push_back(batch[place]);
    } else if (l.times == 1 && l.refused) {
      if (refusals++ == 0) {
        first = "message " + std::to_string(batch[place]) + ": " + l.code + ": " + l.message;
      }
    } else {
      out.retry.push_back(batch[place]);
    }
  }
  if (refusals > 0) {
    out.refused = invalid_argument("SendMessageBatch refused " + std::to_string(refusals) + " of " +
                                   std::to_string(batch.size()) + " messages, the first " + first);
  }
  return out;
}

}  // namespace leasehold::sqs
