// The upstream simulator's sessions over TCP (ws://); see sim_session.h.
#include "tools/upstream_sim/sim_session.h"

namespace leasehold::tools::sim {

std::shared_ptr<SimSessionBase> make_plain_session(SimServer& server, tcp::socket socket) {
  return std::make_shared<SimSession<PlainSimWs>>(server, std::move(socket), nullptr);
}

}  // namespace leasehold::tools::sim
