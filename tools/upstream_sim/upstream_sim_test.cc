// Tests for the upstream simulator: its targets and messages, and a stream
// read through the WebSocket client.
#include "tools/upstream_sim/upstream_sim.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <condition_variable>
#include <mutex>
#include <vector>

#include "net/websocket.h"

namespace leasehold::tools {
namespace {

using namespace std::chrono_literals;

TEST(UpstreamSimTest, ParsesTargets) {
  auto r = parse_sim_target("/s/conn-1.a_B");
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(r->conn, "conn-1.a_B");
  EXPECT_EQ(r->from, 1);
  r = parse_sim_target("/s/x?token=t&from=42");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->from, 42);
  EXPECT_EQ(parse_sim_target("/").status().code(), Code::kNotFound);
  EXPECT_EQ(parse_sim_target("/x/a").status().code(), Code::kNotFound);
  for (const char* bad : {"/s/", "/s/a b", "/s/a/b", "/s/\"", "/s/a?from=0", "/s/a?from=-1",
                          "/s/a?from=1x", "/s/a?from="}) {
    EXPECT_EQ(parse_sim_target(bad).status().code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_EQ(
      parse_sim_target("/s/" + std::string(kUpstreamSimConnBytesMax + 1, 'a')).status().code(),
      Code::kInvalidArgument);
}

TEST(UpstreamSimTest, MessagesAreJsonWithTheirFields) {
  std::string out;
  append_sim_message(out, "c1", 7, 1'700'000'000'123);
  const boost::json::object o = boost::json::parse(out).as_object();
  EXPECT_EQ(o.at("seq").as_int64(), 7);
  EXPECT_EQ(o.at("conn").as_string(), "c1");
  EXPECT_EQ(o.at("sent_at_ms").as_int64(), 1'700'000'000'123);
  EXPECT_EQ(o.at("data").as_string().size(), 8u);
  std::string next;
  append_sim_message(next, "c1", 8, 1'700'000'000'123);
  EXPECT_NE(boost::json::parse(next).at("data"), o.at("data"));
}

TEST(UpstreamSimTest, ServesSequencedStreamsFromTheAskedSeq) {
  RealClock clock;
  UpstreamSimOptions options;
  options.rate_per_conn = 0;
  options.clock = &clock;
  auto sim = UpstreamSim::start(options);
  ASSERT_TRUE(sim.ok()) << sim.status().to_string();
  auto client = net::WsClient::open({});
  ASSERT_TRUE(client.ok());
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int64_t> seqs;
  std::optional<Status> closed;
  net::WsHandlers handlers;
  handlers.on_message = [&](std::string_view message, bool text) {
    EXPECT_TRUE(text);
    const boost::json::object o = boost::json::parse(message).as_object();
    EXPECT_EQ(o.at("conn").as_string(), "abc");
    std::lock_guard lock(mu);
    seqs.push_back(o.at("seq").as_int64());
    cv.notify_all();
  };
  handlers.on_closed = [&](const Status& why) {
    std::lock_guard lock(mu);
    closed = why;
    cv.notify_all();
  };
  const std::string base = "ws://127.0.0.1:" + std::to_string((*sim)->port());
  auto stream = (*client)->connect(base + "/s/abc?from=5", handlers);
  ASSERT_TRUE(stream.ok());
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return seqs.size() >= 1000; }));
  }
  (*stream)->close();
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return closed.has_value(); }));
    EXPECT_TRUE(closed->ok()) << closed->to_string();
    for (size_t i = 0; i < seqs.size(); ++i) ASSERT_EQ(seqs[i], static_cast<int64_t>(5 + i));
    closed.reset();
  }
  handlers.on_message = nullptr;
  for (const char* path : {"/x", "/s/a?from=0"}) {
    auto refused = (*client)->connect(base + path, handlers);
    ASSERT_TRUE(refused.ok());
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 10s, [&] { return closed.has_value(); }));
    EXPECT_NE(closed->message().find(path[1] == 'x' ? "HTTP 404" : "HTTP 400"), std::string::npos)
        << closed->message();
    closed.reset();
  }
  (*sim)->stop();
  EXPECT_EQ((*sim)->streams(), 0u);
}

}  // namespace
}  // namespace leasehold::tools
