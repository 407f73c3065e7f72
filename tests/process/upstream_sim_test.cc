// `leasehold upstream-sim` as a process: it refuses bad flags, prints where
// it listens, serves sequenced streams from the asked seq at roughly the
// asked rate (read with net/'s WebSocket client), refuses other paths with
// 404, and on SIGTERM stops and exits 0. With a certificate and its key it
// serves wss://, which a `leasehold worker` trusting the CA streams from.
#include <signal.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "net/websocket.h"
#include "process_util.h"
#include "testing/test_pki.h"

namespace leasehold::process_test {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

class UpstreamSimTest : public ProcessTest {
 protected:
  // Starts the simulator, with `more` flags, and returns its port, read from
  // its stdout line.
  std::unique_ptr<Process> start_sim(const std::string& rate, int& port,
                                     const std::vector<std::string>& more = {}) {
    std::vector<std::string> args = {"upstream-sim", "--listen", "127.0.0.1:0", "--rate-per-conn",
                                     rate};
    args.insert(args.end(), more.begin(), more.end());
    auto sim = start_lh(args);
    EXPECT_TRUE(eventually([&] { return sim->out_so_far().find('\n') != std::string::npos; }, 20s))
        << sim->err_so_far();
    const boost::json::object line = parse_object(lines_of(sim->out_so_far()).at(0));
    EXPECT_EQ(line.size(), 1u) << "exactly {\"listening\":...}, as the tools that start it read it";
    const std::string listening(line.at("listening").as_string());
    EXPECT_TRUE(listening.starts_with("127.0.0.1:")) << listening;
    port = std::stoi(listening.substr(listening.find(':') + 1));
    return sim;
  }

  static void stop(Process& sim) {
    ASSERT_EQ(::kill(sim.pid(), SIGTERM), 0);
    ASSERT_TRUE(sim.wait_for(10s));
    const RunResult r = sim.result();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (const std::string& line : lines_of(r.err)) parse_object(line);  // every line is JSON
    EXPECT_NE(r.err.find("\"msg\":\"stopped\""), std::string::npos) << r.err;
  }
};

// The seqs of one stream and when each arrived.
struct Collected {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int64_t> seqs;
  std::vector<SteadyClock::time_point> arrived;
  std::optional<Status> closed;

  net::WsHandlers handlers(const std::string& conn) {
    net::WsHandlers h;
    h.on_message = [this, conn](std::string_view message, bool text) {
      const boost::json::object o = parse_object(std::string(message));
      EXPECT_TRUE(text);
      EXPECT_EQ(o.at("conn").as_string(), conn);
      EXPECT_TRUE(o.at("sent_at_ms").is_int64());
      EXPECT_FALSE(o.at("data").as_string().empty());
      std::lock_guard lock(mu);
      seqs.push_back(o.at("seq").as_int64());
      arrived.push_back(SteadyClock::now());
      cv.notify_all();
    };
    h.on_closed = [this](const Status& why) {
      std::lock_guard lock(mu);
      closed = why;
      cv.notify_all();
    };
    return h;
  }
  bool wait_seqs(size_t n) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 20s, [&] { return seqs.size() >= n; });
  }
  Status wait_closed() {
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, 20s, [&] { return closed.has_value(); })) {
      return internal_error("on_closed did not run");
    }
    return *closed;
  }
};

TEST_F(UpstreamSimTest, BadFlagsAreRefused) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--listen", "nohost"},
                                               {"--listen", "example.com:80"},
                                               {"--rate-per-conn", "-1"},
                                               {"--rate-per-conn", "lots"},
                                               {"--rate-per-conn", "1e9"},
                                               {"--threads", "0"}}) {
    std::vector<std::string> argv = {"upstream-sim"};
    argv.insert(argv.end(), args.begin(), args.end());
    const RunResult r = lh(argv);
    EXPECT_EQ(r.exit_code, 2) << args[0] << " " << args[1];
    EXPECT_FALSE(r.err.empty());
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST_F(UpstreamSimTest, TlsNeedsACertificateAndAKeyThatLoad) {
  const testing::TestPkiFiles pki = testing::write_test_pki(testing::make_test_pki(), dir());
  const std::string garbage = (dir() / "garbage.pem").string();
  std::ofstream(garbage) << "not a certificate\n";
  struct Case {
    std::vector<std::string> args;
    std::string said;  // in the error
  };
  for (const Case& c :
       {Case{{"--tls-cert", pki.cert_file}, "--tls-key"},
        Case{{"--tls-key", pki.key_file}, "--tls-cert"},
        Case{{"--tls-cert", (dir() / "none.pem").string(), "--tls-key", pki.key_file}, "none.pem"},
        Case{{"--tls-cert", garbage, "--tls-key", pki.key_file}, garbage}}) {
    std::vector<std::string> argv = {"upstream-sim"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const RunResult r = lh(argv);
    EXPECT_EQ(r.exit_code, 2) << c.said << ": " << r.err;
    EXPECT_NE(r.err.find(c.said), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

TEST_F(UpstreamSimTest, ServesFromTheAskedSeqAtRoughlyTheRate) {
  int port = 0;
  auto sim = start_sim("40", port);
  auto client = net::WsClient::open({});
  ASSERT_TRUE(client.ok());
  const std::string base = "ws://127.0.0.1:" + std::to_string(port);
  Collected a, b;
  auto stream_a = (*client)->connect(base + "/s/conn-a?from=100", a.handlers("conn-a"));
  auto stream_b = (*client)->connect(base + "/s/conn-b", b.handlers("conn-b"));
  ASSERT_TRUE(stream_a.ok() && stream_b.ok());
  ASSERT_TRUE(a.wait_seqs(21));
  ASSERT_TRUE(b.wait_seqs(21));
  (*stream_a)->close();
  (*stream_b)->close();
  EXPECT_TRUE(a.wait_closed().ok());
  EXPECT_TRUE(b.wait_closed().ok());
  for (Collected* c : {&a, &b}) {
    std::lock_guard lock(c->mu);
    const int64_t from = c == &a ? 100 : 1;
    for (size_t i = 0; i < c->seqs.size(); ++i) ASSERT_EQ(c->seqs[i], from + int64_t(i));
    // 20 periods of 25 ms: half a second, loosely.
    const auto took = c->arrived[20] - c->arrived[0];
    EXPECT_GE(took, 300ms);
    EXPECT_LE(took, 3s);
  }

  Collected refused;
  ASSERT_TRUE((*client)->connect(base + "/elsewhere", refused.handlers("")).ok());
  const Status why = refused.wait_closed();
  EXPECT_EQ(why.code(), Code::kUnavailable);
  EXPECT_NE(why.message().find("HTTP 404"), std::string::npos) << why.message();
  stop(*sim);
}

TEST_F(UpstreamSimTest, RateZeroSendsAsFastAsTheClientReads) {
  int port = 0;
  auto sim = start_sim("0", port);
  auto client = net::WsClient::open({});
  ASSERT_TRUE(client.ok());
  Collected c;
  auto stream = (*client)->connect("ws://127.0.0.1:" + std::to_string(port) + "/s/fast?from=5",
                                   c.handlers("fast"));
  ASSERT_TRUE(stream.ok());
  ASSERT_TRUE(c.wait_seqs(20'000));  // at 40/s this would take over eight minutes
  (*stream)->close();
  EXPECT_TRUE(c.wait_closed().ok());
  std::lock_guard lock(c.mu);
  for (size_t i = 0; i < c.seqs.size(); ++i) ASSERT_EQ(c.seqs[i], 5 + int64_t(i));
  stop(*sim);
}

TEST_F(UpstreamSimTest, StreamsOpenAtSigtermAreClosedAndItExitsZero) {
  int port = 0;
  auto sim = start_sim("100", port);
  auto client = net::WsClient::open({});
  ASSERT_TRUE(client.ok());
  Collected c;
  auto stream =
      (*client)->connect("ws://127.0.0.1:" + std::to_string(port) + "/s/x", c.handlers("x"));
  ASSERT_TRUE(c.wait_seqs(3));
  stop(*sim);
  const Status why = c.wait_closed();
  EXPECT_EQ(why.code(), Code::kUnavailable);
  EXPECT_NE(why.message().find("1001"), std::string::npos) << why.message();
}

TEST_F(UpstreamSimTest, AWorkerThatTrustsItsCaStreamsFromItOverWss) {
  const testing::TestPkiFiles pki = testing::write_test_pki(testing::make_test_pki(), dir());
  int port = 0;
  auto sim = start_sim("50", port, {"--tls-cert", pki.cert_file, "--tls-key", pki.key_file});
  const RunResult added = lh({"conn", "add", "a", "--url",
                              "wss://127.0.0.1:" + std::to_string(port) + "/s/a?from={next_seq}"});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  const std::filesystem::path sink = dir() / "w1.jsonl";
  auto worker = start_lh({"worker", "--id", "w1", "--reconcile-every", "500ms", "--ca-file",
                          pki.ca_file, "--sink", "jsonl:" + sink.string()});
  // The seqs of the sink's whole lines.
  const auto seqs = [&] {
    std::string whole = read_file(sink);
    whole.resize(whole.rfind('\n') + 1);  // npos + 1 == 0: no whole line yet
    std::vector<int64_t> out;
    for (const std::string& line : lines_of(whole))
      out.push_back(parse_object(line).at("seq").as_int64());
    return out;
  };
  ASSERT_TRUE(eventually([&] { return seqs().size() >= 10; }, 20s)) << worker->err_so_far();
  ASSERT_EQ(::kill(worker->pid(), SIGTERM), 0);
  ASSERT_TRUE(worker->wait_for(20s));
  EXPECT_EQ(worker->result().exit_code, 0) << worker->result().err;
  const std::vector<int64_t> written = seqs();
  for (size_t i = 0; i < written.size(); ++i) ASSERT_EQ(written[i], 1 + int64_t(i));
  stop(*sim);
}

}  // namespace
}  // namespace leasehold::process_test
