// JsonClient: requests to an AWS service that speaks the JSON protocol (SQS:
// `X-Amz-Target: AmazonSQS.<Operation>`, a JSON body, a JSON reply), signed
// with SigV4 and sent through net::HttpClient.
//
// A request is sent again, as base/retry.h's policy (the AWS SDKs' standard
// mode) allows, while sending it again cannot do harm: when nothing reached
// the service (the connection failed) or the service throttled it
// (aws/retries.h's codes), and, for a request the caller marks idempotent,
// after a transient error (HTTP 500, 502, 503, 504) or a lost reply too. A
// request that is not idempotent and may have been applied (any 5xx, a lost
// reply) is not sent again: the caller gets kUnknownOutcome. A request the
// service refused for a signature too far from its own time is signed again
// at once with the service's time, which the client keeps for its later
// requests (aws::ClockSkew). An error the service answered with becomes a
// Status whose message names the operation and the service's error code
// ("SendMessage: QueueDoesNotExist: ... (AWS request ID ...)", the ID from
// the reply's x-amzn-RequestId, which AWS support asks for), its code chosen
// by the caller's rules (JsonClientOptions::errors), else kInvalidArgument
// for a 4xx and kUnavailable for a 5xx; `aws_code`, when given, gets the
// service's code.
//
// Messages never carry credentials, signatures or request bodies.
// Thread-safe: many threads may call at once (the HTTP pool bounds them),
// and share one retry quota.
#pragma once

#include <boost/json/object.hpp>
#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "aws/credentials.h"
#include "base/retry.h"
#include "leasehold/clock.h"
#include "leasehold/random.h"
#include "leasehold/status.h"

namespace leasehold::aws {

// What a service error code means to the caller.
struct JsonErrorRule {
  std::string_view aws_code;  // "QueueDoesNotExist", as in the reply's __type
  Code code;
};

struct JsonClientOptions {
  std::string service = {};        // the signing name and endpoint prefix: "sqs"
  std::string target_prefix = {};  // "AmazonSQS."
  std::string region = {};         // "eu-west-1"
  // "http://127.0.0.1:4566" for an emulator; empty: the service's own
  // https://<service>.<region>.amazonaws.com.
  std::string endpoint = {};
  // Null: default_credentials(process_env()), read when the client opens.
  std::shared_ptr<CredentialsSource> credentials = {};
  // Null: the system clock and SystemRandom; else they outlive the client.
  // The pauses between attempts are waited on the clock.
  Clock* clock = nullptr;
  Random* random = nullptr;
  std::span<const JsonErrorRule> errors = {};
  Duration request_timeout = std::chrono::seconds(10);  // each attempt's
  RetryOptions retry = {};
  size_t connections_max = 16;
};

class JsonClient {
 public:
  // kInvalidArgument for a bad region, endpoint or option (retry among
  // them: validate_retry_options()); the credentials chain's errors.
  static Result<std::unique_ptr<JsonClient>> open(JsonClientOptions options);
  ~JsonClient();

  // Sends operation `op` with `body` and returns the reply's object. `extra`
  // is added to each attempt's timeout: the time a long poll may wait. On a
  // service error, *aws_code (if given) is its code ("QueueDoesNotExist");
  // else it is left empty.
  Result<boost::json::object> call(std::string_view op, const boost::json::object& body,
                                   bool idempotent, Duration extra = Duration::zero(),
                                   std::string* aws_code = nullptr);

  const JsonClientOptions& options() const;

 private:
  struct Impl;
  explicit JsonClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace leasehold::aws
