// DynamoDbStore: construction, one request's life (signing, sending, the
// retries the error table allows), and opening a store from options or a
// URI. The table lifecycle is in dynamodb_tables.cc, the item operations in
// dynamodb_items.cc, the change feeds in dynamodb_streams.cc.
#include "store/dynamodb/dynamodb_store.h"

#include <algorithm>
#include <cassert>
#include <set>

#include "aws/actions.h"
#include "aws/credentials.h"
#include "base/duration.h"
#include "store/dynamodb/dynamodb_store_impl.h"
#include "store/uri.h"

namespace leasehold::store::dynamodb {
namespace {

constexpr std::string_view kContentType = "application/x-amz-json-1.0";

std::string_view target_prefix(Api api) {
  return api == Api::kStreams ? "DynamoDBStreams_20120810." : "DynamoDB_20120810.";
}

// An error DynamoDB answered, with AWS's ID of the request (its
// x-amzn-RequestId), which AWS support asks for. Not a failed condition:
// that is an answer about the item, which callers expect and never log.
Status with_request_id(const Status& error, const net::HttpResponse& response) {
  const std::optional<std::string_view> id = response.header("x-amzn-RequestId");
  if (error.code() == Code::kConditionFailed || !id || id->empty()) return error;
  return Status(error.code(), error.message() + " (AWS request ID " + std::string(*id) + ")");
}

}  // namespace

DynamoDbStore::DynamoDbStore(DynamoDbOptions options, std::unique_ptr<net::HttpClient> http,
                             std::unique_ptr<net::HttpClient> streams_http)
    : options_(std::move(options)),
      http_(std::move(http)),
      streams_http_(std::move(streams_http)),
      writers_(static_cast<size_t>(std::clamp(options_.parallel_writes, 1, kParallelWritesMax)) -
               1) {
  if (options_.clock == nullptr) options_.clock = &real_clock_;
  if (options_.random == nullptr) options_.random = &system_random_;
  retrier_ = std::make_unique<Retrier>(options_.retry, *options_.clock, *options_.random);
}

// ---------------------------------------------------------------- requests

Result<net::HttpRequest> DynamoDbStore::make_request(Api api, std::string_view op, std::string body,
                                                     WallTime now) {
  // The signed headers, then the three the signature adds.
  constexpr size_t kHeadersMax = 5;
  aws::HttpRequestToSign to_sign;
  to_sign.host = client(api).host_header();
  to_sign.headers.reserve(kHeadersMax);
  to_sign.headers.emplace_back("Content-Type", kContentType);
  to_sign.headers.emplace_back("X-Amz-Target", std::string(target_prefix(api)).append(op));
  to_sign.body = std::move(body);
  aws::Credentials fetched;
  if (options_.credentials_source) {
    LEASEHOLD_ASSIGN_OR_RETURN(fetched, options_.credentials_source->get());
  }
  const aws::Credentials& credentials =
      options_.credentials_source ? fetched : options_.credentials;
  // DynamoDB Streams is signed as DynamoDB ("dynamodb"), with the same credentials.
  LEASEHOLD_ASSIGN_OR_RETURN(
      aws::SigV4Result signature,
      aws::sign_v4(to_sign, credentials, options_.region, "dynamodb", now, &signing_keys_));
  net::HttpRequest request;
  request.method = "POST";
  request.target = "/";
  request.headers = std::move(to_sign.headers);
  aws::add_signature_headers(signature, request.headers);
  request.body = std::move(to_sign.body);
  return request;
}

Duration DynamoDbStore::time_left(MonoTime deadline) const {
  if (deadline == kNoDeadline) return Duration::max();
  return deadline - options_.clock->mono_now();
}

MonoTime DynamoDbStore::deadline_after(Duration timeout) const {
  const MonoTime now = options_.clock->mono_now();
  // kNoTimeout, and any timeout too long to add to the clock, is no bound.
  if (timeout >= kNoDeadline - now) return kNoDeadline;
  return now + timeout;
}

aws::Attempt<json::object> DynamoDbStore::attempt(Api api, std::string_view op,
                                                  const std::string& body, bool idempotent,
                                                  const json::storage_ptr& storage, Duration left) {
  const Duration timeout = std::min(options_.request_timeout, left);
  const WallTime signed_at = skew_.now(*options_.clock);
  Result<net::HttpRequest> request = make_request(api, op, body, signed_at);
  if (!request.ok()) return {request.status()};
  const MonoTime sent_at = options_.clock->mono_now();
  Result<net::HttpResponse> response = client(api).send(*request, timeout);
  Verdict verdict = judge_send_failure(response.status().code());
  ErrorDetail error;
  Result<json::object> reply =
      response.ok()
          ? interpret_reply(op, response->status, response->body, &verdict, storage, &error)
          : Result<json::object>(response.status().with_context(op));
  if (response.ok() && !reply.ok()) reply = with_request_id(reply.status(), *response);
  // Refused at the door, for the time it was signed at: nothing was done.
  if (response.ok() && !reply.ok() &&
      skew_.learn(error.type, error.message, response->header("Date"), signed_at,
                  *options_.clock)) {
    return {std::move(reply), std::nullopt, true};
  }
  switch (next_step(verdict, idempotent)) {
    case Next::kReturn:
      return {std::move(reply)};
    case Next::kUnknownOutcome:
      if (reply.status().code() == Code::kUnknownOutcome) return {std::move(reply)};
      return {unknown_outcome(reply.status().message() + "; the write may have been applied")};
    case Next::kSendAgain:
      break;
  }
  assert((idempotent || verdict == Verdict::kNothingApplied) &&
         "a write that may have applied is never sent again");
  RetryCause cause = RetryCause::kTransient;
  if (aws::is_throttling_error(error.type)) {
    cause = RetryCause::kThrottling;
  } else if (!response.ok() && response.status().code() == Code::kUnknownOutcome) {
    cause = aws::no_reply_cause(options_.clock->mono_now() - sent_at, timeout);
  }
  return {std::move(reply), cause};
}

// Sends one request, and sends it again (after a pause) when next_step()
// says so, as the retrier allows and never past `deadline`.
Result<json::object> DynamoDbStore::call(std::string_view op, const json::object& body,
                                         bool idempotent, json::storage_ptr storage,
                                         MonoTime deadline, Api api) {
  return call_text(op, json::serialize(body), idempotent, std::move(storage), deadline, api);
}

namespace {

// The operations that read or write items, and so consume capacity; each is
// sent asking what it consumed, by table and index.
bool reads_items(std::string_view op) {
  return op == "GetItem" || op == "BatchGetItem" || op == "Query" || op == "Scan";
}
bool writes_items(std::string_view op) {
  return op == "PutItem" || op == "UpdateItem" || op == "DeleteItem";
}

// `body` (a JSON object's text) with "ReturnConsumedCapacity":"INDEXES" as
// its first member.
std::string asking_capacity(const std::string& body) {
  if (body.size() < 2 || body.front() != '{' || body == "{}") return body;
  return "{\"ReturnConsumedCapacity\":\"INDEXES\"," + body.substr(1);
}

double units_of(const json::object& o) {
  const auto it = o.find("CapacityUnits");
  return it != o.end() && it->value().is_number() ? it->value().to_number<double>() : 0;
}

}  // namespace

std::vector<CapacityUse> DynamoDbStore::consumed_capacity() const {
  MutexLock lock(capacity_mu_);
  std::vector<CapacityUse> out;
  out.reserve(capacity_.size());
  for (const auto& [key, use] : capacity_) out.push_back(use);
  return out;
}

// One ConsumedCapacity object per table (an array of them for BatchGetItem):
// the table's units and each index's, or only the total where the server
// gives no more (dynalite), counted as the table's.
void DynamoDbStore::note_capacity(std::string_view op, const json::object& reply) {
  const auto consumed = reply.find("ConsumedCapacity");
  if (consumed == reply.end()) return;
  const bool write = writes_items(op);
  std::vector<const json::object*> per_table;
  if (consumed->value().is_object()) per_table.push_back(&consumed->value().as_object());
  if (consumed->value().is_array()) {
    for (const json::value& v : consumed->value().as_array()) {
      if (v.is_object()) per_table.push_back(&v.as_object());
    }
  }
  struct Units {
    std::string table, index;
    double units;
  };
  std::vector<Units> found;
  for (const json::object* c : per_table) {
    std::string table = string_field(*c, "TableName");
    if (table.starts_with(options_.table_prefix)) table.erase(0, options_.table_prefix.size());
    const json::object* on_table = object_field(*c, "Table");
    found.push_back({table, "", on_table != nullptr ? units_of(*on_table) : units_of(*c)});
    for (const char* kind : {"GlobalSecondaryIndexes", "LocalSecondaryIndexes"}) {
      const json::object* indexes = object_field(*c, kind);
      if (indexes == nullptr) continue;
      for (const auto& [name, units] : *indexes) {
        if (units.is_object())
          found.push_back({table, std::string(name), units_of(units.as_object())});
      }
    }
  }
  MutexLock lock(capacity_mu_);
  for (Units& f : found) {
    CapacityUse& use = capacity_[{f.table, f.index}];
    use.table = std::move(f.table);
    use.index = std::move(f.index);
    (write ? use.write_units : use.read_units) += f.units;
  }
}

Result<json::object> DynamoDbStore::call_text(std::string_view op, const std::string& given,
                                              bool idempotent, json::storage_ptr storage,
                                              MonoTime deadline, Api api) {
  // DynamoDB Streams' operations are dynamodb: actions too.
  LEASEHOLD_RETURN_IF_ERROR(aws::check_action(aws::iam_action("dynamodb", op)));
  const bool items = api == Api::kDynamoDb && (reads_items(op) || writes_items(op));
  const std::string asking = items ? asking_capacity(given) : std::string();
  const std::string& text = items ? asking : given;
  Status last;  // the last attempt's failure
  Result<json::object> reply = aws::send_with_retries<json::object>(
      *retrier_, deadline,
      [&](const Retrier::Call& call) -> aws::Attempt<json::object> {
        const Duration left = time_left(deadline);
        if (left <= Duration::zero()) {
          return {gave_up(op, call.attempts() - 1, last, RetryStop::kDeadline)};
        }
        aws::Attempt<json::object> a = attempt(api, op, text, idempotent, storage, left);
        if (!a.result.ok()) last = a.result.status();
        return a;
      },
      [&](const Status& last, RetryStop why, int attempts) {
        return gave_up(op, attempts, last, why);
      });
  if (items && reply.ok()) note_capacity(op, *reply);
  return reply;
}

// ---------------------------------------------------------------- opening

namespace {

bool is_region_char(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'; }

// Everything open_dynamodb_store() checks before it builds anything; the
// credentials only when `need_credentials` (a URI carries none). Returns the
// HTTP client's options for the endpoint (AWS's for the region when none is
// given).
Result<net::HttpClientOptions> check_options(const DynamoDbOptions& options,
                                             bool need_credentials) {
  if (options.region.empty() ||
      !std::all_of(options.region.begin(), options.region.end(), is_region_char)) {
    return invalid_argument("DynamoDB region must be like us-east-1");
  }
  if (options.table_prefix.empty() ||
      !std::all_of(options.table_prefix.begin(), options.table_prefix.end(), is_name_char)) {
    return invalid_argument("DynamoDB table prefix must be non-empty [A-Za-z0-9_.-]");
  }
  if (need_credentials && !options.credentials_source &&
      (options.credentials.access_key_id.empty() ||
       options.credentials.secret_access_key.empty())) {
    return invalid_argument("DynamoDB needs credentials (an access key id and a secret key)");
  }
  LEASEHOLD_RETURN_IF_ERROR(validate_retry_options(options.retry).with_context("DynamoDB"));
  const std::string endpoint = options.endpoint.empty()
                                   ? "https://dynamodb." + options.region + ".amazonaws.com"
                                   : options.endpoint;
  net::HttpClientOptions http;
  LEASEHOLD_ASSIGN_OR_RETURN(http.endpoint, net::parse_http_endpoint(endpoint));
  LEASEHOLD_RETURN_IF_ERROR(net::validate_http_client_options(http));
  return http;
}

// A URI's parameters, each checked as it is read.
Status apply_uri_params(std::string_view query, DynamoDbOptions& options) {
  std::set<std::string_view> seen;
  for (const UriParam& p : split_uri_params(query)) {
    if (p.value.empty() || !seen.insert(p.name).second ||
        (p.name != "endpoint" && p.name != "table_wait")) {
      return invalid_argument("unknown, repeated or empty DynamoDB URI parameter '" +
                              std::string(p.text) + "' (known: endpoint=URL, table_wait=DURATION)");
    }
    if (p.name == "endpoint") {
      options.endpoint = std::string(p.value);
      LEASEHOLD_RETURN_IF_ERROR(net::parse_http_endpoint(options.endpoint).status());
    } else {
      LEASEHOLD_ASSIGN_OR_RETURN(options.table_active_timeout, parse_duration(p.value));
    }
  }
  return Status::ok_status();
}

}  // namespace

Result<std::unique_ptr<ItemStore>> open_dynamodb_store(DynamoDbOptions options) {
  LEASEHOLD_ASSIGN_OR_RETURN(net::HttpClientOptions http, check_options(options, true));
  LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<net::HttpClient> client,
                             net::HttpClient::open(std::move(http)));
  // AWS serves DynamoDB Streams from a host of its own; an endpoint given in
  // the options (an emulator) serves both APIs, through one client.
  std::unique_ptr<net::HttpClient> streams;
  if (options.endpoint.empty()) {
    net::HttpClientOptions streams_http;
    LEASEHOLD_ASSIGN_OR_RETURN(
        streams_http.endpoint,
        net::parse_http_endpoint("https://streams.dynamodb." + options.region + ".amazonaws.com"));
    LEASEHOLD_ASSIGN_OR_RETURN(streams, net::HttpClient::open(std::move(streams_http)));
  }
  return std::unique_ptr<ItemStore>(
      std::make_unique<DynamoDbStore>(std::move(options), std::move(client), std::move(streams)));
}

Result<DynamoDbOptions> parse_dynamodb_uri(std::string_view rest) {
  const Status malformed = invalid_argument(
      "malformed DynamoDB URI (expected "
      "dynamodb://REGION/TABLE_PREFIX[?endpoint=URL][&table_wait=DURATION])");
  const PathAndQuery uri = split_path_and_query(rest);
  if (!uri.path.starts_with("//")) return malformed;
  const std::string_view path = uri.path.substr(2);
  const size_t slash = path.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == path.size()) return malformed;
  DynamoDbOptions options;
  options.region = std::string(path.substr(0, slash));
  options.table_prefix = std::string(path.substr(slash + 1));
  if (uri.query && uri.query->empty()) return malformed;
  if (uri.query) LEASEHOLD_RETURN_IF_ERROR(apply_uri_params(*uri.query, options));
  return options;
}

Result<DynamoDbOptions> dynamodb_options_from_uri(std::string_view rest,
                                                  const aws::EnvLookup& env) {
  LEASEHOLD_ASSIGN_OR_RETURN(DynamoDbOptions options, parse_dynamodb_uri(rest));
  LEASEHOLD_RETURN_IF_ERROR(check_options(options, false).status());
  // The URI's own endpoint wins, as a client's endpoint_url wins over the
  // environment's in botocore.
  if (!options.endpoint.empty()) return options;
  std::optional<std::string> configured = aws::configured_endpoint(env, "DYNAMODB");
  if (!configured) return options;
  options.endpoint = std::move(*configured);
  // Checked again, now with the endpoint, so that an error here is the
  // variable's, and says so.
  const Status checked = check_options(options, false).status();
  if (!checked.ok()) {
    return checked.with_context("DynamoDB endpoint '" + options.endpoint +
                                "' (from AWS_ENDPOINT_URL_DYNAMODB, else AWS_ENDPOINT_URL)");
  }
  return options;
}

Status validate_dynamodb_uri(std::string_view rest, const aws::EnvLookup& env) {
  return dynamodb_options_from_uri(rest, env).status();
}

Result<std::unique_ptr<ItemStore>> open_dynamodb_store_from_uri(std::string_view rest,
                                                                const aws::EnvLookup& env) {
  // Check everything but the credentials first, so that a malformed URI is
  // reported as such even on a machine without credentials.
  LEASEHOLD_ASSIGN_OR_RETURN(DynamoDbOptions options, dynamodb_options_from_uri(rest, env));
  LEASEHOLD_ASSIGN_OR_RETURN(options.credentials_source, aws::default_credentials(env));
  return open_dynamodb_store(std::move(options));
}

}  // namespace leasehold::store::dynamodb
