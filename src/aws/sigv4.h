// AWS Signature Version 4: the signature every DynamoDB, SQS, S3 and STS
// request carries.
//
// sign_v4() turns one HTTP request, a set of credentials, a region, a service
// and a wall time into the headers that authenticate it: `Authorization`,
// `X-Amz-Date` and, with temporary credentials, `X-Amz-Security-Token`. It
// follows botocore's SigV4Auth byte for byte for the requests leasehold sends
// (tests/aws/ checks that on generated DynamoDB requests and on the S3
// client's requests and presigned URLs, and checks the signer against AWS's
// SigV4 test suite; docs/architecture.md says what is checked against what),
// including its choices where the specification leaves room: `user-agent`,
// `expect` and `x-amzn-trace-id` are never signed, repeated headers are
// joined with ",", and the payload is hashed unless the caller passes a hash
// of its own.
//
// S3 signs differently from every other service, and the signer applies S3's
// rules exactly when `service` is "s3" (botocore's S3SigV4Auth): the path is
// encoded once, not twice, and is not normalised (an S3 key may hold "//" or
// ".."); and the payload's hash (or "UNSIGNED-PAYLOAD") is signed as the
// header `x-amz-content-sha256`, which the request must then carry
// (SigV4Result::content_sha256). presign_v4() puts the signature in the query
// instead, for a URL that anyone may GET until it expires.
//
// The secret key and the session token never appear in a Status message.
// All functions are pure and thread-safe; the time is passed in, never read.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "leasehold/clock.h"
#include "leasehold/status.h"

namespace leasehold::aws {

struct Credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  // empty for long-term credentials
};

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// One request as it will go on the wire.
struct HttpRequestToSign {
  std::string method = "POST";
  // The Host header value, with ":port" when the port is not the default one.
  std::string host;
  // As written on the request line (so already percent-encoded). For every
  // service but S3 the signer encodes it once more, as SigV4 requires, and it
  // must be normalised: starts with "/", no ".", ".." or empty ("//")
  // segments. DynamoDB always uses "/". For "s3" it is signed as it is, so it
  // must be in SigV4's own encoding, uri_encode(raw, /*keep_slash=*/true)
  // (what S3 compares the signature with), and only has to start with "/".
  std::string path = "/";
  // Decoded names and values, in any order; the signer encodes and sorts them.
  HeaderList query_params;
  // Any order, any case. Must not contain Host, X-Amz-Date, Authorization or
  // X-Amz-Security-Token (nor, for "s3", X-Amz-Content-Sha256): the signer
  // adds those.
  HeaderList headers;
  std::string body;
  // Empty: the signer hashes `body`. Else the payload's SHA-256 as 64
  // lowercase hex digits, computed by the caller (the body is then not read),
  // or, for "s3" only, "UNSIGNED-PAYLOAD": the body is not covered.
  std::string payload_hash;
};

struct SigV4Result {
  // The headers to add to the request.
  std::string authorization;
  std::string amz_date;        // X-Amz-Date, "YYYYMMDD'T'HHMMSS'Z'"
  std::string security_token;  // X-Amz-Security-Token; empty means "do not send"
  std::string content_sha256;  // X-Amz-Content-Sha256; set for "s3" only

  // The intermediate steps, for tests and for debugging a rejected signature.
  // None holds the secret key; canonical_request holds the session token (as
  // the request on the wire does), so it must not be logged as is.
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;  // lowercase hex
};

// Signs `request` at time `now` (truncated to the second). Fails with
// kInvalidArgument, naming the offending field but never a secret, when the
// credentials are missing, region or service is empty, the path is not
// normalised, a reserved header is present, or `now` is outside the years
// 1970..9999.
//
// The signing key derived from the secret (four HMACs) changes once a day per
// region and service; a SigningKeyCache, when given, keeps the last one, so
// that a client signing many requests derives it once a day. The result is
// byte for byte the same with or without it.
class SigningKeyCache;
Result<SigV4Result> sign_v4(const HttpRequestToSign& request, const Credentials& credentials,
                            std::string_view region, std::string_view service, WallTime now,
                            SigningKeyCache* cache = nullptr);

// Moves the headers the signature adds onto a request's: X-Amz-Date,
// Authorization and, with temporary credentials, X-Amz-Security-Token.
void add_signature_headers(SigV4Result& signature, HeaderList& headers);

// The longest a presigned URL may be valid: S3 refuses X-Amz-Expires above
// seven days.
inline constexpr Duration kPresignExpiresMax = std::chrono::hours(24 * 7);

struct PresignedQuery {
  // The URL's whole query, without the "?": the request's own parameters and
  // X-Amz-Algorithm, -Credential, -Date, -Expires, -SignedHeaders (and
  // -Security-Token with temporary credentials) in canonical order and
  // encoding, then X-Amz-Signature. Whoever holds it can use it until it
  // expires, so it is as secret as the object; never log it.
  std::string query;
  // The intermediate steps, for tests and debugging; canonical_request holds
  // the session token.
  std::string amz_date;
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;  // lowercase hex
};

// Signs `request` in its query (SigV4 "query parameters" authentication, the
// presigned URL of S3): only the Host header is signed and the payload is
// UNSIGNED-PAYLOAD, so the URL works from any HTTP client. Valid for
// `expires` (truncated to the second) from `now`. Fails as sign_v4() does,
// and with kInvalidArgument when `expires` is not within 1 s ..
// kPresignExpiresMax, when the request has headers, a body or a payload hash
// other than UNSIGNED-PAYLOAD, or when a query parameter is named like one the
// signer adds (X-Amz-*). The path follows the rules of `service` as for
// sign_v4().
Result<PresignedQuery> presign_v4(const HttpRequestToSign& request, const Credentials& credentials,
                                  std::string_view region, std::string_view service, WallTime now,
                                  Duration expires, SigningKeyCache* cache = nullptr);

// The last derived signing key, for one secret, day, region and service,
// ready to sign with: the key's two HMAC pad blocks are hashed when it is
// derived, not for every request (RFC 2104, section 4). Thread-safe. The key
// material is wiped when replaced and on destruction.
class SigningKeyCache {
 public:
  SigningKeyCache();
  SigningKeyCache(const SigningKeyCache&) = delete;
  SigningKeyCache& operator=(const SigningKeyCache&) = delete;
  ~SigningKeyCache();

  // The raw 32-byte HMAC-SHA256 of `string_to_sign` under the signing key for
  // (secret, date "YYYYMMDD", region, service).
  std::string sign(const std::string& secret, std::string_view date, std::string_view region,
                   std::string_view service, std::string_view string_to_sign);
  uint64_t derivations() const;  // how many times a key was derived

 private:
  class Key;

  mutable Mutex mu_;
  std::string secret_ GUARDED_BY(mu_);
  std::string date_ GUARDED_BY(mu_);
  std::string region_ GUARDED_BY(mu_);
  std::string service_ GUARDED_BY(mu_);
  std::unique_ptr<const Key> key_ GUARDED_BY(mu_);
  uint64_t derivations_ GUARDED_BY(mu_) = 0;
};

// Building blocks, exposed for tests.

// SHA-256 of `data`, as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

// RFC 3986 percent-encoding as SigV4 wants it: every byte except A-Z a-z 0-9
// "-._~" becomes %XY (uppercase hex); "/" is kept too when `keep_slash`.
std::string uri_encode(std::string_view raw, bool keep_slash);

// "Trimall": drops leading and trailing whitespace and turns every run of
// inner whitespace into one space.
std::string trim_all(std::string_view value);

}  // namespace leasehold::aws
