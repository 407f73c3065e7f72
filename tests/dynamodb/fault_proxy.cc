// The fault-injecting proxy; see fault_proxy.h.
#include "tests/dynamodb/fault_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>

namespace leasehold::testing {
namespace {

// Limits, so that a confused peer cannot make the proxy buffer without end.
constexpr size_t kHeadBytesMax = 64 * 1024;
constexpr size_t kBodyBytesMax = 16 * 1024 * 1024;
constexpr std::string_view kTargetPrefix = "dynamodb_20120810.";

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// The value of header `name` (lowercase) in a message head, or nullopt.
std::optional<std::string> header(const std::string& head, std::string_view name) {
  const std::string lowered = lower(head);
  const std::string needle = "\r\n" + std::string(name) + ":";
  const size_t at = lowered.find(needle);
  if (at == std::string::npos) return std::nullopt;
  size_t begin = at + needle.size();
  const size_t end = head.find("\r\n", begin);
  while (begin < end && (head[begin] == ' ' || head[begin] == '\t')) ++begin;
  return head.substr(begin, end - begin);
}

// One HTTP/1.1 message: its head (start line and headers, without the blank
// line) and its body as it was sent.
struct Message {
  std::string head;
  std::string body;
  std::string raw() const { return head + "\r\n\r\n" + body; }
};

// Reads from `fd` into `pending` until it holds at least `size` bytes; false
// at end of stream or on an error.
bool fill(int fd, std::string& pending, size_t size) {
  char chunk[16 * 1024];
  while (pending.size() < size) {
    const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) return false;
    pending.append(chunk, static_cast<size_t>(n));
  }
  return true;
}

// Where the line that starts at `at` in `pending` ends (its "\r\n"),
// reading from `fd` until it does; nullopt at end of stream, on an error or
// past kHeadBytesMax.
std::optional<size_t> line_end(int fd, std::string& pending, size_t at) {
  size_t eol;
  while ((eol = pending.find("\r\n", at)) == std::string::npos) {
    if (pending.size() - at > kHeadBytesMax || !fill(fd, pending, pending.size() + 1)) {
      return std::nullopt;
    }
  }
  return eol;
}

// The length of the chunked body that starts at `from` in `pending` (its
// chunks, the last empty one and the trailers), reading what it needs from
// `fd`; nullopt at end of stream, on an error or on a malformed chunk.
// DynamoDB Local sends a large reply (GetRecords after many writes) chunked.
std::optional<size_t> chunked_length(int fd, std::string& pending, size_t from) {
  size_t at = from;
  while (true) {
    const std::optional<size_t> eol = line_end(fd, pending, at);
    if (!eol) return std::nullopt;
    size_t size = 0;
    const char* first = pending.data() + at;
    const char* last = pending.data() + *eol;
    const auto [ptr, err] = std::from_chars(first, last, size, 16);
    if (err != std::errc() || (ptr != last && *ptr != ';') || size > kBodyBytesMax) {
      return std::nullopt;
    }
    at = *eol + 2;
    if (size == 0) break;
    if (!fill(fd, pending, at + size + 2)) return std::nullopt;
    at += size + 2;
  }
  // Trailers, if any, up to the blank line.
  while (true) {
    const std::optional<size_t> eol = line_end(fd, pending, at);
    if (!eol) return std::nullopt;
    const bool blank = *eol == at;
    at = *eol + 2;
    if (blank) return at - from;
  }
}

// Reads one message from `fd`; bytes read past it stay in `pending`. Nullopt
// at end of stream, on an error, or on a malformed Content-Length or chunk.
// A body is framed by Content-Length (our requests, DynamoDB's and
// dynalite's replies) or sent in chunks; a chunked body is kept as sent,
// chunks and all, for raw() to forward.
std::optional<Message> read_message(int fd, std::string& pending) {
  char chunk[16 * 1024];
  size_t end;
  while ((end = pending.find("\r\n\r\n")) == std::string::npos) {
    if (pending.size() > kHeadBytesMax) return std::nullopt;
    const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) return std::nullopt;
    pending.append(chunk, static_cast<size_t>(n));
  }
  Message message;
  message.head = pending.substr(0, end);
  size_t length = 0;
  const auto coding = header(message.head + "\r\n", "transfer-encoding");
  if (coding && lower(*coding).find("chunked") != std::string::npos) {
    const std::optional<size_t> chunked = chunked_length(fd, pending, end + 4);
    if (!chunked) return std::nullopt;
    length = *chunked;
  } else if (const auto text = header(message.head + "\r\n", "content-length")) {
    const auto [ptr, err] = std::from_chars(text->data(), text->data() + text->size(), length);
    if (err != std::errc() || ptr != text->data() + text->size()) return std::nullopt;
  }
  if (length > kBodyBytesMax || !fill(fd, pending, end + 4 + length)) return std::nullopt;
  message.body = pending.substr(end + 4, length);
  pending.erase(0, end + 4 + length);
  return message;
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

sockaddr_in loopback(uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  return addr;
}

// A connected socket to 127.0.0.1:port, or -1.
int connect_loopback(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr = loopback(port);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

std::string operation_of(const Message& request) {
  const auto target = header(request.head + "\r\n", "x-amz-target");
  if (!target) return "";
  const std::string lowered = lower(*target);
  return lowered.starts_with(kTargetPrefix) ? target->substr(kTargetPrefix.size()) : *target;
}

std::string response_text(int status, const std::string& body) {
  return "HTTP/1.1 " + std::to_string(status) +
         " Fault\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string error_reply(const FaultRule& rule) {
  // An empty type stands for a reply from something in front of DynamoDB
  // that does not speak its JSON (a load balancer's 503 page).
  const std::string body = rule.error_type.empty()
                               ? "<html>service unavailable</html>"
                               : R"({"__type":"com.amazonaws.dynamodb.v20120810#)" +
                                     rule.error_type +
                                     R"(","message":"injected by the fault proxy"})";
  return response_text(rule.status, body);
}

}  // namespace

std::string_view action_name(FaultAction action) {
  switch (action) {
    case FaultAction::kForward:
      return "forward";
    case FaultAction::kReply:
      return "reply";
    case FaultAction::kForwardThenError:
      return "forward-then-error";
    case FaultAction::kForwardThenDrop:
      return "forward-then-drop";
    case FaultAction::kDropUnforwarded:
      return "drop-unforwarded";
  }
  return "?";
}

Result<std::unique_ptr<FaultProxy>> FaultProxy::start(uint16_t upstream_port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return internal_error("socket: " + std::string(std::strerror(errno)));
  sockaddr_in addr = loopback(0);
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, 64) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string why = std::strerror(errno);
    ::close(fd);
    return internal_error("cannot listen on 127.0.0.1: " + why);
  }
  std::unique_ptr<FaultProxy> proxy(new FaultProxy(fd, upstream_port, ntohs(addr.sin_port)));
  proxy->accept_thread_ = std::thread([p = proxy.get()] { p->accept_loop(); });
  return proxy;
}

FaultProxy::~FaultProxy() {
  // shutdown() on the listening socket makes the blocked accept() return.
  ::shutdown(listen_fd_, SHUT_RDWR);
  accept_thread_.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    stopping_cv_.notify_all();
    // Wakes every thread blocked on a client or on the server.
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
  ::close(listen_fd_);
}

void FaultProxy::accept_loop() {
  for (;;) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      return;  // shut down
    }
    std::lock_guard lock(mu_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    open_fds_.insert(fd);
    threads_.emplace_back([this, fd] { serve(fd); });
  }
}

bool FaultProxy::track(int fd) {
  std::lock_guard lock(mu_);
  if (stopping_) return false;
  open_fds_.insert(fd);
  return true;
}

void FaultProxy::close_tracked(int fd) {
  // Closed under the lock, so the destructor never shuts down a descriptor
  // number that has been closed and reused meanwhile.
  std::lock_guard lock(mu_);
  open_fds_.erase(fd);
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

FaultRule FaultProxy::decide(const std::string& operation) {
  std::lock_guard lock(mu_);
  for (FaultRule& rule : rules_) {
    if (rule.times == 0 || (!rule.operation.empty() && rule.operation != operation)) continue;
    if (rule.times > 0) --rule.times;
    return rule;
  }
  FaultRule forward;
  forward.action = FaultAction::kForward;
  return forward;
}

// Serves one client connection. Each forwarded request gets a fresh upstream
// connection, closed after the reply: dynalite (node) closes idle keep-alive
// connections on its own schedule, and a request resent after such a close
// could be applied twice, which is exactly what these tests must not blur.
void FaultProxy::serve(int client_fd) {
  std::string pending;
  while (auto request = read_message(client_fd, pending)) {
    const std::string operation = operation_of(*request);
    const FaultRule rule = decide(operation);
    {
      std::unique_lock lock(mu_);
      seen_.push_back({operation, rule.action, request->body});
      if (stopping_cv_.wait_for(lock, rule.delay, [&] { return stopping_; })) break;
    }
    if (rule.action == FaultAction::kDropUnforwarded) break;
    if (rule.action == FaultAction::kReply) {
      if (!write_all(client_fd, error_reply(rule))) break;
      continue;
    }
    std::string reply = response_text(502, "<html>the fault proxy cannot reach the server</html>");
    const int upstream = connect_loopback(upstream_port_);
    if (upstream >= 0 && track(upstream)) {
      std::string upstream_pending;
      if (write_all(upstream, request->raw())) {
        if (auto response = read_message(upstream, upstream_pending)) reply = response->raw();
      }
      close_tracked(upstream);
    } else if (upstream >= 0) {
      ::close(upstream);
    }
    if (rule.action == FaultAction::kForwardThenDrop) break;
    // The server applied the request; the client gets the rule's error instead.
    if (rule.action == FaultAction::kForwardThenError) reply = error_reply(rule);
    if (!write_all(client_fd, reply)) break;
  }
  close_tracked(client_fd);
}

void FaultProxy::add_rule(FaultRule rule) {
  std::lock_guard lock(mu_);
  rules_.push_back(std::move(rule));
}

void FaultProxy::clear_rules() {
  std::lock_guard lock(mu_);
  rules_.clear();
}

std::vector<SeenRequest> FaultProxy::seen() const {
  std::lock_guard lock(mu_);
  return seen_;
}

int FaultProxy::count(std::string_view operation, std::optional<FaultAction> action) const {
  std::lock_guard lock(mu_);
  return static_cast<int>(std::count_if(seen_.begin(), seen_.end(), [&](const SeenRequest& r) {
    return (operation.empty() || r.operation == operation) && (!action || r.action == *action);
  }));
}

std::string FaultProxy::log() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& r : seen_) {
    out += (out.empty() ? "" : " ") + r.operation + ":" + std::string(action_name(r.action));
  }
  return out.empty() ? "(no requests)" : out;
}

void FaultProxy::clear_log() {
  std::lock_guard lock(mu_);
  seen_.clear();
}

Result<std::string> dynamodb_call(uint16_t port, std::string_view operation,
                                  std::string_view body) {
  const int fd = connect_loopback(port);
  if (fd < 0) return unavailable("cannot connect to 127.0.0.1:" + std::to_string(port));
  const std::string request =
      "POST / HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
      "\r\nContent-Type: application/x-amz-json-1.0\r\nX-Amz-Target: DynamoDB_20120810." +
      std::string(operation) +
      "\r\nX-Amz-Date: 20260101T000000Z\r\nAuthorization: AWS4-HMAC-SHA256 "
      "Credential=AKIDPROBE/20260101/us-east-1/dynamodb/aws4_request, "
      "SignedHeaders=host;x-amz-date;x-amz-target, Signature=" +
      std::string(64, '0') + "\r\nContent-Length: " + std::to_string(body.size()) +
      "\r\nConnection: close\r\n\r\n" + std::string(body);
  std::string pending;
  std::optional<Message> response;
  if (write_all(fd, request)) response = read_message(fd, pending);
  ::close(fd);
  if (!response) return unavailable(std::string(operation) + ": no reply");
  if (!response->head.starts_with("HTTP/1.1 200")) {
    return internal_error(std::string(operation) + ": " +
                          response->head.substr(0, response->head.find("\r\n")) + ": " +
                          response->body);
  }
  return response->body;
}

}  // namespace leasehold::testing
