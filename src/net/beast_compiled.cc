// The compiled part of Boost.Asio, of its SSL layer and of Boost.Beast (the
// .ipp files behind their headers: the reactor, socket operations, the HTTP
// parser, WebSocket's framing and deflate), built once, here. Every target
// that includes net/beast.h links leasehold_beast (src/net/CMakeLists.txt),
// which defines BOOST_ASIO_SEPARATE_COMPILATION and
// BOOST_BEAST_SEPARATE_COMPILATION, so that those files compile only the
// templates they use.
#include "net/beast.h"

#pragma GCC diagnostic push
#if !defined(__clang__)  // clang has no such warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
#pragma GCC diagnostic pop
