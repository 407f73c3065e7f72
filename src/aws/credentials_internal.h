// The parts of the credentials chain (credentials.h) that its sources share,
// exposed for the chain and for tests: the shared config and credentials
// files, the cache that refreshes credentials ahead of their expiry without
// making callers wait, and one function per source that fetches them (the
// container endpoint, EC2's instance metadata service, STS and
// credential_process). Nothing here is meant for the clients: they take a
// CredentialsSource from default_credentials().
//
// Secrets never appear in a Status: errors name a variable, a file, a
// profile, an HTTP status or an AWS error code, never a value read from a
// source. Functions are thread-safe; a CredentialsFetch may be called from
// any one thread at a time.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aws/credentials.h"

namespace leasehold::aws::credentials_internal {

// Credentials and, for temporary ones, when they stop working.
struct ExpiringCredentials {
  Credentials credentials;
  std::optional<WallTime> expires;  // nullopt: they do not expire
};

// Gets a fresh set from one source (a network call, a file, a process).
using CredentialsFetch = std::function<Result<ExpiringCredentials>()>;

// A source that holds the credentials `fetch` gave and fetches new ones as
// they near expiry, as the AWS SDKs do (botocore's RefreshableCredentials):
// inside options.advisory_refresh of the expiry a get() returns the current
// credentials at once and asks a background thread to fetch; inside
// options.mandatory_refresh (or once they expired, or before the first
// fetch) callers wait for that fetch, one fetch for all of them. A failed
// fetch leaves the current credentials in use until they expire, and no new
// fetch starts for options.retry_after_failure, so a dead endpoint is asked
// at most once per that interval. `first`, when given, is served until it
// nears expiry (the chain probed the source to choose it). `what` names the
// source in errors.
std::shared_ptr<CredentialsSource> refreshing_source(std::string what, CredentialsFetch fetch,
                                                     const CredentialsOptions& options,
                                                     std::optional<ExpiringCredentials> first = {});

// ---------------------------------------------------------------- files

// One profile's settings, by key ("aws_access_key_id", "role_arn", ...).
using ProfileSettings = std::map<std::string, std::string>;

// The profiles of one INI file as botocore reads it: "[name]" sections with
// "key = value" lines, "#" and ";" comment lines. In a config file
// (`config_file`), a profile's section is "[profile name]" but for
// "[default]", and sections of other kinds ("[sso-session x]",
// "[services x]", "[preview]") are not profiles. Indented lines under a key
// with an empty value (a sub-section, "s3 =\n  addressing_style = path") are
// skipped. kInvalidArgument for a line that is neither a section, a setting
// nor a comment.
Result<std::map<std::string, ProfileSettings>> parse_profiles(std::string_view text,
                                                              bool config_file);

// The shared config file (AWS_CONFIG_FILE, else ~/.aws/config) merged with
// the shared credentials file (AWS_SHARED_CREDENTIALS_FILE, else
// ~/.aws/credentials), the latter winning key by key as in botocore's
// Session.full_config; and the profile in use (AWS_PROFILE, else
// "default"). A file that does not exist is empty; one that cannot be
// parsed is kInvalidArgument.
struct SharedConfig {
  std::string profile;
  std::string config_path;                             // empty when no HOME and no AWS_CONFIG_FILE
  std::string credentials_path;                        // likewise
  std::map<std::string, ProfileSettings> profiles;     // merged
  std::map<std::string, ProfileSettings> credentials;  // the credentials file's alone
  std::map<std::string, ProfileSettings> config;       // the config file's alone
  const ProfileSettings* find(const std::string& name) const;
};
Result<SharedConfig> load_shared_config(const EnvLookup& env);

// Static keys (aws_access_key_id, aws_secret_access_key, aws_session_token)
// of one profile; nullopt when it has no aws_access_key_id; kInvalidArgument
// when it has one without the secret. `where` names the file in errors.
Result<std::optional<Credentials>> static_keys(const ProfileSettings& profile,
                                               std::string_view profile_name,
                                               std::string_view where);

// ---------------------------------------------------------------- wire formats

// "2026-11-29T21:00:00Z", with optional fractional seconds
// ("...:00.123Z") and "+00:00" for "Z", as STS, IMDS, the container
// endpoint and credential_process write it.
std::optional<WallTime> parse_iso8601_utc(std::string_view text);

// A credential_process's standard output (JSON, "Version": 1). An error
// never quotes the output, which holds the secret.
Result<ExpiringCredentials> parse_process_output(std::string_view json);

// A command line split into words as POSIX shells and Python's shlex.split
// (which botocore uses) do: blanks separate, '...' and "..." quote, a
// backslash escapes. kInvalidArgument for an unclosed quote.
Result<std::vector<std::string>> split_command(std::string_view command);

// The credentials in a container endpoint's or IMDS's JSON answer, the
// session token under `token_field` ("Token"). kUnavailable, naming the
// endpoint as `what` and never quoting the body, for anything else.
Result<ExpiringCredentials> parse_credentials_json(std::string_view body, const std::string& what,
                                                   const char* token_field);

// The <Credentials> of an STS AssumeRole or AssumeRoleWithWebIdentity reply
// (HTTP 200), or the <Error>'s Code and Message of any other.
Result<ExpiringCredentials> parse_sts_reply(int http_status, std::string_view body,
                                            std::string_view action);

// ---------------------------------------------------------------- sources

// The instance metadata service of EC2 (IMDSv2: a session token, then the
// role, then its credentials), at AWS_EC2_METADATA_SERVICE_ENDPOINT or, by
// AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE, http://169.254.169.254 or
// http://[fd00:ec2::254]. nullopt when AWS_EC2_METADATA_DISABLED is "true".
Result<std::optional<CredentialsFetch>> imds_fetch(const EnvLookup& env,
                                                   const CredentialsOptions& options);

// The container endpoint (ECS, Fargate, EKS Pod Identity); nullopt when
// neither AWS_CONTAINER_CREDENTIALS_RELATIVE_URI nor _FULL_URI is set.
Result<std::optional<CredentialsFetch>> container_fetch(const EnvLookup& env,
                                                        const CredentialsOptions& options);

// Runs `command` (a profile's credential_process) and reads its output.
CredentialsFetch process_fetch(std::string command, std::string profile,
                               const CredentialsOptions& options);

// Where and how STS is called.
struct StsEndpoint {
  std::string url;     // "https://sts.eu-west-1.amazonaws.com"
  std::string region;  // the region AssumeRole is signed for
};

// AWS_ENDPOINT_URL_STS, else AWS_ENDPOINT_URL (unless
// AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is "true"), else STS's regional
// endpoint for `region`, else (no region) the global one, as botocore.
StsEndpoint sts_endpoint(const EnvLookup& env, const std::string& region);

// What an AssumeRole call asks for (a profile's role_arn, role_session_name,
// external_id and duration_seconds).
struct AssumeRoleParams {
  std::string role_arn;
  std::string role_session_name;  // empty: "leasehold-session-<unix seconds>"
  std::string external_id;        // empty: not sent
  std::optional<int> duration_seconds;
};

// STS AssumeRole, signed with the credentials `source` gives at each fetch.
CredentialsFetch assume_role_fetch(StsEndpoint endpoint, AssumeRoleParams params,
                                   std::shared_ptr<CredentialsSource> source,
                                   const CredentialsOptions& options);

// STS AssumeRoleWithWebIdentity, unsigned, with the token read anew from
// `token_file` at each fetch (the orchestrator rotates it).
CredentialsFetch web_identity_fetch(StsEndpoint endpoint, AssumeRoleParams params,
                                    std::string token_file, const CredentialsOptions& options);

// ---------------------------------------------------------------- helpers

// `s` in lower case (ASCII).
std::string ascii_lower(std::string_view s);

// `s` without leading and trailing spaces, tabs and carriage returns.
std::string_view trim_blanks(std::string_view s);

// True when the variable `name` is "true", in any case (botocore's
// ensure_boolean for the variables it reads as flags).
bool env_true(const EnvLookup& env, const char* name);

// `options` with a RealClock when it names no clock.
CredentialsOptions with_clock(CredentialsOptions options);

}  // namespace leasehold::aws::credentials_internal
