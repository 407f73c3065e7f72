// `lease hold`: the command runs under the lease, its exit code comes back,
// the lease is released afterwards, and a lost lease stops the command.
#include <signal.h>

#include "process_util.h"

namespace leasehold::process_test {
namespace {

constexpr milliseconds kEventTimeout{15'000};

std::string str(const boost::json::object& o, const char* field) {
  return std::string(o.at(field).as_string());
}

class HoldTest : public BackendTest {
 protected:
  // Waits for the command to write its pid to `pid_file` and returns it.
  pid_t wait_for_pid(const std::filesystem::path& pid_file) const {
    std::string text;
    const bool written = wait_until(
        [&] {
          text = read_file(pid_file);
          return !text.empty() && text.back() == '\n';
        },
        kEventTimeout);
    EXPECT_TRUE(written) << "the command never started";
    return written ? static_cast<pid_t>(std::stol(text)) : -1;
  }

  static bool process_gone(pid_t pid) { return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH; }

  // Starts `lease hold job --owner a FLAGS -- COMMAND`, where the command
  // records its pid and then sleeps (after `prefix`, a shell snippet); waits
  // until it runs and sets `child` to its pid.
  std::unique_ptr<Process> hold_sleeper(const std::vector<std::string>& flags, pid_t& child,
                                        const std::string& prefix = "") {
    std::vector<std::string> args = {"lease", "hold", "job", "--owner", "a"};
    args.insert(args.end(), flags.begin(), flags.end());
    const std::string pid_file = (dir() / "pid").string();
    args.insert(args.end(),
                {"--", "sh", "-c", prefix + "echo $$ > '" + pid_file + "'; exec sleep 60"});
    auto hold = start_lh(args);
    child = wait_for_pid(pid_file);
    return hold;
  }

  // Ends the holder's lease behind its back, with the token it stored.
  void clear_behind_its_back() {
    const auto shown = show("job");
    ASSERT_TRUE(shown);
    ASSERT_EQ(
        lh({"lease", "release", "job", "--owner", "a", "--token", str(*shown, "token"), "--mode",
            "clear"})
            .exit_code,
        0);
  }
};

TEST_P(HoldTest, RunsTheCommandUnderTheLeaseAndReleasesAfterwards) {
  const std::string env_file = (dir() / "env.txt").string();
  const std::string stop_file = (dir() / "stop").string();
  auto hold = start_lh({"lease", "hold", "job", "--owner", "a", "--", "sh", "-c",
                        "echo \"$LEASEHOLD_TOKEN $LEASEHOLD_EPOCH\" > " + env_file + ".tmp && mv " +
                            env_file + ".tmp " + env_file + "; while [ ! -e " + stop_file +
                            " ]; do sleep 0.05; done; echo finished"});
  ASSERT_TRUE(wait_until([&] { return std::filesystem::exists(env_file); }, kEventTimeout))
      << hold->err_so_far();
  const auto shown = show("job");
  ASSERT_TRUE(shown);
  EXPECT_EQ(read_file(env_file),
            str(*shown, "token") + " " + std::to_string(shown->at("epoch").as_int64()) + "\n");
  EXPECT_EQ(shown->at("held"), true);
  EXPECT_EQ(str(*shown, "owner"), "a");

  const RunResult second = lh({"lease", "acquire", "job", "--owner", "b"});
  EXPECT_EQ(second.exit_code, 3) << second.err;
  EXPECT_EQ(str(parse_object(second.out), "owner"), "a");

  std::ofstream(stop_file).put('\n');
  ASSERT_TRUE(hold->wait_for(kEventTimeout));
  const RunResult r = hold->result();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "finished\n");  // the command's stdout, inherited
  EXPECT_EQ(show("job")->at("held"), false);
  EXPECT_EQ(acquire("job", "b").at("epoch").as_int64(), shown->at("epoch").as_int64() + 1);
}

TEST_P(HoldTest, ReturnsTheCommandsExitCode) {
  RunResult r = lh({"lease", "hold", "job", "--owner", "a", "--", "sh", "-c", "exit 7"});
  EXPECT_EQ(r.exit_code, 7) << r.err;
  EXPECT_EQ(show("job")->at("held"), false);
  r = lh({"lease", "hold", "job", "--owner", "a", "--", "sh", "-c", "kill -TERM $$"});
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.err;
  EXPECT_EQ(show("job")->at("held"), false);
  r = lh({"lease", "hold", "job", "--owner", "a", "--", "true"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_P(HoldTest, AHeldLeaseExitsThreeWithoutRunningTheCommand) {
  acquire("job", "b");
  const std::string ran = (dir() / "ran").string();
  const RunResult r = lh({"lease", "hold", "job", "--owner", "a", "--", "touch", ran});
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_EQ(str(parse_object(r.out), "owner"), "b");
  EXPECT_FALSE(std::filesystem::exists(ran));
}

TEST_P(HoldTest, SigtermToHoldIsForwardedAndTheLeaseReleased) {
  pid_t child = -1;
  auto hold = hold_sleeper({}, child);
  ASSERT_EQ(kill(hold->pid(), SIGTERM), 0);
  ASSERT_TRUE(hold->wait_for(kEventTimeout));
  EXPECT_EQ(hold->result().exit_code, 128 + SIGTERM) << hold->result().err;
  EXPECT_TRUE(process_gone(child));
  EXPECT_EQ(show("job")->at("held"), false);
}

TEST_P(HoldTest, AStolenLeaseStopsTheCommandAndExitsThree) {
  pid_t child = -1;
  auto hold = hold_sleeper({"--ttl", "1500ms"}, child);
  // Another process ends the lease behind the holder's back and takes it.
  ASSERT_NO_FATAL_FAILURE(clear_behind_its_back());
  const auto thief = acquire("job", "thief");
  ASSERT_TRUE(hold->wait_for(kEventTimeout)) << "hold did not notice the loss";
  const RunResult r = hold->result();
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("lost"), std::string::npos) << r.err;
  EXPECT_TRUE(process_gone(child));
  const auto now = show("job");
  EXPECT_EQ(str(*now, "owner"), "thief");
  EXPECT_EQ(now->at("token"), thief.at("token"));
}

TEST_P(HoldTest, ACommandThatIgnoresSigtermIsKilledAfterTheGracePeriod) {
  pid_t child = -1;
  auto hold = hold_sleeper({"--ttl", "1500ms", "--grace", "300ms"}, child, "trap '' TERM; ");
  ASSERT_NO_FATAL_FAILURE(clear_behind_its_back());
  ASSERT_TRUE(hold->wait_for(kEventTimeout));
  const RunResult r = hold->result();
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("SIGKILL"), std::string::npos) << r.err;
  EXPECT_TRUE(process_gone(child));
}

// A holder killed outright takes its command with it (nobody would renew
// the lease any more), and the lease passes to the next taker once expired,
// with a higher epoch.
TEST_P(HoldTest, AKilledHolderTakesItsCommandAlongAndTheLeaseExpires) {
  pid_t child = -1;
  auto hold = hold_sleeper({"--ttl", "1500ms"}, child);
  const auto before = show("job");
  ASSERT_TRUE(before);
  ASSERT_EQ(kill(hold->pid(), SIGKILL), 0);
  ASSERT_TRUE(hold->wait_for(kEventTimeout));
  EXPECT_TRUE(wait_until([&] { return process_gone(child); }, kEventTimeout))
      << "the command outlived its holder";
  std::optional<boost::json::object> taken;
  ASSERT_TRUE(wait_until(
      [&] {
        const RunResult r = lh({"lease", "acquire", "job", "--owner", "b", "--ttl", "20s"});
        if (r.exit_code == 0) taken = parse_object(r.out);
        return r.exit_code == 0;
      },
      kEventTimeout))
      << "the dead holder's lease never expired";
  EXPECT_GT(taken->at("epoch").as_int64(), before->at("epoch").as_int64());
}

// A holder paused (SIGSTOP) past its ttl loses the lease to another process
// and, once resumed, notices and exits 3 instead of carrying on.
TEST_P(HoldTest, APausedHolderNoticesTheLossWhenResumed) {
  pid_t child = -1;
  auto hold = hold_sleeper({"--ttl", "2s"}, child);
  ASSERT_EQ(kill(hold->pid(), SIGSTOP), 0);
  ASSERT_EQ(kill(child, SIGSTOP), 0);
  std::optional<boost::json::object> taken;
  const bool took = wait_until(
      [&] {
        const RunResult r = lh({"lease", "acquire", "job", "--owner", "b", "--ttl", "60s"});
        if (r.exit_code == 0) taken = parse_object(r.out);
        EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.err;
        return r.exit_code == 0;
      },
      kEventTimeout);
  ASSERT_TRUE(took) << "the paused holder's lease never expired";
  ASSERT_EQ(kill(child, SIGCONT), 0);
  ASSERT_EQ(kill(hold->pid(), SIGCONT), 0);
  ASSERT_TRUE(hold->wait_for(kEventTimeout)) << "the resumed holder did not notice the loss";
  const RunResult r = hold->result();
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(process_gone(child));
  const auto now = show("job");
  ASSERT_TRUE(now);
  EXPECT_EQ(str(*now, "owner"), "b");
  EXPECT_EQ(now->at("held"), true);
  EXPECT_EQ(now->at("token"), taken->at("token"));
}

INSTANTIATE_TEST_SUITE_P(Backends, HoldTest,
                         ::testing::Values(Backend::kSqlite, Backend::kDynamoDb), backend_name);

}  // namespace
}  // namespace leasehold::process_test
