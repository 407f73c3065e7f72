#include "tests/aws/fake_endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <chrono>

namespace leasehold::testing {
namespace {

std::string lower_header_name(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim_header_value(const std::string& s) {
  const size_t first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

std::string form_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

// The request on `fd`: head and, by Content-Length, body.
bool read_http_request(int fd, FakeRequest& out) {
  std::string data;
  char buf[4096];
  size_t head_end = std::string::npos;
  while ((head_end = data.find("\r\n\r\n")) == std::string::npos) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return false;
    data.append(buf, static_cast<size_t>(n));
  }
  size_t line_end = data.find("\r\n");
  const std::string request_line = data.substr(0, line_end);
  const size_t sp1 = request_line.find(' ');
  const size_t sp2 = request_line.find(' ', sp1 + 1);
  out.method = request_line.substr(0, sp1);
  out.target = request_line.substr(sp1 + 1, sp2 - sp1 - 1);
  size_t pos = line_end + 2;
  while (pos < head_end) {
    line_end = data.find("\r\n", pos);
    const std::string line = data.substr(pos, line_end - pos);
    const size_t colon = line.find(':');
    if (colon != std::string::npos) {
      out.headers[lower_header_name(line.substr(0, colon))] =
          trim_header_value(line.substr(colon + 1));
    }
    pos = line_end + 2;
  }
  const size_t length =
      out.headers.contains("content-length") ? std::stoul(out.headers["content-length"]) : 0;
  out.body = data.substr(head_end + 4);
  while (out.body.size() < length) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return false;
    out.body.append(buf, static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

std::string FakeRequest::header(const std::string& lower_name) const {
  const auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

std::map<std::string, std::string> FakeRequest::form() const {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start < body.size()) {
    size_t end = body.find('&', start);
    if (end == std::string::npos) end = body.size();
    const std::string pair = body.substr(start, end - start);
    const size_t eq = pair.find('=');
    out[form_decode(pair.substr(0, eq))] =
        eq == std::string::npos ? "" : form_decode(pair.substr(eq + 1));
    start = end + 1;
  }
  return out;
}

FakeEndpoint::FakeEndpoint(Handler handler) : handler_(std::move(handler)) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len);
  ::listen(fd_, 16);
  ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  thread_ = std::thread([this] { serve(); });
}

FakeEndpoint::~FakeEndpoint() {
  stopping_ = true;
  ::shutdown(fd_, SHUT_RDWR);  // wakes accept()
  thread_.join();
  ::close(fd_);
}

std::string FakeEndpoint::url() const { return "http://127.0.0.1:" + std::to_string(port_); }

std::vector<FakeRequest> FakeEndpoint::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

size_t FakeEndpoint::request_count() const {
  std::lock_guard lock(mu_);
  return requests_.size();
}

bool FakeEndpoint::wait_for_requests(size_t n, int deadline_ms) const {
  std::unique_lock lock(mu_);
  return arrived_.wait_for(lock, std::chrono::milliseconds(deadline_ms),
                           [&] { return requests_.size() >= n; });
}

void FakeEndpoint::serve() {
  while (!stopping_) {
    const int c = ::accept(fd_, nullptr, nullptr);
    if (c < 0) continue;
    FakeRequest request;
    if (read_http_request(c, request)) {
      {
        std::lock_guard lock(mu_);
        requests_.push_back(request);
      }
      arrived_.notify_all();
      const FakeReply reply = handler_(request);
      std::string text =
          "HTTP/1.1 " + std::to_string(reply.status) + " X\r\nContent-Type: " + reply.content_type;
      for (const auto& [name, value] : reply.headers) text += "\r\n" + name + ": " + value;
      text += "\r\nConnection: close\r\nContent-Length: " + std::to_string(reply.body.size()) +
              "\r\n\r\n" + reply.body;
      (void)!::write(c, text.data(), text.size());
    }
    ::close(c);
  }
}

void Gate::wait() {
  std::unique_lock lock(mu_);
  opened_.wait(lock, [&] { return open_; });
}

void Gate::open() {
  {
    std::lock_guard lock(mu_);
    open_ = true;
  }
  opened_.notify_all();
}

}  // namespace leasehold::testing
