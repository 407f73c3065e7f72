// The app behind `leasehold serve`, through real sockets: who may call what
// (401, 403, bearer and cookie), the Origin check on cookie writes, the
// sign-in limit, bad bodies, the web shell's files, health and metrics.
#include "app/app.h"

#include <gtest/gtest.h>

#include <atomic>
#include <boost/json.hpp>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "../server/server_fixture.h"
#include "../server/test_client.h"
#include "server/json.h"
#include "server/server.h"
#include "testing/capturing_logger.h"

namespace leasehold::app {
namespace {

using namespace std::chrono_literals;
using server::testing::Client;
using server::testing::Gate;
using server::testing::HttpResponse;

class AppTest : public ::testing::Test {
 protected:
  void SetUp() override {
    open_app();
    if (HasFatalFailure()) return;
    start_server(app_->hooks());
  }
  void TearDown() override {
    if (server_) server_->stop();
  }

  // The runtime on a memory store, the accounts with two users, and the app.
  void open_app() {
    runtime::RuntimeOptions options;
    options.store_uri = "memory:";
    options.metrics = &registry_;
    auto rt = runtime::Runtime::open(options);
    ASSERT_TRUE(rt.ok()) << rt.status().to_string();
    runtime_ = std::move(rt).value();
    ASSERT_TRUE(runtime_->store().ensure_table(accounts::Accounts::table_spec()).ok());
    accounts::AccountsOptions cheap;
    cheap.argon2_memory_kib = 64;
    cheap.argon2_passes = 1;
    accounts_ = std::make_unique<accounts::Accounts>(runtime_->store(), runtime_->clock(),
                                                     runtime_->random(), cheap);
    app_ = std::make_unique<App>(*runtime_, *accounts_, registry_, log_, AppOptions{});
    admin_token_ = add("ann", "Ann", true, "correct horse battery");
    user_token_ = add("bob", "Bob", false, "battery staple horse");
  }

  // The app's server on 127.0.0.1, any port.
  void start_server(server::ServerHooks hooks, server::ServerLimits limits = {}) {
    server::ServerOptions server_options;
    server_options.port = 0;
    server_options.threads = 2;
    server_options.limits = limits;
    auto started = server::Server::start(server_options, app_->router(), std::move(hooks));
    ASSERT_TRUE(started.ok()) << started.status().to_string();
    server_ = std::move(started).value();
    origin_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }

  std::string add(std::string name, std::string display, bool admin, std::string password) {
    auto added = accounts_->add_user({name, display, admin, password});
    EXPECT_TRUE(added.ok()) << added.status().to_string();
    return added.ok() ? added->token : "";
  }

  // One request on a new connection.
  HttpResponse call(std::string_view method, std::string_view target, std::string_view headers = "",
                    std::string_view body = "") {
    auto response = server::testing::exchange(server_->port(), method, target, headers, body);
    EXPECT_TRUE(response.has_value()) << method << " " << target;
    return response.value_or(HttpResponse{});
  }
  std::string bearer(const std::string& token) { return "Authorization: Bearer " + token + "\r\n"; }
  std::string sign_in_body(std::string_view name, std::string_view password) {
    return "{\"name\":\"" + std::string(name) + "\",\"password\":\"" + std::string(password) +
           "\"}";
  }
  HttpResponse sign_in(std::string_view name, std::string_view password) {
    return call("POST", "/api/session",
                "Content-Type: application/json\r\nOrigin: " + origin_ + "\r\n",
                sign_in_body(name, password));
  }
  // "leasehold_session=..." from a sign-in's Set-Cookie.
  static std::string cookie_of(const HttpResponse& r) {
    const std::string set = r.header("set-cookie");
    return set.substr(0, set.find(';'));
  }

  metrics::Registry registry_;
  CapturingLogger log_{LogLevel::kWarn};
  std::unique_ptr<runtime::Runtime> runtime_;
  std::unique_ptr<accounts::Accounts> accounts_;
  std::unique_ptr<App> app_;
  std::unique_ptr<server::Server> server_;
  std::string origin_, admin_token_, user_token_;
};

TEST_F(AppTest, WithoutCredentialsTheApiIs401AndHealthIsOpen) {
  const HttpResponse me = call("GET", "/api/me");
  EXPECT_EQ(me.status, 401);
  EXPECT_NE(me.body.find("\"code\":\"unauthenticated\""), std::string::npos) << me.body;
  EXPECT_EQ(call("GET", "/healthz").status, 200);
  EXPECT_EQ(call("GET", "/readyz").status, 200);
  EXPECT_EQ(call("GET", "/api/me", bearer(std::string(64, 'a'))).status, 401);
  EXPECT_EQ(call("GET", "/api/me", "Authorization: Basic YTpi\r\n").status, 401);
}

TEST_F(AppTest, ABearerTokenAndASessionCookieBothWork) {
  const HttpResponse by_token = call("GET", "/api/me", bearer(user_token_));
  ASSERT_EQ(by_token.status, 200) << by_token.body;
  EXPECT_EQ(boost::json::parse(by_token.body),
            boost::json::parse(R"({"name":"bob","display_name":"Bob","admin":false})"));

  const HttpResponse signed_in = sign_in("bob", "battery staple horse");
  ASSERT_EQ(signed_in.status, 200) << signed_in.body;
  const std::string set_cookie = signed_in.header("set-cookie");
  EXPECT_NE(set_cookie.find("HttpOnly"), std::string::npos);
  EXPECT_NE(set_cookie.find("SameSite=Strict"), std::string::npos);
  const HttpResponse by_cookie = call("GET", "/api/me", "Cookie: " + cookie_of(signed_in) + "\r\n");
  ASSERT_EQ(by_cookie.status, 200) << by_cookie.body;
  EXPECT_EQ(boost::json::parse(by_cookie.body), boost::json::parse(by_token.body));
}

// The memory store's reads are local: a bearer token is checked on the I/O
// thread, with nothing handed to the pool; a session check may write (its
// expiry slides), so a cookie sends the request to the pool.
TEST_F(AppTest, ATokenIsCheckedWithoutThePoolOnALocalStoreAndACookieOnIt) {
  ASSERT_TRUE(runtime_->store().reads_are_local());
  server_->stop();
  std::atomic<int> submitted = 0;
  server::ServerHooks hooks = app_->hooks();
  hooks.submit_blocking = [&, submit = hooks.submit_blocking](std::function<void()> job) {
    ++submitted;
    return submit(std::move(job));
  };
  start_server(std::move(hooks));
  ASSERT_EQ(call("GET", "/api/me", bearer(user_token_)).status, 200);
  EXPECT_EQ(call("GET", "/api/me", bearer(std::string(64, 'a'))).status, 401);
  EXPECT_EQ(call("GET", "/api/me").status, 401);
  EXPECT_EQ(call("GET", "/healthz").status, 200);
  EXPECT_EQ(submitted, 0);
  const HttpResponse signed_in = sign_in("bob", "battery staple horse");
  ASSERT_EQ(signed_in.status, 200) << signed_in.body;
  EXPECT_EQ(submitted, 1);
  const std::string cookie = "Cookie: " + cookie_of(signed_in) + "\r\n";
  EXPECT_EQ(call("GET", "/api/me", cookie).status, 200);
  EXPECT_EQ(call("GET", "/healthz", cookie).status, 200);
  EXPECT_EQ(submitted, 3);
}

TEST_F(AppTest, AdminRoutesAre403ForOtherUsers) {
  EXPECT_EQ(call("GET", "/api/users", bearer(user_token_)).status, 403);
  const HttpResponse users = call("GET", "/api/users", bearer(admin_token_));
  ASSERT_EQ(users.status, 200) << users.body;
  EXPECT_EQ(boost::json::parse(users.body).at("users").as_array().size(), 2u);
}

TEST_F(AppTest, ARemovedUsersTokenStopsWorkingAtOnce) {
  ASSERT_EQ(call("GET", "/api/me", bearer(user_token_)).status, 200);
  ASSERT_TRUE(accounts_->remove_user("bob").ok());
  EXPECT_EQ(call("GET", "/api/me", bearer(user_token_)).status, 401);
}

TEST_F(AppTest, ACookieWriteNeedsTheServersOwnOrigin) {
  const std::string cookie =
      "Cookie: " + cookie_of(sign_in("bob", "battery staple horse")) + "\r\n";
  EXPECT_EQ(call("DELETE", "/api/session", cookie).status, 403) << "no Origin";
  EXPECT_EQ(call("DELETE", "/api/session", cookie + "Origin: http://evil.example\r\n").status, 403);
  EXPECT_EQ(call("GET", "/api/me", cookie).status, 200) << "the refused writes changed nothing";
  EXPECT_EQ(call("DELETE", "/api/session", cookie + "Origin: " + origin_ + "\r\n").status, 204);
  EXPECT_EQ(call("GET", "/api/me", cookie).status, 401) << "signed out";
  // A sign-in from another site is refused too.
  EXPECT_EQ(call("POST", "/api/session",
                 "Content-Type: application/json\r\nOrigin: http://evil.example\r\n",
                 sign_in_body("bob", "battery staple horse"))
                .status,
            403);
}

// Behind a TLS proxy (an AWS load balancer, nginx) the server speaks plain
// HTTP and the browser's Origin is https: the proxy's X-Forwarded-Proto says
// so, and the cookie is then Secure. Without the header, https is another
// origin; with it, http is.
TEST_F(AppTest, BehindATlsProxyTheOriginIsHttpsAndTheCookieSecure) {
  const std::string host = origin_.substr(std::string("http://").size());
  const std::string https_origin = "https://" + host;
  const std::string json = "Content-Type: application/json\r\n";
  const std::string body = sign_in_body("bob", "battery staple horse");
  EXPECT_EQ(call("POST", "/api/session", json + "Origin: " + https_origin + "\r\n", body).status,
            403)
      << "https without the proxy's word";
  EXPECT_EQ(call("POST", "/api/session",
                 json + "Origin: " + origin_ + "\r\nX-Forwarded-Proto: https\r\n", body)
                .status,
            403)
      << "http where the proxy says the browser used https";
  const HttpResponse proxied =
      call("POST", "/api/session",
           json + "Origin: " + https_origin + "\r\nX-Forwarded-Proto: HTTPS\r\n", body);
  ASSERT_EQ(proxied.status, 200) << proxied.body;
  EXPECT_NE(proxied.header("set-cookie").find("; Secure"), std::string::npos)
      << proxied.header("set-cookie");
  const std::string cookie = "Cookie: " + cookie_of(proxied) + "\r\n";
  EXPECT_EQ(call("DELETE", "/api/session",
                 cookie + "Origin: http://evil.example\r\nX-Forwarded-Proto: https\r\n")
                .status,
            403);
  EXPECT_EQ(call("DELETE", "/api/session",
                 cookie + "Origin: " + https_origin + "\r\nX-Forwarded-Proto: https\r\n")
                .status,
            204);
  const HttpResponse direct = sign_in("bob", "battery staple horse");
  ASSERT_EQ(direct.status, 200) << direct.body;
  EXPECT_EQ(direct.header("set-cookie").find("Secure"), std::string::npos) << "plain HTTP";
}

TEST_F(AppTest, FailedSignInsAreLimitedWithRetryAfter) {
  const accounts::AccountsOptions defaults;
  for (int i = 0; i < defaults.failures_per_name_max; ++i) {
    ASSERT_EQ(sign_in("bob", "wrong password here").status, 401);
  }
  const HttpResponse limited = sign_in("bob", "battery staple horse");
  EXPECT_EQ(limited.status, 429) << limited.body;
  EXPECT_FALSE(limited.header("retry-after").empty());
  EXPECT_TRUE(limited.header("set-cookie").empty());
}

TEST_F(AppTest, BadBodiesAreRefusedAndChangeNothing) {
  const std::string json = "Content-Type: application/json\r\nOrigin: " + origin_ + "\r\n";
  const HttpResponse malformed = call("POST", "/api/session", json, "{\"name\": \"bob\", ");
  EXPECT_EQ(malformed.status, 400);
  EXPECT_TRUE(malformed.header("set-cookie").empty());
  EXPECT_EQ(call("POST", "/api/session", "Content-Type: text/plain\r\n",
                 sign_in_body("bob", "battery staple horse"))
                .status,
            415);
  EXPECT_EQ(call("POST", "/api/session", json, "{\"name\": 7}").status, 400);
  const std::string big(server::kJsonBodyBytesMax + 1, ' ');
  EXPECT_EQ(call("POST", "/api/session", json, big).status, 413);
}

TEST_F(AppTest, TheShellsFilesAreServedWithEtagsAndNothingOutsideThem) {
  const HttpResponse index = call("GET", "/");
  ASSERT_EQ(index.status, 200);
  EXPECT_EQ(index.header("content-type"), "text/html; charset=utf-8");
  const std::string etag = index.header("etag");
  ASSERT_FALSE(etag.empty());
  EXPECT_EQ(call("GET", "/", "If-None-Match: " + etag + "\r\n").status, 304);
  EXPECT_EQ(call("GET", "/signin").status, 200);
  for (const char* path : {"/../index.html", "/%2e%2e/index.html", "/js/../index.html",
                           "/%2E%2E%2Fetc%2Fpasswd", "/..%2f..%2fetc/passwd", "/index.html/"}) {
    const int status = call("GET", path).status;
    EXPECT_TRUE(status == 404 || status == 400) << path << " answered " << status;
  }
}

// promtool (Debian's prometheus package) accepts what /metrics says after
// traffic of every kind.
TEST_F(AppTest, MetricsPassPromtoolAfterTraffic) {
  call("GET", "/api/me");
  call("GET", "/api/me", bearer(user_token_));
  sign_in("bob", "battery staple horse");
  call("GET", "/nowhere");
  // The scrape itself is in flight while it renders. A client reads its
  // answer before the server's `answered` hook has run for it, so an earlier
  // request may still count in the first scrape: scrape until it has ended.
  HttpResponse metrics;
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  do {
    metrics = call("GET", "/metrics");
    ASSERT_EQ(metrics.status, 200);
  } while (metrics.body.find("\nleasehold_http_requests_in_flight 1\n") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline);
  EXPECT_NE(metrics.body.find("leasehold_http_requests_total{route=\"/api/me\",method=\"GET\","
                              "status=\"401\"} 1"),
            std::string::npos)
      << metrics.body;
  EXPECT_NE(metrics.body.find("leasehold_store_operation_seconds_count{backend=\"memory\""),
            std::string::npos);
  EXPECT_NE(metrics.body.find("\nleasehold_http_requests_in_flight 1\n"), std::string::npos)
      << metrics.body;
  const std::string file = ::testing::TempDir() + "app_metrics.prom";
  std::ofstream(file) << metrics.body;
  const std::string command = "promtool check metrics < " + file + " 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << "promtool refused:\n" << metrics.body;
}

// leasehold_http_requests_in_flight, with a route whose handler waits at a
// gate, and the server's `answered` hook wrapped so that the test learns when
// each request has ended (after the app has counted it).
class InFlightTest : public AppTest {
 protected:
  void SetUp() override {
    open_app();
    if (HasFatalFailure()) return;
    app_->router().add("GET", "/slow",
                       [this](server::Request&) {
                         gate_.pass();
                         return server::json_response(200, boost::json::object{{"slow", true}});
                       },
                       {.access = server::Access::kPublic, .blocking = true});
  }
  void TearDown() override {
    gate_.open();  // before stop(), which waits for the handlers
    AppTest::TearDown();
  }

  void start(server::ServerLimits limits = {}) {
    server::ServerHooks hooks = app_->hooks();
    hooks.answered = [this, app_answered = hooks.answered](const server::Request& request,
                                                           const server::Response& response,
                                                           std::chrono::nanoseconds elapsed) {
      app_answered(request, response, elapsed);
      std::lock_guard lock(ended_mu_);
      ended_.insert(response.status);
      ended_cv_.notify_all();
    };
    start_server(std::move(hooks), limits);
  }

  // True once `n` requests have ended, answered or dropped; false after 10 s.
  bool wait_ended(size_t n) {
    std::unique_lock lock(ended_mu_);
    return ended_cv_.wait_for(lock, 10s, [&] { return ended_.size() >= n; });
  }
  std::multiset<int> ended() {
    std::lock_guard lock(ended_mu_);
    return ended_;
  }

  // The gauge as the registry renders it; NaN if it is missing.
  double in_flight() const {
    const std::string text = registry_.render();
    constexpr std::string_view kLine = "\nleasehold_http_requests_in_flight ";
    const size_t at = text.find(kLine);
    if (at == std::string::npos) return std::nan("");
    return std::strtod(text.c_str() + at + kLine.size(), nullptr);
  }

  Gate gate_;
  std::mutex ended_mu_;
  std::condition_variable ended_cv_;
  std::multiset<int> ended_;  // the status of each, kStatusDropped if dropped
};

TEST_F(InFlightTest, ARequestCountsWhileItsHandlerRuns) {
  start();
  EXPECT_EQ(in_flight(), 0);
  Client slow(server_->port());
  ASSERT_TRUE(slow.send(server::testing::get_request("/slow")));
  ASSERT_TRUE(gate_.wait_for_waiting(1));
  EXPECT_EQ(in_flight(), 1);
  const HttpResponse metrics = call("GET", "/metrics");
  EXPECT_NE(metrics.body.find("\nleasehold_http_requests_in_flight 2\n"), std::string::npos)
      << "the slow request and the scrape itself:\n"
      << metrics.body;
  gate_.open();
  const auto answer = slow.read_response();
  ASSERT_TRUE(answer);
  EXPECT_EQ(answer->status, 200);
  ASSERT_TRUE(wait_ended(2));
  EXPECT_EQ(in_flight(), 0);
}

// Requests that end every way at once: answered by a handler (200), by the
// transport (404; 413 from the Content-Length; 503 for a handler over
// request_timeout), or dropped when the client leaves mid-body.
TEST_F(InFlightTest, ReturnsToZeroAfterABurstOfEveryKindOfEnd) {
  server::ServerLimits limits;
  limits.request_timeout = std::chrono::milliseconds(300);
  start(limits);
  const std::string host = "Host: 127.0.0.1\r\n";
  const std::string post = "POST /api/session HTTP/1.1\r\n" + host +
                           "Content-Type: application/json\r\nContent-Length: ";
  struct Kind {
    std::string request;
    int status;  // kStatusDropped: the client leaves without reading
  };
  const std::vector<Kind> kinds = {
      {"GET /healthz HTTP/1.1\r\n" + host + "\r\n", 200},
      {"GET /nowhere HTTP/1.1\r\n" + host + "\r\n", 404},
      {post + std::to_string(server::kJsonBodyBytesMax + 1) + "\r\n\r\n", 413},
      {post + "100\r\n\r\n{\"name\":", server::kStatusDropped},
      {"GET /slow HTTP/1.1\r\n" + host + "\r\n", 503},
  };
  constexpr int kRounds = 4;
  std::vector<std::thread> clients;
  std::atomic<int> wrong = 0;
  for (int round = 0; round < kRounds; ++round) {
    for (const Kind& kind : kinds) {
      clients.emplace_back([&, kind] {
        Client client(server_->port());
        if (!client.send(kind.request)) ++wrong;
        if (kind.status == server::kStatusDropped) return;  // leaves mid-body
        const auto response = client.read_response();
        if (!response || response->status != kind.status) ++wrong;
      });
    }
  }
  for (std::thread& client : clients) client.join();
  EXPECT_EQ(wrong, 0);
  const size_t total = kRounds * kinds.size();
  EXPECT_TRUE(wait_ended(total));
  EXPECT_EQ(in_flight(), 0);
  std::multiset<int> expected;
  for (int round = 0; round < kRounds; ++round) {
    for (const Kind& kind : kinds) expected.insert(kind.status);
  }
  gate_.open();
  EXPECT_EQ(ended(), expected);
}

}  // namespace
}  // namespace leasehold::app
