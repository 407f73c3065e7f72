#include "store/sqlite/sqlite_uri.h"

#include <string>
#include <vector>

#include "base/duration.h"
#include "store/uri.h"

namespace leasehold::store {
namespace {

// Every parameter is checked for its form before any is read, so that a
// malformed one is reported even after an unknown one.
Status check_sqlite_params(const std::vector<UriParam>& params) {
  for (const UriParam& p : params) {
    if (!p.has_equals || p.name.empty()) {
      return invalid_argument("malformed store URI parameter '" + std::string(p.text) + "'");
    }
  }
  return Status::ok_status();
}

}  // namespace

Result<SqliteOptions> parse_sqlite_uri(std::string_view rest) {
  const PathAndQuery uri = split_path_and_query(rest);
  SqliteOptions options;
  options.path = std::string(uri.path);
  if (options.path.empty()) return invalid_argument("sqlite URI needs a path: sqlite:PATH");
  if (options.path == ":memory:" || options.path.starts_with("file:")) {
    return invalid_argument("sqlite URI needs a file path that other processes can open");
  }
  if (!uri.query) return options;
  const std::vector<UriParam> params = split_uri_params(*uri.query);
  LEASEHOLD_RETURN_IF_ERROR(check_sqlite_params(params));
  for (const UriParam& p : params) {
    if (p.name == "busy_timeout") {
      LEASEHOLD_ASSIGN_OR_RETURN(options.busy_timeout, parse_duration(p.value));
    } else if (p.name == "synchronous" && (p.value == "full" || p.value == "normal")) {
      options.synchronous_full = p.value == "full";
    } else {
      return invalid_argument("unknown sqlite URI parameter '" + std::string(p.text) +
                              "' (known: busy_timeout=DURATION, synchronous=normal|full)");
    }
  }
  return options;
}

}  // namespace leasehold::store
