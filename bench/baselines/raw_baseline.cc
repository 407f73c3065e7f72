#include "bench/baselines/raw_baseline.h"

#include "bench/baselines/dynamodb_baselines.h"
#include "bench/baselines/sqlite_raw_baseline.h"
#include "store/sqlite/sqlite_uri.h"
#include "store/uri.h"

namespace leasehold::bench {

Result<RawBaselines> open_raw_baselines(std::string_view uri, std::string_view table,
                                        const std::string& sdk_script) {
  LEASEHOLD_ASSIGN_OR_RETURN(const store::SchemeAndRest parts, store::split_store_uri(uri));
  if (parts.scheme == "dynamodb") return make_dynamodb_baselines(parts.rest, table, sdk_script);
  if (!sdk_script.empty()) return invalid_argument("the SDK baseline needs a dynamodb:// store");
  RawBaselines out;
  if (parts.scheme == "sqlite") {
    LEASEHOLD_ASSIGN_OR_RETURN(const store::SqliteOptions options,
                               store::parse_sqlite_uri(parts.rest));
    out.bare = make_sqlite_raw_baseline(options.path, std::string(table));
  }
  return out;
}

}  // namespace leasehold::bench
