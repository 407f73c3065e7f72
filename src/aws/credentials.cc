// The credentials chain: which source gives the credentials, in botocore's
// order (botocore/credentials.py: create_credential_resolver,
// ProfileProviderBuilder.providers, AssumeRoleProvider,
// AssumeRoleWithWebIdentityProvider). The sources themselves live in
// credentials_http.cc (container, EC2), credentials_sts.cc (STS),
// credentials_process.cc (credential_process), credentials_config.cc (the
// files) and credentials_refresh.cc (the refreshing cache).
#include "aws/credentials.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>

#include "aws/credentials_internal.h"

namespace leasehold::aws {
namespace {

using credentials_internal::ExpiringCredentials;
using credentials_internal::ProfileSettings;
using credentials_internal::SharedConfig;

std::string env_or_empty(const EnvLookup& env, const std::string& name) {
  return env(name).value_or("");
}

// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and AWS_SESSION_TOKEN (the
// name the SDKs standardised on) or else AWS_SECURITY_TOKEN (botocore's
// older one).
Result<std::optional<Credentials>> from_env(const EnvLookup& env) {
  Credentials c;
  c.access_key_id = env_or_empty(env, "AWS_ACCESS_KEY_ID");
  c.secret_access_key = env_or_empty(env, "AWS_SECRET_ACCESS_KEY");
  c.session_token = env_or_empty(env, "AWS_SESSION_TOKEN");
  if (c.session_token.empty()) c.session_token = env_or_empty(env, "AWS_SECURITY_TOKEN");
  if (c.access_key_id.empty() && c.secret_access_key.empty()) return std::optional<Credentials>();
  if (c.access_key_id.empty() || c.secret_access_key.empty()) {
    return invalid_argument(
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together (one is missing)");
  }
  return std::optional<Credentials>(std::move(c));
}

class StaticSource final : public CredentialsSource {
 public:
  explicit StaticSource(Credentials c) : credentials_(std::move(c)) {}
  Result<Credentials> get() override { return credentials_; }

 private:
  const Credentials credentials_;
};

using SourcePtr = std::shared_ptr<CredentialsSource>;
using MaybeSource = std::optional<SourcePtr>;

SourcePtr static_source(Credentials c) { return std::make_shared<StaticSource>(std::move(c)); }

// One resolution of the chain: the files read once, the profiles visited
// so far (for source_profile cycles).
class Chain {
 public:
  Chain(const EnvLookup& env, CredentialsOptions options, SharedConfig config)
      : env_(env), options_(std::move(options)), config_(std::move(config)) {
    region_ = env_or_empty(env_, "AWS_REGION");
    if (region_.empty()) region_ = env_or_empty(env_, "AWS_DEFAULT_REGION");
    if (const ProfileSettings* p = config_.find(config_.profile); region_.empty() && p) {
      region_ = setting(*p, "region");
    }
  }

  Result<SourcePtr> resolve() {
    const std::string& profile = config_.profile;
    LEASEHOLD_ASSIGN_OR_RETURN(std::optional<Credentials> env_keys, from_env(env_));
    if (env_keys) return static_source(std::move(*env_keys));
    visited_ = {profile};
    if (env_("AWS_PROFILE") && config_.find(profile) == nullptr) {
      return invalid_argument("AWS_PROFILE names profile [" + profile + "], which is not in " +
                              file_names());
    }
    if (const ProfileSettings* p = config_.find(profile); p && has_role(*p)) {
      return assume_role(profile);
    }
    LEASEHOLD_ASSIGN_OR_RETURN(MaybeSource from_profile, profile_sources(profile, true));
    if (from_profile) return *from_profile;
    LEASEHOLD_ASSIGN_OR_RETURN(MaybeSource container, container());
    if (container) return *container;
    return imds_probe();
  }

 private:
  static std::string setting(const ProfileSettings& p, const char* key) {
    const auto it = p.find(key);
    return it == p.end() ? std::string() : it->second;
  }

  // botocore's _has_assume_role_config_vars: a role_arn that is not a web
  // identity's.
  static bool has_role(const ProfileSettings& p) {
    return p.contains("role_arn") && !p.contains("web_identity_token_file");
  }
  static bool has_static_keys(const ProfileSettings& p) {
    return p.contains("aws_access_key_id") || p.contains("aws_secret_access_key");
  }

  std::string file_names() const { return config_.credentials_path + " or " + config_.config_path; }

  // The sources a profile's own settings give, in botocore's order
  // (ProfileProviderBuilder.providers, without SSO and login): web
  // identity, the credentials file's keys, credential_process, the config
  // file's keys. `use_env`: the web identity's variables count (not for a
  // source_profile, as botocore's disable_env_vars).
  Result<MaybeSource> profile_sources(const std::string& name, bool use_env) {
    LEASEHOLD_ASSIGN_OR_RETURN(MaybeSource web, web_identity(name, use_env));
    if (web) return web;
    namespace ci = credentials_internal;
    if (const auto it = config_.credentials.find(name); it != config_.credentials.end()) {
      LEASEHOLD_ASSIGN_OR_RETURN(std::optional<Credentials> keys,
                                 ci::static_keys(it->second, name, config_.credentials_path));
      if (keys) return MaybeSource(static_source(std::move(*keys)));
    }
    if (const ProfileSettings* p = config_.find(name); p && p->contains("credential_process")) {
      return MaybeSource(ci::refreshing_source(
          "credential_process of profile [" + name + "]",
          ci::process_fetch(p->at("credential_process"), name, options_), options_));
    }
    if (const auto it = config_.config.find(name); it != config_.config.end()) {
      LEASEHOLD_ASSIGN_OR_RETURN(std::optional<Credentials> keys,
                                 ci::static_keys(it->second, name, config_.config_path));
      if (keys) return MaybeSource(static_source(std::move(*keys)));
    }
    return MaybeSource();
  }

  // Each setting from its variable if `use_env` and set, else from the
  // profile (botocore's AssumeRoleWithWebIdentityProvider._get_config).
  Result<MaybeSource> web_identity(const std::string& name, bool use_env) {
    const ProfileSettings* p = config_.find(name);
    const auto get = [&](const char* variable, const char* key) -> std::string {
      if (use_env) {
        if (std::optional<std::string> v = env_(variable)) return *v;
      }
      return p != nullptr ? setting(*p, key) : std::string();
    };
    const std::string token_file = get("AWS_WEB_IDENTITY_TOKEN_FILE", "web_identity_token_file");
    if (token_file.empty()) return MaybeSource();
    credentials_internal::AssumeRoleParams params;
    params.role_arn = get("AWS_ROLE_ARN", "role_arn");
    params.role_session_name = get("AWS_ROLE_SESSION_NAME", "role_session_name");
    if (params.role_arn.empty()) {
      return invalid_argument("a web identity token file is set (profile [" + name +
                              "] or AWS_WEB_IDENTITY_TOKEN_FILE) but no role: set AWS_ROLE_ARN "
                              "or the profile's role_arn");
    }
    namespace ci = credentials_internal;
    return MaybeSource(ci::refreshing_source(
        "STS AssumeRoleWithWebIdentity for " + params.role_arn,
        ci::web_identity_fetch(ci::sts_endpoint(env_, region_), params, token_file, options_),
        options_));
  }

  // botocore's AssumeRoleProvider._load_creds_via_assume_role.
  Result<SourcePtr> assume_role(const std::string& name) {
    const ProfileSettings& p = *config_.find(name);
    const std::string source_profile = setting(p, "source_profile");
    const std::string credential_source = setting(p, "credential_source");
    const std::string where = "profile [" + name + "] of " + config_.config_path;
    if (!source_profile.empty() && !credential_source.empty()) {
      return invalid_argument(where + " has both source_profile and credential_source");
    }
    if (source_profile.empty() && credential_source.empty()) {
      return invalid_argument(where + " has role_arn but neither source_profile nor " +
                              "credential_source");
    }
    if (p.contains("mfa_serial")) {
      return invalid_argument(where + " has mfa_serial: leasehold cannot ask for an MFA code");
    }
    credentials_internal::AssumeRoleParams params;
    params.role_arn = setting(p, "role_arn");
    params.role_session_name = setting(p, "role_session_name");
    params.external_id = setting(p, "external_id");
    int seconds = 0;
    // botocore ignores a duration_seconds that is not a number; so does this.
    if (std::sscanf(setting(p, "duration_seconds").c_str(), "%d", &seconds) == 1) {
      params.duration_seconds = seconds;
    }
    SourcePtr source;
    if (!credential_source.empty()) {
      LEASEHOLD_ASSIGN_OR_RETURN(source, named_source(credential_source, name));
    } else {
      LEASEHOLD_ASSIGN_OR_RETURN(source, source_profile_credentials(name, source_profile));
    }
    namespace ci = credentials_internal;
    return ci::refreshing_source(
        "STS AssumeRole for profile [" + name + "]",
        ci::assume_role_fetch(ci::sts_endpoint(env_, region_), params, source, options_), options_);
  }

  // botocore's _validate_source_profile and _resolve_credentials_from_profile.
  Result<SourcePtr> source_profile_credentials(const std::string& parent, const std::string& name) {
    const ProfileSettings* p = config_.find(name);
    if (p == nullptr) {
      return invalid_argument("the source_profile [" + name + "] of profile [" + parent +
                              "] does not exist in " + file_names());
    }
    const bool seen = std::find(visited_.begin(), visited_.end(), name) != visited_.end();
    // A profile may name itself to take its own static keys; any other
    // return to a profile already visited is a cycle.
    if (seen && (name != parent || !has_static_keys(*p))) {
      std::string path;
      for (const std::string& v : visited_) path += "[" + v + "] -> ";
      return invalid_argument("source_profile cycle: " + path + "[" + name + "]");
    }
    visited_.push_back(name);
    if (has_static_keys(*p) || !has_role(*p)) {
      LEASEHOLD_ASSIGN_OR_RETURN(MaybeSource source, profile_sources(name, false));
      if (!source) {
        return invalid_argument("the source_profile [" + name + "] of profile [" + parent +
                                "] has no credentials");
      }
      return *source;
    }
    return assume_role(name);
  }

  // credential_source: botocore's CanonicalNameCredentialSourcer, with the
  // three names the SDKs document (case-insensitive).
  Result<SourcePtr> named_source(const std::string& name, const std::string& profile) {
    const std::string what = "the credential_source " + name + " of profile [" + profile + "]";
    const std::string canonical = credentials_internal::ascii_lower(name);
    if (canonical == "environment") {
      LEASEHOLD_ASSIGN_OR_RETURN(std::optional<Credentials> keys, from_env(env_));
      if (!keys) return unavailable(what + " found no AWS_ACCESS_KEY_ID");
      return static_source(std::move(*keys));
    }
    if (canonical == "ecscontainer") {
      LEASEHOLD_ASSIGN_OR_RETURN(MaybeSource source, container());
      if (!source) {
        return unavailable(what + " found no AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI");
      }
      return *source;
    }
    if (canonical == "ec2instancemetadata") {
      namespace ci = credentials_internal;
      LEASEHOLD_ASSIGN_OR_RETURN(std::optional<ci::CredentialsFetch> fetch,
                                 ci::imds_fetch(env_, options_));
      if (!fetch) return unavailable(what + ": AWS_EC2_METADATA_DISABLED is true");
      return ci::refreshing_source("EC2's instance metadata service", std::move(*fetch), options_);
    }
    return invalid_argument(what + " is not Environment, EcsContainer or Ec2InstanceMetadata");
  }

  Result<MaybeSource> container() {
    namespace ci = credentials_internal;
    LEASEHOLD_ASSIGN_OR_RETURN(std::optional<ci::CredentialsFetch> fetch,
                               ci::container_fetch(env_, options_));
    if (!fetch) return MaybeSource();
    return MaybeSource(
        ci::refreshing_source("the container credentials endpoint", std::move(*fetch), options_));
  }

  // The last source: asked now, since its silence is how the chain learns
  // that it is not on EC2.
  Result<SourcePtr> imds_probe() {
    namespace ci = credentials_internal;
    const std::string none = "no AWS credentials: AWS_ACCESS_KEY_ID is unset, profile [" +
                             config_.profile + "] has none in " + file_names() +
                             ", no container endpoint is set, and ";
    LEASEHOLD_ASSIGN_OR_RETURN(std::optional<ci::CredentialsFetch> fetch,
                               ci::imds_fetch(env_, options_));
    if (!fetch) return unavailable(none + "AWS_EC2_METADATA_DISABLED is true");
    Result<ExpiringCredentials> first = (*fetch)();
    if (!first.ok()) return unavailable(none + first.status().message());
    return ci::refreshing_source("EC2's instance metadata service", std::move(*fetch), options_,
                                 std::move(*first));
  }

  const EnvLookup& env_;
  const CredentialsOptions options_;
  const SharedConfig config_;
  std::string region_;  // for STS; may be empty (then its global endpoint)
  std::vector<std::string> visited_;
};

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
    const std::string_view line = credentials_internal::trim_blanks(text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty() || line.front() == '#' || line.front() == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']')
        return invalid_argument("malformed section header in credentials file");
      in_profile = credentials_internal::trim_blanks(line.substr(1, line.size() - 2)) == profile;
      seen_profile = seen_profile || in_profile;
      continue;
    }
    if (!in_profile) continue;
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;  // the SDKs ignore such lines too
    const std::string_view key = credentials_internal::trim_blanks(line.substr(0, eq));
    const std::string value(credentials_internal::trim_blanks(line.substr(eq + 1)));
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

Result<std::shared_ptr<CredentialsSource>> default_credentials(const EnvLookup& env,
                                                               CredentialsOptions options) {
  LEASEHOLD_ASSIGN_OR_RETURN(credentials_internal::SharedConfig config,
                             credentials_internal::load_shared_config(env));
  Chain chain(env, credentials_internal::with_clock(std::move(options)), std::move(config));
  return chain.resolve();
}

Result<std::optional<std::shared_ptr<CredentialsSource>>> container_credentials(
    const EnvLookup& env, CredentialsOptions options) {
  namespace ci = credentials_internal;
  options = ci::with_clock(std::move(options));
  LEASEHOLD_ASSIGN_OR_RETURN(std::optional<ci::CredentialsFetch> fetch,
                             ci::container_fetch(env, options));
  if (!fetch) return std::optional<std::shared_ptr<CredentialsSource>>();
  return std::optional<std::shared_ptr<CredentialsSource>>(
      ci::refreshing_source("the container credentials endpoint", std::move(*fetch), options));
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

namespace leasehold::aws::credentials_internal {

namespace {

// The decimal number of text[at, at + digits): digits only, no sign or
// blank (which sscanf's %d would take); -1 otherwise.
int field(std::string_view text, size_t at, size_t digits) {
  int value = 0;
  for (size_t i = at; i < at + digits; ++i) {
    if (text[i] < '0' || text[i] > '9') return -1;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

}  // namespace

std::optional<WallTime> parse_iso8601_utc(std::string_view text) {
  // "YYYY-MM-DDTHH:MM:SS", then optional ".fraction", then "Z" or "+00:00".
  // A field out of its range ("2026-13-01", "2026-02-30") is refused rather
  // than carried into the next, and so is a year a WallTime cannot hold
  // (nanoseconds from 1970 in int64 reach 1677 to 2262).
  if (text.size() < 20 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' ||
      text[16] != ':') {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = field(text, 0, 4);
  tm.tm_mon = field(text, 5, 2);
  tm.tm_mday = field(text, 8, 2);
  tm.tm_hour = field(text, 11, 2);
  tm.tm_min = field(text, 14, 2);
  tm.tm_sec = field(text, 17, 2);
  if (tm.tm_year < 1970 || tm.tm_year > 2200 || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 ||
      tm.tm_hour < 0 || tm.tm_hour > 23 || tm.tm_min < 0 || tm.tm_min > 59 || tm.tm_sec < 0 ||
      tm.tm_sec > 59) {
    return std::nullopt;
  }
  const std::tm given = tm;
  std::string_view rest = text.substr(19);
  std::chrono::nanoseconds fraction{0};
  if (!rest.empty() && rest.front() == '.') {
    rest.remove_prefix(1);
    int64_t scale = 100'000'000;
    size_t digits = 0;
    while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') {
      fraction += std::chrono::nanoseconds((rest[digits] - '0') * scale);
      scale /= 10;
      ++digits;
    }
    if (digits == 0) return std::nullopt;
    rest.remove_prefix(digits);
  }
  if (rest != "Z" && rest != "+00:00") return std::nullopt;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  const time_t t = timegm(&tm);
  // timegm() normalises a day past its month's end into the next month.
  if (t == static_cast<time_t>(-1) || tm.tm_mday != given.tm_mday) return std::nullopt;
  return WallTime(std::chrono::seconds(t)) +
         std::chrono::duration_cast<WallTime::duration>(fraction);
}

}  // namespace leasehold::aws::credentials_internal
