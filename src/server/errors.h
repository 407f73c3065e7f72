// The one error shape of the HTTP API, and the one map from a leasehold
// Status to an HTTP status. Every error response, the transport's own (404,
// 405, 413, ...) and the handlers', has the body
//
//   {"error": {"code": "not_found", "message": "no movie 7"}}
//
// with a code a client can branch on (one per HTTP status) and a message for
// humans. A 5xx never carries the text of the Status or exception behind it,
// only a fixed text and the request's ID ("internal error (request
// 0123456789abcdef)"), which the server logs with the cause: the cause may
// name tables, buckets, keys, queues and what AWS answered, which are the
// operator's to read. A Status answered 503 is storage that cannot be used
// now (kUnavailable: the store, the media or the job queue down, or refusing
// the deployment's credentials), "storage unavailable, try again later
// (request ...)".
//
// Pure functions; safe from any thread.
#pragma once

#include <string_view>

#include "leasehold/logger.h"
#include "leasehold/status.h"
#include "server/http.h"

namespace leasehold::server {

// An HTTP status and the error code that goes with it.
struct HttpError {
  int status;
  std::string_view code;
};

// The one map from a Status code to an HTTP status and error code:
//   kInvalidArgument                                  400 bad_request
//   kUnauthenticated                                  401 unauthenticated
//   kPermissionDenied                                 403 forbidden
//   kNotFound                                         404 not_found
//   kAlreadyExists, kFailedPrecondition,
//   kConditionFailed                                  409 conflict
//   kResourceExhausted                                429 too_many_requests
//   kUnavailable, kDeadlineExceeded                   503 unavailable
//   anything else (kInternal, kUnknownOutcome, kOk)   500 internal
HttpError http_error(Code code);

// The error code of an HTTP status: "not_found" for 404, "method_not_allowed"
// for 405, "payload_too_large" for 413, "unsupported_media_type" for 415,
// "range_not_satisfiable" for 416, "header_too_large" for 431,
// "insufficient_storage" for 507, ...; "internal" for a 5xx it does not know and
// "bad_request" for a 4xx.
std::string_view error_code(int http_status);

// A response with the error shape: `http_status`, error_code(http_status) and
// `message`, Content-Type application/json. A 503 also says Retry-After: 1.
Response error_response(int http_status, std::string_view message);

// The response for a failed `status` (REQUIRES: !status.ok()), through
// http_error(): its message for a 4xx; for a 5xx a fixed one naming
// `request_id` instead, since a store's or a bug's message is for the log, not
// for the client.
Response error_response(const Status& status, std::string_view request_id);

// error_response(status, request.request_id) for a handler: a 5xx's cause
// (the Status, which the answer does not carry) goes to `log` at error
// level with the request's ID and route, so that the ID in the answer leads
// to it.
Response failed_response(const Status& status, const Request& request, Logger& log);

// "internal error (request <request_id>)": the 500 a handler's exception gets.
Response internal_error_response(std::string_view request_id);

}  // namespace leasehold::server
