// AWS credentials for the DynamoDB backend, found the way the AWS SDKs find
// them: the environment variables AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and
// AWS_SESSION_TOKEN first, then the shared credentials file
// (AWS_SHARED_CREDENTIALS_FILE, or ~/.aws/credentials) with the profile named
// by AWS_PROFILE (or "default"). The ECS/Fargate container endpoint is not
// supported yet.
//
// Secrets never appear in a Status message: errors name the variable, the
// file, the profile or the line number, never a value. The environment is
// read through an injected lookup so that tests do not touch the process
// environment. All functions are thread-safe if the lookup is.
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

// Credentials from the environment, else from the shared credentials file.
// kUnavailable when neither has any (the message says where it looked);
// kInvalidArgument for a half-set pair (an access key id without a secret)
// or a malformed file.
Result<Credentials> load_credentials(const EnvLookup& env);

// The profile `profile` of a shared credentials file's text (INI:
// "[name]" sections, "key = value" lines, "#" and ";" comments).
// kNotFound when the profile or its keys are missing.
Result<Credentials> parse_shared_credentials(std::string_view text, std::string_view profile);

// Where a store gets the credentials for each request. Thread-safe.
class CredentialsSource {
 public:
  virtual ~CredentialsSource() = default;
  // Credentials valid now, or kUnavailable. Never puts a secret in a Status.
  virtual Result<Credentials> get() = 0;
};

// The container credentials endpoint of ECS, Fargate and EKS Pod Identity:
// AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (on http://169.254.170.2) or
// AWS_CONTAINER_CREDENTIALS_FULL_URI (plain HTTP only to loopback,
// 169.254.170.2 or 169.254.170.23), with the token in
// AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE or AWS_CONTAINER_AUTHORIZATION_TOKEN
// sent as Authorization. Credentials are fetched on first use and again
// `refresh_before` ahead of their Expiration; if a refresh fails, the old
// ones serve until they expire. nullopt if neither variable is set.
// `clock` null means the system clock; else it must outlive the source.
Result<std::optional<std::shared_ptr<CredentialsSource>>> container_credentials(
    const EnvLookup& env, Clock* clock = nullptr,
    Duration refresh_before = std::chrono::minutes(5));

// True for an AWS service's error code saying that it refused the
// credentials (unknown key, bad signature, expired token): nothing was done,
// and sending the same request again cannot help. The codes of the JSON
// services (SQS) and of S3.
bool credentials_refused(std::string_view aws_error_code);

// The order of the AWS SDKs: environment variables, the shared credentials
// file and profile, then the container endpoint.
Result<std::shared_ptr<CredentialsSource>> default_credentials(const EnvLookup& env);

}  // namespace leasehold::aws
