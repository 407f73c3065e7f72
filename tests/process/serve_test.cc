// `leasehold serve` as a process: it refuses unsafe flags before opening
// anything, listens where told, logs JSON lines with no secret in them, and
// on SIGTERM stops and exits 0. Over TLS, with a certificate made in the
// test, it marks the session cookie Secure, sends Strict-Transport-Security,
// expects an https:// Origin and gives plain HTTP no HTTP answer; with TLS
// (or --insecure-http) it may listen on an address that is not loopback.
#include <signal.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "process_util.h"
#include "tests/server/self_signed.h"

namespace leasehold::process_test {
namespace {

using namespace std::chrono_literals;

const std::string kBobPassword = "tls test passphrase";

// A response as `curl -D -` prints it: the head, then the body.
struct CurlResponse {
  int status = 0;
  std::string head, body;

  // The value of header `name` (lower-case) in the head, or "" if absent.
  std::string header(const std::string& name) const {
    std::string lower = head;
    std::ranges::transform(lower, lower.begin(), [](unsigned char c) { return std::tolower(c); });
    const size_t at = lower.find("\r\n" + name + ":");
    if (at == std::string::npos) return "";
    const size_t start = head.find_first_not_of(' ', at + 3 + name.size());
    return head.substr(start, head.find("\r\n", start) - start);
  }
};

class ServeTest : public ProcessTest {
 protected:
  // Starts `serve ARGS...` and waits for its "listening" line; the port it
  // logs, or "" if it did not listen within 20 s. `tls` is what the line
  // must say of TLS.
  std::string start_serve(const std::vector<std::string>& args, bool tls) {
    std::vector<std::string> argv = {"serve", "--media-dir", (dir() / "media").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    server_ = start_lh(argv);
    const std::regex listening("\"msg\":\"listening\",\"address\":\"[^\"]*:([0-9]+)\",\"tls\":" +
                               std::string(tls ? "true" : "false"));
    std::smatch port;
    const bool listens = eventually(
        [&] {
          const std::string err = server_->err_so_far();
          return std::regex_search(err, listening) || server_->wait_for(0ms);
        },
        20s);
    const std::string err = server_->err_so_far();
    EXPECT_TRUE(listens && std::regex_search(err, port, listening)) << err;
    return port.empty() ? "" : port[1].str();
  }

  // SIGTERM, then the exit: 0, every line of the log JSON; the log.
  std::string stop_serve() {
    EXPECT_EQ(::kill(server_->pid(), SIGTERM), 0);
    EXPECT_TRUE(server_->wait_for(10s));
    if (!server_->exited()) return "";
    const RunResult r = server_->result();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (const std::string& line : lines_of(r.err)) parse_object(line);
    EXPECT_NE(r.err.find("\"msg\":\"stopped\""), std::string::npos) << r.err;
    return r.err;
  }

  std::unique_ptr<Process> server_;
};

TEST_F(ServeTest, PlainHttpOnANonLoopbackAddressIsRefused) {
  const RunResult r = lh({"serve", "--listen", "0.0.0.0:0"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("not loopback"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(db_path())) << "nothing was opened";
  EXPECT_EQ(lh({"serve", "--listen", "127.0.0.1"}).exit_code, 2);
  EXPECT_EQ(lh({"serve", "--listen", "example.com:80"}).exit_code, 2);
  EXPECT_EQ(lh({"serve", "--tls-cert", "/etc/hostname"}).exit_code, 2) << "a key is needed too";
}

TEST_F(ServeTest, ServesUntilSigtermThenExitsZeroAndLogsNoSecret) {
  ASSERT_EQ(lh({"store", "init"}).exit_code, 0);
  const std::string port = start_serve({"--listen", "127.0.0.1:0"}, false);
  ASSERT_FALSE(port.empty());
  const RunResult health = run({"curl", "-s", "-f", "http://127.0.0.1:" + port + "/healthz"});
  EXPECT_EQ(health.exit_code, 0);
  EXPECT_EQ(health.out, "{\"status\":\"ok\"}");
  const RunResult me = run({"curl", "-s", "-H", "Authorization: Bearer s3cr3t-not-a-token",
                            "http://127.0.0.1:" + port + "/api/me"});
  EXPECT_NE(me.out.find("unauthenticated"), std::string::npos) << me.out;
  const std::string log = stop_serve();
  EXPECT_EQ(log.find("s3cr3t"), std::string::npos) << "a credential reached the log";
}

// `serve` keeps a token check for as long as the store is unchanged; a
// user removed by another process is refused at its next request.
TEST_F(ServeTest, AUserRemovedByAnotherProcessIsRefusedAtTheNextRequest) {
  ASSERT_EQ(lh({"store", "init"}).exit_code, 0);
  std::map<std::string, std::string> tokens;
  for (const std::string name : {"ann", "bob"}) {
    const RunResult added = lh({"user", "add", name, "--display-name", name});
    ASSERT_EQ(added.exit_code, 0) << added.err;
    tokens[name] = std::string(parse_object(added.out).at("token").as_string());
  }
  const std::string port = start_serve({"--listen", "127.0.0.1:0", "--trace-workers", "0"}, false);
  ASSERT_FALSE(port.empty());
  const auto me = [&](const std::string& name) {
    const RunResult r = run({"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H",
                             "Authorization: Bearer " + tokens[name],
                             "http://127.0.0.1:" + port + "/api/me"});
    return r.out;
  };
  for (int i = 0; i < 3; ++i) ASSERT_EQ(me("ann"), "200");
  ASSERT_EQ(lh({"user", "rm", "ann"}).exit_code, 0);
  EXPECT_EQ(me("ann"), "401");
  EXPECT_EQ(me("bob"), "200");
  stop_serve();
}

class ServeTlsTest : public ServeTest {
 protected:
  void SetUp() override {
    const server::testing::SelfSigned pair = server::testing::make_self_signed();
    cert_file_ = (dir() / "cert.pem").string();
    key_file_ = (dir() / "key.pem").string();
    std::ofstream(cert_file_) << pair.cert_pem;
    std::ofstream(key_file_) << pair.key_pem;
  }

  // `args`, then the TLS flags with the test's certificate and key.
  std::vector<std::string> with_tls(std::vector<std::string> args) const {
    args.insert(args.end(), {"--tls-cert", cert_file_, "--tls-key", key_file_});
    return args;
  }

  // `curl ARGS... URL` over HTTP/1.1 with the test's certificate as the only
  // CA it trusts; the response, status 0 if none.
  CurlResponse curl(const std::vector<std::string>& args, const std::string& url) const {
    std::vector<std::string> argv = {"curl",     "-s",       "--http1.1", "--max-time", "10",
                                     "--cacert", cert_file_, "-D",        "-"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back(url);
    const RunResult r = run(argv);
    CurlResponse response;
    const size_t end = r.out.find("\r\n\r\n");
    if (r.exit_code != 0 || end == std::string::npos) return response;
    response.head = r.out.substr(0, end + 2);
    response.body = r.out.substr(end + 4);
    std::sscanf(response.head.c_str(), "HTTP/1.1 %d", &response.status);
    return response;
  }

  // POST /api/session at `server` as bob, sent with `origin` as its Origin.
  CurlResponse sign_in(const std::string& server, const std::string& origin) const {
    return curl({"-X", "POST", "-H", "Content-Type: application/json", "-H", "Origin: " + origin,
                 "--data-binary", "{\"name\":\"bob\",\"password\":\"" + kBobPassword + "\"}"},
                server + "/api/session");
  }

  std::string cert_file_, key_file_;
};

TEST_F(ServeTlsTest, SignInSetsASecureCookieAndEveryAnswerSendsHsts) {
  const RunResult added =
      run({"sh", "-c", "echo \"$0\" | exec \"$@\"", kBobPassword, leasehold_bin(), "--store",
           store_uri(), "user", "add", "bob", "--display-name", "Bob", "--password-stdin"});
  ASSERT_EQ(added.exit_code, 0) << added.err;
  const std::string port = start_serve(with_tls({"--listen", "127.0.0.1:0"}), true);
  ASSERT_FALSE(port.empty());
  const std::string origin = "https://127.0.0.1:" + port;

  const CurlResponse signed_in = sign_in(origin, origin);
  ASSERT_EQ(signed_in.status, 200) << signed_in.head << signed_in.body;
  const std::string cookie = signed_in.header("set-cookie");
  EXPECT_TRUE(cookie.starts_with("leasehold_session=")) << cookie;
  EXPECT_NE(cookie.find("; Secure"), std::string::npos) << cookie;
  EXPECT_NE(cookie.find("; HttpOnly"), std::string::npos) << cookie;
  EXPECT_NE(cookie.find("; SameSite=Strict"), std::string::npos) << cookie;
  EXPECT_EQ(signed_in.header("strict-transport-security"), "max-age=31536000");

  const std::string session = cookie.substr(0, cookie.find(';'));
  const CurlResponse me = curl({"-H", "Cookie: " + session}, origin + "/api/me");
  EXPECT_EQ(me.status, 200) << me.head << me.body;
  EXPECT_NE(me.body.find("\"name\":\"bob\""), std::string::npos) << me.body;
  const CurlResponse missing = curl({}, origin + "/nowhere");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.header("strict-transport-security"), "max-age=31536000");

  // The server's own origin is https://: the same sign-in from http:// is
  // another site's.
  const CurlResponse cross = sign_in(origin, "http://127.0.0.1:" + port);
  EXPECT_EQ(cross.status, 403) << cross.body;
  EXPECT_TRUE(cross.header("set-cookie").empty());

  // Plain HTTP to the TLS port: the handshake fails and no HTTP answer comes.
  const RunResult plain = run({"curl", "-s", "--max-time", "10", "-o", "/dev/null", "-w",
                               "%{http_code}", "http://127.0.0.1:" + port + "/healthz"});
  EXPECT_NE(plain.exit_code, 0);
  EXPECT_EQ(plain.out, "000");

  const std::string log = stop_serve();
  EXPECT_EQ(log.find(kBobPassword), std::string::npos) << "the password reached the log";
  EXPECT_EQ(log.find(session.substr(session.find('=') + 1)), std::string::npos)
      << "the session ID reached the log";
}

// Plain HTTP on an address that is not loopback is refused (above) unless
// --insecure-http says a TLS proxy is in front; with TLS it is served.
TEST_F(ServeTlsTest, ANonLoopbackAddressIsServedWithTlsOrInsecureHttp) {
  ASSERT_EQ(lh({"store", "init"}).exit_code, 0);
  std::string port = start_serve({"--listen", "0.0.0.0:0", "--insecure-http"}, false);
  ASSERT_FALSE(port.empty());
  const RunResult plain = run({"curl", "-s", "-f", "http://127.0.0.1:" + port + "/healthz"});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  stop_serve();

  port = start_serve(with_tls({"--listen", "0.0.0.0:0"}), true);
  ASSERT_FALSE(port.empty());
  const CurlResponse health = curl({}, "https://127.0.0.1:" + port + "/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "{\"status\":\"ok\"}");
  stop_serve();
}

// A key that does not belong to the certificate, and a certificate file that
// is not one: exit 2, naming the file and quoting nothing of it.
TEST_F(ServeTlsTest, TlsFilesThatCannotBeUsedExitTwo) {
  const std::string other_key = (dir() / "other-key.pem").string();
  std::ofstream(other_key) << server::testing::make_self_signed().key_pem;
  RunResult r =
      lh({"serve", "--listen", "127.0.0.1:0", "--tls-cert", cert_file_, "--tls-key", other_key});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(other_key), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("PRIVATE KEY"), std::string::npos) << r.err;

  const std::string garbage = (dir() / "garbage.pem").string();
  std::ofstream(garbage) << "-----BEGIN CERTIFICATE-----\nU0VDUkVU SECRETSECRET\n"
                            "-----END CERTIFICATE-----\n";
  r = lh({"serve", "--listen", "127.0.0.1:0", "--tls-cert", garbage, "--tls-key", key_file_});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(garbage), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("SECRET"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace leasehold::process_test
