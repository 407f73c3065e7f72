#include "tools/demo.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <boost/json.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "cli/common.h"
#include "cli/serve.h"
#include "movies/schema.h"
#include "net/endpoint.h"
#include "tools/demo_movie.h"

namespace leasehold::tools {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

// Short enough that a takeover shows within seconds.
constexpr const char* kWorkerReconcileEvery = "1s";
constexpr const char* kRatePerConn = "10";
constexpr milliseconds kCommandTimeout{30'000};
constexpr milliseconds kListenTimeout{15'000};
constexpr milliseconds kSettleTimeout{60'000};
constexpr milliseconds kPollEvery{200};
constexpr milliseconds kStopGrace{5'000};
// Long enough for the probe of the sample movie on a busy machine; it
// takes a second or two.
constexpr milliseconds kSampleReadyTimeout{30'000};
constexpr size_t kPasswordChars = 16;

int64_t wall_ms() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// A child process of this binary, leader of its own process group.
struct Child {
  std::string name;
  pid_t pid = -1;  // -1 once reaped
  fs::path err_path;
};

// Starts /proc/self/exe with `args`, stdout and stderr to files, stdin from
// `stdin_fd` (or /dev/null). The child is in a process group of its own (so
// a Ctrl-C at the terminal reaches only the demo), with no signal blocked,
// and the kernel sends it SIGKILL when the demo dies.
Result<Child> spawn(const std::string& name, const std::vector<std::string>& args,
                    const fs::path& out_path, const fs::path& err_path, int stdin_fd = -1) {
  std::vector<std::string> argv_strings = {"leasehold"};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t parent = getpid();
  const pid_t pid = (out < 0 || err < 0 || null < 0) ? -1 : fork();
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the demo died before prctl
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    dup2(stdin_fd >= 0 ? stdin_fd : null, STDIN_FILENO);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  for (const int fd : {out, err, null}) {
    if (fd >= 0) close(fd);
  }
  if (pid < 0) return unavailable("could not start " + name + ": " + std::strerror(errno));
  setpgid(pid, pid);  // also here, so that it holds before the first signal
  return Child{name, pid, err_path};
}

// Waits up to `timeout` for `child` to exit and reaps it; its exit code (128+N
// for signal N), or nullopt if it is still running.
std::optional<int> wait_exit(Child& child, milliseconds timeout) {
  if (child.pid < 0) return 0;
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, child.pid, 0));
  if (pidfd >= 0) {
    pollfd p{pidfd, POLLIN, 0};
    poll(&p, 1, static_cast<int>(timeout.count()));
    close(pidfd);
  }
  int status = 0;
  if (waitpid(child.pid, &status, WNOHANG) != child.pid) return std::nullopt;
  child.pid = -1;
  return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
}

// SIGTERM to the child's group, then SIGKILL if it has not exited within the
// grace period; reaps it.
void stop_child(Child& child) {
  if (child.pid < 0) return;
  kill(-child.pid, SIGTERM);
  if (wait_exit(child, kStopGrace)) return;
  kill(-child.pid, SIGKILL);
  wait_exit(child, kStopGrace);
}

std::string random_password() {
  static constexpr char kAlphabet[] =
      "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789";  // no look-alikes
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  std::string password;
  while (password.size() < kPasswordChars) {
    const auto byte = static_cast<unsigned char>(urandom.get());
    password += kAlphabet[byte % (sizeof(kAlphabet) - 1)];
  }
  return password;
}

// One row of `conn list`.
struct ConnRow {
  std::string id;
  std::string owner;
  int64_t expires_at_ms = 0;
};

// The worker holding the connection's lease now, or "" if none does.
std::string live_owner(const ConnRow& row, int64_t now_ms) {
  return row.expires_at_ms > now_ms ? row.owner : std::string();
}

// What a connection's messages look like across every sink.
struct SeqTally {
  std::map<int64_t, int> count;  // seq -> times written
  std::set<std::string> writers;
};

class Demo {
 public:
  Demo(const DemoArgs& args, bool verbose, sigset_t stop_signals)
      : args_(args), verbose_(verbose), stop_signals_(stop_signals) {}
  ~Demo() { stop_all(); }

  Status create_dir();
  Status start_services();
  // Uploads the sample movie and prints its address. A movie that could not
  // be uploaded is reported on stderr and the demo goes on without it: the
  // error is only "stopped", after a stop signal.
  Status add_sample_movie();
  Status add_connections();
  Status start_workers();
  // Until every connection has a live owner among `workers`, spread evenly.
  Status wait_balanced(const std::set<std::string>& workers);
  Status take_one_down(const std::string& worker, int signal);
  // True if there is no gap, and duplicates only on the killed worker's
  // connections.
  bool summarize();
  // Until SIGINT or SIGTERM.
  void serve_on();
  void stop_all();
  bool interrupted() const { return interrupted_; }

 private:
  std::vector<std::string> with_store(std::vector<std::string> args) const;
  Result<std::string> run_command(const std::string& name, const std::vector<std::string>& args,
                                  const std::string& stdin_text = "");
  Result<std::string> wait_listening(Child& child, const fs::path& path, bool json_log);
  Result<MovieState> upload_sample_movie();
  Result<std::vector<ConnRow>> conn_list();
  // Sleeps up to `timeout`; false (and interrupted()) if a stop signal came.
  bool pause(milliseconds timeout);
  void print_owners(const std::vector<ConnRow>& rows);
  std::map<std::string, SeqTally> read_sinks() const;

  const DemoArgs& args_;
  const bool verbose_;
  const sigset_t stop_signals_;
  bool interrupted_ = false;
  fs::path dir_;
  std::string upstream_;  // HOST:PORT
  std::string address_;   // the dashboard's HOST:PORT
  std::vector<Child> services_;
  std::map<std::string, Child> workers_;
  std::set<std::string> killed_conns_;  // owned by the worker killed with SIGKILL
  std::string last_owners_line_;
  int commands_ = 0;
};

std::vector<std::string> Demo::with_store(std::vector<std::string> args) const {
  args.insert(args.begin(), {"--store", "sqlite:" + (dir_ / "leasehold.db").string()});
  if (verbose_) args.insert(args.begin(), "-v");
  return args;
}

bool Demo::pause(milliseconds timeout) {
  timespec ts{static_cast<time_t>(timeout.count() / 1000),
              static_cast<long>(timeout.count() % 1000) * 1'000'000};
  if (sigtimedwait(&stop_signals_, nullptr, &ts) > 0) interrupted_ = true;
  return !interrupted_;
}

Status Demo::create_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/leasehold-demo.XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    return unavailable("could not create a temporary directory: " +
                       std::string(std::strerror(errno)));
  }
  dir_ = pattern;
  return {};
}

// Runs a command of this binary to completion; its stdout. Its stderr is
// quoted in the error (no command given a secret logs it).
Result<std::string> Demo::run_command(const std::string& name, const std::vector<std::string>& args,
                                      const std::string& stdin_text) {
  int pipe_fds[2] = {-1, -1};
  if (!stdin_text.empty() && pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return unavailable("pipe: " + std::string(std::strerror(errno)));
  }
  const std::string stem = "command" + std::to_string(commands_++ % 2);
  auto child =
      spawn(name, with_store(args), dir_ / (stem + ".out"), dir_ / (stem + ".err"), pipe_fds[0]);
  if (pipe_fds[0] >= 0) {
    close(pipe_fds[0]);
    // Small enough for the pipe's buffer: the write does not block.
    const ssize_t n = write(pipe_fds[1], stdin_text.data(), stdin_text.size());
    close(pipe_fds[1]);
    if (n != static_cast<ssize_t>(stdin_text.size())) return unavailable("could not write stdin");
  }
  if (!child.ok()) return child.status();
  const std::optional<int> code = wait_exit(*child, kCommandTimeout);
  if (!code) {
    stop_child(*child);
    return deadline_exceeded(name + " took longer than 30 s");
  }
  if (*code != 0) {
    return unavailable(name + " exited " + std::to_string(*code) + ": " +
                       read_text(child->err_path));
  }
  return read_text(dir_ / (stem + ".out"));
}

// Waits for a child to print where it listens: the JSON line
// {"listening":"HOST:PORT"} on stdout, or a JSON log line with
// "msg":"listening" and "address" on stderr.
Result<std::string> Demo::wait_listening(Child& child, const fs::path& path, bool json_log) {
  const auto deadline = std::chrono::steady_clock::now() + kListenTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::istringstream lines(read_text(path));
    for (std::string line; std::getline(lines, line);) {
      boost::system::error_code ec;
      const boost::json::value v = boost::json::parse(line, ec);
      if (ec || !v.is_object()) continue;
      const boost::json::object& o = v.as_object();
      const char* field = json_log ? "address" : "listening";
      if (json_log && !(o.contains("msg") && o.at("msg") == "listening")) continue;
      if (o.contains(field) && o.at(field).is_string()) {
        return std::string(o.at(field).as_string());
      }
    }
    if (wait_exit(child, milliseconds(0))) {
      return unavailable(child.name + " exited before listening: " + read_text(child.err_path));
    }
    if (!pause(milliseconds(50))) return unavailable("stopped");
  }
  return deadline_exceeded(child.name + " did not listen within 15 s");
}

Status Demo::start_services() {
  LEASEHOLD_RETURN_IF_ERROR(run_command("store init", {"store", "init"}).status());
  const std::string password = random_password();
  LEASEHOLD_RETURN_IF_ERROR(run_command("user add",
                                        {"user", "add", "demo", "--display-name", "Demo User",
                                         "--admin", "--password-stdin"},
                                        password + "\n")
                                .status());
  LEASEHOLD_ASSIGN_OR_RETURN(
      Child sim, spawn("upstream-sim",
                       with_store({"upstream-sim", "--listen", "127.0.0.1:0", "--rate-per-conn",
                                   kRatePerConn}),
                       dir_ / "upstream-sim.out", dir_ / "upstream-sim.log"));
  services_.push_back(sim);
  LEASEHOLD_ASSIGN_OR_RETURN(upstream_,
                             wait_listening(services_.back(), dir_ / "upstream-sim.out", false));
  LEASEHOLD_ASSIGN_OR_RETURN(Child serve,
                             spawn("serve",
                                   with_store({"serve", "--listen", args_.listen, "--media-dir",
                                               (dir_ / "media").string()}),
                                   dir_ / "serve.out", dir_ / "serve.log"));
  services_.push_back(serve);
  LEASEHOLD_ASSIGN_OR_RETURN(address_, wait_listening(services_.back(), dir_ / "serve.log", true));
  std::printf(
      "\n  The dashboard: http://%s/\n  Sign in as    demo\n  password      %s\n\n"
      "  upstream-sim on %s; store, sinks and logs in %s (removed on exit)\n\n",
      address_.c_str(), password.c_str(), upstream_.c_str(), dir_.c_str());
  std::fflush(stdout);
  return {};
}

// Writes the sample movie into the directory, uploads it through the API
// as `demo` (with a token of its own, never printed), and waits for the
// probe to make it ready.
Result<MovieState> Demo::upload_sample_movie() {
  const fs::path path = dir_ / "sample.avi";
  LEASEHOLD_RETURN_IF_ERROR(write_sample_movie(path.string()));
  LEASEHOLD_ASSIGN_OR_RETURN(const std::string out,
                             run_command("user token", {"user", "token", "demo"}));
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(out, ec);
  if (ec || !v.is_object() || !v.as_object().contains("token")) {
    return internal_error("user token printed no token");
  }
  LEASEHOLD_ASSIGN_OR_RETURN(const std::unique_ptr<MoviesClient> client,
                             MoviesClient::open(address_, std::string(v.at("token").as_string())));
  LEASEHOLD_ASSIGN_OR_RETURN(MovieState movie, client->upload(kSampleMovieName, path.string()));
  const auto deadline = std::chrono::steady_clock::now() + kSampleReadyTimeout;
  while (movie.status == movies::kStatusProcessing && std::chrono::steady_clock::now() < deadline) {
    if (!pause(kPollEvery)) return unavailable("stopped");
    LEASEHOLD_ASSIGN_OR_RETURN(movie, client->get(movie.id));
  }
  if (movie.status == movies::kStatusInvalid) {
    return unavailable("the server found it invalid: " + movie.failure_summary);
  }
  return movie;
}

Status Demo::add_sample_movie() {
  const Result<MovieState> movie = upload_sample_movie();
  if (interrupted_) return unavailable("stopped");
  if (!movie.ok()) {
    std::fprintf(stderr,
                 "leasehold: demo: the sample movie could not be uploaded (%s); the demo goes on "
                 "without it\n",
                 movie.status().to_string().c_str());
    return {};
  }
  const bool ready = movie->status == movies::kStatusReady;
  std::printf("  A sample movie: http://%s/movies/%s  (\"%s\", %s)\n\n", address_.c_str(),
              movie->id.c_str(), kSampleMovieName,
              ready ? "open it to mark the spots and trace them" : "still being probed");
  std::fflush(stdout);
  return {};
}

Status Demo::add_connections() {
  for (int i = 1; i <= args_.connections; ++i) {
    char id[16];
    std::snprintf(id, sizeof id, "c%02d", i);
    const std::string url = "ws://" + upstream_ + "/s/" + id + "?from={next_seq}";
    LEASEHOLD_RETURN_IF_ERROR(run_command("conn add", {"conn", "add", id, "--url", url}).status());
  }
  std::printf("added %d connections (c01..c%02d), each streaming %s messages/s\n",
              args_.connections, args_.connections, kRatePerConn);
  return {};
}

Status Demo::start_workers() {
  for (const std::string name : {"w1", "w2", "w3"}) {
    const std::string sink = "jsonl:" + (dir_ / (name + ".jsonl")).string();
    LEASEHOLD_ASSIGN_OR_RETURN(
        Child w, spawn(name,
                       with_store({"worker", "--id", name, "--reconcile-every",
                                   kWorkerReconcileEvery, "--sink", sink}),
                       dir_ / (name + ".out"), dir_ / (name + ".log")));
    workers_.emplace(name, w);
  }
  std::printf("started workers w1, w2, w3 (3 s sessions, reconcile every %s)\n",
              kWorkerReconcileEvery);
  std::fflush(stdout);
  return {};
}

Result<std::vector<ConnRow>> Demo::conn_list() {
  LEASEHOLD_ASSIGN_OR_RETURN(const std::string out, run_command("conn list", {"conn", "list"}));
  std::vector<ConnRow> rows;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    boost::system::error_code ec;
    const boost::json::value v = boost::json::parse(line, ec);
    if (ec || !v.is_object()) return internal_error("conn list printed a line that is not JSON");
    const boost::json::object& o = v.as_object();
    rows.push_back({std::string(o.at("id").as_string()), std::string(o.at("owner").as_string()),
                    o.at("expires_at_ms").to_number<int64_t>()});
  }
  return rows;
}

void Demo::print_owners(const std::vector<ConnRow>& rows) {
  const int64_t now = wall_ms();
  std::map<std::string, int> counts;
  for (const auto& [name, w] : workers_) {
    if (w.pid >= 0) counts[name] = 0;
  }
  int unowned = 0;
  for (const ConnRow& row : rows) {
    const std::string owner = live_owner(row, now);
    owner.empty() ? ++unowned : ++counts[owner];
  }
  std::string line = "owners:";
  for (const auto& [name, n] : counts) line += " " + name + " " + std::to_string(n) + ",";
  line += " unowned " + std::to_string(unowned);
  if (line == last_owners_line_) return;
  last_owners_line_ = line;
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

Status Demo::wait_balanced(const std::set<std::string>& workers) {
  const auto deadline = std::chrono::steady_clock::now() + kSettleTimeout;
  while (std::chrono::steady_clock::now() < deadline) {
    LEASEHOLD_ASSIGN_OR_RETURN(const std::vector<ConnRow> rows, conn_list());
    print_owners(rows);
    std::map<std::string, int> counts;
    for (const std::string& w : workers) counts[w] = 0;
    bool all_owned = static_cast<int>(rows.size()) == args_.connections;
    const int64_t now = wall_ms();
    for (const ConnRow& row : rows) {
      const std::string owner = live_owner(row, now);
      if (!workers.contains(owner)) all_owned = false;
      ++counts[owner];
    }
    int low = args_.connections, high = 0;
    for (const std::string& w : workers) {
      low = std::min(low, counts[w]);
      high = std::max(high, counts[w]);
    }
    if (all_owned && high - low <= 1) return {};
    if (!pause(kPollEvery)) return unavailable("stopped");
  }
  return deadline_exceeded("the fleet did not settle within 60 s");
}

// Signals `worker`, then prints, as each of its connections is owned again,
// by whom and how long after the signal.
Status Demo::take_one_down(const std::string& worker, int signal) {
  LEASEHOLD_ASSIGN_OR_RETURN(const std::vector<ConnRow> before, conn_list());
  std::set<std::string> pending;
  for (const ConnRow& row : before) {
    if (live_owner(row, wall_ms()) == worker) pending.insert(row.id);
  }
  if (signal == SIGKILL) killed_conns_ = pending;
  Child& child = workers_.at(worker);
  std::printf("\n%s %s (it owns %zu connections)\n",
              signal == SIGKILL ? "killing (SIGKILL)" : "stopping (SIGTERM)", worker.c_str(),
              pending.size());
  std::fflush(stdout);
  const int64_t signalled_ms = wall_ms();
  kill(-child.pid, signal);
  int64_t slowest_ms = 0;
  const auto deadline = std::chrono::steady_clock::now() + kSettleTimeout;
  while (!pending.empty() && std::chrono::steady_clock::now() < deadline) {
    if (!pause(kPollEvery)) return unavailable("stopped");
    LEASEHOLD_ASSIGN_OR_RETURN(const std::vector<ConnRow> rows, conn_list());
    const int64_t now = wall_ms();
    for (const ConnRow& row : rows) {
      const std::string owner = live_owner(row, now);
      if (!pending.contains(row.id) || owner.empty() || owner == worker) continue;
      pending.erase(row.id);
      slowest_ms = std::max(slowest_ms, now - signalled_ms);
      std::printf("  %s -> %s after %.1f s\n", row.id.c_str(), owner.c_str(),
                  static_cast<double>(now - signalled_ms) / 1000);
    }
    std::fflush(stdout);
  }
  if (!pending.empty()) return deadline_exceeded("connections of " + worker + " were not re-owned");
  const std::optional<int> code = wait_exit(child, kStopGrace);
  std::printf("every connection of %s owned again within %.1f s; %s %s\n", worker.c_str(),
              static_cast<double>(slowest_ms) / 1000, worker.c_str(),
              code ? ("exited " + std::to_string(*code)).c_str() : "is still running");
  std::fflush(stdout);
  return {};
}

// Every complete line of every sink, tallied by connection. A line still
// being written (no newline yet) is left out.
std::map<std::string, SeqTally> Demo::read_sinks() const {
  std::map<std::string, SeqTally> tally;
  for (const auto& [name, w] : workers_) {
    std::string text = read_text(dir_ / (name + ".jsonl"));
    text.erase(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      boost::system::error_code ec;
      const boost::json::value v = boost::json::parse(line, ec);
      if (ec || !v.is_object()) continue;
      const boost::json::object& o = v.as_object();
      SeqTally& t = tally[std::string(o.at("conn").as_string())];
      ++t.count[o.at("seq").to_number<int64_t>()];
      t.writers.insert(std::string(o.at("worker").as_string()));
    }
  }
  return tally;
}

bool Demo::summarize() {
  std::printf("\nper connection, from every sink:\n");
  int64_t gaps = 0, duplicates = 0, messages = 0;
  bool duplicates_only_where_killed = true;
  for (const auto& [conn, t] : read_sinks()) {
    const int64_t last = t.count.empty() ? 0 : t.count.rbegin()->first;
    int64_t conn_gaps = last, conn_dups = 0;
    for (const auto& [seq, n] : t.count) {
      if (seq >= 1 && seq <= last) --conn_gaps;
      conn_dups += n - 1;
      messages += n;
    }
    gaps += conn_gaps;
    duplicates += conn_dups;
    const bool killed = killed_conns_.contains(conn);
    if (conn_dups > 0 && !killed) duplicates_only_where_killed = false;
    std::string writers;
    for (const std::string& w : t.writers) writers += (writers.empty() ? "" : ",") + w;
    std::printf("  %s  seq 1..%-5lld by %-9s gaps %lld  duplicates %lld%s\n", conn.c_str(),
                static_cast<long long>(last), writers.c_str(), static_cast<long long>(conn_gaps),
                static_cast<long long>(conn_dups), killed ? "  (its worker was killed)" : "");
  }
  std::printf("summary: %lld gaps, %lld duplicates in %lld messages; duplicates %s\n",
              static_cast<long long>(gaps), static_cast<long long>(duplicates),
              static_cast<long long>(messages),
              duplicates_only_where_killed ? "only on the killed worker's connections"
                                           : "ALSO ON CONNECTIONS NO KILLED WORKER HELD");
  std::fflush(stdout);
  return gaps == 0 && duplicates_only_where_killed;
}

void Demo::serve_on() {
  std::printf("\nthe dashboard stays up; Ctrl-C stops everything and removes %s\n", dir_.c_str());
  std::fflush(stdout);
  int signal = 0;
  sigwait(&stop_signals_, &signal);
}

void Demo::stop_all() {
  for (auto& [name, w] : workers_) stop_child(w);
  for (auto it = services_.rbegin(); it != services_.rend(); ++it) stop_child(*it);
  workers_.clear();
  services_.clear();
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    dir_.clear();
  }
}

// The scripted part: start, upload the sample movie, settle, kill one, stop
// one, summarize.
Result<bool> run_script(Demo& demo) {
  LEASEHOLD_RETURN_IF_ERROR(demo.create_dir());
  LEASEHOLD_RETURN_IF_ERROR(demo.start_services());
  LEASEHOLD_RETURN_IF_ERROR(demo.add_sample_movie());
  LEASEHOLD_RETURN_IF_ERROR(demo.add_connections());
  LEASEHOLD_RETURN_IF_ERROR(demo.start_workers());
  LEASEHOLD_RETURN_IF_ERROR(demo.wait_balanced({"w1", "w2", "w3"}));
  LEASEHOLD_RETURN_IF_ERROR(demo.take_one_down("w1", SIGKILL));
  LEASEHOLD_RETURN_IF_ERROR(demo.wait_balanced({"w2", "w3"}));
  LEASEHOLD_RETURN_IF_ERROR(demo.take_one_down("w2", SIGTERM));
  LEASEHOLD_RETURN_IF_ERROR(demo.wait_balanced({"w3"}));
  return demo.summarize();
}

}  // namespace

CLI::App* add_demo_command(CLI::App& app, DemoArgs& args) {
  CLI::App* sub = app.add_subcommand(
      "demo",
      "Run the stream fleet and the dashboard on a temporary SQLite store: kill a worker, stop "
      "another, and show the takeovers, handovers, gaps and duplicates");
  sub->add_option("--listen", args.listen, "The dashboard's address (loopback HOST:PORT)")
      ->capture_default_str();
  sub->add_option("--connections", args.connections, "How many connections to stream")
      ->capture_default_str();
  sub->add_flag("--no-wait", args.no_wait, "Exit after the summary instead of serving on");
  return sub;
}

Status check_demo(const DemoArgs& args) {
  LEASEHOLD_ASSIGN_OR_RETURN(const cli::ListenAddress address, cli::parse_listen(args.listen));
  if (!net::is_loopback_host(address.host)) {
    return invalid_argument("--listen '" + args.listen + "': the demo listens on loopback only");
  }
  if (args.connections < 1 || args.connections > kDemoConnectionsMax) {
    return invalid_argument("--connections must be 1.." + std::to_string(kDemoConnectionsMax));
  }
  return {};
}

int run_demo(const DemoArgs& args, bool verbose) {
  if (const Status ok = check_demo(args); !ok.ok()) return cli::report(ok);
  const sigset_t stop_signals = cli::block_stop_signals();
  Demo demo(args, verbose, stop_signals);
  const Result<bool> clean = run_script(demo);
  if (demo.interrupted()) {
    std::fprintf(stderr, "leasehold: demo stopped\n");
    return cli::kExitOk;
  }
  if (!clean.ok()) {
    cli::report(clean.status());
    return cli::kExitStoreFailed;
  }
  if (!args.no_wait) demo.serve_on();
  demo.stop_all();
  return *clean ? cli::kExitOk : cli::kExitStoreFailed;
}

std::unique_ptr<cli::Command> make_demo_command() {
  return cli::make_simple_command<DemoArgs>(
      add_demo_command, [](const DemoArgs& args, const cli::GlobalArgs& global, Logger&) {
        return run_demo(args, global.verbose);
      });
}

}  // namespace leasehold::tools
