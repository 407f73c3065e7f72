// A Session's response writer (server/transport_impl.h has the transport's
// layout): a handler's response checked, its status line and header fields
// written into the session's buffer as Beast's serializer would (the
// transport's own fields added, the security headers written once for the
// process), and sent with a small body in one buffer, or with a large one in
// one gathered write; a file or a BodyStream follows (transport_transfer.cc).
#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "base/logging.h"
#include "base/text.h"
#include "server/errors.h"
#include "server/transport_impl.h"

namespace leasehold::server::transport_parts {
namespace {

// A response body up to this size is copied after the header and sent with
// it from one buffer, which costs less than a gathered write of two.
constexpr size_t kCopiedBodyBytesMax = 4 * 1024;

constexpr std::string_view kStrictTransportSecurity = "max-age=31536000";

bool is_token_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// A handler's response that can be written as it is: a final status, header
// names that are tokens and values without control characters (no header
// injection).
bool is_well_formed(const Response& response) {
  if (response.status < 200 || response.status > 599) return false;
  return std::ranges::all_of(response.headers, [](const auto& header) {
    const auto& [name, value] = header;
    return !name.empty() && std::ranges::all_of(name, is_token_char) &&
           std::ranges::none_of(value, [](char c) {
             const auto byte = static_cast<unsigned char>(c);
             return (byte < 0x20 && c != '\t') || byte == 0x7f;
           });
  });
}

// The header fields every response carries that are the same on every
// response: written out once.
constexpr std::string_view kSecurityHeaders =
    "Content-Security-Policy: "
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "media-src 'self' https:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
    "form-action 'self'\r\n"
    "X-Content-Type-Options: nosniff\r\n"
    "Referrer-Policy: same-origin\r\n"
    "X-Frame-Options: DENY\r\n";

// The fields the transport writes itself, whatever the handler set: the
// framing, X-Request-Id and the security headers (Strict-Transport-Security
// only over TLS: elsewhere a handler's is sent as it is).
bool is_transport_header(std::string_view name, bool tls) {
  for (std::string_view own : {"Content-Length", "Transfer-Encoding", "Connection", "X-Request-Id",
                               "Content-Security-Policy", "X-Content-Type-Options",
                               "Referrer-Policy", "X-Frame-Options"}) {
    if (equal_ignoring_case(name, own)) return true;
  }
  return tls && equal_ignoring_case(name, "Strict-Transport-Security");
}

void append_number(std::string& out, uint64_t n) {
  char digits[20];
  const auto end = std::to_chars(std::begin(digits), std::end(digits), n).ptr;
  out.append(digits, end);
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
  out.append(name);
  out += ": ";
  out.append(value);
  out += "\r\n";
}

}  // namespace

template <class Stream>
void Session<Stream>::respond(Response response) {
  if (!is_well_formed(response)) {
    log_to(server_.logger(), LogLevel::kError,
           "request {}: {} {} answered with status {} or a malformed header", request_.request_id,
           request_.method, request_.route, response.status);
    response = internal_error_response(request_.request_id);
  }
  if (!response.file_path.empty()) response = open_file_response(std::move(response));
  if (response.body_stream) response.body.clear();
  ++requests_;
  const bool bodiless = response.status == 204 || response.status == 304;
  const bool head = request_.method == "HEAD";
  // An HTTP/1.0 client reads a streamed body to the connection's close.
  const bool close_delimited = response.body_stream && !bodiless && http10_;
  keep_alive_ = keep_alive_ && !stopping_ && !server_.stopping() &&
                requests_ < limits().keep_alive_requests_max && !close_delimited;
  write_head(response, bodiless, send_file_ ? send_remaining_ : response.body.size());
  if (bodiless || head) send_file_.reset();  // its size was all that was needed
  if (response.body_stream && !bodiless && !head) {
    body_stream_ = std::make_shared<BodyStream>(std::move(response.body_stream));
  }
  response.body_stream = nullptr;
  response_ = std::move(response);
  exchange_ = Exchange::kWriting;
  set_io_deadline(deadline_);
  const bool body_sent = !bodiless && !head && !response_.body.empty();
  if (body_sent && response_.body.size() <= kCopiedBodyBytesMax) {
    head_ += response_.body;  // one buffer, one plain send
    return asio::async_write(stream_, asio::buffer(head_),
                             beast::bind_front_handler(&Session::on_written, self()));
  }
  const std::array<asio::const_buffer, 2> buffers = {
      asio::buffer(head_), body_sent ? asio::buffer(response_.body) : asio::const_buffer()};
  asio::async_write(stream_, buffers, beast::bind_front_handler(&Session::on_written, self()));
}

// Writes the response's status line and header fields into head_, as
// Beast's serializer would: the handler's fields, then the transport's
// (X-Request-Id, the security headers, Cache-Control and Content-Type unless
// the handler set them, the framing).
template <class Stream>
void Session<Stream>::write_head(const Response& response, bool bodiless, uint64_t content_length) {
  head_ = "HTTP/1.1 ";
  const auto status = static_cast<unsigned>(response.status);
  append_number(head_, status);
  head_ += ' ';
  const auto reason = http::obsolete_reason(http::int_to_status(status));
  head_.append(reason.data(), reason.size());
  head_ += "\r\n";
  bool has_cache_control = false;
  bool has_content_type = false;
  for (const auto& [name, value] : response.headers) {
    if (is_transport_header(name, kTls)) continue;
    has_cache_control = has_cache_control || equal_ignoring_case(name, "Cache-Control");
    has_content_type = has_content_type || equal_ignoring_case(name, "Content-Type");
    append_field(head_, name, value);
  }
  append_field(head_, "X-Request-Id", request_.request_id);
  head_ += kSecurityHeaders;
  if (kTls) append_field(head_, "Strict-Transport-Security", kStrictTransportSecurity);
  if (!has_cache_control) append_field(head_, "Cache-Control", "no-store");
  if (!has_content_type && response.body_stream) {
    append_field(head_, "Content-Type", "application/octet-stream");
  } else if (!has_content_type && !response.body.empty()) {
    append_field(head_, "Content-Type", "application/json");
  }
  if (!bodiless && response.body_stream) {
    if (!http10_) head_ += "Transfer-Encoding: chunked\r\n";
  } else if (!bodiless) {
    head_ += "Content-Length: ";
    append_number(head_, content_length);
    head_ += "\r\n";
  }
  if (!keep_alive_) head_ += "Connection: close\r\n";
  head_ += "\r\n";
}

template <class Stream>
void Session<Stream>::on_written(error_code ec, size_t) {
  if (!ec && (send_file_ || body_stream_)) {
    transfer_started_ = asio::steady_timer::clock_type::now();
    transfer_bytes_ = 0;
    return send_file_ ? write_file_part() : request_part();
  }
  finish_write(ec);
}

// This file's members, for both streams (transport_session.cc instantiates
// the class).
#define LEASEHOLD_RESPONSE_MEMBERS(S)                                    \
  template void Session<S>::respond(Response);                           \
  template void Session<S>::write_head(const Response&, bool, uint64_t); \
  template void Session<S>::on_written(error_code, size_t);
LEASEHOLD_RESPONSE_MEMBERS(PlainStream)
LEASEHOLD_RESPONSE_MEMBERS(TlsStream)
#undef LEASEHOLD_RESPONSE_MEMBERS

}  // namespace leasehold::server::transport_parts
