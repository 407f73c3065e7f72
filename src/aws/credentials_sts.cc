// STS AssumeRole and AssumeRoleWithWebIdentity, on STS's query API: a form
// POSTed to "/" (Action, Version 2011-06-15 and the operation's parameters,
// as botocore's QuerySerializer writes them), an XML reply (the AWS STS API
// Reference, "AssumeRole" and "AssumeRoleWithWebIdentity"; "Common Errors").
// AssumeRole is signed with SigV4 for service "sts"; AssumeRoleWithWebIdentity
// is not signed (botocore's AssumeRoleWithWebIdentityCredentialFetcher
// creates its client with signature_version=UNSIGNED), since the token is
// the proof.
//
// The endpoint follows botocore's order for a configured endpoint
// (botocore/configprovider.py, EndpointConfigProvider; the AWS SDKs and Tools
// Reference Guide, "Service-specific endpoints"): AWS_ENDPOINT_URL_STS, then
// AWS_ENDPOINT_URL, unless AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is "true";
// else the regional endpoint (STS's default in botocore since regional
// endpoints became the default), or, with no region at all, the global one,
// signed for us-east-1 as botocore signs it ("aws-global").
#include <fstream>
#include <iterator>

#include "aws/credentials_internal.h"
#include "aws/s3.h"
#include "base/text.h"
#include "net/http_client.h"

namespace leasehold::aws::credentials_internal {
namespace {

constexpr std::string_view kStsVersion = "2011-06-15";

// STS's message and code go into a Status: printable, at most 200 bytes.
constexpr size_t kStsTextBytesMax = 200;

std::string form(const std::vector<std::pair<std::string, std::string>>& params) {
  std::string body;
  for (const auto& [name, value] : params) {
    if (!body.empty()) body += '&';
    body += uri_encode(name, false) + "=" + uri_encode(value, false);
  }
  return body;
}

// One STS client: the endpoint's HTTP client and the request's common parts.
class Sts {
 public:
  static Result<std::shared_ptr<const Sts>> open(StsEndpoint endpoint, CredentialsOptions options) {
    std::string origin = endpoint.url;
    while (origin.ends_with('/')) origin.pop_back();
    net::HttpClientOptions http;
    auto parsed = net::parse_http_endpoint(origin);
    if (!parsed.ok()) return invalid_argument("STS endpoint: " + parsed.status().message());
    http.endpoint = std::move(*parsed);
    http.connections_max = 2;
    auto client = net::HttpClient::open(std::move(http));
    if (!client.ok()) return invalid_argument("STS endpoint: " + client.status().message());
    return std::shared_ptr<const Sts>(
        new Sts(std::move(*client), std::move(endpoint), std::move(options)));
  }

  // Sends `params` (after Action and Version), signed with `signer` unless
  // it is null.
  Result<ExpiringCredentials> call(std::string_view action,
                                   std::vector<std::pair<std::string, std::string>> params,
                                   const Credentials* signer) const {
    params.insert(params.begin(),
                  {{"Action", std::string(action)}, {"Version", std::string(kStsVersion)}});
    HttpRequestToSign to_sign;
    to_sign.host = http_->host_header();
    to_sign.headers.emplace_back("Content-Type",
                                 "application/x-www-form-urlencoded; charset=utf-8");
    to_sign.body = form(params);
    if (signer != nullptr) {
      LEASEHOLD_ASSIGN_OR_RETURN(SigV4Result signature, sign_v4(to_sign, *signer, endpoint_.region,
                                                                "sts", options_.clock->wall_now()));
      add_signature_headers(signature, to_sign.headers);
    }
    net::HttpRequest request;
    request.method = "POST";
    request.target = "/";
    request.headers = std::move(to_sign.headers);
    request.body = std::move(to_sign.body);
    Result<net::HttpResponse> response = http_->send(request, options_.sts_timeout);
    if (!response.ok()) {
      return unavailable("STS " + std::string(action) + ": " + response.status().message());
    }
    return parse_sts_reply(response->status, response->body, action);
  }

 private:
  Sts(std::unique_ptr<net::HttpClient> http, StsEndpoint endpoint, CredentialsOptions options)
      : http_(std::move(http)), endpoint_(std::move(endpoint)), options_(std::move(options)) {}

  const std::unique_ptr<net::HttpClient> http_;
  const StsEndpoint endpoint_;
  const CredentialsOptions options_;
};

// The parameters both operations share, in botocore's order.
std::vector<std::pair<std::string, std::string>> role_params(const AssumeRoleParams& p,
                                                             Clock& clock) {
  std::string session = p.role_session_name;
  if (session.empty()) {
    // botocore names its sessions "botocore-session-<unix seconds>".
    const auto seconds =
        std::chrono::duration_cast<std::chrono::seconds>(clock.wall_now().time_since_epoch());
    session = "leasehold-session-" + std::to_string(seconds.count());
  }
  return {{"RoleArn", p.role_arn}, {"RoleSessionName", session}};
}

// A fetch that fails at once, for an endpoint that cannot be opened: the
// chain is built when a client opens, and the error belongs to the first
// request, as the rest of the fetch's errors do.
CredentialsFetch failing(Status status) {
  return [status]() -> Result<ExpiringCredentials> { return status; };
}

}  // namespace

Result<ExpiringCredentials> parse_sts_reply(int http_status, std::string_view body,
                                            std::string_view action) {
  const std::string what = "STS " + std::string(action);
  if (http_status != 200) {
    const std::string code = xml_element(body, "Code").value_or("");
    const std::string message =
        printable(xml_element(body, "Message").value_or(""), kStsTextBytesMax);
    const std::string text = what + " failed: HTTP " + std::to_string(http_status) +
                             (code.empty() ? "" : " " + printable(code, kStsTextBytesMax)) +
                             (message.empty() ? "" : ": " + message);
    if (http_status >= 500 || code == "Throttling" || code == "IDPCommunicationError" ||
        code == "RequestTimeout") {
      return unavailable(text);
    }
    return unauthenticated(text);
  }
  const std::optional<std::string> credentials = xml_element(body, "Credentials");
  if (!credentials) return unavailable(what + " answered without <Credentials>");
  ExpiringCredentials out;
  out.credentials.access_key_id = xml_element(*credentials, "AccessKeyId").value_or("");
  out.credentials.secret_access_key = xml_element(*credentials, "SecretAccessKey").value_or("");
  out.credentials.session_token = xml_element(*credentials, "SessionToken").value_or("");
  out.expires = parse_iso8601_utc(xml_element(*credentials, "Expiration").value_or(""));
  if (out.credentials.access_key_id.empty() || out.credentials.secret_access_key.empty() ||
      out.credentials.session_token.empty() || !out.expires) {
    return unavailable(what + " answered incomplete <Credentials>");
  }
  return out;
}

StsEndpoint sts_endpoint(const EnvLookup& env, const std::string& region) {
  StsEndpoint out;
  out.region = region.empty() ? "us-east-1" : region;
  if (std::optional<std::string> configured = configured_endpoint(env, "STS")) {
    out.url = std::move(*configured);
    return out;
  }
  if (region.empty()) {
    out.url = "https://sts.amazonaws.com";
  } else {
    out.url = "https://sts." + region +
              (region.starts_with("cn-") ? ".amazonaws.com.cn" : ".amazonaws.com");
  }
  return out;
}

CredentialsFetch assume_role_fetch(StsEndpoint endpoint, AssumeRoleParams params,
                                   std::shared_ptr<CredentialsSource> source,
                                   const CredentialsOptions& options) {
  const CredentialsOptions o = with_clock(options);
  auto sts = Sts::open(std::move(endpoint), o);
  if (!sts.ok()) return failing(sts.status());
  return [sts = *sts, params, source, clock = o.clock] {
    std::vector<std::pair<std::string, std::string>> form = role_params(params, *clock);
    if (!params.external_id.empty()) form.emplace_back("ExternalId", params.external_id);
    if (params.duration_seconds) {
      form.emplace_back("DurationSeconds", std::to_string(*params.duration_seconds));
    }
    Result<Credentials> signer = source->get();
    if (!signer.ok()) {
      return Result<ExpiringCredentials>(
          signer.status().with_context("the source credentials of AssumeRole"));
    }
    return sts->call("AssumeRole", std::move(form), &*signer);
  };
}

CredentialsFetch web_identity_fetch(StsEndpoint endpoint, AssumeRoleParams params,
                                    std::string token_file, const CredentialsOptions& options) {
  const CredentialsOptions o = with_clock(options);
  auto sts = Sts::open(std::move(endpoint), o);
  if (!sts.ok()) return failing(sts.status());
  return [sts = *sts, params, token_file, clock = o.clock] {
    std::ifstream in(token_file, std::ios::binary);
    if (!in) {
      return Result<ExpiringCredentials>(
          unavailable("cannot read the web identity token file " + token_file));
    }
    std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::vector<std::pair<std::string, std::string>> form = role_params(params, *clock);
    form.emplace_back("WebIdentityToken", std::move(token));
    return sts->call("AssumeRoleWithWebIdentity", std::move(form), nullptr);
  };
}

}  // namespace leasehold::aws::credentials_internal
