// Certificates made at test time with OpenSSL's API, for TLS between a
// client and a server on 127.0.0.1: a CA (P-256, self-signed) and a server
// certificate it signed for localhost and 127.0.0.1 (or for the names given).
// Each call makes a new CA, so a second one stands for a CA the client does
// not know.
// Plain functions; safe from any thread.
#pragma once

#include <filesystem>
#include <string>

namespace leasehold::testing {

struct TestPki {
  std::string ca_cert_pem;  // what a client trusts
  std::string cert_pem;     // the server's certificate
  std::string key_pem;      // the server's private key
};

// `alt_names`: the server certificate's subjectAltName, in OpenSSL's form.
TestPki make_test_pki(const std::string& alt_names = "DNS:localhost,IP:127.0.0.1");

// The files of a TestPki in `dir`, made if absent (ca.pem, cert.pem, key.pem).
struct TestPkiFiles {
  std::string ca_file, cert_file, key_file;
};
TestPkiFiles write_test_pki(const TestPki& pki, const std::filesystem::path& dir);

}  // namespace leasehold::testing
