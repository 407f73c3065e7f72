// The server's TLS context: a certificate chain and its private key from PEM
// files, TLS 1.2 or later. Internal to server/ (it includes net/beast.h).
// A context is immutable once made and shared by every connection.
#pragma once

#include <memory>
#include <string>

#include "leasehold/status.h"
#include "net/beast.h"

namespace leasehold::server {

// kInvalidArgument, naming the file (never quoting it), when the certificate
// chain or the key cannot be read or parsed, when the key is protected by a
// passphrase, or when they do not belong together.
Result<std::unique_ptr<net::ssl::context>> make_server_tls_context(const std::string& cert_file,
                                                                   const std::string& key_file);

}  // namespace leasehold::server
