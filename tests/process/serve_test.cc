// `leasehold serve` as a process: it refuses unsafe flags before opening
// anything, listens where told, logs JSON lines with no secret in them, and
// on SIGTERM stops and exits 0.
#include <signal.h>

#include <regex>

#include "process_util.h"

namespace leasehold::process_test {
namespace {

using namespace std::chrono_literals;

class ServeTest : public ProcessTest {};

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
  auto server = start_lh({"serve", "--listen", "127.0.0.1:0"});
  std::smatch port;
  const std::regex listening("\"msg\":\"listening\",\"address\":\"127\\.0\\.0\\.1:([0-9]+)\"");
  ASSERT_TRUE(wait_until(
      [&] {
        const std::string err = server->err_so_far();
        return std::regex_search(err, listening);
      },
      20s))
      << server->err_so_far();
  const std::string err = server->err_so_far();
  ASSERT_TRUE(std::regex_search(err, port, listening));
  const RunResult health =
      run({"curl", "-s", "-f", "http://127.0.0.1:" + port[1].str() + "/healthz"});
  EXPECT_EQ(health.exit_code, 0);
  EXPECT_EQ(health.out, "{\"status\":\"ok\"}");
  const RunResult me = run({"curl", "-s", "-H", "Authorization: Bearer s3cr3t-not-a-token",
                            "http://127.0.0.1:" + port[1].str() + "/api/me"});
  EXPECT_NE(me.out.find("unauthenticated"), std::string::npos) << me.out;

  ASSERT_EQ(::kill(server->pid(), SIGTERM), 0);
  ASSERT_TRUE(server->wait_for(10s));
  const RunResult r = server->result();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const std::string& line : lines_of(r.err)) parse_object(line);  // every line is JSON
  EXPECT_NE(r.err.find("\"msg\":\"stopped\""), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("s3cr3t"), std::string::npos) << "a credential reached the log";
}

}  // namespace
}  // namespace leasehold::process_test
