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

// Prepares `ssl`, a client connection to `host`, before its handshake: SNI
// for a name (an IP literal is matched against the certificate without SNI),
// verification of the peer and that its certificate names `host`. For the
// HTTP client's Asio SSL streams (native_handle()) and the WebSocket
// client's SocketTlsStream alike. kUnavailable on failure, with `where`
// (e.g. "https://host:443") in the message.
Status prepare_client_ssl(SSL* ssl, const std::string& host, const std::string& where);

}  // namespace leasehold::net
