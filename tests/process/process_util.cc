#include "process_util.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "tests/dynamodb/dynalite_fixture.h"
#include "tests/dynamodb/dynamodb_local_fixture.h"

extern char** environ;

namespace leasehold::process_test {

std::string leasehold_bin() { return LEASEHOLD_BIN; }

namespace {

std::atomic<int> process_counter{0};

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

Process::Process(const std::vector<std::string>& argv, const std::filesystem::path& dir) {
  const int n = process_counter++;
  out_path_ = dir / ("proc" + std::to_string(n) + ".out");
  err_path_ = dir / ("proc" + std::to_string(n) + ".err");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&actions, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int err = posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) {
    ADD_FAILURE() << "cannot start " << argv[0] << ": " << std::strerror(err);
    pid_ = -1;
    exit_code_ = -1;
    return;
  }
  pidfd_ = static_cast<int>(syscall(SYS_pidfd_open, pid_, 0));
  if (pidfd_ < 0) ADD_FAILURE() << "pidfd_open: " << std::strerror(errno);
}

Process::~Process() {
  if (pid_ > 0 && !exited()) {
    kill(pid_, SIGKILL);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  if (pidfd_ >= 0) close(pidfd_);
}

bool Process::wait_for(milliseconds timeout) {
  if (exited()) return true;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_code_ = exit_code_of(status);
      return true;
    }
    const auto left =
        std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd fd = {pidfd_, POLLIN, 0};
    poll(&fd, 1, static_cast<int>(left.count()) + 1);
  }
}

RunResult Process::result() const {
  RunResult r;
  r.exit_code = exit_code_.value_or(-1);
  r.out = read_file(out_path_);
  r.err = read_file(err_path_);
  return r;
}

std::string Process::err_so_far() const { return read_file(err_path_); }
std::string Process::out_so_far() const { return read_file(out_path_); }

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string str(const boost::json::object& o, const char* field) {
  return std::string(o.at(field).as_string());
}

int64_t wall_now_ms() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

boost::json::object parse_object(const std::string& line) {
  boost::system::error_code ec;
  boost::json::value v = boost::json::parse(line, ec);
  if (ec || !v.is_object()) {
    ADD_FAILURE() << "not a JSON object: '" << line << "'";
    return {};
  }
  return v.as_object();
}

std::string tail_of(const std::string& text, size_t n) {
  size_t from = text.size();
  for (size_t lines = 0; from > 0; --from) {
    if (text[from - 1] == '\n' && from != text.size() && ++lines == n) break;
  }
  return text.substr(from);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

std::vector<std::string> ProcessTest::cli(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {leasehold_bin(), "--store", store_uri()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

RunResult ProcessTest::run(const std::vector<std::string>& argv) const {
  Process p(argv, dir());
  if (!p.wait_for(kRunTimeout)) {
    ADD_FAILURE() << argv[0] << " did not finish within " << kRunTimeout.count() << " ms";
    return {};
  }
  return p.result();
}

RunResult ProcessTest::lh(const std::vector<std::string>& args) const { return run(cli(args)); }

std::unique_ptr<Process> ProcessTest::start_lh(const std::vector<std::string>& args) const {
  return std::make_unique<Process>(cli(args), dir());
}

boost::json::object ProcessTest::acquire(const std::string& key, const std::string& owner,
                                         const std::string& ttl) const {
  const RunResult r = lh({"lease", "acquire", key, "--owner", owner, "--ttl", ttl});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return parse_object(r.out);
}

std::optional<boost::json::object> ProcessTest::show(const std::string& key) const {
  const RunResult r = lh({"lease", "show", key});
  if (r.exit_code != 0) return std::nullopt;
  return parse_object(r.out);
}

Http ProcessTest::call_api(const std::string& base, const std::string& token,
                           const std::string& method, const std::string& path,
                           const std::string& body) const {
  std::vector<std::string> argv = {"curl", "-s", "-X", method, "-w", "\n%{http_code}",
                                   "-H",   "Authorization: Bearer " + token};
  if (!body.empty())
    argv.insert(argv.end(), {"-H", "Content-Type: application/json", "--data", body});
  argv.push_back(base + path);
  const RunResult r = run(argv);
  const size_t newline = r.out.rfind('\n');
  if (r.exit_code != 0 || newline == std::string::npos) return {};
  return Http{std::stoi(r.out.substr(newline + 1)), r.out.substr(0, newline)};
}

std::string backend_name(const ::testing::TestParamInfo<Backend>& info) {
  switch (info.param) {
    case Backend::kSqlite:
      return "sqlite";
    case Backend::kDynamoDb:
      return "dynamodb";
    case Backend::kDynamoDbLocal:
      return "dynamodb_local";
    case Backend::kSqliteAws:
      return "sqlite_aws";
  }
  return "unknown";
}

namespace {

// The endpoint of the binary's one dynalite or DynamoDB Local, each
// started on first use; "" if it did not start.
template <typename Server>
std::string endpoint_of() {
  static const std::unique_ptr<Server> server = [] {
    auto started = Server::start();
    EXPECT_TRUE(started.ok()) << started.status().to_string();
    return started.ok() ? std::move(started).value() : nullptr;
  }();
  return server ? server->endpoint() : "";
}

std::string dynamodb_endpoint(Backend backend) {
  return backend == Backend::kDynamoDb ? endpoint_of<testing::Dynalite>()
                                       : endpoint_of<testing::DynamoDbLocal>();
}

}  // namespace

void BackendTest::SetUp() {
  if (GetParam() != Backend::kDynamoDb && GetParam() != Backend::kDynamoDbLocal) return;
  const std::string endpoint = dynamodb_endpoint(GetParam());
  ASSERT_FALSE(endpoint.empty()) << backend_name({GetParam(), 0}) << " did not start";
  // Neither checks who signed a request, only that it is signed.
  setenv("AWS_ACCESS_KEY_ID", "AKIDCLITEST", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "cli-test-secret", 1);
  static int next_prefix = 0;
  dynamodb_uri_ =
      "dynamodb://us-east-1/cli" + std::to_string(next_prefix++) + "_?endpoint=" + endpoint;
  const RunResult init = lh({"store", "init"});
  ASSERT_EQ(init.exit_code, 0) << init.err;
}

std::string BackendTest::store_uri() const {
  return dynamodb_uri_.empty() ? ProcessTest::store_uri() : dynamodb_uri_;
}

}  // namespace leasehold::process_test
