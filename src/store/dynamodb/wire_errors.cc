// The error table: what a DynamoDB reply, or a failure to get one, means
// for the request, and so whether the store may send it again. Pure; see
// wire.h.
#include <algorithm>
#include <iterator>

#include "store/dynamodb/wire.h"

namespace leasehold::store::dynamodb {
namespace {

namespace json = boost::json;

constexpr std::string_view kRefused = " (DynamoDB refused the credentials)";

// Every exception leasehold tells apart (see classify() in wire.h for the
// rest). wire_test.cc checks every row, and dynamodb_tests checks what the
// store does with each one against a scripted server.
constexpr ErrorRule kErrorRules[] = {
    {"ConditionalCheckFailedException", Verdict::kAnswered, Code::kConditionFailed},
    {"ResourceNotFoundException", Verdict::kAnswered, Code::kNotFound},
    {"ValidationException", Verdict::kAnswered, Code::kInvalidArgument},
    {"SerializationException", Verdict::kAnswered, Code::kInvalidArgument},
    {"ResourceInUseException", Verdict::kAnswered, Code::kAlreadyExists},
    // DynamoDB Streams (a change feed's reads): a position taken more than
    // 15 minutes ago, and records trimmed from the stream (after 24 hours).
    {"ExpiredIteratorException", Verdict::kAnswered, Code::kFailedPrecondition},
    {"TrimmedDataAccessException", Verdict::kAnswered, Code::kNotFound},
    // Refused credentials: nothing was applied, and sending again cannot help.
    {"UnrecognizedClientException", Verdict::kAnswered, Code::kUnavailable, kRefused},
    {"InvalidSignatureException", Verdict::kAnswered, Code::kUnavailable, kRefused},
    {"MissingAuthenticationToken", Verdict::kAnswered, Code::kUnavailable, kRefused},
    {"MissingAuthenticationTokenException", Verdict::kAnswered, Code::kUnavailable, kRefused},
    {"AccessDeniedException", Verdict::kAnswered, Code::kUnavailable, kRefused},
    {"ExpiredTokenException", Verdict::kAnswered, Code::kUnavailable, kRefused},
    {"IncompleteSignatureException", Verdict::kAnswered, Code::kUnavailable, kRefused},
    {"InvalidClientTokenId", Verdict::kAnswered, Code::kUnavailable, kRefused},
    {"SignatureDoesNotMatch", Verdict::kAnswered, Code::kUnavailable, kRefused},
    // Throttling: refused before it had any effect.
    {"ProvisionedThroughputExceededException", Verdict::kNothingApplied, Code::kUnavailable},
    {"ThrottlingException", Verdict::kNothingApplied, Code::kUnavailable},
    {"RequestLimitExceeded", Verdict::kNothingApplied, Code::kUnavailable},
    {"LimitExceededException", Verdict::kNothingApplied, Code::kUnavailable},
    // The server failed while handling the request, perhaps after applying it.
    {"InternalServerError", Verdict::kMayHaveApplied, Code::kUnavailable},
    {"ServiceUnavailable", Verdict::kMayHaveApplied, Code::kUnavailable},
};

}  // namespace

std::span<const ErrorRule> error_rules() { return kErrorRules; }

Next next_step(Verdict verdict, bool idempotent) {
  switch (verdict) {
    case Verdict::kAnswered:
      return Next::kReturn;
    case Verdict::kNothingApplied:
      return Next::kSendAgain;
    case Verdict::kMayHaveApplied:
      return idempotent ? Next::kSendAgain : Next::kUnknownOutcome;
    case Verdict::kUnrecognised:
      return idempotent ? Next::kReturn : Next::kUnknownOutcome;
  }
  return Next::kUnknownOutcome;
}

std::string exception_name(std::string_view type) {
  const size_t hash = type.rfind('#');
  return std::string(hash == std::string_view::npos ? type : type.substr(hash + 1));
}

Judged classify(std::string_view op, int http_status, std::string_view type, std::string message) {
  if (message.size() > kErrorMessageBytesMax) message.resize(kErrorMessageBytesMax);
  const std::string what = std::string(op) + ": " +
                           (type.empty() ? "HTTP " + std::to_string(http_status)
                                         : std::string(type.substr(0, kErrorTypeBytesMax))) +
                           (message.empty() ? "" : ": " + message);
  const auto rule = std::find_if(std::begin(kErrorRules), std::end(kErrorRules),
                                 [&](const ErrorRule& r) { return r.type == type; });
  if (rule == std::end(kErrorRules)) {
    if (http_status >= 500) return {unavailable(what), Verdict::kMayHaveApplied};
    return {invalid_argument(what), Verdict::kUnrecognised};
  }
  if (rule->code == Code::kConditionFailed) {
    return {condition_failed("the condition is false"), rule->verdict};
  }
  return {Status(rule->code, what + std::string(rule->note)), rule->verdict};
}

// The HTTP client says whether any byte of a request it could not complete
// was sent: nothing sent applied nothing.
Verdict judge_send_failure(Code code) {
  switch (code) {
    case Code::kUnavailable:
      return Verdict::kNothingApplied;
    case Code::kUnknownOutcome:
      return Verdict::kMayHaveApplied;
    default:
      return Verdict::kAnswered;
  }
}

Result<json::object> interpret_reply(std::string_view op, int http_status, std::string_view body,
                                     Verdict* verdict, json::storage_ptr storage,
                                     ErrorDetail* detail) {
  boost::system::error_code ec;
  json::value parsed = json::parse(body, ec, std::move(storage));
  if (http_status == 200) {
    if (!ec && parsed.is_object()) {
      *verdict = Verdict::kAnswered;
      return std::move(parsed.get_object());
    }
    // A write answered 200 has applied, but a reply that cannot be read tells
    // the caller no more than a lost one.
    *verdict = Verdict::kUnrecognised;
    return internal_error(std::string(op) + ": malformed JSON reply");
  }
  std::string type, message;
  if (!ec && parsed.is_object()) {
    type = exception_name(string_field(parsed.get_object(), "__type"));
    message = string_field(parsed.get_object(), "message");
    if (message.empty()) message = string_field(parsed.get_object(), "Message");
  }
  if (detail != nullptr) *detail = {type, message};
  Judged judged = classify(op, http_status, type, std::move(message));
  *verdict = judged.verdict;
  return std::move(judged.status);
}

Status gave_up(std::string_view op, int attempts, const Status& last, RetryStop why) {
  if (attempts == 0) return unavailable(std::string(op) + ": not sent before the deadline");
  return unavailable(std::string(op) + ": gave up " + describe_stop(why, attempts) + ": " +
                     last.message());
}

}  // namespace leasehold::store::dynamodb
