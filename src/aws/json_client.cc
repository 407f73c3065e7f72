#include "aws/json_client.h"

#include <boost/json.hpp>
#include <random>
#include <thread>

#include "aws/sigv4.h"
#include "base/mutex.h"
#include "net/endpoint.h"
#include "net/http_client.h"

namespace leasehold::aws {
namespace {

namespace json = boost::json;

constexpr std::string_view kContentType = "application/x-amz-json-1.0";
// A Status message of a service error: "<op>: <code>: <message>".
constexpr std::string_view kSeparator = ": ";

// Throttling and the service's own failures, which every AWS JSON service
// shares. Throttled requests were refused before they did anything.
bool is_throttling(std::string_view code) {
  return code == "ThrottlingException" || code == "Throttling" || code == "RequestThrottled" ||
         code == "RequestLimitExceeded" || code == "SlowDown" || code == "KmsThrottled";
}

// "com.amazonaws.sqs#QueueDoesNotExist" -> "QueueDoesNotExist".
std::string_view short_code(std::string_view type) {
  const size_t hash = type.rfind('#');
  if (hash != std::string_view::npos) type.remove_prefix(hash + 1);
  const size_t colon = type.find(':');  // "Code:http://internal.amazon.com/..."
  return type.substr(0, colon);
}

}  // namespace

struct JsonClient::Impl {
  JsonClientOptions options;
  RealClock real_clock;
  std::unique_ptr<net::HttpClient> http;
  SigningKeyCache signing_keys;
  Mutex random_mu;
  std::minstd_rand random GUARDED_BY(random_mu){std::random_device{}()};

  Duration backoff(int attempt) {
    const int64_t base = options.backoff_base.count();
    const int64_t cap =
        std::min<int64_t>(options.backoff_max.count(), base << std::min(attempt - 1, 20));
    MutexLock lock(random_mu);
    return Duration(std::uniform_int_distribution<int64_t>(0, std::max<int64_t>(cap, 0))(random));
  }

  Result<net::HttpRequest> make_request(std::string_view op, std::string body) {
    HttpRequestToSign to_sign;
    to_sign.host = http->host_header();
    to_sign.headers.emplace_back("Content-Type", kContentType);
    to_sign.headers.emplace_back("X-Amz-Target", options.target_prefix + std::string(op));
    to_sign.body = std::move(body);
    LEASEHOLD_ASSIGN_OR_RETURN(const Credentials credentials, options.credentials->get());
    LEASEHOLD_ASSIGN_OR_RETURN(SigV4Result signature,
                               sign_v4(to_sign, credentials, options.region, options.service,
                                       options.clock->wall_now(), &signing_keys));
    net::HttpRequest request;
    request.method = "POST";
    request.target = "/";
    request.headers = std::move(to_sign.headers);
    add_signature_headers(signature, request.headers);
    request.body = std::move(to_sign.body);
    return request;
  }

  // What an error reply means: its Status, and whether it may be sent again.
  // `request_id` is AWS's ID of the request, which AWS support asks for.
  Status interpret_error(std::string_view op, int http_status, const std::string& body,
                         std::string_view request_id, bool* nothing_applied,
                         std::string* aws_code) {
    std::string code;
    std::string message;
    boost::system::error_code ec;
    const json::value parsed = json::parse(body, ec);
    if (!ec && parsed.is_object()) {
      const json::object& o = parsed.as_object();
      if (const json::value* t = o.if_contains("__type"); t && t->is_string()) {
        code = std::string(short_code(t->as_string()));
      }
      for (const char* key : {"message", "Message"}) {
        if (const json::value* m = o.if_contains(key); m && m->is_string()) {
          message = std::string(m->as_string());
        }
      }
    }
    if (aws_code != nullptr) *aws_code = code;
    if (code.empty()) code = "HTTP" + std::to_string(http_status);
    std::string text = std::string(op) + std::string(kSeparator) + code;
    if (!message.empty()) text += std::string(kSeparator) + message;
    if (!request_id.empty()) text += " (AWS request ID " + std::string(request_id) + ")";
    *nothing_applied = is_throttling(code);
    if (*nothing_applied) return unavailable(text + " (throttled)");
    if (credentials_refused(code)) {
      return unauthenticated(text + " (" + options.service + " refused the credentials)");
    }
    if (code == "AccessDenied" || code == "AccessDeniedException") return permission_denied(text);
    for (const JsonErrorRule& rule : options.errors) {
      if (rule.aws_code == code) return {rule.code, text};
    }
    return {http_status >= 500 ? Code::kUnavailable : Code::kInvalidArgument, text};
  }
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
  if (options.attempts_max < 1) return invalid_argument("attempts_max must be at least 1");
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
  impl->http = std::move(http);
  return std::unique_ptr<JsonClient>(new JsonClient(std::move(impl)));
}

Result<json::object> JsonClient::call(std::string_view op, const json::object& body,
                                      bool idempotent, Duration extra, std::string* aws_code) {
  Impl& d = *impl_;
  if (aws_code != nullptr) aws_code->clear();
  const std::string text = json::serialize(body);
  Status last;
  bool maybe_applied = false;
  for (int attempt = 0; attempt < d.options.attempts_max; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(d.backoff(attempt));
    LEASEHOLD_ASSIGN_OR_RETURN(net::HttpRequest request, d.make_request(op, text));
    Result<net::HttpResponse> response = d.http->send(request, d.options.request_timeout + extra);
    if (!response.ok()) {
      last = response.status().with_context(op);
      if (response.status().code() == Code::kUnavailable) continue;  // nothing was sent
      if (response.status().code() != Code::kUnknownOutcome) return last;
      maybe_applied = true;
      if (idempotent) continue;
      return last;
    }
    if (response->status / 100 == 2) {
      boost::system::error_code ec;
      json::value parsed = json::parse(response->body, ec);
      if (ec || !parsed.is_object()) {
        // An empty 200 is a reply with nothing to say (some operations).
        if (response->body.empty()) return json::object();
        return internal_error(std::string(op) + ": the reply is not a JSON object");
      }
      return std::move(parsed.as_object());
    }
    bool nothing_applied = false;
    last = d.interpret_error(op, response->status, response->body,
                             response->header("x-amzn-RequestId").value_or(""), &nothing_applied,
                             aws_code);
    if (nothing_applied) continue;
    if (response->status >= 500) {
      maybe_applied = true;
      if (idempotent) continue;
      return unknown_outcome(last.message() + "; it may have been applied");
    }
    return last;
  }
  if (maybe_applied && !idempotent) {
    return unknown_outcome(last.message() + "; it may have been applied");
  }
  return last.with_context("gave up after " + std::to_string(d.options.attempts_max) + " attempts");
}

}  // namespace leasehold::aws
