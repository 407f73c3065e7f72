// The one place that knows which backends exist: open_store() and
// validate_store_uri() read a URI the same way, and only the first opens
// anything.
#include "aws/credentials.h"
#include "leasehold/store.h"
#include "store/dynamodb/dynamodb_store.h"
#include "store/memory/memory_store.h"
#include "store/sqlite/sqlite_store.h"
#include "store/sqlite/sqlite_uri.h"
#include "store/uri.h"

namespace leasehold {
namespace {

Status check_memory_uri(std::string_view rest) {
  if (!rest.empty()) return invalid_argument("memory: takes no path");
  return Status::ok_status();
}

Status unknown_scheme(std::string_view scheme) {
  return invalid_argument("unknown store scheme '" + std::string(scheme) +
                          "' (known: sqlite:PATH, dynamodb://REGION/PREFIX, memory:)");
}

}  // namespace

Status validate_store_uri(std::string_view uri) {
  LEASEHOLD_ASSIGN_OR_RETURN(const store::SchemeAndRest parts, store::split_store_uri(uri));
  if (parts.scheme == "sqlite") return store::parse_sqlite_uri(parts.rest).status();
  if (parts.scheme == "dynamodb") {
    return store::dynamodb::validate_dynamodb_uri(parts.rest, aws::process_env());
  }
  if (parts.scheme == "memory") return check_memory_uri(parts.rest);
  return unknown_scheme(parts.scheme);
}

Result<std::unique_ptr<ItemStore>> open_store(std::string_view uri) {
  LEASEHOLD_ASSIGN_OR_RETURN(const store::SchemeAndRest parts, store::split_store_uri(uri));
  if (parts.scheme == "sqlite") {
    LEASEHOLD_ASSIGN_OR_RETURN(const store::SqliteOptions options,
                               store::parse_sqlite_uri(parts.rest));
    return store::open_sqlite_store(options);
  }
  // dynamodb://REGION/TABLE_PREFIX[?endpoint=URL]: region and prefix
  // ([A-Za-z0-9_.-]) are required; the endpoint defaults to the one the
  // environment configures (AWS_ENDPOINT_URL_DYNAMODB), else AWS's.
  if (parts.scheme == "dynamodb") {
    return store::dynamodb::open_dynamodb_store_from_uri(parts.rest, aws::process_env());
  }
  if (parts.scheme == "memory") {
    LEASEHOLD_RETURN_IF_ERROR(check_memory_uri(parts.rest));
    return store::make_memory_store();
  }
  return unknown_scheme(parts.scheme);
}

}  // namespace leasehold
