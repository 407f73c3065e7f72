// What a sink that sends a stream's messages to an SQS FIFO queue puts on
// the wire and reads back (issue 44): each message with its group and
// deduplication IDs, the SendMessageBatch requests they go in, and what
// SendMessageBatch's answer says of each entry. Pure functions, apart from
// any sink so that they can be checked without a server
// (fuzz/sqs_fifo_reply_fuzz.cc); safe to call from any thread.
//
// The scheme: a message's group is its connection (SQS keeps order within a
// group) and its deduplication ID names the connection and the message's
// sequence number, so that a message sent again after an unknown outcome
// (a lost reply, a failover) with the same IDs is accepted by SQS but not
// delivered twice, as long as it comes within SQS's 5-minute deduplication
// interval (API reference, SendMessageBatchRequestEntry,
// MessageDeduplicationId).
//
// Limits, from SQS's documentation (Developer Guide, "Amazon SQS message
// quotas"; API reference, SendMessageBatch and SendMessageBatchRequestEntry):
// - MessageGroupId and MessageDeduplicationId: 1 to 128 characters of
//   alphanumerics and punctuation !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~, that is
//   ASCII 0x21 to 0x7e.
// - A batch: at most 10 entries, whose Ids are unique within the request
//   (up to 80 of [A-Za-z0-9_-]).
// - A message: only #x9 | #xA | #xD | #x20 to #xD7FF | #xE000 to #xFFFD |
//   #x10000 to #x10FFFF. Its size, and the batch's (the sum of its
//   messages' lengths; message attributes would count, and none are sent),
//   were 256 KiB (262,144 bytes) each until SQS raised both to 1 MiB
//   (1,048,576 bytes) in 2025. A queue still refuses a message over its own
//   MaximumMessageSize, whose default is 262,144, and emulators keep the old
//   limit: so 262,144 bytes of bodies is the bound here, for a message and
//   for a batch.
//
// Private to sqs/: include it only from sqs/ and its tests.
#pragma once

#include <boost/json/object.hpp>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/status.h"

namespace leasehold::sqs {

inline constexpr size_t kFifoIdBytesMax = 128;         // a group or deduplication ID
inline constexpr size_t kFifoBodyBytesMax = 262'144;   // a message's body
inline constexpr size_t kFifoBatchBytesMax = 262'144;  // a batch's bodies together
inline constexpr size_t kFifoBatchEntriesMax = 10;

struct FifoMessage {
  std::string group_id;
  std::string deduplication_id;
  std::string body;
};

// The message `body` of connection `connection_id` with sequence number
// `seq`: group ID the connection ID; deduplication ID "<connection ID>:<seq>"
// when that is at most kFifoIdBytesMax characters, else the SHA-256 of that
// text as 64 lowercase hex digits (the fleet's connection IDs go up to 128
// bytes). The two forms never meet: a hashed ID has no ':'.
// kInvalidArgument for a connection ID that is no SQS group ID (empty,
// longer than kFifoIdBytesMax, a character but 0x21..0x7e), and for a body
// that is empty, longer than kFifoBodyBytesMax or not of the characters SQS
// accepts (sqs_accepts()).
Result<FifoMessage> fifo_message(std::string_view connection_id, int64_t seq, std::string body);

// `messages` split, in order, into SendMessageBatch requests: each a run of
// consecutive indices into `messages`, at most kFifoBatchEntriesMax of them
// whose bodies add up to at most kFifoBatchBytesMax bytes. Each batch is as
// long as those limits allow. A message longer than kFifoBodyBytesMax (not
// one fifo_message() made) gets a batch of its own, which SQS will refuse:
// it is never dropped or moved.
std::vector<std::vector<size_t>> fifo_batches(std::span<const FifoMessage> messages);

// SendMessageBatch's body sending the messages `batch` lists, in its order:
// {"QueueUrl", "Entries": [{"Id": its place in the batch, "0" to "9",
// "MessageBody", "MessageGroupId", "MessageDeduplicationId"}]}.
// REQUIRES: 1 <= batch.size() <= kFifoBatchEntriesMax, each index within
// `messages`.
boost::json::object send_batch_request(std::string_view queue_url,
                                       std::span<const FifoMessage> messages,
                                       std::span<const size_t> batch);

// What a SendMessageBatch answer says of the batch's messages. `sent` and
// `retry` hold the batch's indices into the messages, in the batch's order.
struct BatchOutcome {
  std::vector<size_t> sent;   // SQS took them: a checkpoint may cover them
  std::vector<size_t> retry;  // to send again, with the same IDs
  Status refused;             // OK, or why SQS refused entries for good
};

// Reads `answer`, SendMessageBatch's reply to send_batch_request(..., batch):
// its Successful [{Id, MessageId, ...}] and Failed [{Id, Code, Message,
// SenderFault}] lists. An entry listed once in Successful with a MessageId
// is sent. One listed once in Failed with SenderFault false failed through
// SQS's fault and is to be sent again; with SenderFault true it was refused
// (its message or IDs are wrong, sending it again cannot help): it is in
// neither list and `refused` is kInvalidArgument naming how many were and
// the first one's message index, Code and Message (printable, bounded).
// Every other entry's outcome is unknown, and sending it again with its IDs
// is safe: one the answer does not list, one it lists more than once, and
// one whose listing cannot be read (not an object, an Id, MessageId or
// SenderFault of the wrong type); Ids that are not the batch's are ignored.
// Never fails on a malformed answer: an answer that is no use puts the
// whole batch in `retry`.
// REQUIRES: batch.size() <= kFifoBatchEntriesMax.
BatchOutcome batch_outcome(const boost::json::object& answer, std::span<const size_t> batch);

}  // namespace leasehold::sqs
