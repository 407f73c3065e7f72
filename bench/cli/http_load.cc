// The load generator on Beast: a LoadConnection per connection, all on one
// io_context without a strand (one thread runs it), sharing a LoadRun that
// keeps the counts.
#include "bench/cli/http_load.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <memory>
#include <utility>

#include "net/beast.h"

namespace leasehold::bench {
namespace {

namespace asio = net::asio;
namespace beast = net::beast;
namespace http = net::http;
using tcp = net::tcp;
using error_code = boost::system::error_code;

tcp::endpoint loopback(uint16_t port) {
  return tcp::endpoint(asio::ip::address_v4::loopback(), port);
}

// What the connections of one run share. One thread: no locks.
struct LoadRun {
  const HttpLoadOptions& options;
  Clock& clock;
  MonoTime window_start;
  MonoTime window_end;
  bool stopping = false;  // past window_end: connections end after their reply
  HttpLoadResult result;
};

class LoadConnection : public std::enable_shared_from_this<LoadConnection> {
 public:
  LoadConnection(asio::io_context& io, LoadRun& run) : io_(io), run_(run), stream_(io), pace_(io) {}

  // Connects, and sends its first request at `first_send` (paced load only).
  void connect(MonoTime first_send = {}) {
    next_send_ = first_send;
    stream_.expires_after(kReplyTimeout);
    stream_.async_connect(loopback(run_.options.port),
                          beast::bind_front_handler(&LoadConnection::on_connect, shared()));
  }

 private:
  std::shared_ptr<LoadConnection> shared() { return shared_from_this(); }

  void on_connect(error_code ec) {
    if (ec) return fail();
    stream_.socket().set_option(tcp::no_delay(true), ec);
    send_when_due();
  }

  // At once under closed-loop load; at next_send_ under paced load.
  void send_when_due() {
    const MonoTime now = run_.clock.mono_now();
    if (run_.options.interval == Duration::zero() || next_send_ <= now) return send();
    pace_.expires_after(next_send_ - now);
    pace_.async_wait([self = shared()](error_code ec) {
      if (!ec) self->send();
    });
  }

  void send() {
    sent_at_ = run_.clock.mono_now();
    next_send_ = std::max(next_send_, sent_at_ - run_.options.interval) + run_.options.interval;
    stream_.expires_after(kReplyTimeout);
    asio::async_write(stream_, asio::buffer(run_.options.request),
                      beast::bind_front_handler(&LoadConnection::on_sent, shared()));
  }

  void on_sent(error_code ec, size_t) {
    if (ec) return fail();
    reply_ = {};
    http::async_read(stream_, buffer_, reply_,
                     beast::bind_front_handler(&LoadConnection::on_reply, shared()));
  }

  void on_reply(error_code ec, size_t) {
    if (ec) return fail();
    const MonoTime now = run_.clock.mono_now();
    if (reply_.result_int() != static_cast<unsigned>(run_.options.expected_status) ||
        (run_.options.check_body && reply_.body() != run_.options.expected_body)) {
      return fail();
    }
    if (now >= run_.window_start && now < run_.window_end) {
      ++run_.result.requests;
      run_.result.latencies_ns.push_back((now - sent_at_).count());
    }
    if (run_.stopping) return close();
    if (reply_.keep_alive()) return send_when_due();
    ++run_.result.reconnects;
    close();
    std::make_shared<LoadConnection>(io_, run_)->connect(next_send_);
  }

  void fail() {
    ++run_.result.failures;
    close();
  }

  void close() {
    error_code ec;
    pace_.cancel();
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.close();
  }

  asio::io_context& io_;
  LoadRun& run_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::response<http::string_body> reply_;
  MonoTime sent_at_;
  asio::steady_timer pace_;  // paced load: waits for next_send_
  MonoTime next_send_{};
};

// One request on a new connection, and its reply's bytes as they arrive:
// each read is fed to a parser until it holds a whole reply, so that the
// bytes kept are exactly that reply's.
class ReplyCapture {
 public:
  ReplyCapture(asio::io_context& io, uint16_t port, std::string_view request)
      : stream_(io), request_(request) {
    parser_.eager(true);
    stream_.expires_after(kReplyTimeout);
    stream_.async_connect(loopback(port), [this](error_code ec) { on_connect(ec); });
  }

  Result<CapturedReply> result() const {
    if (not_http_) return internal_error("the reply to " + first_line() + " is not HTTP");
    if (failed_ || !parser_.is_done()) {
      return unavailable("no reply to " + first_line() + ": " + failed_.message());
    }
    CapturedReply reply;
    reply.bytes = raw_.substr(0, parsed_);
    reply.status = static_cast<int>(parser_.get().result_int());
    reply.body = parser_.get().body();
    return reply;
  }

 private:
  // The request line: the rest of the request may hold a token.
  std::string first_line() const { return std::string(request_.substr(0, request_.find('\r'))); }

  void on_connect(error_code ec) {
    if (ec) return void(failed_ = ec);
    asio::async_write(stream_, asio::buffer(request_), [this](error_code write_ec, size_t) {
      if (write_ec) return void(failed_ = write_ec);
      read_more();
    });
  }

  void read_more() {
    const size_t old = raw_.size();
    raw_.resize(old + kReadBytes);
    stream_.async_read_some(asio::buffer(raw_.data() + old, kReadBytes),
                            [this, old](error_code ec, size_t bytes) {
                              raw_.resize(old + bytes);
                              if (ec) return void(failed_ = ec);
                              on_bytes();
                            });
  }

  void on_bytes() {
    while (!parser_.is_done() && parsed_ < raw_.size()) {
      error_code ec;
      parsed_ += parser_.put(asio::buffer(raw_.data() + parsed_, raw_.size() - parsed_), ec);
      if (ec == http::error::need_more) break;
      if (ec) return void(not_http_ = true);
    }
    if (!parser_.is_done()) read_more();
  }

  static constexpr size_t kReadBytes = 4096;
  beast::tcp_stream stream_;
  const std::string_view request_;
  http::response_parser<http::string_body> parser_;
  std::string raw_;
  size_t parsed_ = 0;  // bytes of raw_ the parser has taken
  error_code failed_;
  bool not_http_ = false;
};

}  // namespace

HttpLoadResult run_http_load(const HttpLoadOptions& options, Clock& clock) {
  asio::io_context io(1);
  const MonoTime start = clock.mono_now();
  const MonoTime window_start = start + options.warmup;
  LoadRun run{options, clock, window_start, window_start + options.window, false, {}};
  for (size_t i = 0; i < options.connections; ++i) {
    const Duration phase =
        options.interval * static_cast<int64_t>(i) / static_cast<int64_t>(options.connections);
    std::make_shared<LoadConnection>(io, run)->connect(start + phase);
  }
  // The timer runs on the real clock; `clock` is the real one here too.
  asio::steady_timer end(io);
  end.expires_after(run.window_end - clock.mono_now());
  end.async_wait([&run](error_code) { run.stopping = true; });
  io.run();
  return std::move(run.result);
}

Result<CapturedReply> capture_reply(uint16_t port, std::string_view request) {
  asio::io_context io(1);
  ReplyCapture capture(io, port, request);
  io.run();
  return capture.result();
}

}  // namespace leasehold::bench
