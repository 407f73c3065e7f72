// credential_process: a command named in the profile that prints the
// credentials as JSON (the AWS SDKs and Tools Reference Guide, "Process
// credential provider"; botocore's ProcessProvider): {"Version": 1,
// "AccessKeyId", "SecretAccessKey", "SessionToken"?, "Expiration"?}. The
// command line is split as botocore splits it (shlex, no shell), run with
// its standard input from /dev/null and its standard error left to ours
// (the tool's own messages, say "run aws sso login", reach the user); its
// standard output holds the secret and is never logged or quoted.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstring>

#include "aws/credentials_internal.h"

extern char** environ;  // NOLINT: POSIX; the child inherits our environment

namespace leasehold::aws::credentials_internal {
namespace {

// More than any credentials document needs; a command that writes more is
// not one.
constexpr size_t kProcessOutputBytesMax = 64 * 1024;

// Closes a file descriptor at the end of its scope.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() { reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

// Reads `fd` to its end, or until `deadline` (real time, since it bounds
// another process) or kProcessOutputBytesMax.
Result<std::string> read_until(int fd, RealClock& clock, MonoTime deadline) {
  std::string out;
  char buffer[4096];
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock.mono_now());
    if (left.count() <= 0) return deadline_exceeded("timed out");
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) return unavailable("poll failed");
    if (ready <= 0) continue;
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return unavailable("reading its output failed");
    if (n == 0) return out;
    out.append(buffer, static_cast<size_t>(n));
    if (out.size() > kProcessOutputBytesMax) {
      return resource_exhausted("it wrote more than " + std::to_string(kProcessOutputBytesMax) +
                                " bytes");
    }
  }
}

// Runs `argv` and returns its standard output if it exits with status 0.
Result<std::string> run(const std::vector<std::string>& argv, Duration timeout) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return unavailable("cannot make a pipe");
  Fd read_end(pipe_fds[0]);
  Fd write_end(pipe_fds[1]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, write_end.get(), 1);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return unavailable("cannot start " + argv[0] + ": " + std::strerror(spawned));
  write_end.reset();  // so that the read sees the end when the child exits
  RealClock clock;
  Result<std::string> output = read_until(read_end.get(), clock, clock.mono_now() + timeout);
  if (!output.ok()) ::kill(pid, SIGKILL);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
  }
  if (!output.ok()) return output.status().with_context(argv[0]);
  if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    return unavailable(argv[0] + " failed (" +
                       (WIFEXITED(wstatus) ? "exit status " + std::to_string(WEXITSTATUS(wstatus))
                                           : std::string("killed by a signal")) +
                       ")");
  }
  return output;
}

}  // namespace

Result<std::vector<std::string>> split_command(std::string_view command) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (size_t i = 0; i < command.size(); ++i) {
    const char c = command[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else if (c == '\\') {
      in_word = true;
      if (++i < command.size()) word += command[i];
    } else if (c == '\'' || c == '"') {
      in_word = true;
      for (++i; i < command.size() && command[i] != c; ++i) {
        // In double quotes a backslash escapes only '"' and itself (shlex's
        // posix mode).
        if (c == '"' && command[i] == '\\' && i + 1 < command.size() &&
            (command[i + 1] == '"' || command[i + 1] == '\\')) {
          ++i;
        }
        word += command[i];
      }
      if (i >= command.size()) {
        return invalid_argument("credential_process has an unclosed quote");
      }
    } else {
      in_word = true;
      word += c;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

Result<ExpiringCredentials> parse_process_output(std::string_view json) {
  boost::system::error_code ec;
  const boost::json::value parsed = boost::json::parse(json, ec);
  const boost::json::object* o = ec ? nullptr : parsed.if_object();
  if (o == nullptr) return invalid_argument("its output is not a JSON object");
  const boost::json::value* version = o->if_contains("Version");
  if (version == nullptr || !version->is_int64() || version->as_int64() != 1) {
    return invalid_argument("its output's Version is not 1");
  }
  const auto text = [&](const char* field) -> std::optional<std::string> {
    const boost::json::value* v = o->if_contains(field);
    if (v == nullptr || !v->is_string()) return std::nullopt;
    return std::string(v->get_string());
  };
  ExpiringCredentials out;
  out.credentials.access_key_id = text("AccessKeyId").value_or("");
  out.credentials.secret_access_key = text("SecretAccessKey").value_or("");
  out.credentials.session_token = text("SessionToken").value_or("");
  if (out.credentials.access_key_id.empty() || out.credentials.secret_access_key.empty()) {
    return invalid_argument("its output lacks AccessKeyId or SecretAccessKey");
  }
  if (const std::optional<std::string> expiration = text("Expiration")) {
    out.expires = parse_iso8601_utc(*expiration);
    if (!out.expires) return invalid_argument("its output's Expiration is not ISO 8601");
  }
  return out;
}

CredentialsFetch process_fetch(std::string command, std::string profile,
                               const CredentialsOptions& options) {
  const Duration timeout = options.process_timeout;
  return [command = std::move(command), profile = std::move(profile),
          timeout]() -> Result<ExpiringCredentials> {
    const std::string what = "credential_process of profile [" + profile + "]";
    auto argv = split_command(command);
    if (!argv.ok()) return argv.status().with_context(what);
    if (argv->empty()) return invalid_argument(what + " is empty");
    Result<std::string> output = run(*argv, timeout);
    if (!output.ok()) return output.status().with_context(what);
    Result<ExpiringCredentials> parsed = parse_process_output(*output);
    if (!parsed.ok()) return parsed.status().with_context(what);
    return parsed;
  };
}

}  // namespace leasehold::aws::credentials_internal
