// Every limit of ServerLimits and of a route, through real sockets: body
// bytes (refused before the body is read), header bytes, the header, request
// and idle timeouts, keep-alive requests, connections, and a thousand
// connections served at once.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server_fixture.h"

namespace leasehold::server::testing {
namespace {

using LimitsTest = ServerFixture;
using Clock = std::chrono::steady_clock;

const RouteOptions kSmallBody{.access = Access::kPublic, .body_bytes_max = 16, .blocking = false};

Handler echo_body_size(std::atomic<int>& calls) {
  return [&calls](Request& r) {
    ++calls;
    return Response{.status = 200, .headers = {}, .body = std::to_string(r.body.size())};
  };
}

TEST_F(LimitsTest, ABodyUpToTheRoutesLimitIsRead) {
  std::atomic<int> calls = 0;
  router_.add("POST", "/small", echo_body_size(calls), kSmallBody);
  start();
  Client client(port());
  ASSERT_TRUE(client.send("POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 16\r\n\r\n" +
                          std::string(16, 'a')));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "16");
  ASSERT_TRUE(
      client.send("POST /small HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "8\r\naaaaaaaa\r\n8\r\naaaaaaaa\r\n0\r\n\r\n"));
  response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->body, "16");
}

// The client sends only the header, announcing a gigabyte: the 413 comes
// back and the connection closes without the server waiting for a byte of
// the body.
TEST_F(LimitsTest, AContentLengthOverTheLimitIs413BeforeTheBodyIsRead) {
  std::atomic<int> calls = 0;
  router_.add("POST", "/small", echo_body_size(calls), kSmallBody);
  start();
  Client client(port());
  ASSERT_TRUE(client.send("POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n"));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 413);
  EXPECT_NE(response->body.find("payload_too_large"), std::string::npos);
  EXPECT_EQ(response->header("connection"), "close");
  EXPECT_TRUE(client.wait_closed());
  EXPECT_EQ(calls, 0);

  Client just_over(port());
  ASSERT_TRUE(just_over.send("POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 17\r\n\r\n"));
  response = just_over.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 413);
  EXPECT_TRUE(just_over.wait_closed());
}

TEST_F(LimitsTest, AChunkedBodyThatGrowsPastTheLimitIs413) {
  std::atomic<int> calls = 0;
  router_.add("POST", "/small", echo_body_size(calls), kSmallBody);
  start();
  Client client(port());
  ASSERT_TRUE(
      client.send("POST /small HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "10\r\naaaaaaaaaaaaaaaa\r\n1\r\na\r\n"));  // 17 bytes, and more to come
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 413);
  EXPECT_TRUE(client.wait_closed());
  EXPECT_EQ(calls, 0);
}

TEST_F(LimitsTest, ARouteThatTakesNoBodyRefusesOne) {
  std::atomic<int> calls = 0;
  router_.add("DELETE", "/thing", echo_body_size(calls), kInline);
  start();
  Client client(port());
  ASSERT_TRUE(client.send("DELETE /thing HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n"));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  ASSERT_TRUE(client.send("DELETE /thing HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\n"));
  response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 413);
  EXPECT_TRUE(client.wait_closed());
  EXPECT_EQ(calls, 1);
}

TEST_F(LimitsTest, AHeaderOverHeaderBytesMaxIs431AndCloses) {
  router_.add("GET", "/ok", reply("ok"), kInline);
  ServerLimits limits = test_limits();
  limits.header_bytes_max = 1024;
  start(limits);
  Client client(port());
  auto response = client.get("/ok", "X-Pad: " + std::string(900, 'a') + "\r\n");
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  ASSERT_TRUE(client.send(get_request("/ok", "X-Pad: " + std::string(1100, 'a') + "\r\n")));
  response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 431);
  EXPECT_NE(response->body.find("header_too_large"), std::string::npos);
  EXPECT_TRUE(client.wait_closed());
}

// A client that sends its header a byte every 20 ms is cut off once
// header_timeout has passed since the first byte, though it never pauses as
// long as that.
TEST_F(LimitsTest, AClientTricklingItsHeaderIsCutOffAtHeaderTimeout) {
  router_.add("GET", "/ok", reply("ok"), kInline);
  ServerLimits limits = test_limits();
  limits.header_timeout = std::chrono::milliseconds(300);
  start(limits);
  Client client(port());
  const std::string header = get_request("/ok", "X-Pad: " + std::string(1000, 'a') + "\r\n");
  const auto first_byte = Clock::now();
  bool closed = false;
  for (char c : header) {
    if (!client.send(std::string_view(&c, 1))) {
      closed = true;
      break;
    }
    // The pause between bytes doubles as the wait for the server to close.
    if (client.wait_closed(std::chrono::milliseconds(20))) {
      closed = true;
      break;
    }
  }
  const auto elapsed = Clock::now() - first_byte;
  EXPECT_TRUE(closed);
  EXPECT_GE(elapsed, std::chrono::milliseconds(300));
  EXPECT_LT(elapsed, std::chrono::seconds(5));  // well under idle_timeout, and the full trickle
  EXPECT_EQ(client.received(), "");             // cut off without an answer
}

TEST_F(LimitsTest, AConnectionThatSendsNothingIsClosedAtHeaderTimeout) {
  ServerLimits limits = test_limits();
  limits.header_timeout = std::chrono::milliseconds(200);
  start(limits);
  Client client(port());
  const auto start = Clock::now();
  EXPECT_TRUE(client.wait_closed());
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(150));
}

TEST_F(LimitsTest, AnIdleKeepAliveConnectionIsClosedAtIdleTimeout) {
  router_.add("GET", "/ok", reply("ok"), kInline);
  ServerLimits limits = test_limits();
  limits.idle_timeout = std::chrono::milliseconds(300);
  start(limits);
  Client client(port());
  ASSERT_TRUE(client.get("/ok"));
  const auto answered_at = Clock::now();
  EXPECT_TRUE(client.wait_closed());
  const auto idle = Clock::now() - answered_at;
  EXPECT_GE(idle, std::chrono::milliseconds(250));
  EXPECT_LT(idle, std::chrono::seconds(5));  // header_timeout is 5 s: it was idle_timeout
}

TEST_F(LimitsTest, AHandlerOverRequestTimeoutGets503AndTheConnectionCloses) {
  std::atomic<int> returned = 0;
  router_.add(
      "GET", "/slow",
      [&](Request&) {
        gate_.pass();
        ++returned;
        return Response{.status = 200, .headers = {}, .body = "late"};
      },
      kBlocking);
  ServerLimits limits = test_limits();
  limits.request_timeout = std::chrono::milliseconds(200);
  start(limits);
  Client client(port());
  ASSERT_TRUE(client.send(get_request("/slow")));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 503);
  EXPECT_TRUE(client.wait_closed());
  gate_.open();
  ASSERT_TRUE(eventually([&] { return returned == 1; }, kWaitMax));
  // The handler's late result is dropped: the request was answered once.
  Client next(port());
  ASSERT_TRUE(next.send("GET /missing HTTP/1.1\r\n\r\n"));
  ASSERT_TRUE(next.read_response());
  ASSERT_TRUE(wait_answered(2));
  const auto all = answered();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].status, 503);
  EXPECT_EQ(all[1].status, 404);
}

// While a handler runs on the blocking pool, only request_timeout bounds the
// request: the header and idle timeouts that bounded the reads before it
// (of a connection's first request, of one on a kept-alive connection) do
// not close the connection under it.
TEST_F(LimitsTest, AHandlerOnThePoolMayOutlastTheHeaderAndIdleTimeouts) {
  router_.add("GET", "/ok", reply("ok"), kInline);
  router_.add(
      "GET", "/slow",
      [&](Request&) {
        gate_.pass();
        return Response{.status = 200, .headers = {}, .body = "late"};
      },
      kBlocking);
  ServerLimits limits = test_limits();
  limits.header_timeout = std::chrono::milliseconds(200);
  limits.idle_timeout = std::chrono::milliseconds(200);
  limits.request_timeout = std::chrono::seconds(10);
  start(limits);
  Client first(port());
  ASSERT_TRUE(first.send(get_request("/slow")));
  Client kept(port());
  ASSERT_TRUE(kept.get("/ok"));  // its next request is read under idle_timeout
  ASSERT_TRUE(kept.send(get_request("/slow")));
  ASSERT_TRUE(gate_.wait_for_waiting(2));
  // Past both timeouts, twice over, both connections are still open.
  EXPECT_TRUE(first.open_after(std::chrono::milliseconds(500)));
  EXPECT_TRUE(kept.open_after(std::chrono::milliseconds(10)));
  gate_.open();
  for (Client* client : {&first, &kept}) {
    const auto response = client->read_response();
    ASSERT_TRUE(response);
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->body, "late");
    // Then the connection is idle again, and idle_timeout closes it.
    EXPECT_TRUE(client->wait_closed());
  }
}

TEST_F(LimitsTest, TheLastKeepAliveRequestSaysConnectionClose) {
  router_.add("GET", "/ok", reply("ok"), kInline);
  ServerLimits limits = test_limits();
  limits.keep_alive_requests_max = 3;
  start(limits);
  Client client(port());
  for (int i = 1; i <= 3; ++i) {
    auto response = client.get("/ok");
    ASSERT_TRUE(response) << i;
    EXPECT_EQ(response->status, 200);
    EXPECT_EQ(response->header("connection"), i < 3 ? "" : "close") << i;
  }
  EXPECT_TRUE(client.wait_closed());
}

TEST_F(LimitsTest, AConnectionOverConnectionsMaxIsClosedAtOnce) {
  router_.add("GET", "/ok", reply("ok"), kInline);
  ServerLimits limits = test_limits();
  limits.connections_max = 4;
  start(limits);
  std::vector<Client> open;
  for (int i = 0; i < 4; ++i) {
    open.emplace_back(port());
    ASSERT_TRUE(open.back().get("/ok"));  // accepted and counted
  }
  Client over(port());
  ASSERT_TRUE(over.connected());  // the kernel accepts; the server closes
  over.send(get_request("/ok"));
  EXPECT_TRUE(over.wait_closed());
  EXPECT_EQ(over.received(), "");
  // Once one closes, a new connection is served.
  open.pop_back();
  EXPECT_TRUE(eventually(
      [&] {
        Client again(port());
        return again.get("/ok").has_value();
      },
      kWaitMax));
  for (Client& client : open) EXPECT_TRUE(client.get("/ok"));
}

TEST_F(LimitsTest, AThousandKeepAliveConnectionsAreAllServed) {
  constexpr int kConnections = 1'000;
  ASSERT_GE(raise_open_files_limit(), 2u * kConnections + 100);
  router_.add("GET", "/inline", reply("i"), kInline);
  router_.add("GET", "/blocking", reply("b"), kBlocking);
  start();
  std::vector<Client> clients;
  clients.reserve(kConnections);
  for (int i = 0; i < kConnections; ++i) {
    clients.emplace_back(port());
    ASSERT_TRUE(clients.back().connected()) << i;
  }
  // Two rounds: every connection has a request in flight at once, then each
  // is reused.
  for (const char* target : {"/inline", "/blocking"}) {
    for (Client& client : clients) ASSERT_TRUE(client.send(get_request(target)));
    int served = 0;
    for (Client& client : clients) {
      auto response = client.read_response();
      if (response && response->status == 200) ++served;
    }
    EXPECT_EQ(served, kConnections) << target;
  }
}

}  // namespace
}  // namespace leasehold::server::testing
