// SqsQueue: the job queue (include/leasehold/queue.h) on Amazon SQS, through
// SQS's JSON protocol, SigV4 and the credentials chain of aws/ (no AWS SDK).
//
// One SqsQueue is one standard SQS queue and its dead-letter queue
// ("<name>-dead" unless named), joined by the queue's redrive policy:
// SqsQueue::create() makes both, idempotently, and sets the policy
// (`maxReceiveCount` = max_receives). SQS itself counts deliveries and moves
// a message out of deliveries to the dead-letter queue.
//
// It keeps the Queue contract with these differences, which SQS imposes:
// - Visibility is in whole seconds: a visibility is rounded up to the next
//   second, and visible_at_ms says so.
// - A receive may wait for messages (long polling, receive_wait, at most
//   20 s), and even a receive that waits returns fewer messages than are
//   visible when SQS samples few of its servers; never a message twice
//   within one visibility window.
// - A stale receipt (the message was delivered again since) is not told
//   apart: remove() answers OK and SQS keeps the message, which comes back
//   at the end of its current visibility; remove() of a message removed
//   already answers OK too. extend_visibility() of a stale receipt is
//   kFailedPrecondition, as SQS reports it (InvalidParameterValue naming
//   the ReceiptHandle, or MessageNotInflight). A receipt whose visibility
//   ended but whose message no one received since may still answer OK:
//   what a job's holder may do rests on the job's own claim, not on the
//   receipt.
// - Message IDs are SQS's (UUIDs), written as 32 hex digits. Receipts are
//   "<id>.<SQS receipt handle>".
// - Dead letters are listed by receiving them without hiding them (SQS has
//   no other way to read a queue): list_dead() gives up to 10 at a time,
//   roughly oldest first, with no cursor (a cursor is kInvalidArgument), and
//   dead_at_ms is 0 (SQS does not record when). count_dead() is SQS's
//   approximate count. redrive() and remove_dead() look for the message
//   through at most kDeadScanMax dead letters; redrive() sends a copy to the
//   queue (a new ID) and then removes the dead letter.
// - A send whose reply is lost is kUnknownOutcome; a receive whose reply is
//   lost delivers its messages to no one, and they come back at the end of
//   that delivery's visibility, as with every queue here.
// - SQS refusing the deployment once the queue is open (credentials refused
//   or expired, access denied, the queue deleted, a region mismatch, any
//   other 4xx) is kUnavailable, "queue unavailable: ...", with SQS's code and
//   AWS's request ID in the message, which is for the log: the Queue's
//   callers can only try again later. open() and create(), which an operator
//   runs, keep SQS's own codes.
//
// Thread-safe: many threads may use one SqsQueue.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "aws/credentials.h"
#include "aws/json_client.h"
#include "leasehold/clock.h"
#include "leasehold/queue.h"
#include "leasehold/status.h"

namespace leasehold::sqs {

// SQS's own limits on a queue name, and the longest long poll.
inline constexpr size_t kSqsQueueNameBytesMax = 80;
inline constexpr Duration kReceiveWaitMax = std::chrono::seconds(20);
// Dead letters redrive() and remove_dead() look through for one ID.
inline constexpr int kDeadScanMax = 1000;
// How long a dead-letter queue keeps its messages: as long as SQS keeps
// anything, 14 days.
inline constexpr int64_t kDeadLetterRetentionSeconds = 14 * 24 * 3600;

struct SqsQueueOptions {
  std::string region = {};      // "eu-west-1"
  std::string queue_name = {};  // 1..80 of [A-Za-z0-9_-]
  // Empty: "<queue_name>-dead".
  std::string dead_queue_name = {};
  // "http://127.0.0.1:4566" for an emulator; empty: SQS's own endpoint.
  std::string endpoint = {};
  // How long a receive waits for a message when none is visible (long
  // polling): 0..kReceiveWaitMax. Longer waits mean fewer (billed) requests
  // from an idle receiver.
  Duration receive_wait = Duration::zero();
  // Null: the credentials chain (aws/credentials.h), read at open.
  std::shared_ptr<aws::CredentialsSource> credentials = {};
  Clock* clock = nullptr;  // null: the system clock; else outlives the queue
  Duration request_timeout = std::chrono::seconds(10);
  // When a request is sent again (aws/json_client.h): the AWS SDKs' standard
  // mode, 3 attempts at most.
  RetryOptions retry = {};
};

class SqsQueue final : public Queue {
 public:
  // Looks the two queues up. kNotFound, naming the one missing and the
  // command that creates it, if either does not exist; kInvalidArgument for
  // bad options; kUnavailable if SQS does not answer.
  static Result<std::unique_ptr<SqsQueue>> open(SqsQueueOptions options);

  // Creates the queue and its dead-letter queue if they do not exist, and
  // sets the queue's redrive policy to move a message to the dead-letter
  // queue after `max_receives` deliveries (1..kMaxReceivesMax). Idempotent:
  // a second call with the same arguments changes nothing.
  static Status create(const SqsQueueOptions& options, int max_receives);

  Result<std::string> send(std::string_view body) override;
  Result<std::vector<Message>> receive(int max, Duration visibility) override;
  Status remove(std::string_view receipt) override;
  Result<int64_t> extend_visibility(std::string_view receipt, Duration visibility) override;
  Result<DeadLetterPage> list_dead(int limit, std::string_view cursor) override;
  Result<int64_t> count_dead(int64_t max) override;
  Status redrive(std::string_view id) override;
  Status remove_dead(std::string_view id) override;

  const SqsQueueOptions& options() const { return options_; }

 private:
  struct Found;
  SqsQueue(SqsQueueOptions options, std::unique_ptr<aws::JsonClient> client, std::string url,
           std::string dead_url);

  Result<std::vector<Message>> receive_from(const std::string& url, int max, int visibility_s,
                                            int wait_s);
  Result<Found> find_dead(std::string_view id);
  Status release(const std::string& url, const std::vector<std::string>& handles);
  // DeleteMessage of the message a receipt of ours names, on queue `url`.
  Status delete_message(const std::string& url, std::string_view receipt);
  // client_->call(), a refusal that is the deployment's made kUnavailable.
  Result<boost::json::object> call(std::string_view op, const boost::json::object& body,
                                   bool idempotent, Duration extra = Duration::zero());
  std::string context(std::string_view op) const;

  const SqsQueueOptions options_;
  RealClock real_clock_;
  Clock& clock_;
  std::unique_ptr<aws::JsonClient> client_;
  const std::string url_;
  const std::string dead_url_;
};

// The checks SqsQueueOptions gets before anything is sent.
Status check_sqs_queue_options(const SqsQueueOptions& options);

// "sqs://REGION/QUEUE_NAME[?endpoint=URL]" as options, the others at their
// defaults. With no endpoint= the endpoint is the one configured for SQS
// (aws::configured_endpoint: AWS_ENDPOINT_URL_SQS, else AWS_ENDPOINT_URL,
// read through `env`), else SQS's own. kInvalidArgument, naming the form,
// for anything else.
Result<SqsQueueOptions> parse_sqs_uri(std::string_view uri,
                                      const aws::EnvLookup& env = aws::process_env());

// True for a URI of the form above (it may still be malformed).
bool is_sqs_uri(std::string_view uri);

}  // namespace leasehold::sqs
