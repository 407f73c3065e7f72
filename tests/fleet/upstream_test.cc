// The WebSocket client (net/websocket.h) against an upstream that shares no
// code with it: tests/fleet/upstream.py on Debian's python3-websockets, run
// as a child process. Sequenced streams, garbage among good messages, a
// message over the limit, a dropped connection resumed from the next seq,
// a refused upgrade, and wss:// with a CA made in the test.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "net/websocket.h"
#include "testing/eventually.h"
#include "testing/temp_dir.h"
#include "testing/test_pki.h"

extern char** environ;

namespace leasehold::fleet {
namespace {

using namespace std::chrono_literals;

// For what no event announces (a file another process writes, a child
// exiting).
using leasehold::testing::eventually;

// upstream.py as a child process, stopped with SIGTERM at the end, which
// must make it exit 0.
class PythonUpstream {
 public:
  PythonUpstream(const std::filesystem::path& dir, const testing::TestPkiFiles* tls) {
    const std::string port_file = (dir / (tls ? "tls-port" : "port")).string();
    std::vector<std::string> argv = {
        PYTHON3,       std::string(LEASEHOLD_SOURCE_DIR) + "/tests/fleet/upstream.py",
        "--port-file", port_file,
        "--rate",      "1000"};
    if (tls) {
      for (const std::string& arg :
           {std::string("--tls-cert"), tls->cert_file, std::string("--tls-key"), tls->key_file}) {
        argv.push_back(arg);
      }
    }
    log_ = (dir / (tls ? "tls-upstream.log" : "upstream.log")).string();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    const int err = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (err != 0) {
      ADD_FAILURE() << "cannot start " << argv[0] << ": " << std::strerror(err);
      pid_ = -1;
      return;
    }
    if (!eventually([&] { return std::filesystem::exists(port_file) || exited(); }, 20s) ||
        exited()) {
      ADD_FAILURE() << "upstream.py did not start:\n" << log();
      return;
    }
    std::ifstream(port_file) >> port_;
  }

  ~PythonUpstream() {
    if (pid_ <= 0 || exited()) return;
    ::kill(pid_, SIGTERM);
    if (!eventually([&] { return exited(); }, 10s)) {
      ADD_FAILURE() << "upstream.py ignored SIGTERM";
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      return;
    }
    EXPECT_TRUE(WIFEXITED(status_) && WEXITSTATUS(status_) == 0) << log();
  }

  std::string url(const std::string& scheme, const std::string& path) const {
    return scheme + "://127.0.0.1:" + std::to_string(port_) + path;
  }
  std::string log() const {
    std::ifstream in(log_);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  bool exited() {
    if (done_) return true;
    done_ = ::waitpid(pid_, &status_, WNOHANG) == pid_;
    return done_;
  }

  pid_t pid_ = -1;
  int status_ = 0;
  bool done_ = false;
  int port_ = 0;
  std::string log_;
};

// What one stream delivered: every message as it came, and the good ones
// (text JSON with a "seq" past the last good one) by seq.
class Reader {
 public:
  net::WsHandlers handlers() {
    net::WsHandlers h;
    h.on_message = [this](std::string_view message, bool text) {
      std::lock_guard lock(mu_);
      ++messages_;
      if (!text) {
        ++binary_;
      } else if (const auto seq = good_seq(message)) {
        seqs_.push_back(*seq);
      } else {
        ++bad_text_;
      }
      cv_.notify_all();
    };
    h.on_closed = [this](const Status& why) {
      std::lock_guard lock(mu_);
      closed_ = why;
      cv_.notify_all();
    };
    return h;
  }

  bool wait_seqs(size_t n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 20s, [&] { return seqs_.size() >= n || closed_.has_value(); }) &&
           seqs_.size() >= n;
  }
  Status wait_closed() {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, 20s, [&] { return closed_.has_value(); })) {
      return internal_error("on_closed did not run");
    }
    return *closed_;
  }
  std::vector<int64_t> seqs() const {
    std::lock_guard lock(mu_);
    return seqs_;
  }
  size_t messages() const {
    std::lock_guard lock(mu_);
    return messages_;
  }
  size_t binary() const {
    std::lock_guard lock(mu_);
    return binary_;
  }
  size_t bad_text() const {
    std::lock_guard lock(mu_);
    return bad_text_;
  }

 private:
  std::optional<int64_t> good_seq(std::string_view message) const {
    boost::system::error_code ec;
    const boost::json::value v = boost::json::parse(message, ec);
    if (ec || !v.is_object()) return std::nullopt;
    const boost::json::value* seq = v.as_object().if_contains("seq");
    if (seq == nullptr || !seq->is_int64()) return std::nullopt;
    if (!seqs_.empty() && seq->as_int64() <= seqs_.back()) return std::nullopt;  // backwards
    return seq->as_int64();
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int64_t> seqs_;
  size_t messages_ = 0, binary_ = 0, bad_text_ = 0;
  std::optional<Status> closed_;
};

void expect_consecutive(const std::vector<int64_t>& seqs, int64_t from) {
  for (size_t i = 0; i < seqs.size(); ++i) {
    ASSERT_EQ(seqs[i], from + static_cast<int64_t>(i)) << "at " << i;
  }
}

bool contains(const std::string& text, std::string_view part) {
  return text.find(part) != std::string::npos;
}

class PythonUpstreamTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir("leasehold-upstream-");
    pki_files_ =
        new testing::TestPkiFiles(testing::write_test_pki(testing::make_test_pki(), dir_->path()));
    plain_ = new PythonUpstream(dir_->path(), nullptr);
    tls_ = new PythonUpstream(dir_->path(), pki_files_);
  }
  static void TearDownTestSuite() {
    delete plain_;
    delete tls_;
    delete pki_files_;
    delete dir_;
  }

  void SetUp() override {
    net::WsClientOptions options;
    options.ca_file = pki_files_->ca_file;
    options.close_timeout = 1s;
    auto client = net::WsClient::open(options);
    ASSERT_TRUE(client.ok()) << client.status().to_string();
    client_ = std::move(*client);
  }

  std::shared_ptr<net::WsStream> connect(const std::string& url, Reader& reader) {
    auto stream = client_->connect(url, reader.handlers());
    EXPECT_TRUE(stream.ok()) << stream.status().to_string();
    return stream.ok() ? *stream : nullptr;
  }

  static testing::TempDir* dir_;
  static testing::TestPkiFiles* pki_files_;
  static PythonUpstream* plain_;
  static PythonUpstream* tls_;
  std::unique_ptr<net::WsClient> client_;
};

testing::TempDir* PythonUpstreamTest::dir_ = nullptr;
testing::TestPkiFiles* PythonUpstreamTest::pki_files_ = nullptr;
PythonUpstream* PythonUpstreamTest::plain_ = nullptr;
PythonUpstream* PythonUpstreamTest::tls_ = nullptr;

TEST_F(PythonUpstreamTest, ASequencedStreamStartsAtFromAndCountsByOne) {
  Reader reader;
  auto stream = connect(plain_->url("ws", "/s/conn-a?from=7"), reader);
  ASSERT_TRUE(reader.wait_seqs(200)) << reader.wait_closed().to_string();
  stream->close();
  EXPECT_TRUE(reader.wait_closed().ok());
  expect_consecutive(reader.seqs(), 7);
  EXPECT_EQ(reader.messages(), reader.seqs().size());
}

TEST_F(PythonUpstreamTest, GarbageArrivesBesideEveryGoodSeqOnce) {
  Reader reader;
  auto stream = connect(plain_->url("ws", "/garbage/conn-g?from=3"), reader);
  ASSERT_TRUE(reader.wait_seqs(100)) << reader.wait_closed().to_string();
  stream->close();
  EXPECT_TRUE(reader.wait_closed().ok());
  expect_consecutive(reader.seqs(), 3);
  // Not JSON, no seq and backwards are text; a quarter of the bad ones are
  // binary frames, delivered as such.
  EXPECT_GE(reader.bad_text(), 60u);
  EXPECT_GE(reader.binary(), 20u);
  EXPECT_EQ(reader.messages(), reader.seqs().size() + reader.bad_text() + reader.binary());
}

TEST_F(PythonUpstreamTest, AHugeFrameClosesTheStreamWithResourceExhausted) {
  Reader reader;
  auto stream = connect(plain_->url("ws", "/huge/conn-h?from=1"), reader);
  const Status why = reader.wait_closed();
  EXPECT_EQ(why.code(), Code::kResourceExhausted) << why.to_string();
  EXPECT_EQ(reader.messages(), 0u);
}

TEST_F(PythonUpstreamTest, ADroppedConnectionIsResumedFromTheNextSeq) {
  std::vector<int64_t> all;
  int64_t next = 1;
  for (int round = 0; round < 3; ++round) {
    Reader reader;
    auto stream = connect(
        plain_->url("ws", "/drop/conn-d?from=" + std::to_string(next) + "&after=25"), reader);
    const Status why = reader.wait_closed();
    EXPECT_EQ(why.code(), Code::kUnavailable) << why.to_string();
    const std::vector<int64_t> seqs = reader.seqs();
    ASSERT_EQ(seqs.size(), 25u) << why.to_string();
    all.insert(all.end(), seqs.begin(), seqs.end());
    next = seqs.back() + 1;
  }
  ASSERT_EQ(all.size(), 75u);
  expect_consecutive(all, 1);
}

TEST_F(PythonUpstreamTest, AnUnknownPathIsRefusedWith404) {
  Reader reader;
  auto stream = connect(plain_->url("ws", "/nothing/here?from=1"), reader);
  const Status why = reader.wait_closed();
  EXPECT_EQ(why.code(), Code::kUnavailable) << why.to_string();
  EXPECT_TRUE(contains(why.message(), "HTTP 404")) << why.message();
}

TEST_F(PythonUpstreamTest, WssWithALocalCa) {
  Reader reader;
  auto stream = connect(tls_->url("wss", "/s/conn-t?from=11"), reader);
  ASSERT_TRUE(reader.wait_seqs(100)) << reader.wait_closed().to_string();
  stream->close();
  EXPECT_TRUE(reader.wait_closed().ok());
  expect_consecutive(reader.seqs(), 11);

  // A client that trusts another CA refuses the same server.
  std::filesystem::create_directories(dir_->path() / "other");
  const testing::TestPkiFiles other =
      testing::write_test_pki(testing::make_test_pki(), dir_->path() / "other");
  net::WsClientOptions options;
  options.ca_file = other.ca_file;
  auto client = net::WsClient::open(options);
  ASSERT_TRUE(client.ok());
  Reader refused;
  ASSERT_TRUE((*client)->connect(tls_->url("wss", "/s/conn-t"), refused.handlers()).ok());
  const Status why = refused.wait_closed();
  EXPECT_EQ(why.code(), Code::kUnavailable) << why.to_string();
  EXPECT_TRUE(contains(why.message(), "certificate verify failed")) << why.message();
  EXPECT_EQ(refused.messages(), 0u);
}

}  // namespace
}  // namespace leasehold::fleet
