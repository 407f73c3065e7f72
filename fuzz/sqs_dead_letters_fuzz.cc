// The SQS queue's dead letters (sqs/sqs_wire.h): the listing made of a
// ReceiveMessage answer from the dead-letter queue (SqsQueue::list_dead),
// and the count made of GetQueueAttributes' answer (SqsQueue::count_dead).
//
// Input: an answer (JSON), read as both.
// Properties: the listing holds every message received, each once, with
// its ID, body, receive count and sent time, none of them negative (they
// count deliveries and Unix ms), and no time it became dead; oldest sent
// first. The count is from 0 to the most asked for, and is the attributes'
// sum (so capped) where each is a plain decimal number.
#include <algorithm>
#include <boost/json.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "check.h"
#include "leasehold/queue.h"
#include "sqs/sqs_wire.h"

namespace {

namespace json = boost::json;
namespace sqs = leasehold::sqs;
using leasehold::fuzz::escaped;

void check_listing(const json::object& answer) {
  const auto messages = sqs::received_messages(answer, 0);
  if (!messages.ok()) return;  // sqs_reply checks the refusals
  const leasehold::DeadLetterPage page = sqs::dead_letter_page(*messages);
  FUZZ_CHECK_EQ(page.letters.size(), messages->size(), "the letters listed");
  FUZZ_CHECK(page.next_cursor.empty(), "a cursor " + escaped(page.next_cursor));
  using Row = std::tuple<std::string, std::string, int64_t, int64_t>;
  std::vector<Row> received, listed;
  for (const leasehold::Message& m : *messages) {
    received.emplace_back(m.id, m.body, m.receive_count, m.sent_at_ms);
  }
  for (size_t i = 0; i < page.letters.size(); ++i) {
    const leasehold::DeadLetter& d = page.letters[i];
    FUZZ_CHECK(d.receive_count >= 0, "a receive count of " + std::to_string(d.receive_count));
    FUZZ_CHECK(d.sent_at_ms >= 0, "sent at " + std::to_string(d.sent_at_ms) + " ms");
    FUZZ_CHECK_EQ(d.dead_at_ms, 0, "dead_at_ms");
    if (i > 0) {
      FUZZ_CHECK(page.letters[i - 1].sent_at_ms <= d.sent_at_ms, "letters out of order");
    }
    listed.emplace_back(d.id, d.body, d.receive_count, d.sent_at_ms);
  }
  std::sort(received.begin(), received.end());
  std::sort(listed.begin(), listed.end());
  FUZZ_CHECK(received == listed, "the letters are not the messages received");
}

// The attribute `name` as a plain decimal number of at most 18 digits
// (none: 0); nullopt for anything else.
std::optional<int64_t> plain_attribute(const json::object& answer, std::string_view name) {
  const json::value* attributes = answer.if_contains("Attributes");
  if (attributes == nullptr || !attributes->is_object()) return 0;
  const json::value* v = attributes->get_object().if_contains(name);
  if (v == nullptr || !v->is_string()) return 0;
  const std::string_view text = v->get_string();
  if (text.empty()) return 0;
  if (text.size() > 18 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  return std::stoll(std::string(text));
}

void check_count(const json::object& answer) {
  std::optional<int64_t> sum = 0;
  for (const json::value& name : sqs::dead_count_attributes()) {
    const std::optional<int64_t> n = plain_attribute(answer, name.as_string());
    sum = sum && n ? std::optional<int64_t>(*sum + *n) : std::nullopt;
  }
  for (const int64_t max : {int64_t{1}, int64_t{100}, leasehold::kDeadCountMax}) {
    const int64_t count = sqs::dead_letter_count(answer, max);
    FUZZ_CHECK(count >= 0 && count <= max,
               "a count of " + std::to_string(count) + " up to " + std::to_string(max));
    if (sum) FUZZ_CHECK_EQ(count, std::min(*sum, max), "the count up to " + std::to_string(max));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  json::error_code ec;
  const json::value parsed = json::parse(text, ec);
  if (ec || !parsed.is_object()) return 0;
  check_listing(parsed.get_object());
  check_count(parsed.get_object());
  return 0;
}
