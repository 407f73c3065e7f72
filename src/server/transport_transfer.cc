// A Session's streamed bodies (server/transport_impl.h has the transport's
// layout). An upload route's body is parsed through a small buffer
// (Beast's buffer_body) and appended to an UploadFile, after admission; a
// response's file is read in parts with pread and written after its header.
// Neither ever holds more than kTransferBufferBytes of the body; both run
// under the transfer limits (transfer_deadline()). The file writes and reads
// are ordinary blocking calls on the I/O thread, as Beast's own file_body
// makes them: on a local disk they cost less than the socket operations
// around them. A response's BodyStream is different: it may wait on a store,
// so each of its parts is made by a job on the blocking pool and written
// from the session's thread as one chunk (Beast's chunk encoding), the next
// part asked for once it is written; a part that fails or comes too late
// closes the connection before the last chunk is sent.
#include <algorithm>
#include <boost/asio/post.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "base/logging.h"
#include "server/errors.h"
#include "server/files.h"
#include "server/range.h"
#include "server/transport_impl.h"

namespace leasehold::server::transport_parts {
namespace {

// Past this, the credit a streamed body earns by moving bytes stops growing
// (it keeps the deadline's arithmetic far from overflowing).
constexpr std::chrono::hours kTransferCreditMax{24 * 365};

}  // namespace

// An upload route: refused from its Content-Length, then admitted, all
// before a byte of the body is read.
template <class Stream>
void Session<Stream>::begin_upload(bool has_body) {
  has_body_ = has_body;
  if (const auto length = parser_->content_length();
      has_body && length && *length > route_->options.body_bytes_max) {
    return on_read_error(http::error::body_limit);  // refused unread
  }
  if (admit_blocks()) return dispatch_blocking(Step::kAdmit);
  on_admitted(run_admit(server_, request_, *route_));
}

// Admitted (no refusal): the body file is made and the body read into it.
// Refused: the answer closes the connection, since the body is unread.
template <class Stream>
void Session<Stream>::on_admitted(std::optional<Response> refused) {
  if (refused) return respond(std::move(*refused));
  admitted_ = true;
  auto file = UploadFile::create(route_->options.upload_dir, server_.upload_random());
  if (!file.ok()) return refuse_upload(file.status());
  upload_ = std::move(file).value();
  request_.body_file = upload_->path();
  if (!has_body_) return finish_upload();
  // The header parser becomes a body parser: Beast moves what it has read so
  // far into it, body bytes that came with the header included.
  upload_parser_.emplace(std::move(*parser_));
  upload_parser_->body_limit(route_->options.body_bytes_max);
  transfer_started_ = asio::steady_timer::clock_type::now();
  transfer_bytes_ = 0;
  if (!beast::iequals(upload_parser_->get()[http::field::expect], "100-continue")) {
    return read_upload_body();
  }
  set_io_deadline(transfer_deadline());
  asio::async_write(stream_, asio::buffer(kContinue), [self = self()](error_code ec, size_t) {
    if (ec) return self->close_now();
    self->read_upload_body();
  });
}

template <class Stream>
void Session<Stream>::read_upload_body() {
  if (!transfer_buffer_) transfer_buffer_ = std::make_unique<char[]>(kTransferBufferBytes);
  auto& body = upload_parser_->get().body();
  body.data = transfer_buffer_.get();
  body.size = kTransferBufferBytes;
  set_io_deadline(transfer_deadline());
  http::async_read_some(stream_, buffer_, *upload_parser_,
                        beast::bind_front_handler(&Session::on_upload_bytes, self()));
}

// need_buffer only says the buffer is full: its bytes go to the file and
// the reading goes on.
template <class Stream>
void Session<Stream>::on_upload_bytes(error_code ec, size_t) {
  if (exchange_ != Exchange::kOpen) return;  // force_close() dropped it meanwhile
  if (ec == http::error::need_buffer) ec = {};
  if (ec) return on_read_error(ec);  // 413 past the limit; the client left; a timeout
  const size_t got = kTransferBufferBytes - upload_parser_->get().body().size;
  if (got > 0) {
    if (Status written = upload_->write({transfer_buffer_.get(), got}); !written.ok()) {
      return refuse_upload(written);
    }
    transfer_bytes_ += got;
  }
  if (upload_parser_->is_done()) return finish_upload();
  read_upload_body();
}

// The body is all in the file: the handler runs, with request_timeout
// afresh for itself and the response.
template <class Stream>
void Session<Stream>::finish_upload() {
  if (Status closed = upload_->close(); !closed.ok()) return refuse_upload(closed);
  if (upload_parser_) {
    keep_alive_ = upload_parser_->get().keep_alive();
    upload_parser_.reset();
  }
  deadline_ = asio::steady_timer::clock_type::now() + limits().request_timeout;
  dispatch();
}

// The body file could not be made or written: 507 for a full disk, else 500
// (the log has the cause). The connection closes, as the body may be unread.
template <class Stream>
void Session<Stream>::refuse_upload(const Status& status) {
  keep_alive_ = false;
  log_to(server_.logger(), LogLevel::kError, "request {}: {} {}: the upload failed: {}",
         request_.request_id, request_.method, request_.route, status.to_string());
  if (status.code() == Code::kResourceExhausted) {
    return respond(error_response(507, "the server has no room for this upload"));
  }
  respond(internal_error_response(request_.request_id));
}

// The deadline of the next read or write of a streamed body: the transfer
// limits of ServerLimits.
template <class Stream>
asio::steady_timer::time_point Session<Stream>::transfer_deadline() const {
  const ServerLimits& l = limits();
  const std::chrono::duration<double> credit_s(std::min(
      static_cast<double>(transfer_bytes_) / static_cast<double>(l.transfer_rate_min_bytes_per_s),
      std::chrono::duration<double>(kTransferCreditMax).count()));
  const auto credit = std::chrono::duration_cast<std::chrono::milliseconds>(credit_s);
  return std::min(asio::steady_timer::clock_type::now() + l.transfer_idle_timeout,
                  transfer_started_ + l.request_timeout + credit);
}

// A response with a file: the file opened (it may have vanished: 404), and
// the status, Content-Range and Accept-Ranges that the Range asks for. The
// file is then sent after the header by write_file_part().
template <class Stream>
Response Session<Stream>::open_file_response(Response response) {
  const std::string path = std::exchange(response.file_path, {});
  if (response.status == 204 || response.status == 304) return response;  // no body to send
  auto file = SendFile::open(path);
  if (!file.ok()) {
    if (file.status().code() == Code::kNotFound) return error_response(404, "no such file");
    log_to(server_.logger(), LogLevel::kError, "request {}: {} {}: cannot send a file: {}",
           request_.request_id, request_.method, request_.route, file.status().to_string());
    return internal_error_response(request_.request_id);
  }
  const uint64_t size = (*file)->size();
  RangeAnswer range{.kind = RangeAnswer::Kind::kWhole, .range = {.first = 0, .length = size}};
  if (response.status == 200) {
    response.set_header("Accept-Ranges", "bytes");
    const bool reads = request_.method == "GET" || request_.method == "HEAD";
    if (reads && if_range_matches(request_.header("if-range"), response.header("ETag"),
                                  response.header("Last-Modified"))) {
      range = resolve_range(request_.header("range"), size);
    }
  }
  if (range.kind == RangeAnswer::Kind::kUnsatisfiable) {
    Response refused = error_response(
        416, "the range asked for is outside the file's " + std::to_string(size) + " bytes");
    refused.set_header("Content-Range", unsatisfied_content_range(size));
    refused.set_header("Accept-Ranges", "bytes");
    return refused;
  }
  if (range.kind == RangeAnswer::Kind::kPart) {
    response.status = 206;
    response.set_header("Content-Range", content_range(range.range, size));
  }
  if (!response.header("Content-Type")) {
    response.set_header("Content-Type", "application/octet-stream");
  }
  response.body.clear();
  send_file_ = std::move(file).value();
  send_offset_ = range.range.first;
  send_remaining_ = range.range.length;
  return response;
}

// Sends the next part of the file, under the transfer limits. A file that
// shrank since it was opened cannot fill the Content-Length already sent:
// the connection closes.
template <class Stream>
void Session<Stream>::write_file_part() {
  if (send_remaining_ == 0) return finish_write({});
  if (!transfer_buffer_) transfer_buffer_ = std::make_unique<char[]>(kTransferBufferBytes);
  const size_t want =
      static_cast<size_t>(std::min<uint64_t>(kTransferBufferBytes, send_remaining_));
  Result<size_t> read = send_file_->read_at(send_offset_, {transfer_buffer_.get(), want});
  if (!read.ok() || *read == 0) {
    log_to(server_.logger(), LogLevel::kError, "request {}: {} {}: the file ended early: {}",
           request_.request_id, request_.method, request_.route,
           read.ok() ? "it shrank while it was sent" : read.status().to_string());
    return finish_write(asio::error::eof);
  }
  set_io_deadline(transfer_deadline());
  asio::async_write(stream_, asio::buffer(transfer_buffer_.get(), *read),
                    beast::bind_front_handler(&Session::on_file_part, self()));
}

template <class Stream>
void Session<Stream>::on_file_part(error_code ec, size_t bytes) {
  if (ec) return finish_write(ec);
  send_offset_ += bytes;
  send_remaining_ -= bytes;
  transfer_bytes_ += bytes;
  write_file_part();
}

// Asks the blocking pool for the next part of the body stream, and waits
// for it under the transfer limits, as for a read or write of the body.
template <class Stream>
void Session<Stream>::request_part() {
  const uint64_t generation = ++generation_;
  auto job = [self = self(), stream = body_stream_, generation,
              work = asio::make_work_guard(stream_.get_executor())]() mutable {
    std::string part;
    Result<bool> more = run_body_stream(*stream, part);
    stream.reset();
    {
      auto executor = self->stream_.get_executor();
      asio::post(executor, [self = std::move(self), more = std::move(more), part = std::move(part),
                            generation]() mutable {
        self->on_part(generation, std::move(more), std::move(part));
      });
    }
    work.reset();  // last: the io_context may be gone after this
  };
  if (!server_.hooks().submit_blocking(std::move(job))) {
    log_to(server_.logger(), LogLevel::kWarn,
           "request {}: {} {}: the blocking pool refused the body's next part", request_.request_id,
           request_.method, request_.route);
    return finish_write(asio::error::no_buffer_space);
  }
  awaiting_part_ = true;
  clear_io_deadline();
  handler_timer_.expires_at(transfer_deadline());
  handler_timer_.async_wait(
      beast::bind_front_handler(&Session::on_part_timeout, self(), generation));
}

// The body stream's call, on the pool. Never throws.
template <class Stream>
Result<bool> Session<Stream>::run_body_stream(BodyStream& stream, std::string& part) {
  try {
    return stream(part);
  } catch (const std::exception& e) {
    return internal_error(std::string("the body stream threw: ") + e.what());
  } catch (...) {
    return internal_error("the body stream threw a non-exception");
  }
}

template <class Stream>
void Session<Stream>::on_part(uint64_t generation, Result<bool> more, std::string part) {
  if (!awaiting_part_ || generation != generation_) return;  // timed out, or force_close()
  awaiting_part_ = false;
  handler_timer_.cancel();
  if (!more.ok()) {
    log_to(server_.logger(), LogLevel::kError, "request {}: {} {}: the body broke off: {}",
           request_.request_id, request_.method, request_.route, more.status().to_string());
    return finish_write(asio::error::eof);  // the connection closes: no last chunk
  }
  part_ = std::move(part);
  part_last_ = !*more;
  write_part();
}

template <class Stream>
void Session<Stream>::on_part_timeout(uint64_t generation, error_code ec) {
  if (ec || !awaiting_part_ || generation != generation_) return;
  awaiting_part_ = false;
  log_to(server_.logger(), LogLevel::kError,
         "request {}: {} {}: the body's next part came too late", request_.request_id,
         request_.method, request_.route);
  finish_write(asio::error::timed_out);
}

// Writes part_ as one chunk (an empty one would end the body: none is sent).
template <class Stream>
void Session<Stream>::write_part() {
  if (part_.empty()) return on_part_written({}, 0);
  set_io_deadline(transfer_deadline());
  if (http10_) {
    return asio::async_write(stream_, asio::buffer(part_),
                             beast::bind_front_handler(&Session::on_part_written, self()));
  }
  asio::async_write(stream_, http::make_chunk(asio::buffer(part_)),
                    beast::bind_front_handler(&Session::on_part_written, self()));
}

template <class Stream>
void Session<Stream>::on_part_written(error_code ec, size_t bytes) {
  if (ec) return finish_write(ec);
  transfer_bytes_ += bytes;
  if (!part_last_) return request_part();
  part_.clear();
  if (http10_) return finish_write({});  // keep_alive_ is false: the close ends the body
  set_io_deadline(transfer_deadline());
  asio::async_write(stream_, http::make_chunk_last(),
                    [self = self()](error_code last_ec, size_t) { self->finish_write(last_ec); });
}

// This file's members, for both streams (transport_session.cc instantiates
// the class).
#define LEASEHOLD_TRANSFER_MEMBERS(S)                                            \
  template void Session<S>::begin_upload(bool);                                  \
  template void Session<S>::on_admitted(std::optional<Response>);                \
  template void Session<S>::read_upload_body();                                  \
  template void Session<S>::on_upload_bytes(error_code, size_t);                 \
  template void Session<S>::finish_upload();                                     \
  template void Session<S>::refuse_upload(const Status&);                        \
  template asio::steady_timer::time_point Session<S>::transfer_deadline() const; \
  template Response Session<S>::open_file_response(Response);                    \
  template void Session<S>::write_file_part();                                   \
  template void Session<S>::on_file_part(error_code, size_t);                    \
  template void Session<S>::request_part();                                      \
  template void Session<S>::on_part(uint64_t, Result<bool>, std::string);        \
  template void Session<S>::on_part_timeout(uint64_t, error_code);               \
  template void Session<S>::write_part();                                        \
  template void Session<S>::on_part_written(error_code, size_t);                 \
  template Result<bool> Session<S>::run_body_stream(BodyStream&, std::string&);
LEASEHOLD_TRANSFER_MEMBERS(PlainStream)
LEASEHOLD_TRANSFER_MEMBERS(TlsStream)
#undef LEASEHOLD_TRANSFER_MEMBERS

}  // namespace leasehold::server::transport_parts
