// Prints what leasehold's credentials chain (aws/credentials.h) finds in
// this process's environment, for tests/aws/credentials_botocore_test.py,
// which asks botocore the same question: one JSON line with the access key
// id, SHA-256 digests of the secret key and the session token (never the
// secrets themselves, which would reach the test's log), and the region; or
// the error.
#include <boost/json.hpp>
#include <iostream>

#include "aws/credentials.h"
#include "aws/sigv4.h"

int main() {
  namespace aws = leasehold::aws;
  boost::json::object out;
  auto source = aws::default_credentials(aws::process_env());
  leasehold::Result<aws::Credentials> credentials =
      source.ok() ? (*source)->get() : leasehold::Result<aws::Credentials>(source.status());
  if (credentials.ok()) {
    out["access_key_id"] = credentials->access_key_id;
    out["secret_sha256"] = aws::sha256_hex(credentials->secret_access_key);
    out["token_sha256"] = credentials->session_token.empty()
                              ? std::string()
                              : aws::sha256_hex(credentials->session_token);
  } else {
    out["error"] = credentials.status().to_string();
  }
  auto region = aws::resolve_region(aws::process_env());
  out["region"] = region.ok() ? *region : std::string();
  std::cout << boost::json::serialize(out) << "\n";
  return 0;
}
