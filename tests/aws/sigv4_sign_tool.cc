// sigv4_sign_tool: leasehold's SigV4 signer behind a line protocol, so that
// other implementations and published vectors can be checked against it on
// many requests: sigv4_botocore_test.py (botocore's signers) and
// sigv4_suite_test.mjs (AWS's SigV4 test suite).
//
// Reads one JSON object per line on stdin:
//   {"method", "host", "path", "query": [[k, v]...], "headers": [[k, v]...],
//    "body", "access_key", "secret_key", "token", "region", "service",
//    "unix_seconds"}
// with, optionally:
//   "key": an S3 object key, appended to "path" encoded as the S3 client
//          encodes it (uri_encode with "/" kept), so that the comparison
//          covers that encoding and not only the signer;
//   "payload_hash": passed to the signer as it is ("UNSIGNED-PAYLOAD", or a
//          hash), instead of the signer hashing "body";
//   "presign_expires_s": sign in the query (presign_v4) for that many
//          seconds, instead of in headers.
// Writes one JSON object per line on stdout: {"path", "authorization",
// "canonical_request", "string_to_sign"} (with "content_sha256" for S3), or
// for a presigned request {"path", "query", "canonical_request",
// "string_to_sign", "signature"}, or {"error"} when the signer refuses the
// request. Exits 1 on a line that is not such an object. Every line is signed
// through one SigningKeyCache, as the clients sign, so the comparison covers
// the cached key as it changes with the secret, day, region and service from
// line to line. Single-threaded; a test tool, not a product.
#include <boost/json.hpp>
#include <chrono>
#include <iostream>
#include <string>

#include "aws/sigv4.h"

namespace json = boost::json;
using leasehold::aws::Credentials;
using leasehold::aws::HeaderList;
using leasehold::aws::HttpRequestToSign;

namespace {

HeaderList pairs_of(const json::value& v) {
  HeaderList out;
  for (const json::value& pair : v.as_array()) {
    const json::array& kv = pair.as_array();
    out.emplace_back(json::value_to<std::string>(kv.at(0)), json::value_to<std::string>(kv.at(1)));
  }
  return out;
}

// The answer to one line: what every signature shows (the path, the
// canonical request, the string to sign) and what `fill` adds for its mode,
// or the signer's refusal.
template <typename Signed, typename Fill>
json::object answer(const leasehold::Result<Signed>& signature, const std::string& path,
                    Fill fill) {
  json::object out;
  if (!signature.ok()) {
    out["error"] = signature.status().to_string();
    return out;
  }
  out["path"] = path;
  out["canonical_request"] = signature->canonical_request;
  out["string_to_sign"] = signature->string_to_sign;
  fill(*signature, out);
  return out;
}

// Throws (boost::system::system_error) on a malformed line.
json::object sign_line(const std::string& line, leasehold::aws::SigningKeyCache& cache) {
  const json::object in = json::parse(line).as_object();
  const auto str = [&](const char* key) { return json::value_to<std::string>(in.at(key)); };
  HttpRequestToSign request;
  request.method = str("method");
  request.host = str("host");
  request.path = str("path");
  if (in.contains("key"))
    request.path += leasehold::aws::uri_encode(str("key"), /*keep_slash=*/true);
  request.query_params = pairs_of(in.at("query"));
  request.headers = pairs_of(in.at("headers"));
  request.body = str("body");
  if (in.contains("payload_hash")) request.payload_hash = str("payload_hash");
  const Credentials credentials{str("access_key"), str("secret_key"), str("token")};
  const leasehold::WallTime now{std::chrono::seconds(in.at("unix_seconds").to_number<int64_t>())};
  if (in.contains("presign_expires_s")) {
    const std::chrono::seconds expires(in.at("presign_expires_s").to_number<int64_t>());
    return answer(leasehold::aws::presign_v4(request, credentials, str("region"), str("service"),
                                             now, expires, &cache),
                  request.path, [](const leasehold::aws::PresignedQuery& p, json::object& out) {
                    out["query"] = p.query;
                    out["signature"] = p.signature;
                  });
  }
  return answer(
      leasehold::aws::sign_v4(request, credentials, str("region"), str("service"), now, &cache),
      request.path, [](const leasehold::aws::SigV4Result& s, json::object& out) {
        out["authorization"] = s.authorization;
        if (!s.content_sha256.empty()) out["content_sha256"] = s.content_sha256;
      });
}

}  // namespace

int main() {
  leasehold::aws::SigningKeyCache cache;
  std::string line;
  while (std::getline(std::cin, line)) {
    try {
      std::cout << json::serialize(sign_line(line, cache)) << '\n';
    } catch (const std::exception& e) {
      std::cerr << "sigv4_sign_tool: bad input line: " << e.what() << '\n';
      return 1;
    }
  }
  std::cout.flush();
  return 0;
}
