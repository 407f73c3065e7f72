// stop(): it stops accepting, closes idle connections at once, lets a
// request in flight finish (and answers it with Connection: close), closes
// what is still running at drain_timeout, and returns only once every
// handler has returned; it is safe from any thread, a handler's included.
#include <future>

#include "server_fixture.h"

namespace leasehold::server::testing {
namespace {

using StopTest = ServerFixture;

Handler waits_at(Gate& gate) {
  return [&gate](Request&) {
    gate.pass();
    return Response{.status = 200, .headers = {}, .body = "done"};
  };
}

bool refuses_connections(uint16_t port) {
  Client client(port);
  return !client.connected();
}

TEST_F(StopTest, DrainsARequestInFlightThenRefusesNewConnections) {
  router_.add("GET", "/slow", waits_at(gate_), kBlocking);
  router_.add("GET", "/ok", reply("ok"), kInline);
  start();
  const uint16_t server_port = port();
  Client busy(server_port);
  ASSERT_TRUE(busy.send(get_request("/slow")));
  ASSERT_TRUE(gate_.wait_for_waiting(1));
  Client idle(server_port);
  ASSERT_TRUE(idle.get("/ok"));

  auto stopped = std::async(std::launch::async, [this] { server_->stop(); });
  EXPECT_TRUE(idle.wait_closed(std::chrono::seconds(4)));  // before drain_timeout (5 s)
  EXPECT_TRUE(eventually([&] { return refuses_connections(server_port); }, 4s));
  EXPECT_EQ(stopped.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);

  gate_.open();
  auto response = busy.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 200);
  EXPECT_EQ(response->body, "done");
  EXPECT_EQ(response->header("connection"), "close");
  EXPECT_TRUE(busy.wait_closed());
  EXPECT_EQ(stopped.wait_for(10s), std::future_status::ready);
  server_->wait();  // returns at once
}

TEST_F(StopTest, WithNothingInFlightStopReturnsAtOnce) {
  router_.add("GET", "/ok", reply("ok"), kInline);
  ServerLimits limits = test_limits();
  limits.drain_timeout = std::chrono::seconds(60);
  start(limits);
  Client idle(port());
  ASSERT_TRUE(idle.get("/ok"));
  auto stopped = std::async(std::launch::async, [this] { server_->stop(); });
  // Far sooner than drain_timeout: nothing was left to drain.
  EXPECT_EQ(stopped.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(idle.wait_closed());
}

TEST_F(StopTest, PastDrainTimeoutTheConnectionClosesAndStopWaitsForTheHandler) {
  std::atomic<bool> returned = false;
  router_.add(
      "GET", "/stuck",
      [&](Request&) {
        gate_.pass();
        returned = true;
        return Response{};
      },
      kBlocking);
  ServerLimits limits = test_limits();
  limits.drain_timeout = std::chrono::milliseconds(200);
  start(limits);
  Client busy(port());
  ASSERT_TRUE(busy.send(get_request("/stuck")));
  ASSERT_TRUE(gate_.wait_for_waiting(1));
  auto stopped = std::async(std::launch::async, [this] { server_->stop(); });
  EXPECT_TRUE(busy.wait_closed());  // at drain_timeout, without an answer
  EXPECT_EQ(busy.received(), "");
  // The handler still runs, and may use what the server's owner destroys
  // after stop(): stop() waits for it.
  EXPECT_EQ(stopped.wait_for(std::chrono::milliseconds(0)), std::future_status::timeout);
  // The request ended when its connection closed, though its handler runs on.
  EXPECT_TRUE(wait_answered(1));
  const std::vector<Answered> ended = answered();
  gate_.open();
  EXPECT_EQ(stopped.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(returned);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_EQ(ended[0].status, kStatusDropped);
  EXPECT_EQ(ended[0].route, "/stuck");
  EXPECT_EQ(started(), std::vector<std::string>{ended[0].request_id});
  EXPECT_EQ(answered().size(), 1u) << "the handler's late result ended nothing more";
}

TEST_F(StopTest, AHandlerMayStopTheServerAndWaitReturnsElsewhere) {
  router_.add(
      "POST", "/shutdown",
      [this](Request&) {
        server_->stop();  // on an I/O thread: begins the stop only
        return Response{.status = 202, .headers = {}, .body = {}};
      },
      kInline);
  start();
  Client client(port());
  ASSERT_TRUE(client.send("POST /shutdown HTTP/1.1\r\nHost: x\r\n\r\n"));
  auto response = client.read_response();
  ASSERT_TRUE(response);
  EXPECT_EQ(response->status, 202);
  EXPECT_EQ(response->header("connection"), "close");
  auto waited = std::async(std::launch::async, [this] { server_->wait(); });
  EXPECT_EQ(waited.wait_for(10s), std::future_status::ready);
}

TEST_F(StopTest, StopFromManyThreadsAtOnce) {
  router_.add("GET", "/ok", reply("ok"), kInline);
  start();
  Client client(port());
  ASSERT_TRUE(client.get("/ok"));
  std::vector<std::future<void>> stops;
  for (int i = 0; i < 4; ++i) {
    stops.push_back(std::async(std::launch::async, [this] { server_->stop(); }));
  }
  auto waited = std::async(std::launch::async, [this] { server_->wait(); });
  for (auto& stop : stops) EXPECT_EQ(stop.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(waited.wait_for(10s), std::future_status::ready);
  EXPECT_TRUE(client.wait_closed());
}

}  // namespace
}  // namespace leasehold::server::testing
