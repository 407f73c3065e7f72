// AWS credentials for the DynamoDB, SQS and S3 clients, found the way the
// AWS SDKs find them, in botocore's order (botocore/credentials.py,
// create_credential_resolver; the AWS SDKs and Tools Reference Guide,
// "Standardized credential providers"):
//
//   1. the environment: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
//      AWS_SESSION_TOKEN (or AWS_SECURITY_TOKEN);
//   2. assume role: the profile's role_arn with source_profile (itself
//      resolved the same way, profile after profile, a cycle refused) or
//      credential_source (Environment, Ec2InstanceMetadata, EcsContainer),
//      through STS AssumeRole;
//   3. web identity: AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN (and
//      AWS_ROLE_SESSION_NAME), or the profile's web_identity_token_file and
//      role_arn, through STS AssumeRoleWithWebIdentity;
//   4. the shared credentials file's profile (AWS_SHARED_CREDENTIALS_FILE,
//      else ~/.aws/credentials);
//   5. the profile's credential_process, a command whose output (JSON,
//      Version 1) holds the credentials;
//   6. the shared config file's profile (AWS_CONFIG_FILE, else
//      ~/.aws/config, "[profile NAME]" sections), static keys;
//   7. the container endpoint of ECS, Fargate and EKS Pod Identity;
//   8. EC2's instance metadata service (IMDSv2).
//
// The profile is AWS_PROFILE, else "default". Each source is chosen by its
// configuration alone, as botocore chooses: a source that is configured but
// fails gives its error rather than passing to the next, except EC2's
// metadata service, which is asked at once (with a 1 s timeout) only when
// nothing else is configured, and whose silence means "no credentials".
//
// Temporary credentials are refreshed ahead of their expiry without making
// callers wait (CredentialsOptions). Secrets never appear in a Status
// message, a log line or an exception: errors name the variable, the file,
// the profile, the HTTP status or STS's error code, never a value. The
// environment is read through an injected lookup so that tests do not touch
// the process environment. Every function and every source is thread-safe
// if the lookup is.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "aws/sigv4.h"
#include "leasehold/clock.h"
#include "leasehold/status.h"

namespace leasehold::aws {

// Returns the value of an environment variable, or nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;

// The process environment (std::getenv).
EnvLookup process_env();

// How the chain fetches and refreshes. The defaults are botocore's.
struct CredentialsOptions {
  // Shared by every source of the chain and their refresh threads, which
  // may outlive the caller's scope. Null: a RealClock.
  std::shared_ptr<Clock> clock;
  // Inside this much of the expiry, a get() starts a refresh in the
  // background and returns the current credentials at once
  // (botocore's _DEFAULT_ADVISORY_REFRESH_TIMEOUT).
  Duration advisory_refresh = std::chrono::minutes(15);
  // Inside this much of the expiry, a get() waits for the refresh
  // (botocore's _DEFAULT_MANDATORY_REFRESH_TIMEOUT). Both windows shrink
  // for short-lived credentials, to a half and a quarter of their lifetime,
  // so that a 15-minute session is not refreshed again at once.
  Duration mandatory_refresh = std::chrono::minutes(10);
  // After a failed fetch, no new one starts for this long.
  Duration retry_after_failure = std::chrono::seconds(1);
  // EC2's metadata service: each request's timeout and attempts (botocore's
  // metadata_service_timeout and _num_attempts, also read from
  // AWS_METADATA_SERVICE_TIMEOUT and AWS_METADATA_SERVICE_NUM_ATTEMPTS).
  Duration imds_timeout = std::chrono::seconds(1);
  int imds_attempts = 1;
  // The container endpoint: each request's timeout, attempts and the pause
  // between them (botocore's ContainerMetadataFetcher).
  Duration container_timeout = std::chrono::seconds(2);
  int container_attempts = 3;
  Duration container_retry_pause = std::chrono::seconds(1);
  // One STS request.
  Duration sts_timeout = std::chrono::seconds(10);
  // A credential_process must have written its output and exited by then;
  // it is killed otherwise.
  Duration process_timeout = std::chrono::minutes(1);
};

// Where a client gets the credentials for each request. Thread-safe.
class CredentialsSource {
 public:
  virtual ~CredentialsSource() = default;
  // Credentials valid now, or why not: kUnavailable (the source did not
  // answer, or not usably), kUnauthenticated (it refused, e.g. STS's
  // AccessDenied), kInvalidArgument (it answered what its protocol does not
  // allow, e.g. a credential_process's output without Version 1). Never puts
  // a secret in a Status.
  virtual Result<Credentials> get() = 0;
};

// The chain above. kUnavailable when no source is configured and EC2's
// metadata service does not answer (the message says where it looked);
// kInvalidArgument for a half-set pair (an access key id without a
// secret), a malformed file, a profile that names a missing source_profile,
// a cycle of profiles, an unknown credential_source, or an endpoint that is
// not allowed.
Result<std::shared_ptr<CredentialsSource>> default_credentials(const EnvLookup& env,
                                                               CredentialsOptions options = {});

// The environment, else the shared credentials file (steps 1 and 4 alone):
// what needs no network and no process. kUnavailable when neither has any;
// kInvalidArgument for a half-set pair or a malformed file.
Result<Credentials> load_credentials(const EnvLookup& env);

// The profile `profile` of a shared credentials file's text (INI:
// "[name]" sections, "key = value" lines, "#" and ";" comments).
// kNotFound when the profile or its keys are missing.
Result<Credentials> parse_shared_credentials(std::string_view text, std::string_view profile);

// The container credentials endpoint of ECS, Fargate and EKS Pod Identity
// alone (step 7): AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (on
// http://169.254.170.2) or AWS_CONTAINER_CREDENTIALS_FULL_URI (plain HTTP
// only to loopback, 169.254.170.2, 169.254.170.23 or [fd00:ec2::23]), with
// the token in AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE (read anew at each
// fetch) or AWS_CONTAINER_AUTHORIZATION_TOKEN sent as Authorization. Fetched
// on first use and refreshed as CredentialsOptions says. nullopt if neither
// variable is set.
Result<std::optional<std::shared_ptr<CredentialsSource>>> container_credentials(
    const EnvLookup& env, CredentialsOptions options = {});

// The region the clients should use: AWS_REGION, else AWS_DEFAULT_REGION,
// else the profile's `region` in the shared config file (AWS_CONFIG_FILE,
// ~/.aws/config; profile AWS_PROFILE or "default"). kFailedPrecondition
// when none is set, naming where it looked: an AWS request signed for a
// guessed region fails later, and less clearly. kInvalidArgument for a
// malformed config file or a region that is not a region name.
Result<std::string> resolve_region(const EnvLookup& env);

// The endpoint an operator configured for one AWS service, as the AWS CLI
// and botocore read it (the AWS SDKs and Tools Reference Guide,
// "Service-specific endpoints"): AWS_ENDPOINT_URL_<SERVICE> (`service` as the
// variable names it: "STS", "DYNAMODB", "SQS", "S3"), else AWS_ENDPOINT_URL;
// neither when AWS_IGNORE_CONFIGURED_ENDPOINT_URLS is "true". nullopt when
// none is set: the service's own endpoint. The value is not checked here;
// each client checks it as it checks an endpoint given any other way.
std::optional<std::string> configured_endpoint(const EnvLookup& env, std::string_view service);

// True for an AWS service's error code saying that it refused the
// credentials (unknown key, bad signature, expired token): nothing was done,
// and sending the same request again cannot help. The codes of the JSON
// services (SQS) and of S3.
bool credentials_refused(std::string_view aws_error_code);

}  // namespace leasehold::aws
