// The server through real sockets: routing (404, 405 with Allow, parameters,
// HEAD), the headers every response carries, percent-decoding, malformed
// requests, where handlers run, the hooks, handler exceptions and a refusing
// blocking pool.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include "server/errors.h"
#include "server_fixture.h"

namespace leasehold::server::testing {
namespace {

using ServerTest = ServerFixture;

// Every response's security headers, request ID and cache policy.
void expect_standard_headers(const HttpResponse& response) {
  const std::string id = response.header("x-request-id");
  EXPECT_TRUE(id.size() == 16 && id.find_first_not_of("0123456789abcdef") == std::string::npos)
      << id;
  EXPECT_EQ(response.header("content-security-policy"),
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            "media-src 'self' https:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
            "form-action 'self'");
  EXPECT_EQ(response.header("x-content-type-options"), "nosniff");
  EXPECT_EQ(response.header("referrer-policy"), "same-origin");
  EXPECT_EQ(response.header("x-frame-options"), "DENY");
  EXPECT_TRUE(response.has_header("content-length"));
  EXPECT_FALSE(response.has_header("strict-transport-security"));  // not over TLS
}

// The "code" of an error body.
std::string error_code_of(const HttpResponse& response) {
  constexpr std::string_view kPrefix = R"({"error":{"code":")";
  if (!response.body.starts_with(kPrefix)) return "";
  const size_t end = response.body.find('"', kPrefix.size());
  return response.body.substr(kPrefix.size(), end - kPrefix.size());
}

TEST_F(ServerTest, RoutesByPathAndMethodWithParameters) {
  router_.add("GET", "/hello", reply("hello"), kInline);
  router_.add(
      "GET", "/api/movies/{id}/frames/{frame}",
      [](Request& r) {
        return Response{
            .status = 200,
            .headers = {},
            .body = r.params.at("id") + "," + r.params.at("frame") + "," + r.route + "," + r.query};
      },
      kInline);
  start();
  Client client(port());
  auto response = client.get("/hello");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "hello");
  EXPECT_EQ(response->header("content-type"), "text/plain");
  response = client.get("/api/movies/7/frames/12?x=%20y");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body, "7,12,/api/movies/{id}/frames/{frame},x=%20y");
  EXPECT_EQ(response->header("content-type"), "application/json");  // the default
}

TEST_F(ServerTest, AnUnknownPathIs404AndAnotherMethod405WithAllow) {
  router_.add("GET", "/api/movies/{id}", reply("get"), kInline);
  router_.add("DELETE", "/api/movies/{id}", reply("delete"), kInline);
  start();
  Client client(port());
  auto response = client.get("/api/films/7");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 404);
  EXPECT_EQ(error_code_of(*response), "not_found");
  EXPECT_EQ(response->header("content-type"), "application/json");
  ASSERT_TRUE(client.send("PUT /api/movies/7 HTTP/1.1\r\nHost: x\r\n\r\n"));
  response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 405);
  EXPECT_EQ(response->header("allow"), "DELETE, GET, HEAD");
  EXPECT_EQ(error_code_of(*response), "method_not_allowed");
  // Neither closed the connection: nothing was left unread.
  response = client.get("/api/movies/7");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body, "get");
}

TEST_F(ServerTest, HeadIsAnsweredByTheGetRouteWithoutTheBody) {
  router_.add("GET", "/page", reply("0123456789"), kInline);
  start();
  Client client(port());
  ASSERT_TRUE(client.send("HEAD /page HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto response = client.read_response(10s, /*head=*/true);
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->header("content-length"), "10");
  // The next response follows at once: no body was sent for the HEAD.
  response = client.get("/page");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body, "0123456789");
}

TEST_F(ServerTest, EveryResponseCarriesTheSecurityHeadersErrorsToo) {
  router_.add("GET", "/ok", reply("ok"), kInline);
  router_.add(
      "GET", "/throws", [](Request&) -> Response { throw std::runtime_error("x"); }, kInline);
  router_.add("GET", "/blocking", reply("b"), kBlocking);
  router_.add("POST", "/small", reply("s"),
              {.access = Access::kPublic, .body_bytes_max = 4, .blocking = false});
  ServerLimits limits = test_limits();
  limits.header_bytes_max = 1024;
  start(limits);
  const std::string requests[] = {
      get_request("/ok"),
      get_request("/missing"),
      "DELETE /ok HTTP/1.1\r\nHost: x\r\n\r\n",
      get_request("/throws"),
      "POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n",
      get_request("/ok", "X-Pad: " + std::string(2000, 'a') + "\r\n"),
      "NOT HTTP\r\n\r\n",
      get_request("/a%00b"),
  };
  std::set<int> statuses;
  for (const std::string& request : requests) {
    Client client(port());
    ASSERT_TRUE(client.send(request));
    auto response = client.read_response();
    ASSERT_TRUE(response) << request.substr(0, 40);
    SCOPED_TRACE(response->status);
    expect_standard_headers(*response);
    EXPECT_EQ(response->header("cache-control"), "no-store");
    statuses.insert(response->status);
  }
  refuse_blocking_ = true;
  Client client(port());
  auto refused = client.get("/blocking");
  ASSERT_TRUE(refused);
  expect_standard_headers(*refused);
  statuses.insert(refused->status);
  EXPECT_EQ(statuses, (std::set<int>{200, 400, 404, 405, 413, 431, 500, 503}));
}

TEST_F(ServerTest, AHandlersCacheControlIsKeptAndItsFramingHeadersAreNot) {
  router_.add(
      "GET", "/cached",
      [](Request&) {
        Response response{.status = 200, .headers = {}, .body = "abc"};
        response.set_header("Cache-Control", "max-age=60");
        response.set_header("Content-Length", "999");
        response.set_header("Connection", "close");
        return response;
      },
      kInline);
  start();
  Client client(port());
  auto response = client.get("/cached");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->header("cache-control"), "max-age=60");
  EXPECT_EQ(response->header("content-length"), "3");
  EXPECT_EQ(response->header("connection"), "");
  EXPECT_TRUE(client.get("/cached"));  // still open
}

TEST_F(ServerTest, RequestIdsAreUniqueAndReachTheHandlerAndTheHook) {
  std::mutex mu;
  std::vector<std::string> seen;
  router_.add(
      "GET", "/id",
      [&](Request& r) {
        std::lock_guard lock(mu);
        seen.push_back(r.request_id);
        return Response{.status = 200, .headers = {}, .body = r.request_id};
      },
      kInline);
  start();
  std::set<std::string> ids;
  for (int c = 0; c < 4; ++c) {
    Client client(port());
    for (int i = 0; i < 50; ++i) {
      auto response = client.get("/id");
      ASSERT_TRUE(response);
      EXPECT_EQ(response->body, response->header("x-request-id"));
      ids.insert(response->body);
    }
  }
  EXPECT_EQ(ids.size(), 200u);
  ASSERT_TRUE(wait_answered(200));
  for (const Answered& a : answered()) EXPECT_TRUE(ids.contains(a.request_id));
}

TEST_F(ServerTest, ThePathReachesTheHandlerPercentDecodedOnce) {
  router_.add(
      "GET", "/files/{rest...}",
      [](Request& r) {
        return Response{.status = 200, .headers = {}, .body = r.path + "|" + r.params.at("rest")};
      },
      kInline);
  start();
  Client client(port());
  struct Case {
    const char* target;
    const char* body;
  };
  for (const Case& c :
       {Case{"/files/a%20b.txt", "/files/a b.txt|a b.txt"},
        Case{"/files/%2e%2e/%2e%2e/etc/passwd", "/files/../../etc/passwd|../../etc/passwd"},
        Case{"/files/..%2f..%2Fsecret", "/files/../../secret|../../secret"},
        Case{"/files/%252e%252e/x", "/files/%2e%2e/x|%2e%2e/x"},
        Case{"/files/caf%C3%A9", "/files/caf\xc3\xa9|caf\xc3\xa9"}}) {
    auto response = client.get(c.target);
    ASSERT_TRUE(response) << c.target;
    EXPECT_EQ(response->status, 200) << c.target;
    EXPECT_EQ(response->body, c.body) << c.target;
  }
  // An encoded slash is a slash once decoded: "/files%2fx" is "/files/x".
  auto response = client.get("/files%2fx");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body, "/files/x|x");
}

TEST_F(ServerTest, APathThatDoesNotDecodeToAPathIs400AndNoHandlerRuns) {
  std::atomic<int> calls = 0;
  router_.add(
      "GET", "/{rest...}",
      [&](Request&) {
        ++calls;
        return Response{};
      },
      kInline);
  start();
  for (const char* target :
       {"/a%00b", "/a%zz", "/a%2", "/a%0d%0aX-Injected:%201", "*", "http://example.com/a"}) {
    Client client(port());
    ASSERT_TRUE(client.send(std::string("GET ") + target + " HTTP/1.1\r\nHost: x\r\n\r\n"));
    auto response = client.read_response();
    ASSERT_TRUE(response) << target;
    EXPECT_EQ(response->status, 400) << target;
    EXPECT_EQ(error_code_of(*response), "bad_request");
    EXPECT_FALSE(response->has_header("x-injected"));
  }
  EXPECT_EQ(calls, 0);
}

TEST_F(ServerTest, MalformedRequestsAre400AndCloseTheConnection) {
  router_.add("GET", "/ok", reply("ok"), kInline);
  router_.add("POST", "/ok", reply("ok"),
              {.access = Access::kPublic, .body_bytes_max = 100, .blocking = false});
  start();
  for (const char* request : {
           "GARBAGE\r\n\r\n",
           "GET /ok\r\n\r\n",
           "GET /ok HTTP/9\r\n\r\n",
           "GET /ok HTTP/1.1\r\nNo colon here\r\n\r\n",
           "GET /ok HTTP/1.1\r\nBad Name: x\r\n\r\n",
           "POST /ok HTTP/1.1\r\nContent-Length: abc\r\n\r\n",
           "POST /ok HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc",
           "POST /ok HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
       }) {
    Client client(port());
    ASSERT_TRUE(client.send(request));
    auto response = client.read_response();
    ASSERT_TRUE(response) << request;
    EXPECT_EQ(response->status, 400) << request;
    EXPECT_EQ(error_code_of(*response), "bad_request") << request;
    EXPECT_EQ(response->header("connection"), "close") << request;
    EXPECT_TRUE(client.wait_closed()) << request;
  }
}

TEST_F(ServerTest, PipelinedRequestsAreAnsweredInOrder) {
  router_.add("GET", "/a", reply("a"), kInline);
  router_.add("GET", "/b", reply("b"), kBlocking);
  start();
  Client client(port());
  ASSERT_TRUE(client.send(get_request("/b") + get_request("/a") + get_request("/b")));
  for (const char* body : {"b", "a", "b"}) {
    auto response = client.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->body, body);
  }
}

TEST_F(ServerTest, ExpectContinueGetsA100BeforeTheBodyIsSent) {
  router_.add("POST", "/echo",
              [](Request& r) { return Response{.status = 200, .headers = {}, .body = r.body}; },
              {.access = Access::kPublic, .body_bytes_max = 100, .blocking = false});
  start();
  Client client(port());
  ASSERT_TRUE(client.send(
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
  auto interim = client.read_response();
  ASSERT_TRUE(interim);
  EXPECT_EQ(interim->status, 100);
  ASSERT_TRUE(client.send("hello"));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body, "hello");
}

TEST_F(ServerTest, PublicNonBlockingRoutesRunInlineAndTheOthersOnThePool) {
  auto where = [this](Request&) {
    const bool pool = on_pool_thread(std::this_thread::get_id());
    return Response{.status = 200, .headers = {}, .body = pool ? "pool" : "inline"};
  };
  router_.add("GET", "/inline", where, kInline);
  router_.add("GET", "/blocking", where, kBlocking);
  router_.add("GET", "/user", where,
              {.access = Access::kUser, .body_bytes_max = 0, .blocking = false});
  start();
  Client client(port());
  for (auto [target, body] : {std::pair{"/inline", "inline"}, std::pair{"/blocking", "pool"},
                              std::pair{"/user", "pool"}}) {
    auto response = client.get(target);
    ASSERT_TRUE(response);
    EXPECT_EQ(response->body, body) << target;
  }
}

// Each I/O thread has an event loop of its own: a connection's inline
// handlers all run on the thread it was given, and connections are given to
// the threads in turn. A response from the pool is written on that thread
// too, so the next inline request of the connection runs there still.
TEST_F(ServerTest, AConnectionStaysOnOneIOThreadAndConnectionsTakeTheThreadsInTurn) {
  std::mutex mu;
  std::map<std::thread::id, int> ids;  // thread -> a small number for the body
  auto where = [&](Request&) {
    std::lock_guard lock(mu);
    const auto [it, added] = ids.emplace(std::this_thread::get_id(), static_cast<int>(ids.size()));
    return Response{.status = 200, .headers = {}, .body = std::to_string(it->second)};
  };
  router_.add("GET", "/where", where, kInline);
  router_.add("GET", "/pool", reply("pool"), kBlocking);
  start();  // two I/O threads
  std::vector<std::unique_ptr<Client>> clients;
  std::vector<std::string> thread_of;
  for (int c = 0; c < 4; ++c) {
    clients.push_back(std::make_unique<Client>(port()));
    auto first = clients.back()->get("/where");
    ASSERT_TRUE(first);
    thread_of.push_back(first->body);
  }
  for (int round = 0; round < 5; ++round) {
    for (size_t c = 0; c < clients.size(); ++c) {
      ASSERT_TRUE(clients[c]->get("/pool"));
      auto response = clients[c]->get("/where");
      ASSERT_TRUE(response);
      EXPECT_EQ(response->body, thread_of[c]) << "connection " << c << ", round " << round;
    }
  }
  EXPECT_EQ(ids.size(), 2u) << "both I/O threads served, and no pool thread ran an inline route";
  EXPECT_NE(thread_of[0], thread_of[1]);
  EXPECT_EQ(thread_of[0], thread_of[2]);
  EXPECT_EQ(thread_of[1], thread_of[3]);
}

// With an admit_blocks hook, the request decides: admission and handler run
// on the I/O thread unless admission may block or the route does.
TEST_F(ServerTest, AdmitBlocksSendsARequestToThePoolOrKeepsItInline) {
  auto where = [this](Request& request) {
    const bool pool = on_pool_thread(std::this_thread::get_id());
    const std::string admitted = request.caller ? request.caller->name : "";
    return Response{.status = 200, .headers = {}, .body = admitted + (pool ? "pool" : "inline")};
  };
  router_.add("GET", "/user", where,
              {.access = Access::kUser, .body_bytes_max = 0, .blocking = false});
  router_.add("GET", "/public", where, kInline);
  router_.add("GET", "/blocking", where, kBlocking);
  admit_ = [this](Request& request, const Route&) -> std::optional<Response> {
    const bool pool = on_pool_thread(std::this_thread::get_id());
    request.caller = Caller{.name = pool ? "pool:" : "inline:", .display_name = "", .admin = false};
    return std::nullopt;
  };
  admit_blocks_ = [](const Request& request, const Route&) {
    return request.header("x-may-block").has_value();
  };
  start();
  Client client(port());
  constexpr std::string_view kMayBlock = "X-May-Block: 1\r\n";
  struct Case {
    std::string_view target, headers, body;
  };
  for (const Case& c :
       {Case{"/user", "", "inline:inline"}, Case{"/user", kMayBlock, "pool:pool"},
        Case{"/public", "", "inline:inline"}, Case{"/public", kMayBlock, "pool:pool"},
        Case{"/blocking", "", "pool:pool"}}) {
    auto response = client.get(c.target, c.headers);
    ASSERT_TRUE(response);
    EXPECT_EQ(response->body, c.body) << c.target << " " << c.headers;
  }
}

TEST_F(ServerTest, AdmitRunsBeforeTheHandlerAndMayAnswerInstead) {
  std::atomic<int> calls = 0;
  router_.add("GET", "/api/me", [&](Request& r) {
    ++calls;
    return Response{.status = 200, .headers = {}, .body = r.caller->name};
  });
  router_.add("GET", "/healthz", reply("ok"), kInline);
  admit_ = [](Request& request, const Route& route) -> std::optional<Response> {
    if (route.options.access == Access::kPublic) return std::nullopt;
    if (request.header("authorization") != "Bearer good") {
      return error_response(401, "sign in first");
    }
    request.caller = Caller{.name = "ada", .display_name = "Ada", .admin = false};
    return std::nullopt;
  };
  start();
  Client client(port());
  auto response = client.get("/api/me");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 401);
  EXPECT_EQ(error_code_of(*response), "unauthenticated");
  expect_standard_headers(*response);
  EXPECT_EQ(calls, 0);
  response = client.get("/api/me", "Authorization: Bearer good\r\n");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body, "ada");
  response = client.get("/healthz");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
}

TEST_F(ServerTest, AnsweredIsCalledOncePerRequestWithTheElapsedTime) {
  router_.add("GET", "/a", reply("a"), kInline);
  router_.add("GET", "/b/{id}", reply("b"), kBlocking);
  start();
  Client client(port());
  ASSERT_TRUE(client.get("/a"));
  ASSERT_TRUE(client.get("/b/7"));
  ASSERT_TRUE(client.get("/c"));
  ASSERT_TRUE(wait_answered(3));
  const auto all = answered();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].route, "/a");
  EXPECT_EQ(all[1].route, "/b/{id}");
  EXPECT_EQ(all[1].path, "/b/7");
  EXPECT_EQ(all[2].status, 404);
  EXPECT_EQ(all[2].route, "");
  for (const Answered& a : all) {
    EXPECT_GT(a.elapsed.count(), 0);
    EXPECT_LT(a.elapsed, std::chrono::seconds(10));
  }
}

// Every request whose first byte arrived is started once and ends in
// exactly one `answered`: the handler's answer, the transport's own (400,
// 404, 413, 431, a handler's exception, a handler over request_timeout), or,
// with kStatusDropped, a connection that closes first (the client leaves
// mid-header or mid-body, or header_timeout passes). A connection that sends
// nothing starts nothing.
TEST_F(ServerTest, EveryStartedRequestEndsInExactlyOneAnswered) {
  std::atomic<int> slow_returned = 0;
  router_.add("GET", "/ok", reply("ok"), kInline);
  router_.add("POST", "/small", reply("ok"),
              {.access = Access::kPublic, .body_bytes_max = 16, .blocking = false});
  router_.add(
      "GET", "/throws", [](Request&) -> Response { throw std::runtime_error("no"); }, kInline);
  router_.add(
      "GET", "/slow",
      [&](Request&) {
        gate_.pass();
        ++slow_returned;
        return Response{};
      },
      kBlocking);
  ServerLimits limits = test_limits();
  limits.header_bytes_max = 1024;
  limits.header_timeout = std::chrono::milliseconds(500);
  limits.request_timeout = std::chrono::milliseconds(500);
  start(limits);

  const std::vector<std::pair<std::string, int>> answers = {
      {get_request("/ok"), 200},
      {get_request("/missing"), 404},
      {"GARBAGE\r\n\r\n", 400},
      {"POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n", 413},
      {get_request("/ok", "X-Pad: " + std::string(1100, 'a') + "\r\n"), 431},
      {get_request("/throws"), 500},
      {get_request("/slow"), 503},
  };
  for (const auto& [request, status] : answers) {
    Client client(port());
    ASSERT_TRUE(client.send(request));
    auto response = client.read_response();
    ASSERT_TRUE(response) << request;
    EXPECT_EQ(response->status, status) << request;
  }
  for (const char* partial : {"GET /ok HTTP/1.1\r\nHo",
                              "POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\nabc"}) {
    Client client(port());
    ASSERT_TRUE(client.send(partial));  // and leaves
  }
  Client stalled(port());
  ASSERT_TRUE(stalled.send("GET /ok HTTP/1.1\r\n"));
  EXPECT_TRUE(stalled.wait_closed());  // at header_timeout
  { Client silent(port()); }

  const size_t expected = answers.size() + 3;
  ASSERT_TRUE(wait_answered(expected));
  gate_.open();
  ASSERT_TRUE(eventually([&] { return slow_returned == 1; }, kWaitMax));
  // The slow handler's late result ended nothing more: a request after it is
  // the only one answered since.
  Client next(port());
  ASSERT_TRUE(next.get("/ok"));
  ASSERT_TRUE(wait_answered(expected + 1));
  const std::vector<Answered> all = answered();
  ASSERT_EQ(all.size(), expected + 1);
  std::vector<std::string> started_ids = started();
  std::vector<std::string> answered_ids;
  std::multiset<int> statuses;
  for (const Answered& a : all) {
    answered_ids.push_back(a.request_id);
    statuses.insert(a.status);
  }
  std::ranges::sort(started_ids);
  std::ranges::sort(answered_ids);
  EXPECT_EQ(started_ids, answered_ids) << "each started request answered once";
  EXPECT_EQ(statuses, (std::multiset<int>{kStatusDropped, kStatusDropped, kStatusDropped, 200, 200,
                                          400, 404, 413, 431, 500, 503}));
}

TEST_F(ServerTest, AHandlerExceptionIs500WithoutItsText) {
  auto throws = [](Request&) -> Response { throw std::runtime_error("secret detail s3cr3t"); };
  router_.add("GET", "/throws", throws, kInline);
  router_.add("POST", "/throws", throws, kBlocking);
  router_.add(
      "GET", "/throws-int", [](Request&) -> Response { throw 42; }, kInline);
  start();
  Client client(port());
  for (const std::string& request :
       {get_request("/throws"), std::string("POST /throws HTTP/1.1\r\nHost: x\r\n\r\n"),
        get_request("/throws-int")}) {
    ASSERT_TRUE(client.send(request));
    auto response = client.read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 500);
    EXPECT_EQ(error_code_of(*response), "internal");
    EXPECT_EQ(response->body.find("s3cr3t"), std::string::npos);
    const std::string id = response->header("x-request-id");
    EXPECT_NE(response->body.find("internal error (request " + id + ")"), std::string::npos)
        << response->body;
    EXPECT_NE(logger_.find(id), "");  // the cause is in the log, under the ID
  }
  EXPECT_NE(logger_.find("s3cr3t"), "");
}

TEST_F(ServerTest, AMalformedResponseFromAHandlerIs500) {
  router_.add(
      "GET", "/inject",
      [](Request&) {
        Response response{.status = 200, .headers = {}, .body = "x"};
        response.set_header("X-Name", "a\r\nSet-Cookie: evil=1");
        return response;
      },
      kInline);
  router_.add(
      "GET", "/status", [](Request&) { return Response{.status = 42, .headers = {}, .body = {}}; },
      kInline);
  start();
  Client client(port());
  for (const char* target : {"/inject", "/status"}) {
    auto response = client.get(target);
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 500) << target;
    EXPECT_FALSE(response->has_header("set-cookie"));
  }
}

TEST_F(ServerTest, ABlockingPoolThatRefusesGets503WithRetryAfter) {
  std::atomic<int> calls = 0;
  router_.add(
      "GET", "/blocking",
      [&](Request&) {
        ++calls;
        return Response{};
      },
      kBlocking);
  start();
  refuse_blocking_ = true;
  Client client(port());
  auto response = client.get("/blocking");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 503);
  EXPECT_EQ(response->header("retry-after"), "1");
  EXPECT_EQ(error_code_of(*response), "unavailable");
  EXPECT_EQ(calls, 0);
  refuse_blocking_ = false;
  response = client.get("/blocking");  // the connection stays usable
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(calls, 1);
}

TEST_F(ServerTest, StartRefusesBadOptions) {
  ServerOptions options;
  options.port = 0;
  options.limits.connections_max = 0;
  auto server = Server::start(options, router_, hooks());
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), Code::kInvalidArgument);

  options = ServerOptions{};
  options.port = 0;
  options.limits.idle_timeout = std::chrono::milliseconds(0);
  EXPECT_EQ(Server::start(options, router_, hooks()).status().code(), Code::kInvalidArgument);

  options = ServerOptions{};
  options.port = 0;
  options.tls_cert_file = "/nonexistent/cert.pem";
  EXPECT_EQ(Server::start(options, router_, hooks()).status().code(), Code::kInvalidArgument);

  options = ServerOptions{};
  options.port = 0;
  ServerHooks no_pool = hooks();
  no_pool.submit_blocking = nullptr;
  EXPECT_EQ(Server::start(options, router_, no_pool).status().code(), Code::kInvalidArgument);
}

TEST_F(ServerTest, APortInUseIsUnavailable) {
  start();
  ServerOptions options;
  options.port = port();
  auto second = Server::start(options, router_, hooks());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), Code::kUnavailable);
  EXPECT_NE(second.status().message().find(std::to_string(port())), std::string::npos);
}

}  // namespace
}  // namespace leasehold::server::testing
