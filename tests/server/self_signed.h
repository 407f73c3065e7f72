// A throwaway TLS identity for tests: a P-256 key and a self-signed
// certificate for localhost and 127.0.0.1, made with OpenSSL's API when a
// test runs, so that no key is ever checked in. Thread-safe (no state).
#pragma once

#include <string>

namespace leasehold::server::testing {

struct SelfSigned {
  std::string key_pem, cert_pem;
};

// A fresh key and certificate, valid from an hour ago for a day; the
// certificate is its own CA, so a client may trust it by its PEM alone.
SelfSigned make_self_signed();

}  // namespace leasehold::server::testing
