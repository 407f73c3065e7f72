#include "tests/aws/scripted_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

namespace leasehold::testing {
namespace {

std::string lower_case(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Appends what `fd` has to `pending`; false at EOF or on an error.
bool receive_more(int fd, std::string& pending) {
  char chunk[4096];
  const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
  if (n <= 0) return false;
  pending.append(chunk, static_cast<size_t>(n));
  return true;
}

// Reads one request from `fd`, with what is left of earlier reads in
// `pending`; nullopt at EOF.
std::optional<ScriptedServer::Request> read_one_request(int fd, std::string& pending) {
  size_t end;
  while ((end = pending.find("\r\n\r\n")) == std::string::npos) {
    if (!receive_more(fd, pending)) return std::nullopt;
  }
  ScriptedServer::Request request;
  const std::string head = pending.substr(0, end);
  size_t line_end = head.find("\r\n");
  const std::string request_line = head.substr(0, line_end);
  const size_t space = request_line.find(' ');
  request.method = request_line.substr(0, space);
  request.target = request_line.substr(space + 1, request_line.rfind(' ') - space - 1);
  while (line_end != std::string::npos && line_end < head.size()) {
    const size_t start = line_end + 2;
    line_end = head.find("\r\n", start);
    const std::string line = head.substr(start, line_end - start);
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const size_t value = line.find_first_not_of(' ', colon + 1);
    request.headers.emplace_back(lower_case(line.substr(0, colon)),
                                 value == std::string::npos ? "" : line.substr(value));
  }
  const std::string length_text = request.header("content-length");
  const size_t length = length_text.empty() ? 0 : std::stoul(length_text);
  while (pending.size() < end + 4 + length) {
    if (!receive_more(fd, pending)) return std::nullopt;
  }
  request.body = pending.substr(end + 4, length);
  pending.erase(0, end + 4 + length);
  return request;
}

std::string response_text(const ScriptedServer::Reply& reply) {
  std::string out = "HTTP/1.1 " + std::to_string(reply.status) +
                    " X\r\nContent-Type: " + reply.content_type + "\r\n";
  const bool has_length =
      std::any_of(reply.headers.begin(), reply.headers.end(),
                  [](const auto& header) { return lower_case(header.first) == "content-length"; });
  if (!has_length) out += "Content-Length: " + std::to_string(reply.body.size()) + "\r\n";
  for (const auto& [name, value] : reply.headers) out += name + ": " + value + "\r\n";
  return out + "\r\n" + reply.body;
}

std::string format_utc(WallTime t, const char* format) {
  const time_t seconds = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char text[64];
  const size_t n = std::strftime(text, sizeof(text), format, &tm);
  return std::string(text, n);
}

// The signing time `request` carries, if any, as X-Amz-Date has it.
std::optional<WallTime> request_signed_at(const ScriptedServer::Request& request) {
  const std::string date = request.header("x-amz-date");
  std::tm tm{};
  if (date.size() != 16 || ::strptime(date.c_str(), "%Y%m%dT%H%M%SZ", &tm) == nullptr) {
    return std::nullopt;
  }
  return std::chrono::system_clock::from_time_t(timegm(&tm));
}

}  // namespace

std::string ScriptedServer::Request::header(std::string_view name) const {
  for (const auto& [n, v] : headers) {
    if (n == name) return v;
  }
  return "";
}

ScriptedServer::ScriptedServer(std::deque<Reply> script) : script_(std::move(script)) { start(); }

ScriptedServer::ScriptedServer(Handler handler) : handler_(std::move(handler)) { start(); }

void ScriptedServer::start() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len), 0);
  EXPECT_EQ(::listen(listen_fd_, 16), 0);
  EXPECT_EQ(::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  port_ = ntohs(addr.sin_port);
  accept_thread_ = std::thread([this] {
    for (int fd; (fd = ::accept(listen_fd_, nullptr, nullptr)) >= 0;) {
      std::lock_guard lock(mu_);
      fds_.push_back(fd);
      threads_.emplace_back([this, fd] { serve(fd); });
    }
  });
}

ScriptedServer::~ScriptedServer() {
  ::shutdown(listen_fd_, SHUT_RDWR);
  accept_thread_.join();
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
  }
  held_.notify_all();
  for (auto& t : threads_) t.join();
  for (int fd : fds_) ::close(fd);
  ::close(listen_fd_);
}

std::vector<std::string> ScriptedServer::targets() {
  constexpr std::string_view kDynamoDb = "dynamodb_20120810.";
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const Request& r : requests_) {
    std::string target = lower_case(r.header("x-amz-target"));
    if (target.starts_with(kDynamoDb)) target.erase(0, kDynamoDb.size());
    out.push_back(std::move(target));
  }
  return out;
}

std::vector<ScriptedServer::Request> ScriptedServer::requests() {
  std::lock_guard lock(mu_);
  return requests_;
}

void ScriptedServer::hold_replies_until_in_flight(size_t count, Duration max_wait) {
  std::lock_guard lock(mu_);
  hold_count_ = count;
  hold_max_wait_ = max_wait;
}

size_t ScriptedServer::most_in_flight() {
  std::lock_guard lock(mu_);
  return most_in_flight_;
}

ScriptedServer::Reply ScriptedServer::reply_to(const Request& request,
                                               std::unique_lock<std::mutex>& lock) {
  requests_.push_back(request);
  Reply reply;
  if (handler_) {
    reply = handler_(request);
  } else if (!script_.empty()) {
    reply = script_.front();
    script_.pop_front();
  }
  most_in_flight_ = std::max(most_in_flight_, ++in_flight_);
  if (hold_count_ > 0) {
    if (!hold_deadline_) hold_deadline_ = std::chrono::steady_clock::now() + hold_max_wait_;
    held_.notify_all();
    held_.wait_until(lock, *hold_deadline_, [&] { return most_in_flight_ >= hold_count_; });
  }
  if (reply.hold) held_.wait(lock, [&] { return stopping_; });
  --in_flight_;
  return reply;
}

void ScriptedServer::serve(int fd) {
  std::string pending;
  while (std::optional<Request> request = read_one_request(fd, pending)) {
    Reply reply;
    {
      std::unique_lock lock(mu_);
      reply = reply_to(*request, lock);
    }
    if (reply.drop || reply.hold) break;
    const std::string response = response_text(reply);
    if (::send(fd, response.data(), response.size(), MSG_NOSIGNAL) < 0) break;
  }
  ::shutdown(fd, SHUT_RDWR);
}

std::string amz_date(WallTime t) { return format_utc(t, "%Y%m%dT%H%M%SZ"); }

std::string http_date(WallTime t) { return format_utc(t, "%a, %d %b %Y %H:%M:%S GMT"); }

// The messages are DynamoDB's and SQS's own: "Signature expired: <signed>
// is now earlier than <now - allowed> (<now> - 5 min.)".
std::optional<ScriptedServer::Reply> refuse_skewed_json(const ScriptedServer::Request& request,
                                                        WallTime now, Duration allowed) {
  const std::optional<WallTime> signed_time = request_signed_at(request);
  if (!signed_time) return ScriptedServer::Reply{400, R"({"__type":"MissingAuthenticationToken"})"};
  const auto window = std::chrono::duration_cast<WallTime::duration>(allowed);
  const std::string minutes =
      std::to_string(std::chrono::duration_cast<std::chrono::minutes>(allowed).count());
  std::string message;
  if (*signed_time < now - window) {
    message = "Signature expired: " + amz_date(*signed_time) + " is now earlier than " +
              amz_date(now - window) + " (" + amz_date(now) + " - " + minutes + " min.)";
  } else if (*signed_time > now + window) {
    message = "Signature not yet current: " + amz_date(*signed_time) + " is still later than " +
              amz_date(now + window) + " (" + amz_date(now) + " + " + minutes + " min.)";
  } else {
    return std::nullopt;
  }
  return ScriptedServer::Reply{
      .status = 400,
      .body = R"({"__type":"com.amazon.coral.service#InvalidSignatureException","message":")" +
              message + "\"}",
      .headers = {{"Date", http_date(now)}}};
}

std::optional<ScriptedServer::Reply> refuse_skewed_s3(const ScriptedServer::Request& request,
                                                      WallTime now, Duration allowed) {
  const std::optional<WallTime> signed_time = request_signed_at(request);
  const auto window = std::chrono::duration_cast<WallTime::duration>(allowed);
  if (signed_time && *signed_time >= now - window && *signed_time <= now + window) {
    return std::nullopt;
  }
  return ScriptedServer::Reply{
      .status = 403,
      .body =
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>RequestTimeTooSkewed</Code>"
          "<Message>The difference between the request time and the current time is too "
          "large.</Message><MaxAllowedSkewMilliseconds>" +
          std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(allowed).count()) +
          "</MaxAllowedSkewMilliseconds></Error>",
      .headers = {{"Date", http_date(now)}},
      .content_type = "application/xml"};
}

}  // namespace leasehold::testing
