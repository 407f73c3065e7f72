// Client and server TLS contexts, and per-connection verification, over
// OpenSSL through Asio.
#include "net/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "net/endpoint.h"

namespace leasehold::net {
namespace {

// OK if `path` can be opened for reading; the error names it, and why.
Status check_tls_file_readable(const std::string& path, std::string_view what) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return invalid_argument("cannot read the TLS " + std::string(what) + " file " + path + ": " +
                            std::strerror(errno));
  }
  std::fclose(file);
  return Status::ok_status();
}

}  // namespace

Result<std::unique_ptr<ssl::context>> make_client_tls_context(const std::string& ca_file) {
  auto context = std::make_unique<ssl::context>(ssl::context::tls_client);
  boost::system::error_code ec;
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                           ssl::context::no_tlsv1_1,
                       ec);
  if (ca_file.empty()) {
    context->set_default_verify_paths(ec);
  } else {
    context->load_verify_file(ca_file, ec);
  }
  if (ec) return invalid_argument("cannot load trusted certificates: " + ec.message());
  context->set_verify_mode(ssl::verify_peer, ec);
  if (ec) return invalid_argument("cannot enable certificate verification: " + ec.message());
  return context;
}

Result<std::unique_ptr<ssl::context>> make_server_tls_context(const std::string& cert_file,
                                                              const std::string& key_file) {
  LEASEHOLD_RETURN_IF_ERROR(check_tls_file_readable(cert_file, "certificate"));
  LEASEHOLD_RETURN_IF_ERROR(check_tls_file_readable(key_file, "key"));
  auto context = std::make_unique<ssl::context>(ssl::context::tls_server);
  boost::system::error_code ec;
  context->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                           ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                           ssl::context::no_tlsv1_1 | ssl::context::single_dh_use,
                       ec);
  if (ec || SSL_CTX_set_min_proto_version(context->native_handle(), TLS1_2_VERSION) != 1) {
    return internal_error("cannot restrict the TLS context to TLS 1.2 and later");
  }
  // A key with a passphrase fails to load rather than prompt on the terminal.
  context->set_password_callback([](size_t, ssl::context::password_purpose) { return ""; });
  // OpenSSL's reasons ("no start line", "bad base64 decode") describe the
  // file's form, never its content.
  ERR_clear_error();
  context->use_certificate_chain_file(cert_file, ec);
  if (ec) {
    return invalid_argument("cannot load a PEM certificate chain from " + cert_file + ": " +
                            ec.message());
  }
  context->use_private_key_file(key_file, ssl::context::pem, ec);
  if (ec) {
    return invalid_argument("cannot load a PEM private key (without passphrase) from " + key_file +
                            ": " + ec.message());
  }
  if (SSL_CTX_check_private_key(context->native_handle()) != 1) {
    ERR_clear_error();
    return invalid_argument("the TLS key in " + key_file + " does not match the certificate in " +
                            cert_file);
  }
  return context;
}

Status prepare_client_ssl(SSL* ssl, const std::string& host, const std::string& where) {
  bool ok = false;
  if (is_ip_literal(host)) {
    ok = X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) == 1;
  } else {
    ok = SSL_set_tlsext_host_name(ssl, host.c_str()) == 1 && SSL_set1_host(ssl, host.c_str()) == 1;
  }
  ERR_clear_error();
  if (!ok) return unavailable("TLS to " + where + ": cannot set up the TLS connection");
  SSL_set_verify(ssl, SSL_VERIFY_PEER, nullptr);
  return Status::ok_status();
}

}  // namespace leasehold::net
