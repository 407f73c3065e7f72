// sigv4_sign_tool: leasehold's SigV4 signer behind a line protocol, so that
// sigv4_botocore_test.py can compare it with botocore's on many requests.
//
// Reads one JSON object per line on stdin:
//   {"method", "host", "path", "query": [[k, v]...], "headers": [[k, v]...],
//    "body", "access_key", "secret_key", "token", "region", "service",
//    "unix_seconds"}
// and writes one JSON object per line on stdout: {"authorization",
// "canonical_request", "string_to_sign"} or {"error"}. Exits 1 on a line that
// is not such an object. Every line is signed through one SigningKeyCache, as
// the DynamoDB store signs, so the comparison covers the cached key as it
// changes with the secret, day, region and service from line to line.
// Single-threaded; a test tool, not a product.
#include <boost/json.hpp>
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

// Throws (boost::system::system_error) on a malformed line.
json::object sign_line(const std::string& line, leasehold::aws::SigningKeyCache& cache) {
  const json::object in = json::parse(line).as_object();
  const auto str = [&](const char* key) { return json::value_to<std::string>(in.at(key)); };
  HttpRequestToSign request;
  request.method = str("method");
  request.host = str("host");
  request.path = str("path");
  request.query_params = pairs_of(in.at("query"));
  request.headers = pairs_of(in.at("headers"));
  request.body = str("body");
  const Credentials credentials{str("access_key"), str("secret_key"), str("token")};
  const leasehold::WallTime now{std::chrono::seconds(in.at("unix_seconds").to_number<int64_t>())};
  auto signed_request =
      leasehold::aws::sign_v4(request, credentials, str("region"), str("service"), now, &cache);
  json::object out;
  if (!signed_request.ok()) {
    out["error"] = signed_request.status().to_string();
    return out;
  }
  out["authorization"] = signed_request->authorization;
  out["canonical_request"] = signed_request->canonical_request;
  out["string_to_sign"] = signed_request->string_to_sign;
  return out;
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
