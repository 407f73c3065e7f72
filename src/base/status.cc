#include "leasehold/status.h"

namespace leasehold {

std::string_view code_name(Code code) {
  switch (code) {
    case Code::kOk:
      return "OK";
    case Code::kInvalidArgument:
      return "InvalidArgument";
    case Code::kNotFound:
      return "NotFound";
    case Code::kAlreadyExists:
      return "AlreadyExists";
    case Code::kFailedPrecondition:
      return "FailedPrecondition";
    case Code::kConditionFailed:
      return "ConditionFailed";
    case Code::kUnavailable:
      return "Unavailable";
    case Code::kUnknownOutcome:
      return "UnknownOutcome";
    case Code::kDeadlineExceeded:
      return "DeadlineExceeded";
    case Code::kInternal:
      return "Internal";
    case Code::kUnauthenticated:
      return "Unauthenticated";
    case Code::kPermissionDenied:
      return "PermissionDenied";
    case Code::kResourceExhausted:
      return "ResourceExhausted";
  }
  return "Unknown";
}

Status Status::with_context(std::string_view context) const {
  if (ok()) return *this;
  return Status(code_, std::string(context) + ": " + message_);
}

std::string Status::to_string() const {
  if (ok()) return "OK";
  return std::string(code_name(code_)) + ": " + message_;
}

}  // namespace leasehold
