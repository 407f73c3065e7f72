// The container credentials endpoint (ECS, Fargate, EKS Pod Identity), served
// by a small HTTP server on loopback: the token is sent, the credentials are
// cached, refreshed ahead of their expiry, and outlive a failed refresh only
// until they expire.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <ctime>
#include <map>
#include <mutex>
#include <thread>

#include "aws/credentials.h"

namespace leasehold::aws {
namespace {

using std::chrono::minutes;

// Answers every request with the current status and body, then closes.
class CredentialsServer {
 public:
  CredentialsServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len), 0);
    EXPECT_EQ(::listen(fd_, 16), 0);
    EXPECT_EQ(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~CredentialsServer() {
    stopping_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  void answer(int status, std::string body) {
    std::lock_guard lock(mu_);
    status_ = status;
    body_ = std::move(body);
  }
  int requests() const { return requests_; }
  std::string last_request() {
    std::lock_guard lock(mu_);
    return last_request_;
  }

 private:
  void serve() {
    while (!stopping_) {
      const int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) continue;
      std::string request;
      char buf[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) break;
        request.append(buf, static_cast<size_t>(n));
      }
      std::string reply;
      {
        std::lock_guard lock(mu_);
        last_request_ = request;
        reply = "HTTP/1.1 " + std::to_string(status_) + " X\r\nContent-Type: application/json\r\n" +
                "Connection: close\r\nContent-Length: " + std::to_string(body_.size()) +
                "\r\n\r\n" + body_;
      }
      ++requests_;
      (void)!::write(c, reply.data(), reply.size());
      ::close(c);
    }
  }

  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> requests_{0};
  std::mutex mu_;
  int status_ = 200;
  std::string body_;
  std::string last_request_;
};

std::string iso8601(WallTime t) {
  const time_t s = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  gmtime_r(&s, &tm);
  char out[32];
  std::strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return out;
}

std::string credentials_json(const std::string& key, WallTime expires) {
  return R"({"AccessKeyId":")" + key + R"(","SecretAccessKey":"SECRET-)" + key +
         R"(","Token":"TOKEN-)" + key + R"(","Expiration":")" + iso8601(expires) + R"("})";
}

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

TEST(ContainerCredentials, FetchesWithTheTokenCachesAndRefreshesAheadOfExpiry) {
  CredentialsServer server;
  SimulatedClock clock(1'800'000'000'000);
  server.answer(200, credentials_json("AKID1", clock.wall_now() + minutes(15)));
  auto source = container_credentials(
      env_of({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", server.url("/v2/credentials/abc")},
              {"AWS_CONTAINER_AUTHORIZATION_TOKEN", "secret-token"}}),
      &clock, minutes(5));
  ASSERT_TRUE(source.ok()) << source.status().to_string();
  ASSERT_TRUE(source->has_value());
  auto first = (**source)->get();
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(first->access_key_id, "AKID1");
  EXPECT_EQ(first->secret_access_key, "SECRET-AKID1");
  EXPECT_EQ(first->session_token, "TOKEN-AKID1");
  EXPECT_NE(server.last_request().find("GET /v2/credentials/abc HTTP/1.1"), std::string::npos);
  EXPECT_NE(server.last_request().find("Authorization: secret-token"), std::string::npos);

  clock.advance(minutes(9));  // 6 minutes left: still cached
  ASSERT_TRUE((**source)->get().ok());
  EXPECT_EQ(server.requests(), 1);

  server.answer(200, credentials_json("AKID2", clock.wall_now() + minutes(15)));
  clock.advance(minutes(2));  // 4 minutes left: inside the refresh window
  auto refreshed = (**source)->get();
  ASSERT_TRUE(refreshed.ok());
  EXPECT_EQ(refreshed->access_key_id, "AKID2");
  EXPECT_EQ(server.requests(), 2);
}

TEST(ContainerCredentials, OldCredentialsServeThroughAFailedRefreshUntilTheyExpire) {
  CredentialsServer server;
  SimulatedClock clock(1'800'000'000'000);
  server.answer(200, credentials_json("AKID1", clock.wall_now() + minutes(10)));
  auto source = container_credentials(
      env_of({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", server.url("/creds")}}), &clock, minutes(5));
  ASSERT_TRUE(source.ok() && source->has_value());
  ASSERT_TRUE((**source)->get().ok());
  server.answer(500, "{}");
  clock.advance(minutes(7));
  auto stale = (**source)->get();
  ASSERT_TRUE(stale.ok());
  EXPECT_EQ(stale->access_key_id, "AKID1");
  clock.advance(minutes(4));  // past the expiry
  auto expired = (**source)->get();
  ASSERT_FALSE(expired.ok());
  EXPECT_EQ(expired.status().code(), Code::kUnavailable);
  EXPECT_EQ(expired.status().message().find("SECRET"), std::string::npos);
}

TEST(ContainerCredentials, UnsetIsNoneAndForeignPlainHttpIsRefused) {
  auto none = container_credentials(env_of({}));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto foreign =
      container_credentials(env_of({{"AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://10.1.2.3/x"}}));
  EXPECT_EQ(foreign.status().code(), Code::kInvalidArgument);
  auto relative =
      container_credentials(env_of({{"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/v2/creds"}}));
  ASSERT_TRUE(relative.ok()) << relative.status().to_string();  // 169.254.170.2 is allowed
  EXPECT_TRUE(relative->has_value());
}

TEST(ContainerCredentials, TheEnvironmentComesBeforeTheContainer) {
  auto source = default_credentials(env_of({{"AWS_ACCESS_KEY_ID", "AKENV"},
                                            {"AWS_SECRET_ACCESS_KEY", "s"},
                                            {"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "/x"}}));
  ASSERT_TRUE(source.ok());
  EXPECT_EQ((*source)->get()->access_key_id, "AKENV");
}

}  // namespace
}  // namespace leasehold::aws
