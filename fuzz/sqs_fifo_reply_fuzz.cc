// SendMessageBatch's answers to a sink of an SQS FIFO queue
// (sqs/sqs_fifo_wire.h: batch_outcome), and the messages' IDs (fifo_message).
//
// Input: one byte that picks the batch, then text read as JSON, the answer.
// The byte b gives a batch of 1 + b % 10 messages whose indices start at
// b / 10 (a printable first character makes a readable seed: '2' is one
// message, 5; 'c' is ten, 9 to 18). The text is also tried as a connection
// ID.
// Properties: every index of the batch is in exactly one of sent and retry,
// but for the entries refused, which are in neither, and nothing else is in
// them; each list keeps the batch's order. An entry is sent only when the
// answer lists its Id once, in Successful; one not listed or listed more than
// once is sent again; one listed once in Failed with SenderFault true is
// refused, and a refusal is kInvalidArgument with a bounded, printable
// message. A connection ID taken has the SQS IDs it is the group of and
// names, 1 to 128 of ASCII 0x21 to 0x7e.
#include <algorithm>
#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "check.h"
#include "sqs/sqs_fifo_wire.h"

namespace {

namespace json = boost::json;
namespace sqs = leasehold::sqs;
using leasehold::fuzz::escaped;

// How the answer lists a place of the batch: how often its Id appears in
// each list, and whether its one Failed listing says SenderFault true.
struct Count {
  int successful = 0;
  int failed = 0;
  bool sender_fault = false;
};

void count(const json::object& answer, std::string_view key, std::vector<Count>& counts) {
  const json::value* list = answer.if_contains(key);
  if (list == nullptr || !list->is_array()) return;
  for (const json::value& v : list->get_array()) {
    if (!v.is_object()) continue;
    const json::value* id = v.get_object().if_contains("Id");
    if (id == nullptr || !id->is_string()) continue;
    for (size_t place = 0; place < counts.size(); ++place) {
      if (id->get_string() != std::to_string(place)) continue;
      if (key == "Successful") {
        ++counts[place].successful;
      } else {
        ++counts[place].failed;
        const json::value* fault = v.get_object().if_contains("SenderFault");
        counts[place].sender_fault = fault != nullptr && fault->is_bool() && fault->get_bool();
      }
    }
  }
}

bool has(const std::vector<size_t>& list, size_t index) {
  return std::find(list.begin(), list.end(), index) != list.end();
}

void check_outcome(const json::object& answer, const std::vector<size_t>& batch) {
  const sqs::BatchOutcome o = sqs::batch_outcome(answer, batch);
  std::vector<Count> counts(batch.size());
  count(answer, "Successful", counts);
  count(answer, "Failed", counts);
  size_t refused = 0;
  for (size_t place = 0; place < batch.size(); ++place) {
    const size_t index = batch[place];
    const Count& c = counts[place];
    const bool sent = has(o.sent, index);
    const bool retry = has(o.retry, index);
    const std::string what = "message " + std::to_string(index) + " (Id " + std::to_string(place) +
                             ", listed " + std::to_string(c.successful) + " + " +
                             std::to_string(c.failed) + ")";
    FUZZ_CHECK(!(sent && retry), what + " both sent and sent again");
    if (sent) FUZZ_CHECK(c.successful == 1 && c.failed == 0, what + " sent");
    if (c.successful + c.failed != 1) FUZZ_CHECK(retry, what + " not sent again");
    const bool refusal = c.successful == 0 && c.failed == 1 && c.sender_fault;
    FUZZ_CHECK(refusal == (!sent && !retry), what + ": refused is " + std::to_string(refusal));
    if (refusal) ++refused;
  }
  FUZZ_CHECK(o.sent.size() + o.retry.size() + refused == batch.size(),
             "sent " + std::to_string(o.sent.size()) + ", again " + std::to_string(o.retry.size()) +
                 ", refused " + std::to_string(refused) + " of " + std::to_string(batch.size()));
  FUZZ_CHECK(std::is_sorted(o.sent.begin(), o.sent.end()) &&
                 std::is_sorted(o.retry.begin(), o.retry.end()),
             "the lists keep the batch's order");
  FUZZ_CHECK(o.refused.ok() == (refused == 0), "refused: " + o.refused.to_string());
  if (o.refused.ok()) return;
  FUZZ_CHECK(o.refused.code() == leasehold::Code::kInvalidArgument, o.refused.to_string());
  FUZZ_CHECK(o.refused.message().size() <= 1024,
             "a refusal of " + std::to_string(o.refused.message().size()) + " bytes");
  for (const unsigned char c : o.refused.message()) {
    FUZZ_CHECK(c >= 0x20 && c < 0x7f, "a refusal's message " + escaped(o.refused.message()));
  }
}

bool valid_fifo_id(std::string_view id) {
  if (id.empty() || id.size() > 128) return false;
  for (const char c : id) {
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

void check_message(std::string_view connection_id, int64_t seq) {
  const auto m = sqs::fifo_message(connection_id, seq, "x");
  FUZZ_CHECK(m.ok() == valid_fifo_id(connection_id),
             "connection ID " + escaped(connection_id) + ": " + m.status().to_string());
  if (!m.ok()) return;
  FUZZ_CHECK_EQ(m->group_id, std::string(connection_id), "the group ID");
  FUZZ_CHECK(valid_fifo_id(m->deduplication_id),
             "deduplication ID " + escaped(m->deduplication_id));
  const std::string plain = std::string(connection_id) + ":" + std::to_string(seq);
  if (plain.size() <= 128) {
    FUZZ_CHECK_EQ(m->deduplication_id, plain, "the deduplication ID");
  } else {
    FUZZ_CHECK(
        m->deduplication_id.size() == 64 && m->deduplication_id.find(':') == std::string::npos,
        "hashed deduplication ID " + escaped(m->deduplication_id));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::vector<size_t> batch(1 + data[0] % 10);
  for (size_t i = 0; i < batch.size(); ++i) batch[i] = data[0] / 10 + i;
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  json::error_code ec;
  const json::value parsed = json::parse(text, ec);
  check_outcome(!ec && parsed.is_object() ? parsed.get_object() : json::object(), batch);
  check_message(text, static_cast<int64_t>(data[0]) * 1'000'000'007 - 100);
  return 0;
}
