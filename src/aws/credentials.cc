#include "aws/credentials.h"

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iterator>
#include <sstream>

#include "base/mutex.h"
#include "net/http_client.h"

namespace leasehold::aws {
namespace {

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

std::string env_or_empty(const EnvLookup& env, const std::string& name) {
  return env(name).value_or("");
}

Result<std::optional<Credentials>> from_env(const EnvLookup& env) {
  Credentials c;
  c.access_key_id = env_or_empty(env, "AWS_ACCESS_KEY_ID");
  c.secret_access_key = env_or_empty(env, "AWS_SECRET_ACCESS_KEY");
  c.session_token = env_or_empty(env, "AWS_SESSION_TOKEN");
  if (c.access_key_id.empty() && c.secret_access_key.empty()) return std::optional<Credentials>();
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    return invalid_argument(
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together (one is missing)");
  }
  return std::optional<Credentials>(std::move(c));
}

}  // namespace

EnvLookup process_env() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());  // NOLINT(concurrency-mt-unsafe): read only
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

Result<Credentials> parse_shared_credentials(std::string_view text, std::string_view profile) {
  Credentials c;
  bool in_profile = false, seen_profile = false;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    const std::string_view line = trim(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']')
        return invalid_argument("malformed section header in credentials file");
      in_profile = trim(line.substr(1, line.size() - 2)) == profile;
      seen_profile = seen_profile || in_profile;
      continue;
    }
    if (!in_profile) continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;  // the SDKs ignore such lines too
    const std::string_view key = trim(line.substr(0, eq));
    const std::string value(trim(line.substr(eq + 1)));
    if (key == "aws_access_key_id") c.access_key_id = value;
    if (key == "aws_secret_access_key") c.secret_access_key = value;
    if (key == "aws_session_token") c.session_token = value;
  }
  if (!seen_profile) return not_found("no profile [" + std::string(profile) + "]");
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    return not_found("profile [" + std::string(profile) +
                     "] lacks aws_access_key_id or aws_secret_access_key");
  }
  return c;
}

Result<Credentials> load_credentials(const EnvLookup& env) {
  LEASEHOLD_ASSIGN_OR_RETURN(std::optional<Credentials> from_environment, from_env(env));
  if (from_environment) return std::move(*from_environment);

  std::string path = env_or_empty(env, "AWS_SHARED_CREDENTIALS_FILE");
  if (path.empty()) {
    const std::string home = env_or_empty(env, "HOME");
    if (!home.empty()) path = home + "/.aws/credentials";
  }
  std::string profile = env_or_empty(env, "AWS_PROFILE");
  if (profile.empty()) profile = "default";
  const std::string where = "no AWS credentials: AWS_ACCESS_KEY_ID is unset and ";
  if (path.empty()) return unavailable(where + "there is no HOME for ~/.aws/credentials");
  std::ifstream in(path, std::ios::binary);
  if (!in) return unavailable(where + "cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = parse_shared_credentials(text.str(), profile);
  if (parsed.ok()) return parsed;
  if (parsed.status().code() == Code::kNotFound) {
    return unavailable(where + path + ": " + parsed.status().message());
  }
  return invalid_argument(path + ": " + parsed.status().message());
}

}  // namespace leasehold::aws

// ---------------------------------------------------------------- sources

namespace leasehold::aws {
namespace {

class StaticSource final : public CredentialsSource {
 public:
  explicit StaticSource(Credentials c) : credentials_(std::move(c)) {}
  Result<Credentials> get() override { return credentials_; }

 private:
  const Credentials credentials_;
};

// "2026-11-29T21:00:00Z" (what the endpoint sends) as wall time.
std::optional<WallTime> parse_iso8601_utc(std::string_view text) {
  std::tm tm{};
  char zone = 0;
  if (std::sscanf(std::string(text).c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%c", &tm.tm_year, &tm.tm_mon,
                  &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &zone) != 7 ||
      zone != 'Z') {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const time_t t = timegm(&tm);
  if (t == static_cast<time_t>(-1)) return std::nullopt;
  return WallTime(std::chrono::seconds(t));
}

bool container_host_allowed(const net::HttpEndpoint& e) {
  return e.scheme == "https" || net::is_loopback_host(e.host) || e.host == "169.254.170.2" ||
         e.host == "169.254.170.23";
}

class ContainerSource final : public CredentialsSource {
 public:
  ContainerSource(std::unique_ptr<net::HttpClient> http, std::string target, EnvLookup env,
                  Clock* clock, Duration refresh_before)
      : http_(std::move(http)),
        target_(std::move(target)),
        env_(std::move(env)),
        clock_(clock != nullptr ? *clock : real_clock_),
        refresh_before_(refresh_before) {}

  Result<Credentials> get() override {
    MutexLock lock(mu_);
    const WallTime now = clock_.wall_now();
    if (cached_ && now + refresh_before_ < expires_) return *cached_;
    Result<Credentials> fresh = fetch();
    if (fresh.ok()) return *cached_;
    if (cached_ && now < expires_) return *cached_;  // the old ones still work
    return fresh.status();
  }

 private:
  // On success, fills cached_ and expires_.
  Result<Credentials> fetch() REQUIRES(mu_) {
    net::HttpRequest request;
    request.method = "GET";
    request.target = target_;
    LEASEHOLD_ASSIGN_OR_RETURN(std::string token, authorization_token());
    if (!token.empty()) request.headers.emplace_back("Authorization", token);
    Result<net::HttpResponse> response = http_->send(request, std::chrono::seconds(5));
    const std::string what = "container credentials endpoint";
    if (!response.ok()) return unavailable(what + ": " + response.status().message());
    if (response->status != 200) {
      return unavailable(what + " answered HTTP " + std::to_string(response->status));
    }
    boost::system::error_code ec;
    const boost::json::value body = boost::json::parse(response->body, ec);
    const auto* o = ec ? nullptr : body.if_object();
    const auto text = [&](const char* field) -> std::string {
      const auto* v = o ? o->if_contains(field) : nullptr;
      return v && v->is_string() ? std::string(v->get_string()) : std::string();
    };
    Credentials c{text("AccessKeyId"), text("SecretAccessKey"), text("Token")};
    const auto expires = parse_iso8601_utc(text("Expiration"));
    if (c.access_key_id.empty() || c.secret_access_key.empty() || !expires) {
      return unavailable(what + " sent no usable credentials");
    }
    cached_ = std::move(c);
    expires_ = *expires;
    return *cached_;
  }

  // The token is re-read on every fetch: the agent may rotate the file.
  Result<std::string> authorization_token() {
    const std::string file = env_("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE").value_or("");
    if (file.empty()) return env_("AWS_CONTAINER_AUTHORIZATION_TOKEN").value_or("");
    std::ifstream in(file, std::ios::binary);
    if (!in) return unavailable("cannot read AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE " + file);
    std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r')) token.pop_back();
    return token;
  }

  const std::unique_ptr<net::HttpClient> http_;
  const std::string target_;
  const EnvLookup env_;
  RealClock real_clock_;
  Clock& clock_;
  const Duration refresh_before_;
  Mutex mu_;
  std::optional<Credentials> cached_ GUARDED_BY(mu_);
  WallTime expires_ GUARDED_BY(mu_) = {};
};

}  // namespace

Result<std::optional<std::shared_ptr<CredentialsSource>>> container_credentials(
    const EnvLookup& env, Clock* clock, Duration refresh_before) {
  const std::string relative = env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI").value_or("");
  const std::string full = env("AWS_CONTAINER_CREDENTIALS_FULL_URI").value_or("");
  if (relative.empty() && full.empty()) return std::optional<std::shared_ptr<CredentialsSource>>();
  const std::string url = !relative.empty() ? "http://169.254.170.2" + relative : full;
  const size_t scheme_end = url.find("://");
  const size_t path_start = url.find('/', scheme_end == std::string::npos ? 0 : scheme_end + 3);
  net::HttpClientOptions http;
  LEASEHOLD_ASSIGN_OR_RETURN(http.endpoint, net::parse_http_endpoint(url.substr(0, path_start)));
  if (!container_host_allowed(http.endpoint)) {
    return invalid_argument(
        "AWS_CONTAINER_CREDENTIALS_FULL_URI must be https, loopback, "
        "169.254.170.2 or 169.254.170.23 (got " +
        http.endpoint.host + ")");
  }
  http.allow_plain_http = true;
  http.connections_max = 1;
  LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<net::HttpClient> client,
                             net::HttpClient::open(std::move(http)));
  const std::string target = path_start == std::string::npos ? "/" : url.substr(path_start);
  return std::optional<std::shared_ptr<CredentialsSource>>(
      std::make_shared<ContainerSource>(std::move(client), target, env, clock, refresh_before));
}

Result<std::shared_ptr<CredentialsSource>> default_credentials(const EnvLookup& env) {
  Result<Credentials> loaded = load_credentials(env);
  if (loaded.ok())
    return std::shared_ptr<CredentialsSource>(std::make_shared<StaticSource>(*loaded));
  if (loaded.status().code() != Code::kUnavailable) return loaded.status();
  LEASEHOLD_ASSIGN_OR_RETURN(auto container, container_credentials(env));
  if (container) return *container;
  return loaded.status();
}

bool credentials_refused(std::string_view code) {
  static constexpr std::string_view kCodes[] = {
      "UnrecognizedClientException", "InvalidSignatureException", "MissingAuthenticationToken",
      "InvalidClientTokenId",        "SignatureDoesNotMatch",     "ExpiredToken",
      "ExpiredTokenException",       "IncompleteSignature",       "InvalidSecurity",
      "InvalidAccessKeyId",          "TokenRefreshRequired",      "InvalidToken"};
  return std::find(std::begin(kCodes), std::end(kCodes), code) != std::end(kCodes);
}

}  // namespace leasehold::aws
