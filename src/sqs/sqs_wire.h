// What the SQS queue (sqs_queue.h) reads from SQS's JSON answers and from
// its callers' receipts: pure functions, apart from the queue so that they
// can be checked without a server (fuzz/sqs_reply_fuzz.cc).
//
// Private to sqs/: include it only from sqs_queue.cc and its tests.
#pragma once

#include <boost/json/object.hpp>
#include <cstdint>
#include <string_view>
#include <vector>

#include "leasehold/queue.h"
#include "leasehold/status.h"

namespace leasehold::sqs {

// The messages of a ReceiveMessage answer, each to be visible again at
// `visible_at_ms`: ID, body, receipt ("<id>.<SQS receipt handle>") and the
// system attributes ApproximateReceiveCount and SentTimestamp (0 when
// absent). Entries that are not objects are skipped; kInternal for a
// message whose MessageId is not a UUID.
Result<std::vector<Message>> received_messages(const boost::json::object& answer,
                                               int64_t visible_at_ms);

// The SQS receipt handle in a receipt "<id>.<handle>"; kInvalidArgument for
// anything else, or one longer than 4096 bytes.
Result<std::string_view> handle_of(std::string_view receipt);

}  // namespace leasehold::sqs
