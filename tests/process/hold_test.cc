// `lease hold`: the command runs under the lease, its exit code comes back,
// the lease is released afterwards, and a lost lease stops the command.
#include <signal.h>

#include "process_util.h"

namespace leasehold::process_test {
namespace {

class HoldTest : public BackendTest {
 protected:
  // Waits for the command to write its pid to `pid_file` and returns it.
  pid_t wait_for_pid(const std::filesystem::path& pid_file) const {
    std::string text;
    const bool written = eventually(
        [&] {
          text = read_file(pid_file);
          return !text.empty() && text.back() == '\n';
        },
        kEventTimeout);
    EXPECT_TRUE(written) << "the command never started";
    return written ? static_cast<pid_t>(std::stol(text)) : -1;
  }

  // Gone, or dead and waiting to be reaped: a zombie runs no code, and
  // whether anyone reaps it (its parent may be stopped on purpose) is beside
  // the point.
  static bool process_gone(pid_t pid) {
    if (pid <= 0) return false;
    const std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
    const size_t comm_end = stat.rfind(')');
    if (stat.empty() || comm_end == std::string::npos) return kill(pid, 0) != 0 && errno == ESRCH;
    const char state = stat.size() > comm_end + 2 ? stat[comm_end + 2] : '?';
    return state == 'Z' || state == 'X';
  }

  // Kills what a failed test may have left running (a grandchild the holder
  // did not stop), so that it does not outlive the test.
  static void kill_if_running(pid_t pid) {
    if (pid > 0 && !process_gone(pid)) kill(pid, SIGKILL);
  }

  std::string path(const std::string& name) const { return (dir() / name).string(); }

  // Starts `lease hold job --owner a FLAGS -- sh -c SCRIPT`.
  std::unique_ptr<Process> hold_script(const std::vector<std::string>& flags,
                                       const std::string& script) const {
    std::vector<std::string> args = {"lease", "hold", "job", "--owner", "a"};
    args.insert(args.end(), flags.begin(), flags.end());
    args.insert(args.end(), {"--", "sh", "-c", script});
    return start_lh(args);
  }

  // Starts `lease hold job --owner a FLAGS -- COMMAND`, where the command
  // records its pid and then sleeps (after `prefix`, a shell snippet); waits
  // until it runs and sets `child` to its pid.
  std::unique_ptr<Process> hold_sleeper(const std::vector<std::string>& flags, pid_t& child,
                                        const std::string& prefix = "") {
    const std::string pid_file = path("pid");
    auto hold = hold_script(flags, prefix + "echo $$ > '" + pid_file + "'; exec sleep 60");
    child = wait_for_pid(pid_file);
    return hold;
  }

  // A shell snippet that starts `sleep 1000` in the background (in the
  // command's process group) and records its pid in `grandchild_file`.
  static std::string start_grandchild(const std::string& grandchild_file) {
    return "sleep 1000 & echo $! > '" + grandchild_file + "'; ";
  }

  // Takes SQLite's write lock from another process and keeps it while the
  // shell snippet `keep_while` runs; returns once the lock is held.
  std::unique_ptr<Process> lock_store(const std::string& keep_while) const {
    auto locker = std::make_unique<Process>(
        std::vector<std::string>{
            "sh", "-c",
            "(echo '.timeout 5000'; echo 'BEGIN EXCLUSIVE;'; echo \"SELECT 'locked';\"; " +
                keep_while + "; echo 'COMMIT;') | sqlite3 '" + db_path().string() + "' 1>&2"},
        dir());
    EXPECT_TRUE(eventually([&] { return locker->err_so_far().find("locked") != std::string::npos; },
                           kEventTimeout))
        << "the store was never locked";
    return locker;
  }

  // Tries `lease acquire job --owner b` until it succeeds; returns whether
  // `precondition` held before the attempt that succeeded.
  bool take_over(const std::function<bool()>& precondition) const {
    bool held_before_success = false;
    const bool took = eventually(
        [&] {
          const bool held = precondition();
          const RunResult r = lh({"lease", "acquire", "job", "--owner", "b", "--ttl", "60s"});
          EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.err;
          held_before_success = held;
          return r.exit_code == 0;
        },
        kEventTimeout);
    EXPECT_TRUE(took) << "the holder's lease never expired";
    return took && held_before_success;
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
  ASSERT_TRUE(eventually([&] { return std::filesystem::exists(env_file); }, kEventTimeout))
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
  auto hold = hold_sleeper({"--ttl", "2s", "--grace", "300ms"}, child, "trap '' TERM; ");
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
  EXPECT_TRUE(eventually([&] { return process_gone(child); }, kEventTimeout))
      << "the command outlived its holder";
  std::optional<boost::json::object> taken;
  ASSERT_TRUE(eventually(
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
  const bool took = eventually(
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

// The scenario: the command's own children are stopped with it. The
// holder is paused until another owner has taken the lease, then resumed.
TEST_P(HoldTest, APausedHoldersCommandIsStoppedWithEverythingItStarted) {
  const std::string grandchild_file = path("grandchild");
  auto hold = hold_script({"--ttl", "2s"}, start_grandchild(grandchild_file) + "wait");
  const pid_t grandchild = wait_for_pid(grandchild_file);
  ASSERT_EQ(kill(hold->pid(), SIGSTOP), 0);
  EXPECT_TRUE(take_over([] { return true; }));
  ASSERT_EQ(kill(hold->pid(), SIGCONT), 0);
  ASSERT_TRUE(hold->wait_for(kEventTimeout)) << "the resumed holder did not notice the loss";
  EXPECT_EQ(hold->result().exit_code, 3) << hold->result().err;
  EXPECT_TRUE(eventually([&] { return process_gone(grandchild); }, kEventTimeout))
      << "the command's child outlived the lease";
  kill_if_running(grandchild);
}

TEST_P(HoldTest, AKilledHolderTakesTheCommandsChildrenAlong) {
  const std::string grandchild_file = path("grandchild");
  auto hold = hold_script({"--ttl", "2s"}, start_grandchild(grandchild_file) + "wait");
  const pid_t grandchild = wait_for_pid(grandchild_file);
  ASSERT_EQ(kill(hold->pid(), SIGKILL), 0);
  ASSERT_TRUE(hold->wait_for(kEventTimeout));
  EXPECT_TRUE(eventually([&] { return process_gone(grandchild); }, kEventTimeout))
      << "the command's child outlived its holder";
  kill_if_running(grandchild);
}

// A holder frozen for good cannot stop its command; its guard process does,
// by the lease's local deadline: before anyone else can take the lease, and
// even though the command ignores SIGTERM.
TEST_P(HoldTest, AFrozenHoldersCommandIsKilledBeforeAnotherOwnerCanTakeTheLease) {
  const std::string grandchild_file = path("grandchild");
  pid_t child = -1;
  auto hold =
      hold_sleeper({"--ttl", "2s"}, child, "trap '' TERM; " + start_grandchild(grandchild_file));
  const pid_t grandchild = wait_for_pid(grandchild_file);
  ASSERT_EQ(kill(hold->pid(), SIGSTOP), 0);
  // The holder stays stopped until the lease has changed hands.
  EXPECT_TRUE(take_over([&] { return process_gone(child) && process_gone(grandchild); }))
      << "the command (pid " << child << ") or its child (pid " << grandchild
      << ") was still running when another owner took the lease";
  ASSERT_EQ(kill(hold->pid(), SIGCONT), 0);
  ASSERT_TRUE(hold->wait_for(kEventTimeout));
  EXPECT_EQ(hold->result().exit_code, 3) << hold->result().err;
  kill_if_running(child);
  kill_if_running(grandchild);
}

TEST_P(HoldTest, AGraceThatDoesNotFitTheTtlIsRefusedBeforeAnythingIsAcquired) {
  const std::string ran = path("ran");
  RunResult r = lh(
      {"lease", "hold", "job", "--owner", "a", "--ttl", "2s", "--grace", "5s", "--", "touch", ran});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  // It names the ttl, the longest grace that fits it, and the ttl that the
  // requested grace would need.
  EXPECT_NE(r.err.find("--grace 5s"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("2s"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("366ms"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("15900ms"), std::string::npos) << r.err;
  EXPECT_FALSE(show("job")) << "a refused hold acquired the lease";
  EXPECT_FALSE(std::filesystem::exists(ran));

  // Without --grace, the default shrinks to fit.
  r = lh({"lease", "hold", "job", "--owner", "a", "--ttl", "2s", "--", "touch", ran});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(ran));
}

// What the command leaves running when it exits is killed before the lease is
// released: the leftover polls the lease and records if it ever sees it
// released, which it cannot if it dies first.
TEST_P(HoldTest, LeftoversOfACommandAreKilledBeforeTheLeaseIsReleased) {
  std::string show_command;
  for (const std::string& arg : cli({"lease", "show", "job"})) show_command += " '" + arg + "'";
  const std::string grandchild_file = path("grandchild");
  const std::string polled = path("polled");
  const std::string saw_released = path("saw_released");
  const std::string poller = "while true; do" + show_command +
                             " | grep -q '\"held\":false' && touch '" + saw_released +
                             "'; touch '" + polled + "'; done";
  const RunResult r = lh({"lease", "hold", "job", "--owner", "a", "--", "sh", "-c",
                          "(" + poller + ") & echo $! > '" + grandchild_file + "'; while [ ! -e '" +
                              polled + "' ]; do sleep 0.01; done; exit 5"});
  EXPECT_EQ(r.exit_code, 5) << r.err;
  EXPECT_NE(r.err.find("left running"), std::string::npos) << r.err;
  const pid_t grandchild = wait_for_pid(grandchild_file);
  EXPECT_TRUE(eventually([&] { return process_gone(grandchild); }, kEventTimeout))
      << "the command's leftover outlived the lease";
  kill_if_running(grandchild);
  EXPECT_EQ(show("job")->at("held"), false);
  EXPECT_FALSE(std::filesystem::exists(saw_released))
      << "the leftover was still running after the lease was released";
}

INSTANTIATE_TEST_SUITE_P(Backends, HoldTest,
                         ::testing::Values(Backend::kSqlite, Backend::kDynamoDb), backend_name);

// Scenarios that need a store that stops answering: another process holds
// SQLite's write lock.
class HoldStuckStoreTest : public HoldTest {};

// Renewals stall; the command ignores SIGTERM. It is killed before the expiry
// stored with the lease, so it never runs while another owner could hold it.
// (The grace period fits the ttl; killing only `grace` after the loss was
// declared would overshoot the expiry.)
TEST_P(HoldStuckStoreTest, ATermIgnoringCommandIsKilledBeforeTheStoredExpiry) {
  pid_t child = -1;
  auto hold = hold_sleeper({"--ttl", "6s", "--grace", "1500ms"}, child, "trap '' TERM; ");
  const std::string unlock = path("unlock");
  auto locker = lock_store("while [ ! -e '" + unlock + "' ]; do sleep 0.05; done");
  ASSERT_TRUE(eventually([&] { return process_gone(child); }, kEventTimeout))
      << "the command was never stopped";
  const int64_t dead_by_ms = wall_now_ms();
  std::ofstream(unlock).put('\n');
  ASSERT_TRUE(hold->wait_for(kEventTimeout));
  EXPECT_EQ(hold->result().exit_code, 3) << hold->result().err;
  ASSERT_TRUE(locker->wait_for(kEventTimeout));
  const auto last = show("job");
  ASSERT_TRUE(last);
  EXPECT_LT(dead_by_ms, last->at("expires_at_ms").as_int64())
      << "the command ran past the lease's stored expiry; " << hold->result().err;
}

INSTANTIATE_TEST_SUITE_P(Sqlite, HoldStuckStoreTest, ::testing::Values(Backend::kSqlite),
                         backend_name);

}  // namespace
}  // namespace leasehold::process_test
