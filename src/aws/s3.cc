// S3Client: one request's life (signing, sending, the retries the rules
// allow), and the operations. See s3.h; S3's wire (names, "s3://" URIs, XML,
// the error table) is s3_wire.cc's.
#include "aws/s3.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "aws/actions.h"
#include "aws/retries.h"
#include "aws/s3_internal.h"
#include "base/logging.h"
#include "base/mutex.h"
#include "net/endpoint.h"
#include "net/http_client.h"

namespace leasehold::aws {

using s3_internal::aws_endpoint;
using s3_internal::ContentRange;
using s3_internal::is_error_document;
using s3_internal::is_multipart_etag;
using s3_internal::is_region_refusal;
using s3_internal::is_throttled;
using s3_internal::is_transient;
using s3_internal::kBucketRegionHeader;
using s3_internal::kDefaultRegion;
using s3_internal::parse_content_range;
using s3_internal::parse_u64;
using s3_internal::validate_bucket;
using s3_internal::validate_key;
using s3_internal::validate_region;
using s3_internal::xml_escape;

namespace {

constexpr std::string_view kService = "s3";
constexpr std::string_view kDefaultContentType = "application/octet-stream";
constexpr std::string_view kXmlNamespace = "http://s3.amazonaws.com/doc/2006-03-01/";
// The largest object S3 stores.
constexpr uint64_t kObjectBytesMax = uint64_t{5} << 40;
// The smallest part allow_small_parts lets through.
constexpr uint64_t kSmallPartBytesMin = 1024;
// What a response may carry beyond a part's bytes: an error document, say.
constexpr size_t kResponseSlackBytes = 64 << 10;

// ---------------------------------------------------------------- files

Status file_error(std::string_view what, const std::string& path, int err) {
  std::string text = std::string(what) + " '" + path + "': " + std::strerror(err);
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return not_found(std::move(text));
    case EACCES:
    case EPERM:
    case EROFS:
      return permission_denied(std::move(text));
    case ENOSPC:
    case EDQUOT:
    case EMFILE:
    case ENFILE:
      return resource_exhausted(std::move(text));
    default:
      return internal_error(std::move(text));
  }
}

// Closes a descriptor when it goes out of scope.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Closes now, for the caller to see the error (a delayed write's).
  int close() {
    const int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

// Reads exactly `n` bytes at `offset` into `out`; false with errno 0 when
// the file ends first.
bool read_at(int fd, uint64_t offset, size_t n, std::string& out) {
  out.resize(n);
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd, out.data() + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      if (got == 0) errno = 0;
      return false;
    }
    done += static_cast<size_t>(got);
  }
  return true;
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t put = ::write(fd, data.data(), data.size());
    if (put < 0 && errno == EINTR) continue;
    if (put < 0) return false;
    data.remove_prefix(static_cast<size_t>(put));
  }
  return true;
}

std::string header_or_empty(const net::HttpResponse& response, std::string_view name) {
  return std::string(response.header(name).value_or(""));
}

// AWS's ID of the request an answer is to, for error messages.
std::string request_id(const net::HttpResponse& response) {
  return header_or_empty(response, "x-amz-request-id");
}

}  // namespace

// ---------------------------------------------------------------- the client

namespace {

// One request, as the operations describe it; send() signs each attempt.
struct S3Call {
  S3Call(std::string_view method, std::string_view key, std::string_view action, std::string what)
      : method(method), key(key), action(action), what(std::move(what)) {}

  std::string_view method;
  std::string key;   // "" for the bucket itself
  HeaderList query;  // decoded names and values
  HeaderList headers;
  std::string body;
  // Safe to send again after it may have been applied (see s3.h).
  bool idempotent = true;
  // Sent again to the bucket's region when S3 says it is in another (all
  // but CreateBucket, which makes the bucket where its body says).
  bool follows_region = true;
  // S3 may answer it 200 and fail it in the body (CompleteMultipartUpload).
  bool error_in_200 = false;
  std::string_view action;  // the IAM action that authorises it: "s3:GetObject"
  std::string what;         // "s3 GET s3://bucket/key", for messages
  // Attempts sent so far: S3 may have acted on any of them.
  int attempts_sent = 0;
};

// The endpoint of the client's bucket in `region`: the configured one (which
// serves every region), else AWS's for that region.
Result<net::HttpEndpoint> bucket_endpoint(const S3ClientOptions& o, std::string_view region) {
  const std::string url = o.endpoint.empty() ? aws_endpoint(o.bucket, region) : o.endpoint;
  Result<net::HttpEndpoint> endpoint = net::parse_http_endpoint(url);
  if (!endpoint.ok()) return endpoint.status().with_context("s3: endpoint");
  return endpoint;
}

Result<std::unique_ptr<net::HttpClient>> open_http(const S3ClientOptions& o,
                                                   net::HttpEndpoint endpoint) {
  net::HttpClientOptions http_options;
  http_options.endpoint = std::move(endpoint);
  http_options.connections_max = o.connections_max;
  http_options.response_bytes_max =
      static_cast<size_t>(std::max<uint64_t>(o.part_size_bytes, 1 << 20)) + kResponseSlackBytes;
  return net::HttpClient::open(std::move(http_options));
}

}  // namespace

struct S3Client::Impl {
  // Where requests go: the region they are signed for, and the HTTP client of
  // the endpoint that serves it. A client starts on the configured region and
  // moves to the one S3 says its bucket is in when it says so. A request
  // keeps the route it began on, so the HTTP client is shared by the route
  // and the requests in flight (one may still be in flight when it moves).
  struct Route {
    std::string region;
    std::shared_ptr<net::HttpClient> http;
  };

  S3ClientOptions options;
  RealClock real_clock;
  SystemRandom system_random;
  std::string scheme;
  bool path_style = true;
  SigningKeyCache signing_keys;
  ClockSkew skew;
  std::unique_ptr<Retrier> retrier;
  mutable Mutex mu;
  Route route GUARDED_BY(mu);
  bool told_moved GUARDED_BY(mu) = false;  // the log has heard of the move

  Route current_route() const EXCLUDES(mu) {
    MutexLock lock(mu);
    return route;
  }

  std::string what(std::string_view op, std::string_view key) const {
    return "s3 " + std::string(op) + " s3://" + options.bucket + "/" + std::string(key);
  }

  // The request path: "/BUCKET/KEY" (path style) or "/KEY", encoded once.
  std::string resource_path(std::string_view key) const {
    std::string path = "/";
    if (path_style) {
      path += options.bucket;
      if (!key.empty()) path += '/';
    }
    path += uri_encode(key, /*keep_slash=*/true);
    return path;
  }

  Result<net::HttpRequest> make_request(const S3Call& call, const std::string& payload_hash,
                                        const Route& route, WallTime now);
  Attempt<net::HttpResponse> attempt(S3Call& call, const std::string& payload_hash,
                                     const Route& route);
  Result<net::HttpResponse> send_to(S3Call& call, const Route& route);
  Result<net::HttpResponse> send(S3Call& call);
  Result<net::HttpResponse> send_ok(S3Call& call);
  std::optional<std::string> bucket_region(const net::HttpResponse& refusal, const Route& route);
  Result<Route> move_to(const std::string& region) EXCLUDES(mu);

  Status put_bytes(std::string_view key, std::string bytes, std::string_view content_type);
  Result<S3Range> range_get(std::string_view key, uint64_t first, uint64_t last,
                            const std::string& if_match);
  Result<S3ObjectInfo> head_object(std::string_view key);
  Result<std::string> create_upload(std::string_view key, std::string_view content_type);
  Result<std::string> upload_part(std::string_view key, const std::string& upload_id, int number,
                                  std::string body);
  Status complete_upload(std::string_view key, const std::string& upload_id,
                         const std::vector<std::string>& etags, uint64_t size);
  bool completed_before(std::string_view key, size_t parts, uint64_t size);
  Status abort_upload(std::string_view key, const std::string& upload_id);
  Status upload_parts(std::string_view key, const std::string& upload_id, int fd, uint64_t size,
                      const std::string& path, std::vector<std::string>& etags);
  Status put_multipart(std::string_view key, int fd, uint64_t size, const std::string& path,
                       std::string_view content_type);
  Status download(std::string_view key, int fd, const std::string& path, const S3ObjectInfo& info,
                  const S3Progress& progress);
};

Result<net::HttpRequest> S3Client::Impl::make_request(const S3Call& call,
                                                      const std::string& payload_hash,
                                                      const Route& route, WallTime now) {
  HttpRequestToSign to_sign;
  to_sign.method = std::string(call.method);
  to_sign.host = route.http->host_header();
  to_sign.path = resource_path(call.key);
  to_sign.query_params = call.query;
  to_sign.headers = call.headers;
  to_sign.payload_hash = payload_hash;
  LEASEHOLD_ASSIGN_OR_RETURN(const Credentials credentials, options.credentials->get());
  LEASEHOLD_ASSIGN_OR_RETURN(SigV4Result signature, sign_v4(to_sign, credentials, route.region,
                                                            kService, now, &signing_keys));
  net::HttpRequest request;
  request.method = to_sign.method;
  request.target = std::move(to_sign.path);
  for (size_t i = 0; i < call.query.size(); ++i) {
    const auto& [name, value] = call.query[i];
    request.target += i == 0 ? '?' : '&';
    request.target += uri_encode(name, false);
    // "?uploads", as the SDKs send it; it is signed as "uploads=".
    if (!value.empty()) request.target += "=" + uri_encode(value, false);
  }
  request.headers = std::move(to_sign.headers);
  request.headers.emplace_back("X-Amz-Date", std::move(signature.amz_date));
  request.headers.emplace_back("X-Amz-Content-Sha256", std::move(signature.content_sha256));
  request.headers.emplace_back("Authorization", std::move(signature.authorization));
  if (!signature.security_token.empty()) {
    request.headers.emplace_back("X-Amz-Security-Token", std::move(signature.security_token));
  }
  return request;
}

// One attempt at `call` on `route`, signed now (as the clock skew has it
// corrected), judged by the rules of s3.h. S3's answer, whatever its
// status, is the result unless it may be sent again. The body moves into the
// request and back, so a part is held once (and once more in the HTTP
// client's wire buffer).
Attempt<net::HttpResponse> S3Client::Impl::attempt(S3Call& call, const std::string& payload_hash,
                                                   const Route& route) {
  const WallTime signed_at = skew.now(*options.clock);
  Result<net::HttpRequest> request = make_request(call, payload_hash, route, signed_at);
  if (!request.ok()) return {request.status()};
  request->body = std::move(call.body);
  const MonoTime sent_at = options.clock->mono_now();
  ++call.attempts_sent;
  Result<net::HttpResponse> response = route.http->send(*request, options.request_timeout);
  call.body = std::move(request->body);
  if (!response.ok()) {
    Status failed = response.status().with_context(call.what);
    const Code code = response.status().code();
    if (code == Code::kUnavailable) return {std::move(failed), RetryCause::kTransient};
    if (code != Code::kUnknownOutcome || !call.idempotent) return {std::move(failed)};
    return {std::move(failed),
            no_reply_cause(options.clock->mono_now() - sent_at, options.request_timeout)};
  }
  // S3 may fail a CompleteMultipartUpload after it answered 200, in the
  // body: botocore takes such an answer for the 500 it is, and so retries it
  // (botocore/handlers.py: _handle_200_error and
  // _looks_like_special_case_error; check_for_200_error before them).
  if (call.error_in_200 && response->status == 200 && is_error_document(response->body)) {
    response->status = 500;
  }
  const int status = response->status;
  if (status < 300) return {*std::move(response)};
  const std::string code = xml_element(response->body, "Code").value_or("");
  const bool resign = skew.learn(code, xml_element(response->body, "Message").value_or(""),
                                 response->header("Date"), signed_at, *options.clock);
  std::optional<RetryCause> cause;
  if (is_throttled(status, code)) {
    cause = RetryCause::kThrottling;
  } else if (call.idempotent && is_transient(status, code)) {
    cause = RetryCause::kTransient;
  }
  if (!cause && !resign) return {*std::move(response)};
  return {s3_error_status(status, response->body, call.what, options.bucket, request_id(*response)),
          cause, resign};
}

// Sends `call` on `route`, again while the rules of s3.h allow, and returns
// S3's last answer whatever its status, or the failure it gave up on.
Result<net::HttpResponse> S3Client::Impl::send_to(S3Call& call, const Route& route) {
  LEASEHOLD_RETURN_IF_ERROR(check_action(call.action).with_context(call.what));
  const std::string payload_hash = sha256_hex(call.body);
  return send_with_retries<net::HttpResponse>(
      *retrier, MonoTime::max(),
      [&](const Retrier::Call&) { return attempt(call, payload_hash, route); },
      [](const Status& last, RetryStop stop, int attempts) {
        return last.with_context("gave up " + describe_stop(stop, attempts));
      });
}

// send_to() on the bucket's route. When S3 answers that the bucket is in
// another region, the client moves there and the call is sent once more,
// signed for that region, as botocore's S3RegionRedirectorv2 does
// (botocore/utils.py, redirect_from_error): once, so that a second refusal,
// or one that names no region, is the caller's answer, as any other is.
Result<net::HttpResponse> S3Client::Impl::send(S3Call& call) {
  const Route route = current_route();
  LEASEHOLD_ASSIGN_OR_RETURN(net::HttpResponse response, send_to(call, route));
  if (!call.follows_region ||
      !is_region_refusal(response.status, response.body,
                         response.header(kBucketRegionHeader).has_value())) {
    return response;
  }
  const std::optional<std::string> region = bucket_region(response, route);
  if (!region) return response;
  Result<Route> moved = move_to(*region);
  if (!moved.ok()) return response;
  return send_to(call, *moved);
}

// The region S3 says the bucket is in, after it refused a request on `route`
// for its region: the refusal's x-amz-bucket-region, else its document's
// <Region>, else the x-amz-bucket-region of a HEAD of the bucket, which S3
// sends even with a 301 or a 403 (botocore's get_bucket_region). nullopt if
// none names a region, or only the route's own.
std::optional<std::string> S3Client::Impl::bucket_region(const net::HttpResponse& refusal,
                                                         const Route& route) {
  std::optional<std::string> region;
  if (const auto named = refusal.header(kBucketRegionHeader)) region = std::string(*named);
  if (!region) region = xml_element(refusal.body, "Region");
  if (!region) {
    S3Call head("HEAD", "", "s3:ListBucket", what("HeadBucket", ""));
    head.follows_region = false;
    const Result<net::HttpResponse> answer = send_to(head, route);
    if (answer.ok()) {
      if (const auto named = answer->header(kBucketRegionHeader)) region = std::string(*named);
    }
  }
  // The region goes into a host name and a signature: it must be one.
  if (!region || *region == route.region || !validate_region(*region).ok()) return std::nullopt;
  return region;
}

// From now on, requests go to `region`: on AWS to its endpoint, on a
// configured endpoint to the same one, signed for `region`. Said once in the
// log: every process of a deployment whose bucket is not where it says pays
// a refused request (or two) before its first answer, until the region is
// set right.
Result<S3Client::Impl::Route> S3Client::Impl::move_to(const std::string& region) {
  Route moved;
  bool tell = false;
  {
    MutexLock lock(mu);
    if (route.region != region) {
      std::shared_ptr<net::HttpClient> http = route.http;
      if (options.endpoint.empty()) {
        LEASEHOLD_ASSIGN_OR_RETURN(net::HttpEndpoint endpoint, bucket_endpoint(options, region));
        LEASEHOLD_ASSIGN_OR_RETURN(http, open_http(options, std::move(endpoint)));
      }
      route = Route{region, std::move(http)};
    }
    tell = !told_moved;
    told_moved = true;
    moved = route;
  }
  if (tell) {
    log_to(options.info_log, LogLevel::kWarn,
           "s3: bucket '{}' is in region {}, not {} as configured: requests go to {} from now on, "
           "each process paying a refused request first; set region={} in the s3:// URI (or "
           "AWS_REGION)",
           options.bucket, region, options.region, region, region);
  }
  return moved;
}

// send(), with any answer but a 2xx turned into its Status.
Result<net::HttpResponse> S3Client::Impl::send_ok(S3Call& call) {
  LEASEHOLD_ASSIGN_OR_RETURN(net::HttpResponse response, send(call));
  if (response.status >= 200 && response.status < 300) return response;
  return s3_error_status(response.status, response.body, call.what, options.bucket,
                         request_id(response));
}

// ---------------------------------------------------------------- opening

S3Client::S3Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
S3Client::~S3Client() = default;

const S3ClientOptions& S3Client::options() const { return impl_->options; }

std::string S3Client::region() const { return impl_->current_route().region; }

namespace {

Status validate_options(const S3ClientOptions& o) {
  LEASEHOLD_RETURN_IF_ERROR(validate_bucket(o.bucket));
  LEASEHOLD_RETURN_IF_ERROR(validate_region(o.region));
  const uint64_t part_min = o.allow_small_parts ? kSmallPartBytesMin : kPartBytesMin;
  if (o.part_size_bytes < part_min || o.part_size_bytes > kPartBytesMax) {
    return invalid_argument("s3: part_size_bytes must be within " + std::to_string(part_min) +
                            ".." + std::to_string(kPartBytesMax));
  }
  if (o.multipart_threshold_bytes > kSinglePutBytesMax) {
    return invalid_argument("s3: multipart_threshold_bytes must be at most " +
                            std::to_string(kSinglePutBytesMax));
  }
  if (o.request_timeout <= Duration::zero()) {
    return invalid_argument("s3: request_timeout must be positive");
  }
  if (o.connections_max == 0) return invalid_argument("s3: connections_max must be at least 1");
  return validate_retry_options(o.retry).with_context("s3");
}

}  // namespace

Result<std::unique_ptr<S3Client>> S3Client::open(S3ClientOptions options) {
  LEASEHOLD_RETURN_IF_ERROR(validate_options(options));
  auto impl = std::make_unique<Impl>();
  impl->path_style = !options.endpoint.empty() || options.bucket.find('.') != std::string::npos;
  LEASEHOLD_ASSIGN_OR_RETURN(net::HttpEndpoint endpoint, bucket_endpoint(options, options.region));
  impl->scheme = endpoint.scheme;
  LEASEHOLD_ASSIGN_OR_RETURN(std::shared_ptr<net::HttpClient> http,
                             open_http(options, std::move(endpoint)));
  {
    MutexLock lock(impl->mu);
    impl->route = Impl::Route{options.region, std::move(http)};
  }
  if (options.credentials == nullptr) {
    LEASEHOLD_ASSIGN_OR_RETURN(options.credentials, default_credentials(process_env()));
  }
  impl->options = std::move(options);
  if (impl->options.clock == nullptr) impl->options.clock = &impl->real_clock;
  if (impl->options.random == nullptr) impl->options.random = &impl->system_random;
  impl->retrier =
      std::make_unique<Retrier>(impl->options.retry, *impl->options.clock, *impl->options.random);
  return std::unique_ptr<S3Client>(new S3Client(std::move(impl)));
}

// ---------------------------------------------------------------- buckets and small objects

Status S3Client::create_bucket() {
  S3Call call("PUT", "", "s3:CreateBucket", impl_->what("CreateBucket", ""));
  call.follows_region = false;
  // us-east-1 is S3's default location, which it refuses to be named.
  if (impl_->options.region != kDefaultRegion) {
    call.body = "<CreateBucketConfiguration xmlns=\"" + std::string(kXmlNamespace) +
                "\"><LocationConstraint>" + impl_->options.region +
                "</LocationConstraint></CreateBucketConfiguration>";
  }
  LEASEHOLD_ASSIGN_OR_RETURN(net::HttpResponse response, impl_->send(call));
  if (response.status >= 200 && response.status < 300) return Status::ok_status();
  if (xml_element(response.body, "Code") == "BucketAlreadyOwnedByYou") return Status::ok_status();
  return s3_error_status(response.status, response.body, call.what, impl_->options.bucket,
                         request_id(response));
}

Status S3Client::Impl::put_bytes(std::string_view key, std::string bytes,
                                 std::string_view content_type) {
  S3Call call("PUT", key, "s3:PutObject", what("PUT", key));
  call.headers.emplace_back("Content-Type",
                            content_type.empty() ? kDefaultContentType : content_type);
  call.body = std::move(bytes);
  return send_ok(call).status();
}

Status S3Client::put(std::string_view key, std::string_view bytes, std::string_view content_type) {
  LEASEHOLD_RETURN_IF_ERROR(validate_key(key));
  if (bytes.size() > kSinglePutBytesMax) {
    return invalid_argument("s3: an object of " + std::to_string(bytes.size()) +
                            " bytes is too large for one PUT");
  }
  return impl_->put_bytes(key, std::string(bytes), content_type);
}

Status S3Client::remove(std::string_view key) {
  LEASEHOLD_RETURN_IF_ERROR(validate_key(key));
  S3Call call("DELETE", key, "s3:DeleteObject", impl_->what("DELETE", key));
  LEASEHOLD_ASSIGN_OR_RETURN(net::HttpResponse response, impl_->send(call));
  if (response.status >= 200 && response.status < 300) return Status::ok_status();
  // S3 answers 204 for a missing key; a server that says NoSuchKey agrees.
  if (xml_element(response.body, "Code") == "NoSuchKey") return Status::ok_status();
  return s3_error_status(response.status, response.body, call.what, impl_->options.bucket,
                         request_id(response));
}

// Signed for the bucket's region and addressed to it, as the client has
// learnt them: a URL for the configured region would be refused.
Result<std::string> S3Client::presign_get(std::string_view key, Duration expires, WallTime now) {
  LEASEHOLD_RETURN_IF_ERROR(validate_key(key));
  const Impl::Route route = impl_->current_route();
  HttpRequestToSign to_sign;
  to_sign.method = "GET";
  to_sign.host = route.http->host_header();
  to_sign.path = impl_->resource_path(key);
  LEASEHOLD_ASSIGN_OR_RETURN(const Credentials credentials, impl_->options.credentials->get());
  LEASEHOLD_ASSIGN_OR_RETURN(
      PresignedQuery presigned,
      presign_v4(to_sign, credentials, route.region, kService, now, expires, &impl_->signing_keys));
  return impl_->scheme + "://" + to_sign.host + to_sign.path + "?" + presigned.query;
}

// ---------------------------------------------------------------- reading

// A ranged GET. `if_match`, when not empty, makes S3 refuse (412) if the
// object is no longer that version.
Result<S3Range> S3Client::Impl::range_get(std::string_view key, uint64_t first, uint64_t last,
                                          const std::string& if_match) {
  S3Call call("GET", key, "s3:GetObject", what("GET", key));
  call.headers.emplace_back("Range", "bytes=" + std::to_string(first) + "-" + std::to_string(last));
  if (!if_match.empty()) call.headers.emplace_back("If-Match", if_match);
  LEASEHOLD_ASSIGN_OR_RETURN(net::HttpResponse response, send(call));
  S3Range out;
  if (response.status == 200) {
    // A server that ignores Range sends the whole object.
    out.object_size = response.body.size();
    if (first >= out.object_size) {
      return invalid_argument(call.what + ": range starts at or past the end (size " +
                              std::to_string(out.object_size) + ")");
    }
    out.bytes = response.body.substr(first, last - first + 1);
    return out;
  }
  if (response.status == 416) {
    return invalid_argument(call.what + ": range " + std::to_string(first) + "-" +
                            std::to_string(last) + " starts at or past the object's end");
  }
  if (response.status != 206) {
    return s3_error_status(response.status, response.body, call.what, options.bucket,
                           request_id(response));
  }
  const std::optional<ContentRange> range =
      parse_content_range(response.header("Content-Range").value_or(""));
  if (!range || range->first != first || range->last > last ||
      response.body.size() != range->last - range->first + 1) {
    return internal_error(call.what +
                          ": the reply's Content-Range does not match its request or body");
  }
  out.object_size = range->total;
  out.bytes = std::move(response.body);
  return out;
}

// S3 answers a HEAD with the object's headers and no body: an error is
// known by its status alone (404 for a missing key or bucket).
Result<S3ObjectInfo> S3Client::Impl::head_object(std::string_view key) {
  S3Call call("HEAD", key, "s3:GetObject", what("HEAD", key));
  LEASEHOLD_ASSIGN_OR_RETURN(const net::HttpResponse response, send_ok(call));
  const std::optional<uint64_t> size = parse_u64(header_or_empty(response, "Content-Length"));
  if (!size) return internal_error(call.what + ": the reply has no valid Content-Length");
  S3ObjectInfo info;
  info.size = *size;
  info.etag = header_or_empty(response, "ETag");
  info.content_type = header_or_empty(response, "Content-Type");
  return info;
}

Result<S3ObjectInfo> S3Client::head(std::string_view key) {
  LEASEHOLD_RETURN_IF_ERROR(validate_key(key));
  return impl_->head_object(key);
}

Result<S3Range> S3Client::get_range(std::string_view key, uint64_t first, uint64_t last) {
  LEASEHOLD_RETURN_IF_ERROR(validate_key(key));
  if (first > last) return invalid_argument("s3: get_range: first > last");
  if (last - first >= impl_->options.part_size_bytes) {
    return invalid_argument("s3: get_range: at most part_size_bytes (" +
                            std::to_string(impl_->options.part_size_bytes) + ") at once");
  }
  return impl_->range_get(key, first, last, "");
}

// Writes the object's bytes to `fd`, one ranged GET of part size at a time.
Status S3Client::Impl::download(std::string_view key, int fd, const std::string& path,
                                const S3ObjectInfo& info, const S3Progress& progress) {
  const uint64_t chunk_max = options.part_size_bytes;
  for (uint64_t offset = 0; offset < info.size;) {
    const uint64_t n = std::min(chunk_max, info.size - offset);
    LEASEHOLD_ASSIGN_OR_RETURN(S3Range range, range_get(key, offset, offset + n - 1, info.etag));
    if (range.object_size != info.size || range.bytes.size() != n) {
      return failed_precondition(what("GET", key) + ": the object changed during the download");
    }
    if (!write_all(fd, range.bytes)) return file_error("s3: writing", path, errno);
    offset += n;
    if (progress) progress(offset, info.size);
  }
  return Status::ok_status();
}

Status S3Client::get_to_file(std::string_view key, const std::string& path,
                             const S3Progress& progress) {
  LEASEHOLD_RETURN_IF_ERROR(validate_key(key));
  LEASEHOLD_ASSIGN_OR_RETURN(const S3ObjectInfo info, impl_->head_object(key));
  const std::string partial = path + ".part";
  Fd fd(::open(partial.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) return file_error("s3: creating", partial, errno);
  Status status = impl_->download(key, fd.get(), partial, info, progress);
  if (status.ok() && ::fsync(fd.get()) != 0) status = file_error("s3: flushing", partial, errno);
  if (fd.close() != 0 && status.ok()) status = file_error("s3: closing", partial, errno);
  if (status.ok() && ::rename(partial.c_str(), path.c_str()) != 0) {
    status = file_error("s3: renaming into place", partial, errno);
  }
  if (!status.ok()) ::unlink(partial.c_str());
  return status;
}

// ---------------------------------------------------------------- writing

Result<std::string> S3Client::Impl::create_upload(std::string_view key,
                                                  std::string_view content_type) {
  S3Call call("POST", key, "s3:PutObject", what("CreateMultipartUpload", key));
  call.query = {{"uploads", ""}};
  call.idempotent = false;
  call.headers.emplace_back("Content-Type", content_type);
  LEASEHOLD_ASSIGN_OR_RETURN(const net::HttpResponse response, send_ok(call));
  std::optional<std::string> upload_id = xml_element(response.body, "UploadId");
  if (!upload_id || upload_id->empty())
    return internal_error(call.what + ": the reply has no UploadId");
  return *std::move(upload_id);
}

// Sends one part and returns its ETag.
Result<std::string> S3Client::Impl::upload_part(std::string_view key, const std::string& upload_id,
                                                int number, std::string body) {
  S3Call call("PUT", key, "s3:PutObject", what("UploadPart " + std::to_string(number), key));
  call.query = {{"partNumber", std::to_string(number)}, {"uploadId", upload_id}};
  call.body = std::move(body);
  LEASEHOLD_ASSIGN_OR_RETURN(const net::HttpResponse response, send_ok(call));
  std::string etag = header_or_empty(response, "ETag");
  if (etag.empty()) return internal_error(call.what + ": the reply has no ETag");
  return etag;
}

// Sent again as a GET is (after a 5xx, a 200 whose body is an error, or no
// answer), as the AWS SDKs send it: completing an upload again makes the same
// object, and a retry that finds the upload gone (NoSuchUpload: an earlier
// attempt completed it and its answer was lost) is told by the object.
Status S3Client::Impl::complete_upload(std::string_view key, const std::string& upload_id,
                                       const std::vector<std::string>& etags, uint64_t size) {
  S3Call call("POST", key, "s3:PutObject", what("CompleteMultipartUpload", key));
  call.query = {{"uploadId", upload_id}};
  call.error_in_200 = true;
  call.body = "<CompleteMultipartUpload xmlns=\"" + std::string(kXmlNamespace) + "\">";
  for (size_t i = 0; i < etags.size(); ++i) {
    call.body += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" +
                 xml_escape(etags[i]) + "</ETag></Part>";
  }
  call.body += "</CompleteMultipartUpload>";
  call.headers.emplace_back("Content-Type", "application/xml");
  LEASEHOLD_ASSIGN_OR_RETURN(const net::HttpResponse response, send(call));
  if (response.status >= 200 && response.status < 300) return Status::ok_status();
  if (call.attempts_sent > 1 && xml_element(response.body, "Code") == "NoSuchUpload" &&
      completed_before(key, etags.size(), size)) {
    return Status::ok_status();
  }
  return s3_error_status(response.status, response.body, call.what, options.bucket,
                         request_id(response));
}

// After a CompleteMultipartUpload that S3 answered NoSuchUpload when it was
// sent again: whether an earlier attempt completed the upload. The object
// is then there with a multipart upload's ETag ("...-N" for N parts) and
// the file's size, which an object put in one PUT would not have.
bool S3Client::Impl::completed_before(std::string_view key, size_t parts, uint64_t size) {
  const Result<S3ObjectInfo> info = head_object(key);
  return info.ok() && info->size == size && is_multipart_etag(info->etag, parts);
}

Status S3Client::Impl::abort_upload(std::string_view key, const std::string& upload_id) {
  S3Call call("DELETE", key, "s3:AbortMultipartUpload", what("AbortMultipartUpload", key));
  call.query = {{"uploadId", upload_id}};
  return send_ok(call).status();
}

// Reads the file part by part, into one buffer, and sends each part.
Status S3Client::Impl::upload_parts(std::string_view key, const std::string& upload_id, int fd,
                                    uint64_t size, const std::string& path,
                                    std::vector<std::string>& etags) {
  // Parts grow past part_size_bytes when S3's 10000 would not hold the file.
  const uint64_t part = std::max(options.part_size_bytes, (size + kPartsMax - 1) / kPartsMax);
  std::string buffer;
  for (uint64_t offset = 0; offset < size; offset += part) {
    const size_t n = static_cast<size_t>(std::min(part, size - offset));
    if (!read_at(fd, offset, n, buffer)) {
      if (errno == 0)
        return failed_precondition("s3: file '" + path + "' shrank while it was uploaded");
      return file_error("s3: reading", path, errno);
    }
    LEASEHOLD_ASSIGN_OR_RETURN(
        std::string etag,
        upload_part(key, upload_id, static_cast<int>(etags.size() + 1), std::move(buffer)));
    etags.push_back(std::move(etag));
    buffer = std::string();
  }
  return Status::ok_status();
}

Status S3Client::Impl::put_multipart(std::string_view key, int fd, uint64_t size,
                                     const std::string& path, std::string_view content_type) {
  if (size > kObjectBytesMax) {
    return invalid_argument("s3: file '" + path + "' is larger than S3's largest object");
  }
  LEASEHOLD_ASSIGN_OR_RETURN(const std::string upload_id, create_upload(key, content_type));
  std::vector<std::string> etags;
  Status status = upload_parts(key, upload_id, fd, size, path, etags);
  if (status.ok()) status = complete_upload(key, upload_id, etags, size);
  if (status.ok()) return status;
  // Parts of an upload never completed are kept, and billed, until aborted.
  const Status aborted = abort_upload(key, upload_id);
  if (!aborted.ok()) {
    return status.with_context("(aborting upload " + upload_id +
                               " failed too: " + aborted.message() + ")");
  }
  return status;
}

Status S3Client::put_file(std::string_view key, const std::string& path,
                          std::string_view content_type) {
  LEASEHOLD_RETURN_IF_ERROR(validate_key(key));
  if (content_type.empty()) content_type = kDefaultContentType;
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return file_error("s3: opening", path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return file_error("s3: reading", path, errno);
  if (!S_ISREG(st.st_mode)) return invalid_argument("s3: '" + path + "' is not a regular file");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > impl_->options.multipart_threshold_bytes) {
    return impl_->put_multipart(key, fd.get(), size, path, content_type);
  }
  std::string bytes;
  if (!read_at(fd.get(), 0, static_cast<size_t>(size), bytes)) {
    if (errno == 0) return failed_precondition("s3: file '" + path + "' shrank while it was read");
    return file_error("s3: reading", path, errno);
  }
  return impl_->put_bytes(key, std::move(bytes), content_type);
}

}  // namespace leasehold::aws
