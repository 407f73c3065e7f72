#include "sqs/sqs_queue.h"

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <set>

#include "base/text.h"
#include "leasehold/random.h"
#include "sqs/sqs_wire.h"
#include "store/uri.h"

namespace leasehold::sqs {
namespace {

namespace json = boost::json;

// SQS's errors that mean something to the queue; the rest are
// kInvalidArgument (4xx) or kUnavailable (5xx), see aws/json_client.h.
constexpr aws::JsonErrorRule kErrors[] = {
    {"QueueDoesNotExist", Code::kNotFound},
    {"NonExistentQueue", Code::kNotFound},
    {"MessageNotInflight", Code::kFailedPrecondition},
    {"ReceiptHandleIsInvalid", Code::kFailedPrecondition},
    {"InvalidParameterValue", Code::kInvalidArgument},
    {"InvalidMessageContents", Code::kInvalidArgument},
    {"QueueDeletedRecently", Code::kUnavailable},
    {"QueueNameExists", Code::kAlreadyExists},
    {"OverLimit", Code::kResourceExhausted},
};

constexpr std::string_view kCreateHint =
    " (create it with `leasehold store init --queue sqs://...`)";

int seconds_up(Duration d) {
  return static_cast<int>((std::chrono::duration_cast<std::chrono::milliseconds>(d).count() + 999) /
                          1000);
}

Status check_visibility(Duration visibility) {
  if (visibility < std::chrono::milliseconds(1) || visibility > kVisibilityMax) {
    return invalid_argument("visibility timeout of " + std::to_string(to_ms(visibility)) +
                            "ms is outside 1ms.." + std::to_string(to_ms(kVisibilityMax)) + "ms");
  }
  return {};
}

bool valid_name(std::string_view name) {
  return !name.empty() && name.size() <= kSqsQueueNameBytesMax &&
         name.find_first_not_of(
             "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") ==
             std::string_view::npos;
}

// SQS's message ID (a UUID) as 32 lowercase hex digits.
std::string id_of(std::string_view message_id) {
  std::string id;
  for (char c : message_id) {
    if (c != '-') id += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return id;
}

std::string string_or_empty(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->as_string()) : std::string();
}

// A system attribute that counts (ApproximateReceiveCount,
// ApproximateNumberOfMessages) or is a time in Unix ms (SentTimestamp): a
// whole decimal number from 0 to INT64_MAX, else 0, as when it is absent.
int64_t int_attribute(const json::object& message, std::string_view name) {
  const json::value* attrs = message.if_contains("Attributes");
  if (attrs == nullptr || !attrs->is_object()) return 0;
  const std::string text = string_or_empty(attrs->as_object(), name);
  int64_t n = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (ec != std::errc() || end != text.data() + text.size() || n < 0) return 0;
  return n;
}

json::array system_attributes() { return json::array{"ApproximateReceiveCount", "SentTimestamp"}; }

// What SQS's refusal of a queue operation means to a caller of the Queue,
// whose contract knows no credentials, permissions or queue URLs. The
// queue's own answers keep their codes: a stale receipt
// (kFailedPrecondition), SQS down (kUnavailable), a reply lost
// (kUnknownOutcome). A refusal that says the deployment is wrong (credentials
// refused or expired, access denied, the queue deleted since it was opened,
// a region mismatch, any 4xx the queue's checked requests were not expected
// to get) is kUnavailable too: the caller can do nothing about it but try
// again later. The message keeps the operation, SQS's code and AWS's request
// ID, for the log.
Status queue_failure(const Status& s) {
  // SQS itself answers a receipt whose message was delivered again since
  // with InvalidParameterValue, "Value ... for parameter ReceiptHandle is
  // invalid. Reason: Message does not exist or is not available for
  // visibility timeout change." (not the MessageNotInflight its API
  // reference lists; SQS's service team calls InvalidParameterValue generic
  // and says to tell it by its text, aws/aws-sdk#267). Every receipt we send
  // was well formed when SQS gave it (handle_of() checked our part), so a
  // ReceiptHandle it calls invalid is a stale one.
  if (s.code() == Code::kInvalidArgument &&
      s.message().find("ReceiptHandle") != std::string::npos) {
    return failed_precondition(s.message());
  }
  switch (s.code()) {
    case Code::kUnauthenticated:
    case Code::kPermissionDenied:
    case Code::kNotFound:
    case Code::kInvalidArgument:
    case Code::kAlreadyExists:
    case Code::kConditionFailed:
    case Code::kResourceExhausted:
      return unavailable("queue unavailable: " + s.message());
    default:
      return s;
  }
}

}  // namespace

bool sqs_accepts(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto b = static_cast<unsigned char>(s[i]);
    uint32_t cp = 0;
    size_t n = 0;
    if (b < 0x80) {
      cp = b, n = 1;
    } else if ((b & 0xe0) == 0xc0) {
      cp = b & 0x1f, n = 2;
    } else if ((b & 0xf0) == 0xe0) {
      cp = b & 0x0f, n = 3;
    } else if ((b & 0xf8) == 0xf0) {
      cp = b & 0x07, n = 4;
    } else {
      return false;
    }
    if (i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k) {
      const auto c = static_cast<unsigned char>(s[i + k]);
      if ((c & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3f);
    }
    static constexpr uint32_t kLeast[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kLeast[n]) return false;  // overlong
    const bool allowed = cp == 0x9 || cp == 0xa || cp == 0xd || (cp >= 0x20 && cp <= 0xd7ff) ||
                         (cp >= 0xe000 && cp <= 0xfffd) || (cp >= 0x10000 && cp <= 0x10ffff);
    if (!allowed) return false;
    i += n;
  }
  return true;
}

Result<std::vector<Message>> received_messages(const boost::json::object& answer,
                                               int64_t visible_at_ms) {
  std::vector<Message> out;
  const json::value* messages = answer.if_contains("Messages");
  if (messages == nullptr || !messages->is_array()) return out;
  for (const json::value& v : messages->as_array()) {
    if (!v.is_object()) continue;
    const json::object& m = v.as_object();
    Message message;
    message.id = id_of(string_or_empty(m, "MessageId"));
    if (!is_well_formed_token(message.id)) {
      return internal_error("ReceiveMessage: message ID '" +
                            string_or_empty(m, "MessageId").substr(0, 64) + "' is not a UUID");
    }
    // A message handed out must be removable: one without a receipt handle
    // (or with one past SQS's 1,024 bytes that the receipt could not carry)
    // would be processed, then fail at remove().
    const std::string handle = string_or_empty(m, "ReceiptHandle");
    message.receipt = message.id + "." + handle;
    if (handle.empty() || !handle_of(message.receipt).ok()) {
      return internal_error("ReceiveMessage: message " + message.id +
                            " has no usable receipt handle");
    }
    message.body = string_or_empty(m, "Body");
    message.receive_count = int_attribute(m, "ApproximateReceiveCount");
    message.sent_at_ms = int_attribute(m, "SentTimestamp");
    message.visible_at_ms = visible_at_ms;
    out.push_back(std::move(message));
  }
  return out;
}

DeadLetterPage dead_letter_page(std::vector<Message> messages) {
  DeadLetterPage page;
  for (Message& m : messages) {
    page.letters.push_back({.id = std::move(m.id),
                            .body = std::move(m.body),
                            .receive_count = m.receive_count,
                            .sent_at_ms = m.sent_at_ms,
                            .dead_at_ms = 0});
  }
  std::sort(page.letters.begin(), page.letters.end(),
            [](const DeadLetter& a, const DeadLetter& b) { return a.sent_at_ms < b.sent_at_ms; });
  return page;
}

json::array dead_count_attributes() {
  return json::array{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
                     "ApproximateNumberOfMessagesDelayed"};
}

int64_t dead_letter_count(const boost::json::object& answer, int64_t max) {
  // Added up to `max` at most, so that no sum overflows.
  int64_t n = 0;
  for (const json::value& name : dead_count_attributes()) {
    const int64_t more = int_attribute(answer, name.as_string());
    n = more >= max - n ? max : n + more;
  }
  return n;
}

// The SQS receipt handle in a receipt "<id>.<handle>".
Result<std::string_view> handle_of(std::string_view receipt) {
  const size_t dot = receipt.find('.');
  if (dot == std::string_view::npos || !is_well_formed_token(receipt.substr(0, dot)) ||
      dot + 1 == receipt.size() || receipt.size() > 4096) {
    return invalid_argument("malformed receipt (expected \"<id>.<SQS receipt handle>\")");
  }
  return receipt.substr(dot + 1);
}

Status release_failures(const json::object& answer, size_t entries) {
  constexpr size_t kCodeBytesMax = 128;
  const json::value* failed = answer.if_contains("Failed");
  if (failed == nullptr || !failed->is_array() || failed->as_array().empty()) return {};
  const json::value& one = failed->as_array().front();
  const std::string code = one.is_object() ? string_or_empty(one.as_object(), "Code") : "";
  return unavailable("ChangeMessageVisibilityBatch: " + std::to_string(failed->as_array().size()) +
                     " of " + std::to_string(entries) + " not made visible (" +
                     printable(code, kCodeBytesMax) + ")");
}

// A dead letter found by its ID, and the others the scan hid meanwhile.
struct SqsQueue::Found {
  Message letter;
  std::vector<std::string> others;  // receipt handles to make visible again
};

Status check_sqs_queue_options(const SqsQueueOptions& o) {
  if (o.region.empty() ||
      o.region.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos) {
    return invalid_argument("AWS region '" + o.region +
                            "' must be non-empty [a-z0-9-] (eu-west-1)");
  }
  for (const std::string* name : {&o.queue_name, &o.dead_queue_name}) {
    if (name == &o.dead_queue_name && name->empty()) continue;
    if (!valid_name(*name)) {
      return invalid_argument("SQS queue name '" + *name + "' must be 1.." +
                              std::to_string(kSqsQueueNameBytesMax) + " of [A-Za-z0-9_-]");
    }
  }
  if (o.dead_queue_name.empty() && !valid_name(o.queue_name + "-dead")) {
    return invalid_argument("SQS queue name '" + o.queue_name +
                            "' leaves no room for its dead-letter queue '<name>-dead'");
  }
  if (o.receive_wait < Duration::zero() || o.receive_wait > kReceiveWaitMax) {
    return invalid_argument("the receive wait must be 0s..20s");
  }
  if (o.request_timeout <= Duration::zero()) {
    return invalid_argument("the request timeout must be positive");
  }
  return {};
}

bool is_sqs_uri(std::string_view uri) { return uri.starts_with("sqs:"); }

Result<SqsQueueOptions> parse_sqs_uri(std::string_view uri, const aws::EnvLookup& env) {
  const Status malformed = invalid_argument("malformed SQS queue URI '" + std::string(uri) +
                                            "' (expected sqs://REGION/QUEUE_NAME[?endpoint=URL])");
  if (!uri.starts_with("sqs://")) return malformed;
  const store::PathAndQuery parts = store::split_path_and_query(uri.substr(6));
  const size_t slash = parts.path.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == parts.path.size()) {
    return malformed;
  }
  SqsQueueOptions options;
  options.region = std::string(parts.path.substr(0, slash));
  options.queue_name = std::string(parts.path.substr(slash + 1));
  if (parts.query) {
    for (const store::UriParam& param : store::split_uri_params(*parts.query)) {
      if (param.name != "endpoint" || !param.has_equals || param.value.empty()) {
        return invalid_argument("SQS queue URI: unknown or empty parameter '" +
                                std::string(param.text) + "' (known: endpoint=URL)");
      }
      options.endpoint = std::string(param.value);
    }
  }
  if (options.endpoint.empty()) {
    options.endpoint = aws::configured_endpoint(env, "SQS").value_or("");
  }
  LEASEHOLD_RETURN_IF_ERROR(check_sqs_queue_options(options));
  return options;
}

namespace {

SqsQueueOptions with_defaults(SqsQueueOptions o) {
  if (o.dead_queue_name.empty()) o.dead_queue_name = o.queue_name + "-dead";
  return o;
}

Result<std::unique_ptr<aws::JsonClient>> client_for(const SqsQueueOptions& o) {
  return aws::JsonClient::open({.service = "sqs",
                                .target_prefix = "AmazonSQS.",
                                .region = o.region,
                                .endpoint = o.endpoint,
                                .credentials = o.credentials,
                                .clock = o.clock,
                                .errors = kErrors,
                                .request_timeout = o.request_timeout,
                                .retry = o.retry});
}

Result<std::string> url_of(aws::JsonClient& client, const std::string& name,
                           const std::string& region) {
  Result<json::object> got = client.call("GetQueueUrl", {{"QueueName", name}}, true);
  if (!got.ok()) {
    if (got.status().code() == Code::kNotFound) {
      return not_found("SQS queue '" + name + "' does not exist in " + region +
                       std::string(kCreateHint));
    }
    return got.status();
  }
  std::string url = string_or_empty(*got, "QueueUrl");
  if (url.empty()) return internal_error("GetQueueUrl: no QueueUrl in the reply");
  return url;
}

}  // namespace

SqsQueue::SqsQueue(SqsQueueOptions options, std::unique_ptr<aws::JsonClient> client,
                   std::string url, std::string dead_url)
    : options_(std::move(options)),
      clock_(options_.clock != nullptr ? *options_.clock : real_clock_),
      client_(std::move(client)),
      url_(std::move(url)),
      dead_url_(std::move(dead_url)) {}

Result<std::unique_ptr<SqsQueue>> SqsQueue::open(SqsQueueOptions options) {
  LEASEHOLD_RETURN_IF_ERROR(check_sqs_queue_options(options));
  options = with_defaults(std::move(options));
  LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<aws::JsonClient> client, client_for(options));
  LEASEHOLD_ASSIGN_OR_RETURN(std::string url, url_of(*client, options.queue_name, options.region));
  LEASEHOLD_ASSIGN_OR_RETURN(std::string dead_url,
                             url_of(*client, options.dead_queue_name, options.region));
  return std::unique_ptr<SqsQueue>(
      new SqsQueue(std::move(options), std::move(client), std::move(url), std::move(dead_url)));
}

Status SqsQueue::create(const SqsQueueOptions& given, int max_receives) {
  LEASEHOLD_RETURN_IF_ERROR(check_sqs_queue_options(given));
  if (max_receives < 1 || max_receives > kMaxReceivesMax) {
    return invalid_argument("max_receives must be 1.." + std::to_string(kMaxReceivesMax));
  }
  const SqsQueueOptions o = with_defaults(given);
  LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<aws::JsonClient> client, client_for(o));
  // CreateQueue is idempotent for a name as long as the attributes it is
  // given match the queue's: so it is given none, and the redrive policy is
  // set afterwards (to the same value on a second run).
  LEASEHOLD_ASSIGN_OR_RETURN(
      json::object dead,
      client->call("CreateQueue",
                   {{"QueueName", o.dead_queue_name},
                    {"Attributes",
                     {{"MessageRetentionPeriod", std::to_string(kDeadLetterRetentionSeconds)}}}},
                   true));
  const std::string dead_url = string_or_empty(dead, "QueueUrl");
  LEASEHOLD_ASSIGN_OR_RETURN(
      json::object attrs,
      client->call("GetQueueAttributes",
                   {{"QueueUrl", dead_url}, {"AttributeNames", json::array{"QueueArn"}}}, true));
  const json::value* arn = attrs.if_contains("Attributes");
  if (arn == nullptr || !arn->is_object() ||
      string_or_empty(arn->as_object(), "QueueArn").empty()) {
    return internal_error("GetQueueAttributes: no QueueArn for '" + o.dead_queue_name + "'");
  }
  LEASEHOLD_ASSIGN_OR_RETURN(json::object made,
                             client->call("CreateQueue", {{"QueueName", o.queue_name}}, true));
  const json::object policy{{"deadLetterTargetArn", string_or_empty(arn->as_object(), "QueueArn")},
                            {"maxReceiveCount", max_receives}};
  return client
      ->call("SetQueueAttributes",
             {{"QueueUrl", string_or_empty(made, "QueueUrl")},
              {"Attributes", {{"RedrivePolicy", json::serialize(policy)}}}},
             true)
      .status();
}

Result<json::object> SqsQueue::call(std::string_view op, const json::object& body, bool idempotent,
                                    Duration extra) {
  Result<json::object> got = client_->call(op, body, idempotent, extra);
  if (!got.ok()) return queue_failure(got.status());
  return got;
}

std::string SqsQueue::context(std::string_view op) const {
  return std::string(op) + " on SQS queue '" + options_.queue_name + "'";
}

Result<std::string> SqsQueue::send(std::string_view body) {
  if (body.empty()) return invalid_argument("message body is empty");
  if (body.size() > kMessageBodyBytesMax) {
    return invalid_argument("message body of " + std::to_string(body.size()) +
                            " bytes is longer than " + std::to_string(kMessageBodyBytesMax));
  }
  if (!sqs_accepts(body)) {
    return invalid_argument(
        "message body is not UTF-8 of the characters SQS accepts (no control characters but "
        "tab, newline and carriage return)");
  }
  // Not idempotent: sent again only when nothing reached SQS.
  Result<json::object> sent =
      call("SendMessage", {{"QueueUrl", url_}, {"MessageBody", body}}, false);
  if (!sent.ok()) {
    if (sent.status().code() == Code::kUnknownOutcome) {
      return unknown_outcome(context("send") + ": " + sent.status().message() +
                             "; sending it again may deliver it twice");
    }
    return sent.status().with_context(context("send"));
  }
  const std::string id = id_of(string_or_empty(*sent, "MessageId"));
  if (id.empty()) return internal_error(context("send") + ": no MessageId in the reply");
  return id;
}

Result<std::vector<Message>> SqsQueue::receive_from(const std::string& url, int max,
                                                    int visibility_s, int wait_s) {
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  // A receive whose reply is lost hid its messages from everyone until their
  // visibility ends, as a crashed receiver would: sending it again is safe.
  LEASEHOLD_ASSIGN_OR_RETURN(json::object got,
                             call("ReceiveMessage",
                                  {{"QueueUrl", url},
                                   {"MaxNumberOfMessages", max},
                                   {"VisibilityTimeout", visibility_s},
                                   {"WaitTimeSeconds", wait_s},
                                   {"AttributeNames", system_attributes()},
                                   {"MessageSystemAttributeNames", system_attributes()}},
                                  true, std::chrono::seconds(wait_s)));
  return received_messages(got, now_ms + int64_t{visibility_s} * 1000);
}

Result<std::vector<Message>> SqsQueue::receive(int max, Duration visibility) {
  if (max < 1 || max > kReceiveBatchMax) {
    return invalid_argument("receive of " + std::to_string(max) + " messages: ask for 1.." +
                            std::to_string(kReceiveBatchMax));
  }
  LEASEHOLD_RETURN_IF_ERROR(check_visibility(visibility));
  Result<std::vector<Message>> got =
      receive_from(url_, max, seconds_up(visibility), seconds_up(options_.receive_wait));
  if (!got.ok()) return got.status().with_context(context("receive"));
  return got;
}

Status SqsQueue::delete_message(const std::string& url, std::string_view receipt) {
  LEASEHOLD_ASSIGN_OR_RETURN(const std::string_view handle, handle_of(receipt));
  return call("DeleteMessage", {{"QueueUrl", url}, {"ReceiptHandle", handle}}, true).status();
}

Status SqsQueue::remove(std::string_view receipt) {
  return delete_message(url_, receipt).with_context(context("remove"));
}

Result<int64_t> SqsQueue::extend_visibility(std::string_view receipt, Duration visibility) {
  LEASEHOLD_ASSIGN_OR_RETURN(const std::string_view handle, handle_of(receipt));
  LEASEHOLD_RETURN_IF_ERROR(check_visibility(visibility));
  const int seconds = seconds_up(visibility);
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  Result<json::object> changed =
      call("ChangeMessageVisibility",
           {{"QueueUrl", url_}, {"ReceiptHandle", handle}, {"VisibilityTimeout", seconds}}, true);
  if (!changed.ok()) {
    if (changed.status().code() == Code::kFailedPrecondition) {
      return failed_precondition(context("extend visibility") +
                                 ": the receipt no longer holds its message (delivered again, "
                                 "removed or dead): " +
                                 changed.status().message());
    }
    return changed.status().with_context(context("extend visibility"));
  }
  return now_ms + int64_t{seconds} * 1000;
}

Result<DeadLetterPage> SqsQueue::list_dead(int limit, std::string_view cursor) {
  if (limit < 1 || limit > kQueryLimitMax) {
    return invalid_argument("list of " + std::to_string(limit) + " dead letters: ask for 1.." +
                            std::to_string(kQueryLimitMax));
  }
  if (!cursor.empty()) {
    return invalid_argument("SQS's dead letters are not paged: list them with no cursor");
  }
  // Visibility 0: the letters stay where they are, for anyone to read.
  Result<std::vector<Message>> got =
      receive_from(dead_url_, std::min(limit, kReceiveBatchMax), 0, 0);
  if (!got.ok()) return got.status().with_context(context("list dead letters"));
  return dead_letter_page(*std::move(got));
}

Result<int64_t> SqsQueue::count_dead(int64_t max) {
  if (max < 1 || max > kDeadCountMax) {
    return invalid_argument("count up to " + std::to_string(max) + ": ask for 1.." +
                            std::to_string(kDeadCountMax));
  }
  Result<json::object> got =
      call("GetQueueAttributes",
           {{"QueueUrl", dead_url_}, {"AttributeNames", dead_count_attributes()}}, true);
  if (!got.ok()) return got.status().with_context(context("count dead letters"));
  return dead_letter_count(*got, max);
}

Status SqsQueue::release(const std::string& url, const std::vector<std::string>& handles) {
  Status first;
  // ChangeMessageVisibilityBatch takes at most 10 entries, each answered on
  // its own in Successful or Failed.
  constexpr size_t kBatchMax = 10;
  for (size_t at = 0; at < handles.size(); at += kBatchMax) {
    json::array entries;
    for (size_t i = at; i < std::min(handles.size(), at + kBatchMax); ++i) {
      entries.push_back({{"Id", "m" + std::to_string(i)},
                         {"ReceiptHandle", handles[i]},
                         {"VisibilityTimeout", 0}});
    }
    Result<json::object> made_visible =
        call("ChangeMessageVisibilityBatch", {{"QueueUrl", url}, {"Entries", entries}}, true);
    // A letter not released comes back by itself when its 30 s end.
    if (!made_visible.ok()) {
      if (first.ok()) first = made_visible.status();
      continue;
    }
    if (first.ok()) first = release_failures(*made_visible, entries.size());
  }
  return first;
}

// Receives dead letters, hidden for a while, until `id` turns up or every
// letter has been seen; the others are made visible again by the caller.
Result<SqsQueue::Found> SqsQueue::find_dead(std::string_view id) {
  if (!is_well_formed_token(id)) {
    return invalid_argument("malformed message ID (expected 32 lowercase hex digits)");
  }
  constexpr int kHideSeconds = 30;
  Found found;
  std::set<std::string> seen;
  int empty_rounds = 0;
  while (static_cast<int>(seen.size()) < kDeadScanMax) {
    Result<std::vector<Message>> got = receive_from(dead_url_, kReceiveBatchMax, kHideSeconds, 0);
    if (!got.ok()) {
      (void)release(dead_url_, found.others);
      return got.status();
    }
    // SQS samples its servers: an empty answer is not yet proof of none.
    if (got->empty() && ++empty_rounds >= 3) break;
    for (Message& m : *got) {
      const std::string handle(*handle_of(m.receipt));
      if (m.id == id && found.letter.id.empty()) {
        found.letter = std::move(m);
      } else {
        seen.insert(m.id);
        found.others.push_back(handle);
      }
    }
    if (!found.letter.id.empty()) return found;
  }
  (void)release(dead_url_, found.others);
  return not_found("no dead letter " + std::string(id) + " in SQS queue '" +
                   options_.dead_queue_name + "' (looked through " + std::to_string(seen.size()) +
                   ")");
}

Status SqsQueue::redrive(std::string_view id) {
  LEASEHOLD_ASSIGN_OR_RETURN(Found found, find_dead(id));
  // The copy first: should the removal then fail, the letter is still dead
  // and the job queued, a duplicate rather than a loss.
  Status done =
      call("SendMessage", {{"QueueUrl", url_}, {"MessageBody", found.letter.body}}, false).status();
  if (done.ok()) done = delete_message(dead_url_, found.letter.receipt);
  (void)release(dead_url_, found.others);
  return done.with_context(context("redrive " + std::string(id)));
}

Status SqsQueue::remove_dead(std::string_view id) {
  LEASEHOLD_ASSIGN_OR_RETURN(Found found, find_dead(id));
  const Status removed = delete_message(dead_url_, found.letter.receipt);
  (void)release(dead_url_, found.others);
  return removed.with_context(context("remove dead letter " + std::string(id)));
}

}  // namespace leasehold::sqs
