// The URIs of stores, queues and buckets that flags and configuration give:
// store/uri.h's splitting, each store backend's parser and
// validate_store_uri(), sqs:// (sqs/sqs_queue.h) and s3:// (aws/s3.h).
//
// The first byte picks the parser; the rest is the URI. The environment
// they read is a fixed one (AWS_REGION only), never the process's.
// Properties: splitting loses nothing (scheme ":" rest, path "?" query and
// the parameters joined by '&' give back what was split); an s3:// URI
// taken names a valid bucket and region and a normalised prefix; an sqs://
// URI taken passes check_sqs_queue_options(). Store URIs are validated
// only as far as validate_store_uri() goes, which opens nothing.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "aws/s3.h"
#include "aws/s3_internal.h"
#include "check.h"
#include "leasehold/store.h"
#include "sqs/sqs_queue.h"
#include "store/dynamodb/dynamodb_store.h"
#include "store/sqlite/sqlite_uri.h"
#include "store/uri.h"

namespace {

namespace store = leasehold::store;
using leasehold::fuzz::escaped;

std::optional<std::string> fixed_env(const std::string& name) {
  if (name == "AWS_REGION") return "eu-west-1";
  return std::nullopt;
}

void check_split(std::string_view uri) {
  const auto parts = store::split_store_uri(uri);
  if (!parts.ok()) {
    FUZZ_CHECK(uri.find(':') == std::string_view::npos, "refused with a ':' " + escaped(uri));
    return;
  }
  FUZZ_CHECK_EQ(std::string(parts->scheme) + ":" + std::string(parts->rest), std::string(uri),
                "scheme and rest");
  const store::PathAndQuery pq = store::split_path_and_query(parts->rest);
  FUZZ_CHECK_EQ(std::string(pq.path) + (pq.query ? "?" + std::string(*pq.query) : ""),
                std::string(parts->rest), "path and query");
  if (pq.query) {
    std::string joined;
    const auto params = store::split_uri_params(*pq.query);
    for (size_t i = 0; i < params.size(); ++i) {
      const store::UriParam& p = params[i];
      FUZZ_CHECK_EQ(std::string(p.name) + (p.has_equals ? "=" + std::string(p.value) : ""),
                    std::string(p.text), "a parameter's name and value");
      joined += (i == 0 ? "" : "&") + std::string(p.text);
    }
    if (pq.query->ends_with('&')) joined += '&';
    FUZZ_CHECK_EQ(joined, std::string(*pq.query), "the parameters joined again");
  }
  if (parts->scheme == "sqlite") (void)store::parse_sqlite_uri(parts->rest);
  if (parts->scheme == "dynamodb") {
    (void)store::dynamodb::parse_dynamodb_uri(parts->rest);
    (void)store::dynamodb::validate_dynamodb_uri(parts->rest, fixed_env);
  }
  // memory: and sqlite: create nothing when validated (dynamodb: reads the
  // process's environment, and was validated above with the fixed one).
  if (parts->scheme != "dynamodb") (void)leasehold::validate_store_uri(uri);
}

void check_sqs(std::string_view uri) {
  const auto options = leasehold::sqs::parse_sqs_uri(uri, fixed_env);
  if (!options.ok()) return;
  const leasehold::Status checked = leasehold::sqs::check_sqs_queue_options(*options);
  FUZZ_CHECK(checked.ok(), escaped(uri) + " parsed but fails its check: " + checked.to_string());
}

void check_s3(std::string_view uri) {
  namespace s3 = leasehold::aws::s3_internal;
  const auto location = leasehold::aws::parse_s3_uri(uri, fixed_env);
  if (!location.ok()) return;
  FUZZ_CHECK(s3::validate_bucket(location->bucket).ok(), "bucket of " + escaped(uri));
  FUZZ_CHECK(s3::validate_region(location->region).ok(), "region of " + escaped(uri));
  const std::string& prefix = location->prefix;
  FUZZ_CHECK(prefix.empty() || (prefix.ends_with('/') && !prefix.starts_with('/')),
             "prefix " + escaped(prefix) + " of " + escaped(uri));
  if (!prefix.empty()) {
    // A key under the prefix is a valid key.
    FUZZ_CHECK(s3::validate_key(prefix + "k").ok(), "a key under prefix " + escaped(prefix));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view uri(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0:
      check_split(uri);
      break;
    case 1:
      check_sqs(uri);
      break;
    case 2:
      check_s3(uri);
      break;
  }
  return 0;
}
