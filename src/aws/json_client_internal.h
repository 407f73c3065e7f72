// What JsonClient (json_client.cc) reads from a service's error reply: its
// code and message, and the Status they make. Pure functions, kept apart
// from the client so that they can be checked without a server
// (fuzz/json_client_errors_fuzz.cc).
//
// Private to aws/: include it only from json_client.cc, its tests and the
// fuzz target; json_client.h is the interface. Safe from any thread.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>

#include "aws/json_client.h"
#include "leasehold/status.h"

namespace leasehold::aws::json_client_internal {

// A service error's code and message, either empty when the body does not
// say: the body's "__type" after its last '#' and before any ':'
// ("com.amazonaws.sqs#QueueDoesNotExist" -> "QueueDoesNotExist"), and its
// "Message" (or "message"), as the service sent them.
struct ErrorReply {
  std::string code;
  std::string message;
};

ErrorReply parse_error(std::string_view body);

// What the error reply `error` to `op`, answered with `http_status`, means
// (json_client.h): a Status whose message names the operation, the code (or
// "HTTP<status>" when there is none), the service's message and AWS's
// request ID, its code chosen by `rules`, else by the HTTP status. The code
// and request ID are cut to 128 bytes and the message to 300, and a control
// character or a byte past ASCII in them shows as '?': the message stays
// bounded, and goes into a log as one line.
// *throttled: the service refused the request before doing anything.
Status error_status(std::string_view op, int http_status, const ErrorReply& error,
                    std::string_view request_id, std::string_view service,
                    std::span<const JsonErrorRule> rules, bool* throttled);

}  // namespace leasehold::aws::json_client_internal
