// A Session's reading and dispatch (server/transport_impl.h has the
// transport's layout): the TLS handshake, the wait for a request's first
// byte, its header parsed from what was read (or read on), its target and
// route, its body within the route's limit, then admission and the handler,
// inline or on the blocking pool under request_timeout; and the end of an
// exchange, and of the connection. Every member here runs on the
// connection's I/O thread except the constructor and run_handler().
#include <algorithm>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <exception>
#include <string>
#include <utility>

#include "base/logging.h"
#include "server/errors.h"
#include "server/target.h"
#include "server/transport_impl.h"

namespace leasehold::server::transport_parts {
namespace {

// How much a session reads at once while it waits for a request's first byte.
constexpr size_t kFirstReadBytes = 4096;
// The most a TLS connection waits for the client's close_notify.
constexpr std::chrono::milliseconds kTlsShutdownTimeout{1'000};

bool is_http_parse_error(const error_code& ec) {
  return ec.category() == http::make_error_code(http::error::bad_method).category() &&
         ec != http::error::end_of_stream && ec != http::error::partial_message;
}

}  // namespace

template <class Stream>
Session<Stream>::Session(ServerImpl& server, tcp::socket socket, std::string client_address,
                         ssl::context* tls)
    : server_(server),
      stream_([&]() -> Stream {
        if constexpr (kTls) {
          return Stream(std::move(socket), *tls);
        } else {
          (void)tls;
          return Stream(std::move(socket));
        }
      }()),
      client_address_(std::move(client_address)),
      handler_timer_(stream_.get_executor()),
      io_timer_(stream_.get_executor()) {
  server_.connection_opened();
}

template <class Stream>
Session<Stream>::~Session() {
  server_.remove_session(this);
  server_.connection_closed();
}

template <class Stream>
void Session<Stream>::start() {
  asio::dispatch(stream_.get_executor(), [self = self()] {
    if constexpr (kTls) {
      self->set_io_deadline(asio::steady_timer::clock_type::now() + self->limits().header_timeout);
      self->stream_.async_handshake(ssl::stream_base::server,
                                    beast::bind_front_handler(&Session::on_handshake, self));
    } else {
      self->wait_for_request();
    }
  });
}

// Bounds the socket operation about to start (and those that follow, until
// the next call) by `at`.
template <class Stream>
void Session<Stream>::set_io_deadline(TimePoint at) {
  io_deadline_ = at;
  if (io_timer_at_ <= at) return;  // it fires in time, and looks again then
  arm_io_timer(at);
}

// The wait holds the session weakly: a session that nothing else holds (its
// connection closed gracefully) ends without waiting for its timer.
template <class Stream>
void Session<Stream>::arm_io_timer(TimePoint at) {
  io_timer_at_ = at;
  const uint64_t arming = ++io_timer_armings_;
  io_timer_.expires_at(at);  // a wait in progress ends with operation_aborted
  io_timer_.async_wait([weak = weak_from_this(), arming](error_code ec) {
    if (const auto self = weak.lock()) {
      std::static_pointer_cast<Session>(self)->on_io_timer(arming, ec);
    }
  });
}

template <class Stream>
void Session<Stream>::on_io_timer(uint64_t arming, error_code ec) {
  if (ec || arming != io_timer_armings_) return;  // cancelled, or a later wait is on
  io_timer_at_ = TimePoint::max();
  if (io_deadline_ == TimePoint::max()) return;  // nothing to bound
  if (asio::steady_timer::clock_type::now() < io_deadline_) return arm_io_timer(io_deadline_);
  // Past the deadline: the operation in progress fails, as Beast's
  // tcp_stream makes it, by closing the socket.
  clear_io_deadline();
  error_code ignored;
  tcp_layer().close(ignored);
}

template <class Stream>
void Session<Stream>::on_handshake(error_code ec) {
  if (ec) return close_now();
  wait_for_request();
}

template <class Stream>
void Session<Stream>::begin_stop() {
  asio::dispatch(stream_.get_executor(), [self = self()] {
    self->stopping_ = true;
    if (self->idle_) self->close_now();
  });
}

template <class Stream>
void Session<Stream>::force_close() {
  asio::dispatch(stream_.get_executor(), [self = self()] {
    self->stopping_ = true;
    if (self->awaiting_handler_) {
      self->awaiting_handler_ = false;
      self->request_ = std::move(self->request_summary_);  // for `answered`
    }
    self->handler_timer_.cancel();
    if (self->awaiting_part_) {
      self->awaiting_part_ = false;
      return self->finish_write(asio::error::operation_aborted);  // ends the exchange, closes
    }
    self->close_now();
  });
}

// Waits for the first byte of the next request under idle_timeout (the first
// request of a connection under header_timeout), so that header_timeout
// counts from that byte.
template <class Stream>
void Session<Stream>::wait_for_request() {
  idle_ = true;
  if (stopping_ || server_.stopping()) return close_now();
  upload_parser_.reset();
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(limits().header_bytes_max));
  // The route's limit is set once the header is read; none until then, so
  // that the Content-Length is judged against the route, not Beast's default.
  parser_->body_limit(boost::none);
  if (buffer_.size() > 0) return read_header();  // pipelined
  set_io_deadline(asio::steady_timer::clock_type::now() +
                  (requests_ == 0 ? limits().header_timeout : limits().idle_timeout));
  stream_.async_read_some(buffer_.prepare(kFirstReadBytes),
                          beast::bind_front_handler(&Session::on_first_bytes, self()));
}

template <class Stream>
void Session<Stream>::on_first_bytes(error_code ec, size_t bytes) {
  if (ec) return close_now();  // the client left, idle_timeout, or stop()
  buffer_.commit(bytes);
  read_header();
}

template <class Stream>
void Session<Stream>::read_header() {
  idle_ = false;
  started_ = server_.clock().mono_now();
  reset_request();
  route_ = nullptr;
  keep_alive_ = false;
  http10_ = false;
  // Socket deadlines are on the timers' own clock (the real one); the
  // injected clock measures what `answered` reports.
  const TimePoint now = asio::steady_timer::clock_type::now();
  deadline_ = now + limits().request_timeout;
  exchange_ = Exchange::kOpen;
  if (server_.hooks().started) {
    try {
      server_.hooks().started(request_);
    } catch (const std::exception& e) {
      log_to(server_.logger(), LogLevel::kError, "request {}: the started hook threw: {}",
             request_.request_id, e.what());
    }
  }
  // The bytes read so far most often hold the whole header.
  error_code ec;
  const size_t used = parser_->put(buffer_.data(), ec);
  buffer_.consume(used);
  if (ec != http::error::need_more && (ec || parser_->is_header_done())) {
    return on_header(ec, used);
  }
  set_io_deadline(now + limits().header_timeout);
  http::async_read_header(stream_, buffer_, *parser_,
                          beast::bind_front_handler(&Session::on_header, self()));
}

// The new request's Request, reusing the storage of the one before (its
// strings and header list) where it can.
template <class Stream>
void Session<Stream>::reset_request() {
  auto headers = std::move(request_.headers);
  headers.clear();
  std::string request_id = std::move(request_.request_id);
  request_ = Request{};
  request_.headers = std::move(headers);
  server_.next_request_id(request_id);
  request_.request_id = std::move(request_id);
  request_.client_address = client_address_;
  request_.tls = kTls;
}

template <class Stream>
void Session<Stream>::on_header(error_code ec, size_t) {
  if (ec) return on_read_error(ec);
  begin_exchange();
}

// A request that cannot be read to its end: answered if it is the client's
// fault (and the connection closed), else the connection just closes.
template <class Stream>
void Session<Stream>::on_read_error(error_code ec) {
  keep_alive_ = false;
  if (ec == http::error::header_limit) {
    return respond(error_response(431, "the request header is larger than " +
                                           std::to_string(limits().header_bytes_max) + " bytes"));
  }
  if (ec == http::error::body_limit) {
    return respond(error_response(413, "the request body is larger than this route accepts (" +
                                           std::to_string(route_->options.body_bytes_max) +
                                           " bytes)"));
  }
  if (is_http_parse_error(ec)) return respond(error_response(400, "malformed HTTP request"));
  close_now();  // the client left, a timeout, or stop()
}

template <class Stream>
void Session<Stream>::begin_exchange() {
  const auto& header = parser_->get();
  request_.method = std::string(header.method_string());
  request_.target = std::string(header.target());
  for (const auto& field : header) {
    std::string name(field.name_string());
    // A field name is a token: ASCII, so no locale is needed to lower it.
    for (char& c : name) c = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    request_.headers.emplace_back(std::move(name), std::string(field.value()));
  }
  // Until the body is read, an answer must close the connection: the unread
  // body would be taken for the next request.
  const bool has_body = !parser_->is_done();
  keep_alive_ = header.keep_alive() && !has_body;
  http10_ = header.version() < 11;
  deadline_ = asio::steady_timer::clock_type::now() + limits().request_timeout;
  if (!take_target() || !take_route()) return;
  if (!route_->options.upload_dir.empty()) return begin_upload(has_body);
  if (!has_body) return dispatch();
  const uint64_t body_bytes_max = route_->options.body_bytes_max;
  if (const auto length = parser_->content_length(); length && *length > body_bytes_max) {
    return on_read_error(http::error::body_limit);  // refused unread
  }
  parser_->body_limit(body_bytes_max);
  keep_alive_ = header.keep_alive();
  if (!beast::iequals(header[http::field::expect], "100-continue")) return read_body();
  set_io_deadline(deadline_);
  asio::async_write(stream_, asio::buffer(kContinue), [self = self()](error_code ec, size_t) {
    if (ec) return self->close_now();
    self->read_body();
  });
}

// Fills the path and query; false, having answered 400, if the target is not
// a path.
template <class Stream>
bool Session<Stream>::take_target() {
  auto target = parse_target(request_.target);
  if (!target.ok()) {
    respond(error_response(400, target.status().message()));
    return false;
  }
  request_.path = std::move(target->path);
  request_.query = std::move(target->query);
  return true;
}

// Finds the route; false, having answered 404 or 405, if there is none.
template <class Stream>
bool Session<Stream>::take_route() {
  Router::Match match = server_.router().match(request_.method, request_.path);
  if (match.route == nullptr) {
    if (match.allow.empty()) {
      respond(error_response(404, "no such resource"));
    } else {
      Response response = error_response(405, "the method is not allowed here (see Allow)");
      response.set_header("Allow", match.allow);
      respond(std::move(response));
    }
    return false;
  }
  route_ = match.route;
  request_.route = route_->pattern;
  request_.params = std::move(match.params);
  return true;
}

template <class Stream>
void Session<Stream>::read_body() {
  set_io_deadline(deadline_);
  http::async_read(stream_, buffer_, *parser_,
                   beast::bind_front_handler(&Session::on_body, self()));
}

template <class Stream>
void Session<Stream>::on_body(error_code ec, size_t) {
  if (exchange_ != Exchange::kOpen) return;  // force_close() dropped it meanwhile
  if (ec) return on_read_error(ec);
  request_.body = std::move(parser_->get().body());
  dispatch();
}

template <class Stream>
bool Session<Stream>::admit_blocks() const {
  const ServerHooks& hooks = server_.hooks();
  if (!hooks.admit_blocks) return route_->options.access != Access::kPublic;
  return hooks.admit_blocks(request_, *route_);
}

template <class Stream>
void Session<Stream>::dispatch() {
  if (route_->options.blocking || (!admitted_ && admit_blocks())) {
    return dispatch_blocking(Step::kHandle);
  }
  Response response = run_handler(server_, request_, *route_, admitted_);
  respond(std::move(response));
}

// Hands the request to the blocking pool, and waits for the response (or
// the admission) under request_timeout.
template <class Stream>
void Session<Stream>::dispatch_blocking(Step step) {
  const uint64_t generation = ++generation_;
  request_summary_ = Request{};
  request_summary_.method = request_.method;
  request_summary_.target = request_.target;
  request_summary_.path = request_.path;
  request_summary_.query = request_.query;
  request_summary_.client_address = request_.client_address;
  request_summary_.tls = request_.tls;
  request_summary_.request_id = request_.request_id;
  request_summary_.route = request_.route;
  auto job = [self = self(), request = std::move(request_), route = route_, generation, step,
              admitted = admitted_, upload = upload_,
              work = asio::make_work_guard(stream_.get_executor())]() mutable {
    std::optional<Response> response = step == Step::kAdmit
                                           ? run_admit(self->server_, request, *route)
                                           : run_handler(self->server_, request, *route, admitted);
    upload.reset();  // the handler is done with the body file
    {
      auto executor = self->stream_.get_executor();
      asio::post(executor, [self = std::move(self), request = std::move(request),
                            response = std::move(response), generation, step]() mutable {
        self->on_handled(std::move(request), std::move(response), generation, step);
      });
    }
    work.reset();  // last: the io_context may be gone after this
  };
  if (!server_.hooks().submit_blocking(std::move(job))) {
    request_ = std::move(request_summary_);
    return respond(error_response(503, "the server is busy; try again"));
  }
  awaiting_handler_ = true;
  // No socket operation is in progress while the pool has the request: the
  // deadline that bounds it is handler_timer_'s.
  clear_io_deadline();
  handler_timer_.expires_at(deadline_);
  handler_timer_.async_wait(
      beast::bind_front_handler(&Session::on_handler_timeout, self(), generation));
}

template <class Stream>
void Session<Stream>::on_handled(Request request, std::optional<Response> response,
                                 uint64_t generation, Step step) {
  if (!awaiting_handler_ || generation != generation_) return;  // answered 503 already
  awaiting_handler_ = false;
  handler_timer_.cancel();
  request_ = std::move(request);
  if (step == Step::kAdmit) return on_admitted(std::move(response));
  respond(std::move(*response));
}

template <class Stream>
void Session<Stream>::on_handler_timeout(uint64_t generation, error_code ec) {
  if (ec || !awaiting_handler_ || generation != generation_) return;
  awaiting_handler_ = false;
  keep_alive_ = false;
  request_ = std::move(request_summary_);
  respond(error_response(503, "the request took longer than " +
                                  std::to_string(limits().request_timeout.count()) + " ms"));
}

// Admission alone, for an upload route before its body is read: nullopt to
// go on, else the answer. Never throws.
template <class Stream>
std::optional<Response> Session<Stream>::run_admit(ServerImpl& server, Request& request,
                                                   const Route& route) {
  if (!server.hooks().admit) return std::nullopt;
  try {
    return server.hooks().admit(request, route);
  } catch (const std::exception& e) {
    log_to(server.logger(), LogLevel::kError, "request {}: {} {}: admit threw: {}",
           request.request_id, request.method, route.pattern, e.what());
  } catch (...) {
    log_to(server.logger(), LogLevel::kError, "request {}: {} {}: admit threw a non-exception",
           request.request_id, request.method, route.pattern);
  }
  return internal_error_response(request.request_id);
}

// Admission (unless `admitted` already) and the handler, on whichever thread
// runs them. Never throws.
template <class Stream>
Response Session<Stream>::run_handler(ServerImpl& server, Request& request, const Route& route,
                                      bool admitted) {
  try {
    if (server.hooks().admit && !admitted) {
      if (std::optional<Response> refused = server.hooks().admit(request, route)) {
        return std::move(*refused);
      }
    }
    return route.handler(request);
  } catch (const std::exception& e) {
    log_to(server.logger(), LogLevel::kError, "request {}: {} {} threw: {}", request.request_id,
           request.method, route.pattern, e.what());
  } catch (...) {
    log_to(server.logger(), LogLevel::kError, "request {}: {} {} threw a non-exception",
           request.request_id, request.method, route.pattern);
  }
  return internal_error_response(request.request_id);
}

template <class Stream>
void Session<Stream>::finish_write(error_code ec) {
  send_file_.reset();
  end_exchange(response_);
  if (ec) return close_now();
  if (!keep_alive_) return close_gracefully();
  wait_for_request();
}

// Ends the exchange that `started` announced, once: with the response
// written (or whose write failed), or with kStatusDropped from close_now().
template <class Stream>
void Session<Stream>::end_exchange(const Response& response) {
  exchange_ = Exchange::kNone;
  // Before `answered`: whoever hears of the end finds the body file gone
  // (unless a handler still running on the blocking pool holds it).
  upload_.reset();
  send_file_.reset();
  body_stream_.reset();
  awaiting_part_ = false;
  admitted_ = false;
  has_body_ = false;
  if (!server_.hooks().answered) return;
  try {
    server_.hooks().answered(request_, response, server_.clock().mono_now() - started_);
  } catch (const std::exception& e) {
    log_to(server_.logger(), LogLevel::kError, "request {}: the answered hook threw: {}",
           request_.request_id, e.what());
  }
}

// After a response that said Connection: close. What the client may still be
// sending (a refused body) is not read.
template <class Stream>
void Session<Stream>::close_gracefully() {
  idle_ = true;
  if constexpr (kTls) {
    set_io_deadline(
        asio::steady_timer::clock_type::now() +
        std::min<std::chrono::milliseconds>(kTlsShutdownTimeout, limits().header_timeout));
    stream_.async_shutdown([self = self()](error_code) { self->close_now(); });
  } else {
    error_code ec;
    tcp_layer().shutdown(tcp::socket::shutdown_send, ec);
    // The socket closes with the session, which nothing holds any more.
  }
}

// Every path that gives up on a connection ends here, so a request that was
// started and is not being answered ends here too. A response being written
// ends in on_written(), which the closing makes fail.
template <class Stream>
void Session<Stream>::close_now() {
  idle_ = true;
  error_code ignored;
  tcp_layer().close(ignored);
  if (exchange_ == Exchange::kOpen) {
    Response dropped;
    dropped.status = kStatusDropped;
    end_exchange(dropped);
  }
}

// The class, and the members defined in this file; the others are
// instantiated where they are defined.
template class Session<PlainStream>;
template class Session<TlsStream>;

}  // namespace leasehold::server::transport_parts
