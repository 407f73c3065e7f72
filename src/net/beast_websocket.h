// Boost.Beast's WebSocket stream on top of net/beast.h, with the same warning
// pragmas, for the few .cc files that speak WebSocket (net/websocket.cc, the
// upstream simulator of tools/upstream_sim/ and their tests). A header of
// its own so that the files that speak only HTTP do not compile it.
// Declarations only.
#pragma once

#include "net/beast.h"

#pragma GCC diagnostic push
#if !defined(__clang__)  // clang has no such warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>
#pragma GCC diagnostic pop

namespace leasehold::net {

namespace websocket = boost::beast::websocket;

}  // namespace leasehold::net
