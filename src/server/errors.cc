// The error shape, written with Boost.JSON so that any message is escaped.
#include "server/errors.h"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <cassert>
#include <string>

namespace leasehold::server {

HttpError http_error(Code code) {
  switch (code) {
    case Code::kInvalidArgument:
      return {400, "bad_request"};
    case Code::kUnauthenticated:
      return {401, "unauthenticated"};
    case Code::kPermissionDenied:
      return {403, "forbidden"};
    case Code::kNotFound:
      return {404, "not_found"};
    case Code::kAlreadyExists:
    case Code::kFailedPrecondition:
    case Code::kConditionFailed:
      return {409, "conflict"};
    case Code::kResourceExhausted:
      return {429, "too_many_requests"};
    case Code::kUnavailable:
    case Code::kDeadlineExceeded:
      return {503, "unavailable"};
    case Code::kOk:
    case Code::kUnknownOutcome:
    case Code::kInternal:
      break;
  }
  return {500, "internal"};
}

std::string_view error_code(int http_status) {
  switch (http_status) {
    case 400:
      return "bad_request";
    case 401:
      return "unauthenticated";
    case 403:
      return "forbidden";
    case 404:
      return "not_found";
    case 405:
      return "method_not_allowed";
    case 408:
      return "request_timeout";
    case 409:
      return "conflict";
    case 413:
      return "payload_too_large";
    case 415:
      return "unsupported_media_type";
    case 416:
      return "range_not_satisfiable";
    case 429:
      return "too_many_requests";
    case 431:
      return "header_too_large";
    case 500:
      return "internal";
    case 501:
      return "not_implemented";
    case 503:
      return "unavailable";
    case 507:
      return "insufficient_storage";
    default:
      return http_status >= 400 && http_status < 500 ? "bad_request" : "internal";
  }
}

Response error_response(int http_status, std::string_view message) {
  boost::json::object error;
  error["code"] = error_code(http_status);
  error["message"] = message;
  boost::json::object body;
  body["error"] = std::move(error);
  Response response{.status = http_status, .headers = {}, .body = boost::json::serialize(body)};
  response.set_header("Content-Type", "application/json");
  if (http_status == 503) response.set_header("Retry-After", "1");
  return response;
}

Response error_response(const Status& status, std::string_view request_id) {
  assert(!status.ok());
  const HttpError error = http_error(status.code());
  if (error.status == 503) {
    return error_response(
        503, "storage unavailable, try again later (request " + std::string(request_id) + ")");
  }
  if (error.status >= 500) return internal_error_response(request_id);
  return error_response(error.status, status.message());
}

Response failed_response(const Status& status, const Request& request, Logger& log) {
  Response response = error_response(status, request.request_id);
  if (response.status >= 500 && log.enabled(LogLevel::kError)) {
    const std::string cause = status.to_string();
    const LogField fields[] = {{"request_id", std::string_view(request.request_id)},
                               {"route", std::string_view(request.route)},
                               {"error", std::string_view(cause)}};
    log.log_fields(LogLevel::kError, "the request failed", fields);
  }
  return response;
}

Response internal_error_response(std::string_view request_id) {
  return error_response(500, "internal error (request " + std::string(request_id) + ")");
}

}  // namespace leasehold::server
