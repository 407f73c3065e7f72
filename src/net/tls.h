// TLS contexts for the clients and the servers: a client context that
// verifies the server's certificate (against the system trust store, or a CA
// file in tests), the per-connection setup that a verified connection needs
// (SNI and hostname verification), and a server context from PEM files.
//
// Internal to net/ and the servers built on it (server/, the upstream
// simulator of tools/upstream_sim/): it includes net/beast.h. A context is
// immutable once made and may be shared by every connection of a client or a
// server; a stream is used by one thread at a time.
#pragma once

#include <memory>
#include <string>

#include "leasehold/status.h"
#include "net/beast.h"
#include "net/endpoint.h"

namespace leasehold::net {

// A TLS 1.2+ client context that requires a verified peer. `ca_file` is a PEM
// file of trusted CAs used instead of the system store (empty: the system
// store). kInvalidArgument if the certificates cannot be loaded.
Result<std::unique_ptr<ssl::context>> make_client_tls_context(const std::string& ca_file);

// A TLS 1.2+ server context: a certificate chain and its private key from PEM
// files. kInvalidArgument, naming the file (never quoting it), when the chain
// or the key cannot be read or parsed, when the key is protected by a
// passphrase, or when they do not belong together.
Result<std::unique_ptr<ssl::context>> make_server_tls_context(const std::string& cert_file,
                                                              const std::string& key_file);

// Prepares an Asio SSL stream to talk to `host` before its handshake: SNI
// for a name (an IP literal is matched against the certificate without SNI)
// and verification that the certificate names `host`. kUnavailable on
// failure, with `where` (e.g. "https://host:443") in the message.
template <typename SslStream>
Status prepare_client_tls_stream(SslStream& stream, const std::string& host,
                                 const std::string& where) {
  // SNI is for names only; an IP literal is matched against the certificate.
  if (!is_ip_literal(host) && !SSL_set_tlsext_host_name(stream.native_handle(), host.c_str())) {
    return unavailable("TLS to " + where + ": cannot set SNI");
  }
  boost::system::error_code ec;
  stream.set_verify_callback(ssl::host_name_verification(host), ec);
  if (ec) return unavailable("TLS to " + where + ": " + ec.message());
  return Status::ok_status();
}

}  // namespace leasehold::net
