// Client TLS contexts and per-connection verification, over OpenSSL through
// Asio.
#include "net/tls.h"

namespace leasehold::net {

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

}  // namespace leasehold::net
