// The one header that brings in Boost.Beast and Boost.Asio, with the warning
// pragmas they need under -Wall -Wextra -Werror.
//
// Include it only from .cc files of net/ (and, later, server/) and from
// their internal headers (net/tls.h): Beast's headers are slow to compile and
// noisy, so no widely included header may pull them in. Declarations only;
// nothing here is stateful.
#pragma once

// Asio's and Beast's own compiled code is in net/beast_compiled.cc, once.
#if !defined(BOOST_ASIO_SEPARATE_COMPILATION) || !defined(BOOST_BEAST_SEPARATE_COMPILATION)
#error "a file that includes net/beast.h belongs to a target that links leasehold_beast"
#endif

// GCC 12 reports a false -Wmaybe-uninitialized inside Beast's parser
// (boost::optional in content_length) when building with sanitizers.
#pragma GCC diagnostic push
#if !defined(__clang__)  // clang has no such warning
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#pragma GCC diagnostic pop

namespace leasehold::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
namespace ssl = boost::asio::ssl;
using tcp = boost::asio::ip::tcp;

}  // namespace leasehold::net
