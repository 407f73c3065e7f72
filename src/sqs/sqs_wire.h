// What the SQS queue (sqs_queue.h) reads from SQS's JSON answers and from
// its callers' receipts: pure functions, apart from the queue so that they
// can be checked without a server (fuzz/sqs_reply_fuzz.cc).
//
// Private to sqs/: include it only from sqs_queue.cc and its tests.
#pragma once

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "leasehold/queue.h"
#include "leasehold/status.h"

namespace leasehold::sqs {

// The messages of a ReceiveMessage answer, each to be visible again at
// `visible_at_ms`: ID, body, receipt ("<id>.<SQS receipt handle>") and the
// system attributes ApproximateReceiveCount and SentTimestamp (0 when
// absent, or not a whole number from 0 to INT64_MAX). Entries that are not
// objects are skipped; kInternal for a message whose MessageId is not a UUID.
Result<std::vector<Message>> received_messages(const boost::json::object& answer,
                                               int64_t visible_at_ms);

// The dead letters of `messages`, received from the dead-letter queue
// (SqsQueue::list_dead): each message's ID, body, receive count and sent
// time, dead_at_ms 0 (SQS does not say when a message became one), oldest
// sent first.
DeadLetterPage dead_letter_page(std::vector<Message> messages);

// The attributes GetQueueAttributes is asked for to count dead letters
// (SqsQueue::count_dead), and the count its `answer` gives: the three
// added up, from 0 to `max`. REQUIRES: max >= 0.
boost::json::array dead_count_attributes();
int64_t dead_letter_count(const boost::json::object& answer, int64_t max);

// What a ChangeMessageVisibilityBatch `answer` to `entries` entries says:
// OK if no entry is in its Failed list; else kUnavailable naming how many
// failed and the first one's Code (printable, at most 128 bytes).
Status release_failures(const boost::json::object& answer, size_t entries);

// Whether `body` is strict UTF-8 of only the characters SQS accepts in a
// message: #x9 #xA #xD, #x20..#xD7FF, #xE000..#xFFFD, #x10000..#x10FFFF
// (SQS's message quotas, "Message content"; no overlong forms, no
// surrogates). Empty text passes: its size is the caller's check.
bool sqs_accepts(std::string_view body);

// The SQS receipt handle in a receipt "<id>.<handle>"; kInvalidArgument for
// anything else, or one longer than 4096 bytes.
Result<std::string_view> handle_of(std::string_view receipt);

}  // namespace leasehold::sqs
