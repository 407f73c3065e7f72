#include "aws/json_client.h"

#include <boost/json.hpp>

#include "aws/actions.h"
#include "aws/json_client_internal.h"
#include "aws/retries.h"
#include "aws/sigv4.h"
#include "base/text.h"
#include "net/endpoint.h"
#include "net/http_client.h"

namespace leasehold::aws {
namespace {

namespace json = boost::json;

constexpr std::string_view kContentType = "application/x-amz-json-1.0";
// A Status message of a service error: "<op>: <code>: <message>".
constexpr std::string_view kSeparator = ": ";
// What of a service's error reply goes into a Status: its code and AWS's
// request ID, and its message, cut as the DynamoDB and S3 clients cut
// theirs. A proxy's or an emulator's reply may carry anything there.
constexpr size_t kErrorCodeBytesMax = 128;
constexpr size_t kErrorMessageBytesMax = 300;

// "com.amazonaws.sqs#QueueDoesNotExist" -> "QueueDoesNotExist".
std::string_view short_code(std::string_view type) {
  const size_t hash = type.rfind('#');
  if (hash != std::string_view::npos) type.remove_prefix(hash + 1);
  const size_t colon = type.find(':');  // "Code:http://internal.amazon.com/..."
  return type.substr(0, colon);
}

}  // namespace

namespace json_client_internal {

ErrorReply parse_error(std::string_view body) {
  ErrorReply out;
  boost::system::error_code ec;
  const json::value parsed = json::parse(body, ec);
  if (ec || !parsed.is_object()) return out;
  const json::object& o = parsed.as_object();
  if (const json::value* t = o.if_contains("__type"); t && t->is_string()) {
    out.code = std::string(short_code(t->as_string()));
  }
  for (const char* key : {"message", "Message"}) {
    if (const json::value* m = o.if_contains(key); m && m->is_string()) {
      out.message = std::string(m->as_string());
    }
  }
  return out;
}

Status error_status(std::string_view op, int http_status, const ErrorReply& error,
                    std::string_view request_id, std::string_view service,
                    std::span<const JsonErrorRule> rules, bool* throttled) {
  const std::string code = error.code.empty() ? "HTTP" + std::to_string(http_status) : error.code;
  std::string text =
      std::string(op) + std::string(kSeparator) + printable(code, kErrorCodeBytesMax);
  if (!error.message.empty()) {
    text += std::string(kSeparator) + printable(error.message, kErrorMessageBytesMax);
  }
  if (!request_id.empty()) {
    text += " (AWS request ID " + printable(request_id, kErrorCodeBytesMax) + ")";
  }
  *throttled = is_throttling_error(code);
  if (*throttled) return unavailable(text + " (throttled)");
  if (credentials_refused(code)) {
    return unauthenticated(text + " (" + std::string(service) + " refused the credentials)");
  }
  if (code == "AccessDenied" || code == "AccessDeniedException") return permission_denied(text);
  for (const JsonErrorRule& rule : rules) {
    if (rule.aws_code == code) return {rule.code, text};
  }
  return {http_status >= 500 ? Code::kUnavailable : Code::kInvalidArgument, text};
}

}  // namespace json_client_internal

struct JsonClient::Impl {
  using ErrorReply = json_client_internal::ErrorReply;

  JsonClientOptions options;
  RealClock real_clock;
  SystemRandom system_random;
  std::unique_ptr<net::HttpClient> http;
  SigningKeyCache signing_keys;
  ClockSkew skew;
  std::unique_ptr<Retrier> retrier;

  Result<net::HttpRequest> make_request(std::string_view op, std::string body, WallTime now) {
    HttpRequestToSign to_sign;
    to_sign.host = http->host_header();
    to_sign.headers.emplace_back("Content-Type", kContentType);
    to_sign.headers.emplace_back("X-Amz-Target", options.target_prefix + std::string(op));
    to_sign.body = std::move(body);
    LEASEHOLD_ASSIGN_OR_RETURN(const Credentials credentials, options.credentials->get());
    LEASEHOLD_ASSIGN_OR_RETURN(SigV4Result signature, sign_v4(to_sign, credentials, options.region,
                                                              options.service, now, &signing_keys));
    net::HttpRequest request;
    request.method = "POST";
    request.target = "/";
    request.headers = std::move(to_sign.headers);
    add_signature_headers(signature, request.headers);
    request.body = std::move(to_sign.body);
    return request;
  }

  // What an error reply means as a Status (json_client_internal::error_status).
  Status interpret_error(std::string_view op, int http_status, const ErrorReply& error,
                         std::string_view request_id, bool* throttled) {
    return json_client_internal::error_status(op, http_status, error, request_id, options.service,
                                              options.errors, throttled);
  }

  Attempt<json::object> attempt(std::string_view op, const std::string& text, bool idempotent,
                                Duration timeout, std::string* aws_code);
  Attempt<json::object> judge_error(std::string_view op, const net::HttpResponse& response,
                                    WallTime signed_at, bool idempotent, std::string* aws_code);
};

JsonClient::JsonClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
JsonClient::~JsonClient() = default;

const JsonClientOptions& JsonClient::options() const { return impl_->options; }

Result<std::unique_ptr<JsonClient>> JsonClient::open(JsonClientOptions options) {
  if (options.service.empty() || options.target_prefix.empty()) {
    return invalid_argument("an AWS client needs a service and a target prefix");
  }
  if (options.region.empty() || options.region.find_first_not_of(
                                    "abcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos) {
    return invalid_argument("AWS region '" + options.region +
                            "' must be non-empty [a-z0-9-] (eu-west-1)");
  }
  LEASEHOLD_RETURN_IF_ERROR(validate_retry_options(options.retry));
  const std::string url = options.endpoint.empty() ? "https://" + options.service + "." +
                                                         options.region + ".amazonaws.com"
                                                   : options.endpoint;
  Result<net::HttpEndpoint> endpoint = net::parse_http_endpoint(url);
  if (!endpoint.ok()) {
    return invalid_argument(options.service + " endpoint '" + url +
                            "': " + endpoint.status().message());
  }
  if (!options.credentials) {
    LEASEHOLD_ASSIGN_OR_RETURN(options.credentials, default_credentials(process_env()));
  }
  net::HttpClientOptions http_options;
  http_options.endpoint = *endpoint;
  http_options.connections_max = options.connections_max;
  LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<net::HttpClient> http,
                             net::HttpClient::open(std::move(http_options)));
  auto impl = std::make_unique<Impl>();
  impl->options = std::move(options);
  if (impl->options.clock == nullptr) impl->options.clock = &impl->real_clock;
  if (impl->options.random == nullptr) impl->options.random = &impl->system_random;
  impl->retrier =
      std::make_unique<Retrier>(impl->options.retry, *impl->options.clock, *impl->options.random);
  impl->http = std::move(http);
  return std::unique_ptr<JsonClient>(new JsonClient(std::move(impl)));
}

// One attempt: signed now (as the clock skew has it corrected), sent, and
// judged by the rules of json_client.h.
Attempt<json::object> JsonClient::Impl::attempt(std::string_view op, const std::string& text,
                                                bool idempotent, Duration timeout,
                                                std::string* aws_code) {
  const WallTime signed_at = skew.now(*options.clock);
  Result<net::HttpRequest> request = make_request(op, text, signed_at);
  if (!request.ok()) return {request.status()};
  const MonoTime sent_at = options.clock->mono_now();
  Result<net::HttpResponse> response = http->send(*request, timeout);
  if (!response.ok()) {
    Status failed = response.status().with_context(op);
    switch (response.status().code()) {
      case Code::kUnavailable:  // nothing was sent
        return {std::move(failed), RetryCause::kTransient};
      case Code::kUnknownOutcome:
        if (!idempotent) return {std::move(failed)};
        return {std::move(failed), no_reply_cause(options.clock->mono_now() - sent_at, timeout)};
      default:
        return {std::move(failed)};
    }
  }
  if (response->status / 100 != 2) {
    return judge_error(op, *response, signed_at, idempotent, aws_code);
  }
  boost::system::error_code ec;
  json::value parsed = json::parse(response->body, ec);
  if (ec || !parsed.is_object()) {
    // An empty 200 is a reply with nothing to say (some operations).
    if (response->body.empty()) return {json::object()};
    return {internal_error(std::string(op) + ": the reply is not a JSON object")};
  }
  return {std::move(parsed.as_object())};
}

Attempt<json::object> JsonClient::Impl::judge_error(std::string_view op,
                                                    const net::HttpResponse& response,
                                                    WallTime signed_at, bool idempotent,
                                                    std::string* aws_code) {
  const ErrorReply error = json_client_internal::parse_error(response.body);
  if (aws_code != nullptr) *aws_code = error.code;
  bool throttled = false;
  Status status = interpret_error(op, response.status, error,
                                  response.header("x-amzn-RequestId").value_or(""), &throttled);
  // Refused at the door, for the time it was signed at: nothing was done.
  if (skew.learn(error.code, error.message, response.header("Date"), signed_at, *options.clock)) {
    return {std::move(status), std::nullopt, true};
  }
  if (throttled) return {std::move(status), RetryCause::kThrottling};
  if (response.status >= 500 && !idempotent) {
    return {unknown_outcome(status.message() + "; it may have been applied")};
  }
  if (idempotent && is_transient_error(response.status, error.code)) {
    return {std::move(status), RetryCause::kTransient};
  }
  return {std::move(status)};
}

Result<json::object> JsonClient::call(std::string_view op, const json::object& body,
                                      bool idempotent, Duration extra, std::string* aws_code) {
  Impl& d = *impl_;
  if (aws_code != nullptr) aws_code->clear();
  LEASEHOLD_RETURN_IF_ERROR(check_action(iam_action(d.options.service, op)));
  const std::string text = json::serialize(body);
  const Duration timeout = d.options.request_timeout + extra;
  return send_with_retries<json::object>(
      *d.retrier, MonoTime::max(),
      [&](const Retrier::Call&) { return d.attempt(op, text, idempotent, timeout, aws_code); },
      [](const Status& last, RetryStop stop, int attempts) {
        return last.with_context("gave up " + describe_stop(stop, attempts));
      });
}

}  // namespace leasehold::aws
