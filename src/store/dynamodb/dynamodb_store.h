// DynamoDbStore: the item store on Amazon DynamoDB (or dynalite), through
// DynamoDB's JSON 1.0 HTTP API, every request signed with SigV4.
//
// A logical table "T" is the DynamoDB table PREFIX + "T", so several
// deployments (or tests) share one account without seeing each other's
// tables. Key attributes are strings (S); index range attributes are S or N.
// Tables are created PAY_PER_REQUEST with every index a GSI (projecting
// what its IndexSpec says). The schema of a table this process did not
// create is read once with DescribeTable and cached, with its stream, so a
// table made by another process just works.
//
// Change feeds: a table whose spec asks for one (TableSpec::change_feed) is
// created with a stream of NEW_AND_OLD_IMAGES, and ensure_table() turns one
// on for an existing table that has none (a stream of another view type is
// kInvalidArgument; a table whose spec does not ask is left as it is).
// change_feed() reads it through the DynamoDB Streams API (JSON 1.0, signed
// as "dynamodb" with the same credentials), on
// https://streams.dynamodb.REGION.amazonaws.com, or on the endpoint given
// in the options, which serves both APIs. Its requests are reads: retried
// and mapped as the others (an expired position is kFailedPrecondition,
// trimmed records kNotFound). An endpoint without the Streams API
// (dynalite, which drops CreateTable's StreamSpecification) keeps no feeds:
// ensure_table() leaves its tables as they are and change_feed() is null.
// require_table() turns nothing on: where the stream its spec asks for is
// missing, change_feed() is null, as on a backend without feeds.
//
// Every input is validated with store/eval.h before anything is sent, so bad
// input fails exactly as on the other backends. A request is sent again, as
// base/retry.h's policy allows (the AWS SDKs' standard mode: a pause with
// full jitter, longer after throttling, within a retry quota; 4 attempts at
// most by default), only when that cannot apply it twice: a read after
// throttling, a 5xx or a lost reply; a write (PutItem, UpdateItem,
// DeleteItem) only after throttling or when it was never sent. DynamoDB
// documents that a write answered with a 5xx may have applied, so such a
// write, like one whose reply never came or whose error is unknown, is
// kUnknownOutcome and never resent; a write that gives up is kUnavailable, as
// none of its attempts applied. ConditionalCheckFailed and refused
// credentials are never retried; a request refused for a signature too far
// from DynamoDB's time ("Signature expired", "Signature not yet current") is
// signed again at once with DynamoDB's time, which the store keeps for its
// later requests (aws::ClockSkew in aws/retries.h). update_each() honours its
// timeout (update() and the rest have none): each attempt waits at most the
// time left, no pause runs past it, and no write is sent after it. Error
// messages carry DynamoDB's exception name and message, and AWS's ID of the
// request (x-amzn-RequestId) for every error DynamoDB answered but a failed
// condition; never credentials or item values.
//
// A DynamoDbStore, and each of its feeds, is safe for concurrent use by many
// threads (the HTTP clients pool connections; the schema cache and the feeds
// have a mutex). Every call blocks its caller until DynamoDB answers or the
// call gives up.
//
// Threads: no call starts one. A store owns, for its whole life, at most
// parallel_writes - 1 writers (update_each() spreads its writes over its
// caller and them; they start with the first update_each() of more than one
// write), and, when the endpoint is a host name rather than an IP literal,
// the one thread on which its HTTP client resolves names (net/http_client.h).
// On AWS, DynamoDB Streams has a client of its own, whose resolver thread
// starts with the first request of a change feed. Credentials from the
// container endpoint have an HTTP client of their own, with a resolver
// thread only if AWS_CONTAINER_CREDENTIALS_FULL_URI names a host. So with
// the defaults a process with one store on AWS has 16 threads of the
// store's (17 once it has read a change feed), and one on dynalite or
// DynamoDB Local (127.0.0.1) 15.
#pragma once

#include <memory>
#include <string>

#include "aws/credentials.h"
#include "aws/sigv4.h"
#include "base/retry.h"
#include "leasehold/clock.h"
#include "leasehold/random.h"
#include "leasehold/store.h"

namespace leasehold::store::dynamodb {

// The most writes update_each() runs at once, and so the most writer threads
// (one less) a store owns.
inline constexpr int kParallelWritesMax = 64;

struct DynamoDbOptions {
  std::string region;        // e.g. "us-east-1"; required
  std::string table_prefix;  // [A-Za-z0-9_.-]+, prepended to every table name
  // "http://127.0.0.1:8000" (loopback only) or "https://..."; empty means
  // https://dynamodb.REGION.amazonaws.com.
  std::string endpoint;
  // Static credentials, or (when set) a source asked before every request.
  aws::Credentials credentials;
  std::shared_ptr<aws::CredentialsSource> credentials_source;

  // Each attempt's bound (and less when update_each() has less time left).
  Duration request_timeout = std::chrono::seconds(10);
  // How long ensure_table() waits for a new table or index to become ACTIVE.
  Duration table_active_timeout = std::chrono::minutes(5);
  // When a failed request is sent again (see above). The standard mode's,
  // but for 4 attempts rather than 3, as botocore gives DynamoDB and DynamoDB
  // Streams (botocore/retries/standard.py, _SERVICE_MAX_ATTEMPTS): a lease
  // operation is cheap, and a throttled one is worth a third retry within its
  // deadline.
  RetryOptions retry = {.attempts_max = 4};
  // update_each() runs up to this many writes at once (DynamoDB has no
  // conditional batch write): a heartbeat round of N leases then takes about
  // N / parallel_writes round trips instead of N. The caller is one writer,
  // the store's threads the others. Clamped to 1..kParallelWritesMax.
  int parallel_writes = 16;

  // Injected services; null means RealClock / SystemRandom. Not owned; must
  // outlive the store. Every pause (between attempts, while a table is being
  // created) is waited on the clock.
  Clock* clock = nullptr;
  Random* random = nullptr;
};

// Fails with kInvalidArgument for a missing region, a malformed prefix or
// endpoint, bad retry options, or missing credentials. Sends nothing: the
// first request finds out whether DynamoDB is reachable.
Result<std::unique_ptr<ItemStore>> open_dynamodb_store(DynamoDbOptions options);

// The region, table prefix, endpoint and table wait of
// "dynamodb://REGION/TABLE_PREFIX[?endpoint=URL][&table_wait=DURATION]"
// (`rest` is what follows "dynamodb:"); nothing else is set. Only the URI's
// form is checked: open_dynamodb_store() checks the rest.
Result<DynamoDbOptions> parse_dynamodb_uri(std::string_view rest);

// The options open_dynamodb_store_from_uri() opens, but for the credentials:
// parse_dynamodb_uri()'s, and, when the URI names no endpoint, the one the
// environment configures for DynamoDB (aws::configured_endpoint(env,
// "DYNAMODB"): AWS_ENDPOINT_URL_DYNAMODB, else AWS_ENDPOINT_URL), as the
// AWS SDKs read it; without either, AWS's own. Checked as
// open_dynamodb_store() checks them; a configured endpoint it refuses is
// kInvalidArgument naming the variables.
Result<DynamoDbOptions> dynamodb_options_from_uri(std::string_view rest, const aws::EnvLookup& env);

// The CreateTable request (its JSON body) that ensure_table() sends to make
// `spec` as the table `table_name` (the store's prefix + spec.name): what
// `leasehold store schema` shows, so that a deployment that makes the tables
// itself (deploy/aws) makes them exactly so. kInvalidArgument for a spec
// whose key attributes disagree on a type.
Result<std::string> create_table_request(const TableSpec& spec, const std::string& table_name);

// Checks the URI (and the endpoint `env` configures) as
// open_dynamodb_store_from_uri() does, with the same errors, but for the
// credentials (which are not part of it); builds nothing and sends nothing.
Status validate_dynamodb_uri(std::string_view rest, const aws::EnvLookup& env);

// "dynamodb://REGION/TABLE_PREFIX?endpoint=URL": `rest` is what follows
// "dynamodb:". The endpoint as dynamodb_options_from_uri() finds it, the
// credentials from default_credentials(env). open_store() passes
// aws::process_env().
Result<std::unique_ptr<ItemStore>> open_dynamodb_store_from_uri(std::string_view rest,
                                                                const aws::EnvLookup& env);

}  // namespace leasehold::store::dynamodb
