#include "testing/test_pki.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <fstream>
#include <utility>

namespace leasehold::testing {
namespace {

template <typename Write>
std::string pem_of(Write write) {
  BIO* bio = BIO_new(BIO_s_mem());
  write(bio);
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<size_t>(size));
  BIO_free(bio);
  return pem;
}

// A certificate for `key` named `common_name`, signed by `issuer_key` as
// `issuer` (the certificate itself when issuer is null), with `extensions`.
X509* make_cert(EVP_PKEY* key, const char* common_name, X509* issuer, EVP_PKEY* issuer_key,
                long serial, std::initializer_list<std::pair<int, const char*>> extensions) {
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(common_name), -1, -1, 0);
  X509_set_issuer_name(cert, issuer != nullptr ? X509_get_subject_name(issuer) : name);
  X509V3_CTX context;
  X509V3_set_ctx_nodb(&context);
  X509V3_set_ctx(&context, issuer != nullptr ? issuer : cert, cert, nullptr, nullptr, 0);
  for (auto [nid, value] : extensions) {
    X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &context, nid, value);
    X509_add_ext(cert, extension, -1);
    X509_EXTENSION_free(extension);
  }
  X509_sign(cert, issuer_key, EVP_sha256());
  return cert;
}

}  // namespace

TestPki make_test_pki(const std::string& alt_names) {
  EVP_PKEY* ca_key = EVP_EC_gen("P-256");
  X509* ca = make_cert(ca_key, "leasehold test CA", nullptr, ca_key, 1,
                       {{NID_basic_constraints, "critical,CA:TRUE"},
                        {NID_key_usage, "critical,keyCertSign,cRLSign"},
                        {NID_subject_key_identifier, "hash"}});
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = make_cert(key, "localhost", ca, ca_key, 2,
                         {{NID_subject_alt_name, alt_names.c_str()},
                          {NID_basic_constraints, "critical,CA:FALSE"},
                          {NID_ext_key_usage, "serverAuth"},
                          {NID_authority_key_identifier, "keyid"}});
  TestPki pki;
  pki.ca_cert_pem = pem_of([&](BIO* bio) { PEM_write_bio_X509(bio, ca); });
  pki.cert_pem = pem_of([&](BIO* bio) { PEM_write_bio_X509(bio, cert); });
  pki.key_pem = pem_of(
      [&](BIO* bio) { PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr); });
  X509_free(cert);
  X509_free(ca);
  EVP_PKEY_free(key);
  EVP_PKEY_free(ca_key);
  return pki;
}

TestPkiFiles write_test_pki(const TestPki& pki, const std::filesystem::path& dir) {
  TestPkiFiles files{(dir / "ca.pem").string(), (dir / "cert.pem").string(),
                     (dir / "key.pem").string()};
  std::filesystem::create_directories(dir);
  std::ofstream(files.ca_file) << pki.ca_cert_pem;
  std::ofstream(files.cert_file) << pki.cert_pem;
  std::ofstream(files.key_file) << pki.key_pem;
  return files;
}

}  // namespace leasehold::testing
