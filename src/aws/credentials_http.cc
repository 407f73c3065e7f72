// The two credentials endpoints on the host's own network: the container
// endpoint of ECS, Fargate and EKS Pod Identity, and EC2's instance metadata
// service. Both answer the same JSON (AccessKeyId, SecretAccessKey, Token,
// Expiration).
//
// The container endpoint follows botocore's ContainerProvider and
// ContainerMetadataFetcher (botocore/credentials.py, botocore/utils.py) and
// the AWS SDKs and Tools Reference Guide, "Container credential provider":
// plain HTTP only to loopback or to the addresses AWS documents for ECS
// (169.254.170.2) and EKS Pod Identity (169.254.170.23, fd00:ec2::23); the
// token file re-read at every fetch, since the agent rotates it; 2 s per
// request, three attempts a second apart.
//
// EC2's metadata service follows IMDSv2 as the EC2 User Guide describes it
// ("Use the Instance Metadata Service to access instance metadata") and as
// botocore's InstanceMetadataFetcher calls it: PUT /latest/api/token with
// X-aws-ec2-metadata-token-ttl-seconds, then GET
// /latest/meta-data/iam/security-credentials/ for the role's name and
// .../<role> for its credentials, each with X-aws-ec2-metadata-token; 1 s per
// request, one attempt, so that off EC2 the chain ends in about a second.
// When the token is refused as by an IMDSv1-only service (403, 404, 405)
// the GETs go without it, as botocore's do, unless
// AWS_EC2_METADATA_V1_DISABLED is "true". A token request that times out
// ends the fetch (botocore would try IMDSv1 then, a second wait for nothing
// off EC2).
#include <boost/json.hpp>
#include <fstream>
#include <iterator>
#include <thread>

#include "aws/credentials_internal.h"
#include "net/http_client.h"

namespace leasehold::aws::credentials_internal {
namespace {

// "scheme://host[:port]" and the path after it ("" when none).
std::pair<std::string, std::string> split_url(const std::string& url) {
  const size_t scheme_end = url.find("://");
  const size_t path_start = url.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
  if (path_start == std::string::npos) return {url, ""};
  return {url.substr(0, path_start), url.substr(path_start)};
}

Result<std::shared_ptr<net::HttpClient>> open_plain_client(const std::string& origin) {
  net::HttpClientOptions http;
  LEASEHOLD_ASSIGN_OR_RETURN(http.endpoint, net::parse_http_endpoint(origin));
  // Both endpoints are plain HTTP by design, on a link-local address.
  http.allow_plain_http = true;
  http.connections_max = 1;
  LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<net::HttpClient> client,
                             net::HttpClient::open(std::move(http)));
  return std::shared_ptr<net::HttpClient>(std::move(client));
}

// ---------------------------------------------------------------- container

bool container_host_allowed(const net::HttpEndpoint& e) {
  return e.scheme == "https" || net::is_loopback_host(e.host) || e.host == "169.254.170.2" ||
         e.host == "169.254.170.23" || e.host == "fd00:ec2::23";
}

// The token is re-read on every fetch: the agent may rotate the file.
Result<std::string> container_token(const EnvLookup& env) {
  std::string token;
  const std::string file = env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE").value_or("");
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    if (!in) return unavailable("cannot read AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE " + file);
    token.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
  } else {
    token = env("AWS_CONTAINER_AUTHORIZATION_TOKEN").value_or("");
  }
  if (token.find_first_of("\r\n") != std::string::npos) {
    return invalid_argument("the container authorization token holds a line break");
  }
  return token;
}

Result<ExpiringCredentials> container_fetch_once(net::HttpClient& http, const std::string& target,
                                                 const EnvLookup& env,
                                                 const CredentialsOptions& options) {
  net::HttpRequest request;
  request.method = "GET";
  request.target = target;
  request.headers.emplace_back("Accept", "application/json");
  LEASEHOLD_ASSIGN_OR_RETURN(std::string token, container_token(env));
  if (!token.empty()) request.headers.emplace_back("Authorization", std::move(token));
  const std::string what = "the container credentials endpoint";
  Result<net::HttpResponse> response = http.send(request, options.container_timeout);
  if (!response.ok()) return unavailable(what + ": " + response.status().message());
  if (response->status != 200) {
    return unavailable(what + " answered HTTP " + std::to_string(response->status));
  }
  return parse_credentials_json(response->body, what, "Token");
}

// ---------------------------------------------------------------- IMDS

constexpr std::string_view kImdsCredentialsPath = "/latest/meta-data/iam/security-credentials/";

class Imds {
 public:
  Imds(std::shared_ptr<net::HttpClient> http, std::string prefix, bool v1_disabled,
       CredentialsOptions options)
      : http_(std::move(http)),
        prefix_(std::move(prefix)),
        v1_disabled_(v1_disabled),
        options_(std::move(options)) {}

  Result<ExpiringCredentials> fetch() const {
    LEASEHOLD_ASSIGN_OR_RETURN(const std::optional<std::string> token, session_token());
    LEASEHOLD_ASSIGN_OR_RETURN(const std::string roles, get(kImdsCredentialsPath, token));
    const std::string role = first_line(roles);
    if (role.empty()) return unavailable(kWhat + " has no IAM role for this instance");
    LEASEHOLD_ASSIGN_OR_RETURN(const std::string body,
                               get(std::string(kImdsCredentialsPath) + role, token));
    return parse_credentials_json(body, kWhat, "Token");
  }

 private:
  inline static const std::string kWhat = "EC2's instance metadata service";

  static std::string first_line(std::string_view text) {
    const size_t end = text.find_first_of("\r\n");
    std::string line(text.substr(0, end));
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.pop_back();
    return line;
  }

  // The IMDSv2 session token; nullopt to go on without one (IMDSv1).
  Result<std::optional<std::string>> session_token() const {
    net::HttpRequest request;
    request.method = "PUT";
    request.target = prefix_ + "/latest/api/token";
    // Six hours, botocore's value; each fetch asks for a new token anyway.
    request.headers.emplace_back("X-aws-ec2-metadata-token-ttl-seconds", "21600");
    Status last = Status::ok_status();
    for (int attempt = 0; attempt < std::max(options_.imds_attempts, 1); ++attempt) {
      Result<net::HttpResponse> response = http_->send(request, options_.imds_timeout);
      if (!response.ok()) {
        last = unavailable(kWhat + ": " + response.status().message());
        continue;
      }
      if (response->status == 200 && !response->body.empty()) {
        return std::optional<std::string>(response->body);
      }
      const int s = response->status;
      if ((s == 403 || s == 404 || s == 405) && !v1_disabled_) return std::optional<std::string>();
      return unavailable(kWhat + " refused a session token: HTTP " + std::to_string(s));
    }
    return last;
  }

  Result<std::string> get(std::string_view path, const std::optional<std::string>& token) const {
    net::HttpRequest request;
    request.method = "GET";
    request.target = prefix_ + std::string(path);
    if (token) request.headers.emplace_back("X-aws-ec2-metadata-token", *token);
    Status last = Status::ok_status();
    for (int attempt = 0; attempt < std::max(options_.imds_attempts, 1); ++attempt) {
      Result<net::HttpResponse> response = http_->send(request, options_.imds_timeout);
      if (!response.ok()) {
        last = unavailable(kWhat + ": " + response.status().message());
      } else if (response->status != 200 || response->body.empty()) {
        last = unavailable(kWhat + " answered HTTP " + std::to_string(response->status) + " to " +
                           (path == kImdsCredentialsPath ? "the role's name" : "the credentials"));
      } else {
        return std::move(response->body);
      }
    }
    return last;
  }

  const std::shared_ptr<net::HttpClient> http_;
  const std::string prefix_;  // the endpoint's own path, if it has one
  const bool v1_disabled_;
  const CredentialsOptions options_;
};

// A number of seconds or attempts from the environment, if valid.
void read_positive(const EnvLookup& env, const char* name, auto apply) {
  const std::string text = env(name).value_or("");
  int value = 0;
  if (!text.empty() && std::sscanf(text.c_str(), "%d", &value) == 1 && value > 0) apply(value);
}

}  // namespace

Result<ExpiringCredentials> parse_credentials_json(std::string_view body, const std::string& what,
                                                   const char* token_field) {
  boost::system::error_code ec;
  const boost::json::value parsed = boost::json::parse(body, ec);
  const boost::json::object* o = ec ? nullptr : parsed.if_object();
  if (o == nullptr) return unavailable(what + " answered something other than a JSON object");
  const auto text = [&](const char* field) -> std::string {
    const auto* v = o->if_contains(field);
    return v && v->is_string() ? std::string(v->get_string()) : std::string();
  };
  const std::string code = text("Code");
  if (!code.empty() && code != "Success") {
    return unavailable(what + " answered Code " + code.substr(0, 64));
  }
  ExpiringCredentials out;
  out.credentials = {text("AccessKeyId"), text("SecretAccessKey"), text(token_field)};
  const std::string expiration = text("Expiration");
  if (out.credentials.access_key_id.empty() || out.credentials.secret_access_key.empty()) {
    return unavailable(what + " sent no AccessKeyId or no SecretAccessKey");
  }
  if (!expiration.empty()) {
    out.expires = parse_iso8601_utc(expiration);
    if (!out.expires) return unavailable(what + " sent an Expiration that is not ISO 8601");
  }
  return out;
}

Result<std::optional<CredentialsFetch>> container_fetch(const EnvLookup& env,
                                                        const CredentialsOptions& options) {
  const std::string relative = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").value_or("");
  const std::string full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI").value_or("");
  if (relative.empty() && full.empty()) return std::optional<CredentialsFetch>();
  const std::string url = !relative.empty() ? "http://169.254.170.2" + relative : full;
  const std::string origin = split_url(url).first;
  std::string target = split_url(url).second;
  if (target.empty()) target = "/";
  LEASEHOLD_ASSIGN_OR_RETURN(const net::HttpEndpoint endpoint, net::parse_http_endpoint(origin));
  if (!container_host_allowed(endpoint)) {
    return invalid_argument(
        "AWS_CONTAINER_CREDENTIALS_FULL_URI must be https, loopback, 169.254.170.2, "
        "169.254.170.23 or [fd00:ec2::23] (got " +
        endpoint.host + ")");
  }
  LEASEHOLD_ASSIGN_OR_RETURN(std::shared_ptr<net::HttpClient> http, open_plain_client(origin));
  CredentialsFetch fetch = [http, target, env, options]() -> Result<ExpiringCredentials> {
    const int attempts = std::max(options.container_attempts, 1);
    for (int attempt = 1;; ++attempt) {
      Result<ExpiringCredentials> fetched = container_fetch_once(*http, target, env, options);
      if (fetched.ok() || attempt >= attempts ||
          fetched.status().code() == Code::kInvalidArgument) {
        return fetched;
      }
      std::this_thread::sleep_for(options.container_retry_pause);
    }
  };
  return std::optional<CredentialsFetch>(std::move(fetch));
}

Result<std::optional<CredentialsFetch>> imds_fetch(const EnvLookup& env,
                                                   const CredentialsOptions& options) {
  if (env_true(env, "AWS_EC2_METADATA_DISABLED")) return std::optional<CredentialsFetch>();
  std::string url = env("AWS_EC2_METADATA_SERVICE_ENDPOINT").value_or("");
  if (url.empty()) {
    const std::string mode =
        ascii_lower(env("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE").value_or(""));
    url = mode == "ipv6" ? "http://[fd00:ec2::254]" : "http://169.254.169.254";
  }
  const std::string origin = split_url(url).first;
  std::string prefix = split_url(url).second;
  while (prefix.ends_with('/')) prefix.pop_back();
  auto opened = open_plain_client(origin);
  if (!opened.ok()) {
    return invalid_argument("AWS_EC2_METADATA_SERVICE_ENDPOINT: " + opened.status().message());
  }
  CredentialsOptions o = options;
  read_positive(env, "AWS_METADATA_SERVICE_TIMEOUT",
                [&](int s) { o.imds_timeout = std::chrono::seconds(s); });
  read_positive(env, "AWS_METADATA_SERVICE_NUM_ATTEMPTS", [&](int n) { o.imds_attempts = n; });
  auto imds = std::make_shared<const Imds>(std::move(*opened), std::move(prefix),
                                           env_true(env, "AWS_EC2_METADATA_V1_DISABLED"), o);
  return std::optional<CredentialsFetch>([imds] { return imds->fetch(); });
}

}  // namespace leasehold::aws::credentials_internal
