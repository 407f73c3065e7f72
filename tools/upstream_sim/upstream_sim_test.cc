// Tests for the upstream simulator: its targets and messages, and streams
// read through the WebSocket client, over ws:// and wss://.
#include "tools/upstream_sim/upstream_sim.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/json.hpp>
#include <climits>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "net/websocket.h"
#include "testing/eventually.h"
#include "testing/temp_dir.h"
#include "testing/test_pki.h"

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

// One stream read with net::WsClient: the seqs it got, and why it closed.
class SimStreamRecord {
 public:
  explicit SimStreamRecord(std::string conn) : conn_(std::move(conn)) {}

  net::WsHandlers handlers() {
    net::WsHandlers h;
    h.on_message = [this](std::string_view message, bool text) {
      EXPECT_TRUE(text);
      const boost::json::object o = boost::json::parse(message).as_object();
      EXPECT_EQ(o.at("conn").as_string(), conn_);
      std::lock_guard lock(mu_);
      if (seqs_.empty()) first_sent_at_ms_ = o.at("sent_at_ms").as_int64();
      seqs_.push_back(o.at("seq").as_int64());
      cv_.notify_all();
    };
    h.on_closed = [this](const Status& why) {
      std::lock_guard lock(mu_);
      closed_ = why;
      cv_.notify_all();
    };
    return h;
  }
  // At least `n` seqs within 10 s.
  bool wait_seqs(size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 10s, [&] { return seqs_.size() >= n; });
  }
  // Why the stream closed; kInternal if on_closed did not run within 10 s.
  Status wait_closed() {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, 10s, [&] { return closed_.has_value(); })) {
      return internal_error("on_closed did not run");
    }
    return *closed_;
  }
  std::vector<int64_t> seqs() {
    std::lock_guard lock(mu_);
    return seqs_;
  }
  int64_t first_sent_at_ms() {
    std::lock_guard lock(mu_);
    return first_sent_at_ms_;
  }

 private:
  const std::string conn_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int64_t> seqs_;
  int64_t first_sent_at_ms_ = 0;
  std::optional<Status> closed_;
};

void expect_seqs_from(const std::vector<int64_t>& seqs, int64_t from) {
  for (size_t i = 0; i < seqs.size(); ++i) ASSERT_EQ(seqs[i], from + static_cast<int64_t>(i));
}

// A ws:// simulator started with the test's options, and a client.
class UpstreamSimStreamsTest : public ::testing::Test {
 protected:
  void start(UpstreamSimOptions options) {
    options.clock = &clock_;
    auto sim = UpstreamSim::start(options);
    ASSERT_TRUE(sim.ok()) << sim.status().to_string();
    sim_ = std::move(*sim);
    auto client = net::WsClient::open({});
    ASSERT_TRUE(client.ok());
    client_ = std::move(*client);
    base_ = "ws://127.0.0.1:" + std::to_string(sim_->port());
  }

  RealClock clock_;
  std::unique_ptr<UpstreamSim> sim_;
  std::unique_ptr<net::WsClient> client_;
  std::string base_;
};

TEST_F(UpstreamSimStreamsTest, ServesSequencedStreamsFromTheAskedSeq) {
  UpstreamSimOptions options;
  options.rate_per_conn = 0;
  ASSERT_NO_FATAL_FAILURE(start(options));
  SimStreamRecord record("abc");
  auto stream = client_->connect(base_ + "/s/abc?from=5", record.handlers());
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE(record.wait_seqs(1000));
  (*stream)->close();
  const Status closed = record.wait_closed();
  EXPECT_TRUE(closed.ok()) << closed.to_string();
  expect_seqs_from(record.seqs(), 5);

  for (const char* path : {"/x", "/s/a?from=0"}) {
    SimStreamRecord refused("");
    ASSERT_TRUE(client_->connect(base_ + path, refused.handlers()).ok());
    const Status why = refused.wait_closed();
    EXPECT_NE(why.message().find(path[1] == 'x' ? "HTTP 404" : "HTTP 400"), std::string::npos)
        << why.message();
  }
  sim_->stop();
  EXPECT_EQ(sim_->streams(), 0u);
}

// Streams opened together send together, a period apart, unless their
// first messages have random phases: that 16 streams at 1/s had their
// first messages all within 200 ms of each other has a chance below 1e-9.
TEST_F(UpstreamSimStreamsTest, RandomPhaseSpreadsTheFirstMessagesOfStreamsOpenedTogether) {
  UpstreamSimOptions options;
  options.rate_per_conn = 1;
  options.random_phase = true;
  ASSERT_NO_FATAL_FAILURE(start(options));
  std::vector<std::unique_ptr<SimStreamRecord>> records;
  std::vector<std::shared_ptr<net::WsStream>> streams;
  for (int i = 0; i < 16; ++i) {
    const std::string conn = "p" + std::to_string(i);
    records.push_back(std::make_unique<SimStreamRecord>(conn));
    auto stream = client_->connect(base_ + "/s/" + conn + "?from=3", records.back()->handlers());
    ASSERT_TRUE(stream.ok());
    streams.push_back(*stream);
  }
  int64_t first = INT64_MAX, last = 0;
  for (auto& record : records) {
    ASSERT_TRUE(record->wait_seqs(2));
    first = std::min(first, record->first_sent_at_ms());
    last = std::max(last, record->first_sent_at_ms());
  }
  EXPECT_GE(last - first, 200) << "the first messages all went within " << last - first << " ms";
  for (auto& stream : streams) stream->close();
  for (auto& record : records) {
    EXPECT_TRUE(record->wait_closed().ok());
    expect_seqs_from(record->seqs(), 3);
  }
}

// A stream waiting out its random first delay is stopped like any other.
TEST_F(UpstreamSimStreamsTest, StopClosesAStreamStillWaitingForItsFirstMessage) {
  UpstreamSimOptions options;
  options.rate_per_conn = 0.001;  // the first message within 1,000 s
  options.random_phase = true;
  ASSERT_NO_FATAL_FAILURE(start(options));
  SimStreamRecord record("later");
  auto stream = client_->connect(base_ + "/s/later", record.handlers());
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE(testing::eventually([&] { return sim_->streams() == 1; }, 10s));
  sim_->stop();
  const Status why = record.wait_closed();
  EXPECT_EQ(why.code(), Code::kUnavailable) << why.to_string();
  EXPECT_NE(why.message().find("1001"), std::string::npos) << why.message();
  EXPECT_EQ(sim_->streams(), 0u);
}

class UpstreamSimTlsTest : public ::testing::Test {
 protected:
  void SetUp() override { files_ = testing::write_test_pki(testing::make_test_pki(), tmp_.path()); }

  Result<std::unique_ptr<UpstreamSim>> start_sim(const std::string& cert, const std::string& key) {
    UpstreamSimOptions options;
    options.rate_per_conn = 0;
    options.clock = &clock_;
    options.tls_cert = cert;
    options.tls_key = key;
    return UpstreamSim::start(options);
  }
  // A WebSocket client that trusts the test CA.
  Result<std::unique_ptr<net::WsClient>> tls_client() {
    net::WsClientOptions options;
    options.ca_file = files_.ca_file;
    return net::WsClient::open(options);
  }

  RealClock clock_;
  const testing::TempDir tmp_{"leasehold-sim-tls-"};
  testing::TestPkiFiles files_;
};

TEST_F(UpstreamSimTlsTest, ServesWssToAClientThatTrustsItsCa) {
  auto sim = start_sim(files_.cert_file, files_.key_file);
  ASSERT_TRUE(sim.ok()) << sim.status().to_string();
  auto client = tls_client();
  ASSERT_TRUE(client.ok()) << client.status().to_string();
  const std::string base = "wss://127.0.0.1:" + std::to_string((*sim)->port());
  SimStreamRecord record("tls");
  auto stream = (*client)->connect(base + "/s/tls", record.handlers());
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE(record.wait_seqs(100)) << record.wait_closed().to_string();
  EXPECT_EQ((*sim)->streams(), 1u);
  (*stream)->close();
  const Status closed = record.wait_closed();
  EXPECT_TRUE(closed.ok()) << closed.to_string();
  expect_seqs_from(record.seqs(), 1);

  // Refusals are unchanged, over TLS.
  SimStreamRecord refused("");
  ASSERT_TRUE((*client)->connect(base + "/elsewhere", refused.handlers()).ok());
  const Status why = refused.wait_closed();
  EXPECT_NE(why.message().find("HTTP 404"), std::string::npos) << why.message();
  (*sim)->stop();
  EXPECT_EQ((*sim)->streams(), 0u);
}

TEST_F(UpstreamSimTlsTest, StopClosesWssStreamsWithGoingAway) {
  auto sim = start_sim(files_.cert_file, files_.key_file);
  ASSERT_TRUE(sim.ok()) << sim.status().to_string();
  auto client = tls_client();
  ASSERT_TRUE(client.ok());
  SimStreamRecord record("going");
  auto stream = (*client)->connect("wss://127.0.0.1:" + std::to_string((*sim)->port()) + "/s/going",
                                   record.handlers());
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE(record.wait_seqs(3));
  (*sim)->stop();
  const Status why = record.wait_closed();
  EXPECT_EQ(why.code(), Code::kUnavailable);
  EXPECT_NE(why.message().find("1001"), std::string::npos) << why.message();
}

TEST_F(UpstreamSimTlsTest, APlainClientGetsNoStreamFromTheTlsPort) {
  auto sim = start_sim(files_.cert_file, files_.key_file);
  ASSERT_TRUE(sim.ok()) << sim.status().to_string();
  auto client = net::WsClient::open({});
  ASSERT_TRUE(client.ok());
  SimStreamRecord record("plain");
  ASSERT_TRUE((*client)
                  ->connect("ws://127.0.0.1:" + std::to_string((*sim)->port()) + "/s/plain",
                            record.handlers())
                  .ok());
  const Status why = record.wait_closed();
  EXPECT_EQ(why.code(), Code::kUnavailable) << why.to_string();
  EXPECT_TRUE(record.seqs().empty());
  EXPECT_EQ((*sim)->streams(), 0u);
}

TEST_F(UpstreamSimTlsTest, ABadCertificateOrKeyIsAnInvalidArgumentNamingTheFile) {
  const std::string garbage = tmp_.file("garbage.pem");
  std::ofstream(garbage) << "not-a-certificate-SECRET\n";
  // A key of another certificate: it loads, and does not match.
  std::filesystem::create_directory(tmp_.path() / "other");
  const std::string other_key =
      testing::write_test_pki(testing::make_test_pki(), tmp_.path() / "other").key_file;
  struct Case {
    std::string cert, key, named;
  };
  for (const Case& c :
       {Case{garbage, files_.key_file, garbage}, Case{files_.cert_file, garbage, garbage},
        Case{tmp_.file("missing.pem"), files_.key_file, "missing.pem"},
        Case{files_.cert_file, other_key, other_key}}) {
    const auto sim = start_sim(c.cert, c.key);
    ASSERT_FALSE(sim.ok()) << c.cert << " " << c.key;
    EXPECT_EQ(sim.status().code(), Code::kInvalidArgument) << sim.status().to_string();
    EXPECT_NE(sim.status().message().find(c.named), std::string::npos) << sim.status().message();
    EXPECT_EQ(sim.status().message().find("SECRET"), std::string::npos) << sim.status().message();
  }
  EXPECT_EQ(start_sim(files_.cert_file, "").status().code(), Code::kInvalidArgument);
  EXPECT_EQ(start_sim("", files_.key_file).status().code(), Code::kInvalidArgument);
}

}  // namespace
}  // namespace leasehold::tools
