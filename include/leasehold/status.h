// Status and Result<T>: errors as values.
//
// Every fallible operation in leasehold returns a Status or a Result<T>. A
// Status carries a code that callers branch on and a message for humans. The
// codes are chosen so that the three outcomes a caller of a conditional write
// must tell apart are distinct: the condition failed (kConditionFailed), the
// store could not be reached (kUnavailable), and the request was sent but its
// outcome is unknown (kUnknownOutcome).
//
// Status and Result are plain values; they are safe to copy between threads
// but a single object is not synchronised.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace leasehold {

enum class Code {
  kOk = 0,
  kInvalidArgument,     // bad input from the caller; nothing was changed
  kNotFound,            // the item or table does not exist
  kAlreadyExists,       // held by someone else (a live lease, a claimed job)
  kFailedPrecondition,  // a stale token: the lease is no longer the caller's
  kConditionFailed,     // a store condition evaluated to false
  kUnavailable,         // the store could not be reached; nothing was applied
  kUnknownOutcome,      // a write was sent but no reply came back
  kDeadlineExceeded,    // a local deadline passed before the work completed
  kInternal,            // a bug or corrupt data
  kUnauthenticated,     // no credentials, or ones that are wrong, expired or revoked
  kPermissionDenied,    // the caller is known but may not do this
  kResourceExhausted,   // a limit was reached (too many attempts, a full queue)
};

std::string_view code_name(Code code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Code code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is prefixed with `context: `.
  Status with_context(std::string_view context) const;

  // "ConditionFailed: lease is held by w2" (or "OK").
  std::string to_string() const;

  bool operator==(const Status& other) const = default;

 private:
  Code code_ = Code::kOk;
  std::string message_;
};

inline Status invalid_argument(std::string m) { return {Code::kInvalidArgument, std::move(m)}; }
inline Status not_found(std::string m) { return {Code::kNotFound, std::move(m)}; }
inline Status already_exists(std::string m) { return {Code::kAlreadyExists, std::move(m)}; }
inline Status failed_precondition(std::string m) {
  return {Code::kFailedPrecondition, std::move(m)};
}
inline Status condition_failed(std::string m) { return {Code::kConditionFailed, std::move(m)}; }
inline Status unavailable(std::string m) { return {Code::kUnavailable, std::move(m)}; }
inline Status unknown_outcome(std::string m) { return {Code::kUnknownOutcome, std::move(m)}; }
inline Status deadline_exceeded(std::string m) { return {Code::kDeadlineExceeded, std::move(m)}; }
inline Status internal_error(std::string m) { return {Code::kInternal, std::move(m)}; }
inline Status unauthenticated(std::string m) { return {Code::kUnauthenticated, std::move(m)}; }
inline Status permission_denied(std::string m) { return {Code::kPermissionDenied, std::move(m)}; }
inline Status resource_exhausted(std::string m) { return {Code::kResourceExhausted, std::move(m)}; }

// Either a value of type T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    assert(!status_.ok() && "a Result built from a Status must carry an error");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  // REQUIRES: ok().
  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace leasehold

#define LEASEHOLD_CONCAT_INNER(a, b) a##b
#define LEASEHOLD_CONCAT(a, b) LEASEHOLD_CONCAT_INNER(a, b)

// Returns from the enclosing function if `expr` yields a non-OK Status.
#define LEASEHOLD_RETURN_IF_ERROR(expr)      \
  do {                                       \
    ::leasehold::Status lh_status_ = (expr); \
    if (!lh_status_.ok()) return lh_status_; \
  } while (false)

// `LEASEHOLD_ASSIGN_OR_RETURN(auto x, f());` assigns the value of a Result or returns
// its Status from the enclosing function.
#define LEASEHOLD_ASSIGN_OR_RETURN(lhs, expr) \
  LEASEHOLD_ASSIGN_OR_RETURN_IMPL(LEASEHOLD_CONCAT(lh_result_, __LINE__), lhs, expr)
#define LEASEHOLD_ASSIGN_OR_RETURN_IMPL(result, lhs, expr) \
  auto result = (expr);                                    \
  if (!result.ok()) return result.status();                \
  lhs = std::move(result).value()
