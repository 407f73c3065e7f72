// The upstream simulator's sessions over TLS (wss://); see sim_session.h.
#include "tools/upstream_sim/sim_session.h"

namespace leasehold::tools::sim {

std::shared_ptr<SimSessionBase> make_tls_session(SimServer& server, tcp::socket socket,
                                                 ssl::context& tls) {
  return std::make_shared<SimSession<TlsSimWs>>(server, std::move(socket), &tls);
}

}  // namespace leasehold::tools::sim
