// SQS's ReceiveMessage answers (sqs/sqs_wire.h), the receipts callers hand
// back from them, and ChangeMessageVisibilityBatch's answers.
//
// Input: a ReceiveMessage answer and a ChangeMessageVisibilityBatch answer
// (JSON), or, when it is not JSON, a receipt.
// Properties: every message taken has a 32-digit ID, the body SQS sent, and
// a receipt that handle_of() takes back to SQS's receipt handle (a message
// that could not be removed must not be handed out); a refusal's message
// stays bounded; a receipt taken is "<id>.<handle>". A batch answer is
// OK exactly when its Failed list is empty or absent, else kUnavailable,
// bounded and printable (it goes into a log as one line).
#include <boost/json.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/text.h"
#include "check.h"
#include "sqs/sqs_wire.h"

namespace {

namespace json = boost::json;
namespace sqs = leasehold::sqs;
using leasehold::fuzz::escaped;

constexpr size_t kStatusMessageBytesMax = 1024;

void check_release(const json::object& answer) {
  const leasehold::Status s = sqs::release_failures(answer, 10);
  const json::value* failed = answer.if_contains("Failed");
  const bool any = failed != nullptr && failed->is_array() && !failed->get_array().empty();
  FUZZ_CHECK(s.ok() != any, "release_failures: " + s.to_string());
  if (s.ok()) return;
  FUZZ_CHECK(s.code() == leasehold::Code::kUnavailable, s.to_string());
  FUZZ_CHECK(s.message().size() <= 256,
             "a failure's message of " + std::to_string(s.message().size()) + " bytes");
  for (const unsigned char c : s.message()) {
    FUZZ_CHECK(c >= 0x20 && c < 0x7f, "a failure's message " + escaped(s.message()));
  }
}

void check_answer(const json::object& answer) {
  const auto messages = sqs::received_messages(answer, 1'000'000);
  if (!messages.ok()) {
    FUZZ_CHECK(
        messages.status().message().size() <= kStatusMessageBytesMax,
        "a refusal's message of " + std::to_string(messages.status().message().size()) + " bytes");
    return;
  }
  if (messages->empty()) return;
  const json::array& given = answer.at("Messages").get_array();
  size_t i = 0;
  for (const leasehold::Message& m : *messages) {
    while (!given[i].is_object()) ++i;
    const json::object& sent = given[i++].get_object();
    FUZZ_CHECK(leasehold::is_well_formed_token(m.id), "message ID " + escaped(m.id));
    const json::value* body = sent.if_contains("Body");
    FUZZ_CHECK_EQ(
        m.body,
        body != nullptr && body->is_string() ? std::string(body->get_string()) : std::string(),
        "the body");
    const auto handle = sqs::handle_of(m.receipt);
    FUZZ_CHECK(handle.ok(), "a message taken whose receipt is refused: " + escaped(m.receipt));
    FUZZ_CHECK_EQ(std::string(*handle), std::string(sent.at("ReceiptHandle").get_string()),
                  "the receipt handle read back");
    FUZZ_CHECK_EQ(m.visible_at_ms, 1'000'000, "visible_at_ms");
  }
}

void check_receipt(std::string_view receipt) {
  const auto handle = sqs::handle_of(receipt);
  if (!handle.ok()) return;
  FUZZ_CHECK(
      !handle->empty() && receipt.ends_with("." + std::string(*handle)) &&
          leasehold::is_well_formed_token(receipt.substr(0, receipt.size() - handle->size() - 1)),
      "receipt " + escaped(receipt));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  json::error_code ec;
  const json::value parsed = json::parse(text, ec);
  if (!ec && parsed.is_object()) {
    check_answer(parsed.get_object());
    check_release(parsed.get_object());
  } else {
    check_receipt(text);
  }
  return 0;
}
