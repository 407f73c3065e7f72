// The one place that knows which backends exist.
#include <charconv>

#include "base/duration.h"
#include "leasehold/store.h"
#include "store/dynamodb/dynamodb_store.h"
#include "store/memory/memory_store.h"
#include "store/sqlite/sqlite_store.h"

namespace leasehold {
namespace {

// Splits "a=1&b=2" into pairs; refuses anything else.
Result<std::vector<std::pair<std::string, std::string>>> parse_params(std::string_view query) {
  std::vector<std::pair<std::string, std::string>> out;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view part = query.substr(0, amp);
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos || eq == 0) {
      return invalid_argument("malformed store URI parameter '" + std::string(part) + "'");
    }
    out.emplace_back(std::string(part.substr(0, eq)), std::string(part.substr(eq + 1)));
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
  }
  return out;
}

Result<std::unique_ptr<ItemStore>> open_sqlite(std::string_view rest) {
  const size_t q = rest.find('?');
  store::SqliteOptions options;
  options.path = std::string(rest.substr(0, q));
  if (options.path.empty()) return invalid_argument("sqlite URI needs a path: sqlite:PATH");
  if (options.path == ":memory:" || options.path.starts_with("file:")) {
    return invalid_argument("sqlite URI needs a file path that other processes can open");
  }
  if (q != std::string_view::npos) {
    ASSIGN_OR_RETURN(auto params, parse_params(rest.substr(q + 1)));
    for (const auto& [name, value] : params) {
      if (name == "busy_timeout") {
        ASSIGN_OR_RETURN(options.busy_timeout, parse_duration(value));
      } else if (name == "synchronous" && (value == "full" || value == "normal")) {
        options.synchronous_full = value == "full";
      } else {
        return invalid_argument("unknown sqlite URI parameter '" + name + "=" + value +
                                "' (known: busy_timeout=DURATION, synchronous=normal|full)");
      }
    }
  }
  return store::open_sqlite_store(options);
}

}  // namespace

Result<std::unique_ptr<ItemStore>> open_store(std::string_view uri) {
  const size_t colon = uri.find(':');
  if (colon == std::string_view::npos) {
    return invalid_argument("malformed store URI '" + std::string(uri) +
                            "' (expected sqlite:PATH, dynamodb://REGION/PREFIX or memory:)");
  }
  const std::string_view scheme = uri.substr(0, colon);
  const std::string_view rest = uri.substr(colon + 1);
  if (scheme == "sqlite") return open_sqlite(rest);
  // dynamodb://REGION/TABLE_PREFIX[?endpoint=URL]: region and prefix
  // ([A-Za-z0-9_.-]) are required; the endpoint defaults to AWS's.
  if (scheme == "dynamodb") return store::dynamodb::open_dynamodb_store_from_uri(rest);
  if (scheme == "memory") {
    if (!rest.empty()) return invalid_argument("memory: takes no path");
    return store::make_memory_store();
  }
  return invalid_argument("unknown store scheme '" + std::string(scheme) +
                          "' (known: sqlite, memory)");
}

}  // namespace leasehold
