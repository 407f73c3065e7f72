// What S3Client (s3.cc) takes from S3's wire (s3_wire.cc): the checks of
// bucket, key and region names, XML escaping, which answers may be sent
// again, and Content-Range. Pure functions: no request, no state.
//
// Private to aws/'s S3 client: include it only from s3*.cc; s3.h is the
// interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "leasehold/status.h"

namespace leasehold::aws::s3_internal {

// S3's default location, the one CreateBucket refuses to be named. Never a
// region the client guesses: a URI that names none, where nothing configures
// one, is refused.
inline constexpr std::string_view kDefaultRegion = "us-east-1";

// ---------------------------------------------------------------- names

// S3's bucket naming rules (general purpose buckets).
Status validate_bucket(std::string_view bucket);
// 1 to 64 characters of a-z, 0-9 and '-'.
Status validate_region(std::string_view region);
// 1 to kKeyBytesMax bytes, relative to the bucket (no leading '/'), with no
// control character and no "." or ".." segment, which HTTP clients and
// browsers remove from a URL's path before they send it, so that a
// presigned URL would fetch another key.
Status validate_key(std::string_view key);

// ---------------------------------------------------------------- regions

// The header in which S3 names the region of the bucket a request was for,
// on HEAD Bucket's answer whatever its status, and on refusals for a region.
inline constexpr std::string_view kBucketRegionHeader = "x-amz-bucket-region";

// AWS's endpoint for `bucket` in `region`: https://BUCKET.s3.REGION.amazonaws.com
// (virtual-hosted style), or https://s3.REGION.amazonaws.com (path style) for
// a bucket with a "." in its name, which the wildcard certificate does not
// cover. REQUIRES: validate_region(region) is ok.
std::string aws_endpoint(std::string_view bucket, std::string_view region);

// S3 refused a request for going to, or being signed for, a region that is
// not its bucket's, as botocore's S3RegionRedirectorv2.redirect_from_error
// (botocore/utils.py) tells: a redirect (a 301, 302 or 307: S3's
// PermanentRedirect, or a HEAD's answer, which has no document), an
// AuthorizationHeaderMalformed that names the <Region> to sign for, an
// IllegalLocationConstraintException (a bucket in an opt-in region), or a
// 400 or 403 that carries kBucketRegionHeader (`names_region`).
bool is_region_refusal(int http_status, std::string_view body, bool names_region);

// ---------------------------------------------------------------- XML

// `s` with the five characters XML reserves escaped, for a document's text.
std::string xml_escape(std::string_view s);

// ---------------------------------------------------------------- errors

// Throttled: refused before anything was done, so safe to send again. A
// throttling code of aws/retries.h, or a 503, S3's own way to say "slow down".
bool is_throttled(int http_status, std::string_view code);

// S3 failed in a way that may pass: a 5xx but 501, its own timeout reading
// the request (a 400 "RequestTimeout"), or another transient error of
// aws/retries.h.
bool is_transient(int http_status, std::string_view code);

// A 200's body that is an error document (its root element <Error>, after
// an optional XML declaration), which CompleteMultipartUpload may send once
// it has taken the request.
bool is_error_document(std::string_view body);

// True for the ETag S3 gives an object made by a multipart upload of
// `parts` parts: "\"<hex>-<parts>\"" (the quotes optional).
bool is_multipart_etag(std::string_view etag, size_t parts);

// ---------------------------------------------------------------- numbers and ranges

// A decimal number of 1 to 19 digits, nothing else; nullopt otherwise.
std::optional<uint64_t> parse_u64(std::string_view s);

// "bytes FIRST-LAST/TOTAL" of a 206 reply.
struct ContentRange {
  uint64_t first = 0;
  uint64_t last = 0;
  uint64_t total = 0;
};

// nullopt unless `value` is that, with FIRST <= LAST < TOTAL.
std::optional<ContentRange> parse_content_range(std::string_view value);

}  // namespace leasehold::aws::s3_internal
