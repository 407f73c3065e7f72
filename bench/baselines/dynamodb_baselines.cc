#include "bench/baselines/dynamodb_baselines.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "aws/credentials.h"
#include "aws/sigv4.h"
#include "base/cpu_time.h"
#include "net/endpoint.h"
#include "store/dynamodb/dynamodb_store.h"

namespace leasehold::bench {
namespace {

namespace json = boost::json;
using aws::Credentials;
using aws::default_credentials;
using aws::HttpRequestToSign;
using aws::process_env;
using aws::sign_v4;
using store::dynamodb::DynamoDbOptions;
using store::dynamodb::parse_dynamodb_uri;

struct DynamoDbTarget {
  std::string region;
  std::string endpoint;  // empty: DynamoDB's own https endpoint for the region
  std::string table;     // the physical table name
};

// The body of leasehold's renewal (LeaseManager::renew on DynamoDB), for one
// lease, with the times fixed at `now_ms`. The requests are rendered once
// and sent again and again, between rounds of the library that store later
// heartbeats, so the heartbeat they compare against is an hour ahead: the
// same comparison, one that never holds them back.
std::string renewal_body(const std::string& table, const RawLease& lease, int64_t now_ms,
                         int64_t ttl_ms) {
  constexpr int64_t kHeartbeatAheadMs = 3'600'000;
  const auto number = [](int64_t n) { return json::object{{"N", std::to_string(n)}}; };
  return json::serialize(
      json::object{{"TableName", table},
                   {"Key", {{"pk", {{"S", lease.pk}}}}},
                   {"ReturnValues", "UPDATED_NEW"},
                   {"UpdateExpression", "SET #n0 = :v0, #n1 = :v1"},
                   {"ConditionExpression", "#n2 = :v2 AND #n3 = :v3 AND #n1 > :v4 AND #n0 <= :v5"},
                   {"ExpressionAttributeNames",
                    {{"#n0", "lease_heartbeat_at_ms"},
                     {"#n1", "lease_expires_at_ms"},
                     {"#n2", "lease_owner"},
                     {"#n3", "lease_token"}}},
                   {"ExpressionAttributeValues",
                    {{":v0", number(now_ms)},
                     {":v1", number(now_ms + ttl_ms)},
                     {":v2", {{"S", lease.owner}}},
                     {":v3", {{"S", lease.token}}},
                     {":v4", number(now_ms)},
                     {":v5", number(now_ms + kHeartbeatAheadMs)}}}});
}

// The whole HTTP/1.1 request, signed.
Result<std::string> signed_request(const DynamoDbTarget& target, const std::string& host_header,
                                   const Credentials& credentials, std::string body, WallTime now) {
  HttpRequestToSign to_sign;
  to_sign.host = host_header;
  to_sign.headers = {{"Content-Type", "application/x-amz-json-1.0"},
                     {"X-Amz-Target", "DynamoDB_20120810.UpdateItem"}};
  to_sign.body = std::move(body);
  LEASEHOLD_ASSIGN_OR_RETURN(auto signature,
                             sign_v4(to_sign, credentials, target.region, "dynamodb", now));
  std::string out = "POST / HTTP/1.1\r\nHost: " + host_header +
                    "\r\nContent-Type: application/x-amz-json-1.0\r\n"
                    "X-Amz-Target: DynamoDB_20120810.UpdateItem\r\nX-Amz-Date: " +
                    signature.amz_date + "\r\nAuthorization: " + signature.authorization + "\r\n";
  if (!signature.security_token.empty()) {
    out += "X-Amz-Security-Token: " + signature.security_token + "\r\n";
  }
  out += "Content-Length: " + std::to_string(to_sign.body.size()) + "\r\n\r\n" + to_sign.body;
  return out;
}

class Socket {
 public:
  explicit Socket(int fd) : fd_(fd) {}
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() {
    if (fd_ >= 0) ::close(fd_);
  }
  int fd() const { return fd_; }

 private:
  int fd_;
};

Result<std::unique_ptr<Socket>> connect_to(const net::HttpEndpoint& endpoint) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(endpoint.port);
  if (::getaddrinfo(endpoint.host.c_str(), port.c_str(), &hints, &found) != 0) {
    return unavailable("cannot resolve " + endpoint.host);
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, ::freeaddrinfo);
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    auto s = std::make_unique<Socket>(::socket(a->ai_family, a->ai_socktype, a->ai_protocol));
    if (s->fd() < 0) continue;
    if (::connect(s->fd(), a->ai_addr, a->ai_addrlen) == 0) {
      const int one = 1;
      ::setsockopt(s->fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      return s;
    }
  }
  return unavailable("cannot connect to " + endpoint.host + ":" + port);
}

// Sends `request` and reads one Content-Length-framed reply into `buffer`;
// returns the status code, or 0 if the connection failed.
int exchange(int fd, const std::string& request, std::string& buffer) {
  for (size_t sent = 0; sent < request.size();) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return 0;
    sent += static_cast<size_t>(n);
  }
  buffer.clear();
  char chunk[16384];
  size_t head_end;
  while ((head_end = buffer.find("\r\n\r\n")) == std::string::npos) {
    const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) return 0;
    buffer.append(chunk, static_cast<size_t>(n));
  }
  int status = 0;
  std::from_chars(buffer.data() + 9, buffer.data() + 12, status);  // "HTTP/1.1 200"
  size_t length = 0;
  for (const char* name : {"Content-Length:", "content-length:"}) {
    const size_t at = buffer.find(name);
    if (at != std::string::npos && at < head_end) {
      size_t v = at + 15;
      while (buffer[v] == ' ') ++v;
      std::from_chars(buffer.data() + v, buffer.data() + head_end, length);
    }
  }
  while (buffer.size() < head_end + 4 + length) {
    const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) return 0;
    buffer.append(chunk, static_cast<size_t>(n));
  }
  return status;
}

struct BareLoopOutcome {
  int64_t done = 0;
  Duration cpu{};
  std::string error;
};

// requests[2 * i + p] renews lease i on pass p (0 or 1): passes alternate
// between two expiries, so that every write moves the item's expiry, and its
// index entry, as a real renewal does.
// Its `duration` starts once it is connected, as the library's pooled
// connection is already open when its turn starts.
void bare_loop(const net::HttpEndpoint& endpoint, const std::vector<std::string>& requests,
               size_t first, size_t stride, Duration duration, BareLoopOutcome& out) {
  auto socket = connect_to(endpoint);
  if (!socket.ok()) {
    out.error = socket.status().message();
    return;
  }
  std::string buffer;
  buffer.reserve(1 << 14);
  const ThreadCpuTimer timer;
  RealClock clock;
  const MonoTime until = clock.mono_now() + duration;
  const size_t leases = requests.size() / 2;
  size_t pass = 0;
  for (size_t i = first; clock.mono_now() < until; i += stride) {
    if (i >= leases) {
      i = first;
      pass ^= 1;
    }
    const int status = exchange((*socket)->fd(), requests[2 * i + pass], buffer);
    if (status != 200) {
      const size_t body = buffer.find("\r\n\r\n");
      out.error = status == 0 ? "connection lost"
                              : "HTTP " + std::to_string(status) + ": " +
                                    (body == std::string::npos ? "" : buffer.substr(body + 4, 300));
      return;
    }
    ++out.done;
  }
  out.cpu = timer.elapsed();
}

// Runs argv (argv[0] looked up in $PATH) and returns what it wrote to stdout.
Result<std::string> run_capturing(const std::vector<std::string>& argv) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return unavailable("pipe failed");
  const pid_t pid = ::fork();
  if (pid < 0) return unavailable("fork failed");
  if (pid == 0) {
    ::dup2(pipe_fds[1], STDOUT_FILENO);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "leasehold: cannot run %s\n", args[0]);
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  std::string out;
  char chunk[4096];
  for (ssize_t n; (n = ::read(pipe_fds[0], chunk, sizeof(chunk))) > 0;) {
    out.append(chunk, static_cast<size_t>(n));
  }
  ::close(pipe_fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return unavailable(argv[0] + " " + argv[1] + " failed (exit status " +
                       std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
  }
  return out;
}

Result<RawRun> bare_http_renewals(const DynamoDbTarget& target, const std::vector<RawLease>& leases,
                                  int64_t threads, Duration duration, int64_t ttl_ms) {
  if (target.endpoint.empty()) return failed_precondition("the bare baseline needs http://");
  LEASEHOLD_ASSIGN_OR_RETURN(auto endpoint, net::parse_http_endpoint(target.endpoint));
  if (endpoint.scheme != "http") return failed_precondition("the bare baseline needs http://");
  LEASEHOLD_ASSIGN_OR_RETURN(auto source, default_credentials(process_env()));
  LEASEHOLD_ASSIGN_OR_RETURN(Credentials credentials, source->get());
  const std::string host_header =
      endpoint.port == 80 ? endpoint.host : endpoint.host + ":" + std::to_string(endpoint.port);

  RealClock clock;
  const WallTime now = clock.wall_now();
  std::vector<std::string> requests;
  requests.reserve(2 * leases.size());
  for (const RawLease& lease : leases) {
    for (int64_t pass = 0; pass < 2; ++pass) {
      LEASEHOLD_ASSIGN_OR_RETURN(
          std::string request,
          signed_request(target, host_header, credentials,
                         renewal_body(target.table, lease, to_unix_ms(now) + pass, ttl_ms), now));
      requests.push_back(std::move(request));
    }
  }

  std::vector<BareLoopOutcome> outcomes(static_cast<size_t>(threads));
  std::vector<std::thread> workers;
  for (int64_t t = 0; t < threads; ++t) {
    workers.emplace_back(bare_loop, std::cref(endpoint), std::cref(requests),
                         static_cast<size_t>(t), static_cast<size_t>(threads), duration,
                         std::ref(outcomes[static_cast<size_t>(t)]));
  }
  for (auto& w : workers) w.join();
  RawRun run;
  run.cpu = Duration::zero();
  for (const BareLoopOutcome& o : outcomes) {
    if (!o.error.empty()) return unavailable("bare HTTP baseline: " + o.error);
    run.renewals += o.done;
    *run.cpu += o.cpu;
  }
  return run;
}

Result<RawRun> sdk_renewals(const std::string& script, const DynamoDbTarget& target,
                            const std::vector<RawLease>& leases, int64_t threads, Duration duration,
                            int64_t ttl_ms) {
  json::array lease_list;
  for (const RawLease& lease : leases)
    lease_list.push_back({{"pk", lease.pk}, {"owner", lease.owner}, {"token", lease.token}});
  const json::object config{{"region", target.region},
                            {"endpoint", target.endpoint},
                            {"table", target.table},
                            {"seconds", std::chrono::duration<double>(duration).count()},
                            {"concurrency", threads},
                            {"ttl_ms", ttl_ms},
                            {"leases", std::move(lease_list)}};
  std::string path =
      (std::filesystem::temp_directory_path() / "leasehold-sdk-bench-XXXXXX").string();
  const int fd = ::mkstemp(path.data());
  if (fd < 0) return unavailable("mkstemp failed for " + path);
  ::close(fd);
  { std::ofstream(path) << json::serialize(config); }
  Result<std::string> out = run_capturing({"node", "--no-warnings", script, path});
  std::filesystem::remove(path);
  if (!out.ok()) return out.status().with_context("SDK baseline");

  json::value report;
  try {
    report = json::parse(*out);
  } catch (const std::exception&) {
    return unavailable("SDK baseline: unexpected output: " + out->substr(0, 300));
  }
  const json::object& r = report.as_object();
  if (r.at("failures").to_number<int64_t>() != 0) {
    return unavailable("SDK baseline: " + std::string(r.at("error").as_string()));
  }
  // Scaled to `duration`: the script stops at the first reply after it.
  const double elapsed = r.at("elapsed_s").to_number<double>();
  const double wanted = std::chrono::duration<double>(duration).count();
  RawRun run;
  run.renewals = static_cast<int64_t>(r.at("updates").to_number<double>() * wanted / elapsed);
  return run;
}

// A baseline that runs `fn` with its settings.
class FunctionBaseline final : public RawBaseline {
 public:
  using Fn =
      std::function<Result<RawRun>(const std::vector<RawLease>&, int64_t, Duration, int64_t)>;
  explicit FunctionBaseline(Fn fn) : fn_(std::move(fn)) {}
  Result<RawRun> renew(const std::vector<RawLease>& leases, int64_t threads, Duration duration,
                       int64_t ttl_ms) override {
    return fn_(leases, threads, duration, ttl_ms);
  }

 private:
  Fn fn_;
};

}  // namespace

Result<RawBaselines> make_dynamodb_baselines(std::string_view rest, std::string_view table,
                                             const std::string& sdk_script) {
  LEASEHOLD_ASSIGN_OR_RETURN(const DynamoDbOptions options, parse_dynamodb_uri(rest));
  const DynamoDbTarget target{options.region, options.endpoint,
                              options.table_prefix + std::string(table)};
  RawBaselines out;
  // Pre-signed requests can go on plain sockets only.
  if (target.endpoint.starts_with("http:")) {
    out.bare = std::make_unique<FunctionBaseline>([target](const std::vector<RawLease>& leases,
                                                           int64_t threads, Duration duration,
                                                           int64_t ttl_ms) {
      return bare_http_renewals(target, leases, threads, duration, ttl_ms);
    });
  }
  if (!sdk_script.empty()) {
    out.sdk = std::make_unique<FunctionBaseline>(
        [target, sdk_script](const std::vector<RawLease>& leases, int64_t threads,
                             Duration duration, int64_t ttl_ms) {
          return sdk_renewals(sdk_script, target, leases, threads, duration, ttl_ms);
        });
  }
  return out;
}

}  // namespace leasehold::bench
