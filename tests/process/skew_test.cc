// Clock skew between real processes. libfaketime shifts each process's wall
// clock (monotonic time is left alone, as on real machines), so a holder
// whose clock runs behind and a taker whose clock runs ahead meet on one
// SQLite file. The holder must stop trusting its lease before the taker's
// clock lets it take over.
#include <signal.h>

#include <filesystem>

#include "process_util.h"

namespace leasehold::process_test {
namespace {

std::string faketime_library() {
  for (const char* path : {"/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
                           "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
                           "/usr/lib/faketime/libfaketimeMT.so.1"}) {
    if (std::filesystem::exists(path)) return path;
  }
  return "";
}

int64_t now_ms() {
  return std::chrono::duration_cast<milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class SkewTest : public ProcessTest {
 protected:
  // `leasehold args...` with its wall clock off by `offset` (e.g. "-0.1": 100 ms behind).
  std::vector<std::string> skewed(const std::string& offset, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"env", "LD_PRELOAD=" + faketime_library(),
                                     "FAKETIME=" + offset, "DONT_FAKE_MONOTONIC=1"};
    for (const std::string& a : cli(args)) argv.push_back(a);
    return argv;
  }
};

// The holder's clock is 100 ms behind, the taker's 100 ms ahead: 200 ms of
// skew, within the 500 ms the lease layer allows for. The store is locked
// away from the holder, so its renewals stall; it must give the lease up
// (and stop its command) before the taker's clock reaches the expiry the
// holder last wrote.
TEST_F(SkewTest, AHolderBehindGivesUpBeforeATakerAheadMayTakeOver) {
  ASSERT_FALSE(faketime_library().empty()) << "libfaketime is not installed (scripts/setup.sh)";
  const std::string pid_file = (dir() / "pid").string();
  Process hold(skewed("-0.1", {"lease", "hold", "job", "--owner", "behind", "--ttl", "2s", "--",
                               "sh", "-c", "echo $$ > '" + pid_file + "'; exec sleep 60"}),
               dir());
  ASSERT_TRUE(eventually([&] { return !read_file(pid_file).empty(); }, kEventTimeout));

  // Another process takes SQLite's write lock and keeps it for 6 s: every
  // renewal now waits, and none can succeed within the holder's validity.
  Process locker({"sh", "-c",
                  "(echo 'BEGIN EXCLUSIVE;'; echo \"SELECT 'locked';\"; sleep 6; echo 'COMMIT;') "
                  "| sqlite3 '" +
                      db_path().string() + "' 1>&2"},
                 dir());
  ASSERT_TRUE(eventually([&] { return locker.err_so_far().find("locked") != std::string::npos; },
                         kEventTimeout));
  // It logs the loss right after sending its command SIGTERM; it may exit
  // only later, once the renewal stuck behind the lock returns.
  ASSERT_TRUE(eventually(
      [&] { return hold.err_so_far().find("lost the lease") != std::string::npos; }, kEventTimeout))
      << "the stalled holder never gave up";
  const int64_t gave_up_ms = now_ms();  // true time, at or after the moment it gave up
  ASSERT_TRUE(hold.wait_for(kEventTimeout));
  EXPECT_EQ(hold.result().exit_code, 3) << hold.result().err;
  ASSERT_TRUE(locker.wait_for(kEventTimeout));

  // The expiry the holder last wrote, in its own (slow) clock.
  const auto last = show("job");
  ASSERT_TRUE(last);
  const int64_t expires_ms = last->at("expires_at_ms").as_int64();
  // The taker's clock reads true + 100 ms: it may take over once true time
  // passes expires - 100 ms. The holder must have given up before that.
  EXPECT_LT(gave_up_ms, expires_ms - 100)
      << "the holder trusted its lease until " << gave_up_ms << ", but a taker ahead by 100 ms "
      << "could take it from " << expires_ms - 100;

  // And the taker does take it, with the next epoch.
  std::optional<boost::json::object> taken;
  ASSERT_TRUE(eventually(
      [&] {
        Process taker(
            skewed("+0.1", {"lease", "acquire", "job", "--owner", "ahead", "--ttl", "20s"}), dir());
        if (!taker.wait_for(kRunTimeout) || taker.result().exit_code != 0) return false;
        taken = parse_object(taker.result().out);
        return true;
      },
      kEventTimeout));
  EXPECT_GT(taken->at("epoch").as_int64(), last->at("epoch").as_int64());
}

}  // namespace
}  // namespace leasehold::process_test
