// S3Client: a small client of Amazon S3's REST API (or of a server that
// speaks it: MinIO, fauxqs), without the AWS SDK: objects are put from files
// or memory, read whole into files or by ranges, removed, and shared through
// presigned URLs. Every request is signed with SigV4 (aws/sigv4.h) and sent
// through net::HttpClient, whose limits hold: no object is ever held in
// memory whole unless it is smaller than the multipart threshold; files go up
// in parts and come down in ranged chunks of part_size_bytes.
//
// A client is bound to one bucket, addressed virtual-hosted style on AWS
// (https://BUCKET.s3.REGION.amazonaws.com/KEY) and path style on any other
// endpoint (ENDPOINT/BUCKET/KEY). Keys are relative to the bucket; whoever
// keeps objects under a prefix adds it.
//
// A bucket in another region than the client's is followed, as botocore's
// S3RegionRedirectorv2 follows it: when S3 refuses a request for its region
// (a 301 PermanentRedirect, a 400 AuthorizationHeaderMalformed naming the
// <Region>, an IllegalLocationConstraintException, or a 400 or 403 carrying
// x-amz-bucket-region), the client learns the bucket's region (the
// x-amz-bucket-region header, else the error's <Region>, else from a HEAD of
// the bucket), sends the request once more, signed for that region and
// addressed to it (on AWS its endpoint; on any other, the same endpoint),
// and keeps it for every later request and presigned URL. It logs a warning
// the first time, naming both regions: the configuration should be fixed. A
// request is sent on so at most once: a second refusal, or one that names no
// region, is the request's answer, as it would be without this.
//
// A request is sent again, as base/retry.h's policy (the AWS SDKs' standard
// mode: 3 attempts, paused with full jitter, within a retry quota) allows,
// while doing so cannot do harm: a GET, HEAD, PUT of an object or a part, or
// DELETE, after S3 throttled it (SlowDown, a 503), failed with a 5xx or never
// answered (kUnavailable, kUnknownOutcome); the POST that starts a multipart
// upload only when nothing reached S3 or S3 throttled it. The POST that
// completes one is sent again as a GET is, and after a 200 whose body is an
// error, which S3 documents for it and botocore takes for a 500; a retry
// that S3 answers NoSuchUpload (an earlier attempt completed the upload, its
// answer lost) is a success if a HEAD finds the object with a multipart
// ETag ("...-N" for the N parts) and the file's size. A request S3 refused
// for a signature too far from its own time (RequestTimeTooSkewed) is signed
// again at once with S3's time, which the client keeps for its later
// requests (aws::ClockSkew in aws/retries.h).
// S3's error codes become Status codes: NoSuchKey is kNotFound, NoSuchBucket
// kUnavailable (the client's one bucket is missing: no request can succeed
// until it is made), AccessDenied kPermissionDenied, refused credentials
// (SignatureDoesNotMatch, InvalidAccessKeyId, ExpiredToken)
// kUnauthenticated, SlowDown and 5xx kUnavailable, the rest of the 4xx
// kInvalidArgument; transport errors pass through. A HEAD's answer has no
// error document: its 404 is kNotFound, whether the key or the bucket is
// missing, and its 400 (refused credentials among others) kInvalidArgument.
// Messages name the operation, the bucket and the key, S3's error code and
// AWS's ID of the request (for AWS support), never credentials, an
// Authorization header or a presigned signature: they are for logs, not for
// end users.
//
// An S3Client is safe for concurrent use by many threads; each call blocks
// its caller until S3 answers or the call gives up. It starts no thread but
// the one on which its HTTP client resolves a host name (net/http_client.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "aws/credentials.h"
#include "aws/sigv4.h"
#include "base/retry.h"
#include "leasehold/clock.h"
#include "leasehold/logger.h"
#include "leasehold/random.h"
#include "leasehold/status.h"

namespace leasehold::aws {

// ---------------------------------------------------------------- locations

// Where a deployment keeps its objects, as an "s3://" URI names it.
struct S3Location {
  std::string bucket;
  std::string prefix;  // "" or "a/b/": no leading "/", a trailing "/"
  std::string region;
  std::string endpoint;  // "" for AWS itself, else "http(s)://host[:port]"
};

// Parses "s3://BUCKET[/PREFIX][?endpoint=URL][&region=REGION]". The bucket
// follows S3's naming rules (3 to 63 characters of [a-z0-9.-], starting and
// ending with a letter or digit, no ".."); the prefix, taken as written (not
// percent-decoded: "%" is a valid key character), is normalised to "" or
// "a/b/" and may not hold control characters or "." or ".." segments; the
// endpoint must parse as net::parse_http_endpoint() wants. The region, when
// the URI names none, is the one the AWS SDKs would use: aws::resolve_region()
// (AWS_REGION, AWS_DEFAULT_REGION, the profile's `region`), read through
// `env`; when none is set, kFailedPrecondition says to add "region=REGION" to
// the URI or to set AWS_REGION (no region is guessed, as the SDKs guess none).
// The endpoint, when the URI names none, is the one configured for S3
// (aws::configured_endpoint(env, "S3"): AWS_ENDPOINT_URL_S3, else
// AWS_ENDPOINT_URL), else AWS's own (""). Query values may be percent-encoded. Fails with
// kInvalidArgument, naming the URI's part at fault, for anything else: an unknown or repeated
// parameter, an empty value, a fragment.
Result<S3Location> parse_s3_uri(std::string_view uri, const EnvLookup& env = process_env());

// ---------------------------------------------------------------- client

struct S3ClientOptions {
  std::string bucket;  // required; S3's naming rules, as parse_s3_uri() checks
  std::string region;  // required: "us-east-1"
  // Empty: AWS, https://BUCKET.s3.REGION.amazonaws.com (path style on
  // https://s3.REGION.amazonaws.com for a bucket with a "." in its name, which
  // the wildcard certificate does not cover). Else "http(s)://host[:port]",
  // addressed path style; plain http:// only to loopback (net::HttpClient).
  std::string endpoint;
  // Null: default_credentials(process_env()), read when the client opens.
  std::shared_ptr<CredentialsSource> credentials;
  Clock* clock = nullptr;  // null: the system clock; else outlives the client
  // Told, once, that the bucket is in another region than `region`. Not
  // owned; outlives the client. Null logs nothing.
  Logger* info_log = nullptr;

  Duration request_timeout = std::chrono::seconds(30);  // each attempt's bound
  // When a failed request is sent again; the pauses are waited on `clock`.
  RetryOptions retry = {};
  // Null: SystemRandom, for the pauses' jitter. Not owned; a Random must
  // outlive the client.
  Random* random = nullptr;

  // put_file() sends a file larger than this in parts; one this size or
  // smaller in one PUT (read into memory). At most kSinglePutBytesMax.
  uint64_t multipart_threshold_bytes = uint64_t{16} << 20;
  // The size of each uploaded part but the last, and of each ranged GET of
  // get_to_file(); it bounds the memory a transfer holds. Between
  // kPartBytesMin (S3's minimum for all parts but the last) and
  // kPartBytesMax. put_file() makes parts larger when a file would need more
  // than kPartsMax of them.
  uint64_t part_size_bytes = uint64_t{8} << 20;
  // Tests only: allows part_size_bytes below kPartBytesMin (at least 1 KiB).
  // S3 refuses to complete an upload whose parts are that small.
  bool allow_small_parts = false;
  size_t connections_max = 16;
};

// S3's limits.
inline constexpr uint64_t kPartBytesMin = uint64_t{5} << 20;
inline constexpr uint64_t kPartBytesMax = uint64_t{5} << 30;
inline constexpr uint64_t kSinglePutBytesMax = uint64_t{5} << 30;
inline constexpr int kPartsMax = 10000;
inline constexpr size_t kKeyBytesMax = 1024;

struct S3ObjectInfo {
  uint64_t size = 0;
  std::string etag;  // as S3 sends it, quotes included: "\"9b2cf535f27731c974343645a3985328\""
  std::string content_type;
};

struct S3Range {
  std::string bytes;
  uint64_t object_size = 0;  // the whole object's, from Content-Range
};

// Called by get_to_file() after each chunk is written: the bytes written so
// far and the object's size.
using S3Progress = std::function<void(uint64_t bytes_done, uint64_t bytes_total)>;

class S3Client {
 public:
  // Fails with kInvalidArgument for a missing region, a bad bucket name,
  // endpoint, size or retry option; with the credentials chain's errors. Sends
  // nothing: the first request finds out whether S3 is reachable.
  static Result<std::unique_ptr<S3Client>> open(S3ClientOptions options);
  ~S3Client();

  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  // Creates the bucket (in the client's region). A bucket this account
  // already owns is a success; one another account owns is kAlreadyExists.
  Status create_bucket();

  // Stores the file at `path` as `key`: one PUT up to the multipart
  // threshold, else a multipart upload read from the file one part at a
  // time, which is aborted when any step fails (so no part lingers).
  // `content_type` empty means "application/octet-stream". kNotFound /
  // kPermissionDenied for a file that cannot be opened; kFailedPrecondition
  // if the file shrinks while it is read.
  Status put_file(std::string_view key, const std::string& path, std::string_view content_type);

  // Stores `bytes` as `key` in one PUT. For small objects: the caller holds
  // them in memory. kInvalidArgument above kSinglePutBytesMax.
  Status put(std::string_view key, std::string_view bytes, std::string_view content_type);

  // The object's size, ETag and Content-Type; kNotFound if there is no such
  // key (or bucket: a HEAD's answer does not say which; get_range() does).
  Result<S3ObjectInfo> head(std::string_view key);

  // Bytes first..last (inclusive) of the object, fewer when it ends sooner,
  // and its size. kInvalidArgument if first > last, if the range is longer
  // than part_size_bytes, or if it starts at or past the object's end.
  Result<S3Range> get_range(std::string_view key, uint64_t first, uint64_t last);

  // Writes the object to `path`, through `path + ".part"` renamed into place
  // once complete and flushed, in ranged GETs of part_size_bytes. Each range
  // is asked for with If-Match on the ETag first seen, so an object replaced
  // meanwhile fails with kFailedPrecondition instead of mixing two versions.
  // On failure the ".part" file is removed and `path` is untouched.
  Status get_to_file(std::string_view key, const std::string& path,
                     const S3Progress& progress = nullptr);

  // Deletes the object. A key that does not exist is a success (S3 answers
  // 204 either way); a missing bucket is kUnavailable.
  Status remove(std::string_view key);

  // A URL from which anyone may GET the object until `now + expires`, signed
  // with the current credentials (which it then depends on: a URL signed
  // with temporary credentials dies with them). kInvalidArgument unless
  // 1 s <= expires <= kPresignExpiresMax. The URL carries a signature: treat
  // it as a secret and never log it.
  Result<std::string> presign_get(std::string_view key, Duration expires, WallTime now);

  const S3ClientOptions& options() const;
  // The region requests are signed for: options().region until S3 says the
  // bucket is in another.
  std::string region() const;

 private:
  struct Impl;
  explicit S3Client(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------- for tests

// What S3's answer `http_status` with error document `body` (possibly empty,
// as for HEAD) means, for an operation described by `what` ("GET 'a/b' in
// bucket 'x'"); `bucket` names the bucket in a NoSuchBucket error. The
// message ends with the HTTP status and AWS's ID of the request: its
// x-amz-request-id header, `request_id`, else the document's RequestId.
Status s3_error_status(int http_status, std::string_view body, std::string_view what,
                       std::string_view bucket, std::string_view request_id = {});

// The text of the first element <tag>...</tag> of `xml`, with the five XML
// entities and numeric character references decoded; nullopt if absent.
std::optional<std::string> xml_element(std::string_view xml, std::string_view tag);

}  // namespace leasehold::aws
