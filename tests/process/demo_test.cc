// `leasehold demo` as a process: the scripted run ends with a summary of no
// gap and exit 0, removes its directory and leaves no child behind; stopped
// with SIGTERM it stops its children, and killed with SIGKILL its children
// die with it. Its temporary directory is put under the test's own (TMPDIR),
// and every child's command line names the store in it, which is how the
// tests find the children in /proc.
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "process_util.h"

namespace leasehold::process_test {
namespace {

using namespace std::chrono_literals;

constexpr auto kScriptTimeout = 100s;

class DemoTest : public ProcessTest {
 protected:
  std::filesystem::path tmpdir() const { return dir() / "tmp"; }

  std::unique_ptr<Process> start_demo(const std::vector<std::string>& flags) {
    std::filesystem::create_directories(tmpdir());
    std::vector<std::string> argv = {"env", "TMPDIR=" + tmpdir().string(), leasehold_bin(), "demo"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    return std::make_unique<Process>(argv, dir());
  }

  // The processes whose command line mentions the demo's directory.
  std::vector<pid_t> children_left() const {
    std::vector<pid_t> found;
    for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
      const std::string name = entry.path().filename().string();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream in(entry.path() / "cmdline", std::ios::binary);
      const std::string cmdline((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
      if (cmdline.find(tmpdir().string()) != std::string::npos) found.push_back(std::stoi(name));
    }
    return found;
  }

  bool tmpdir_empty() const { return std::filesystem::is_empty(tmpdir()); }
};

TEST_F(DemoTest, NoWaitEndsWithNoGapAndLeavesNothingBehind) {
  auto demo = start_demo({"--no-wait"});
  ASSERT_TRUE(demo->wait_for(kScriptTimeout)) << demo->out_so_far() << demo->err_so_far();
  const RunResult r = demo->result();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("The dashboard: http://127.0.0.1:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("killing (SIGKILL) w1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("every connection of w1 owned again"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("every connection of w2 owned again"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("summary: 0 gaps,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("duplicates only on the killed worker's connections"), std::string::npos)
      << r.out;
  EXPECT_TRUE(children_left().empty());
  EXPECT_TRUE(tmpdir_empty());
}

TEST_F(DemoTest, SigtermStopsEveryChildAndRemovesTheDirectory) {
  auto demo = start_demo({"--connections", "6"});
  ASSERT_TRUE(wait_until(
      [&] { return demo->out_so_far().find("started workers") != std::string::npos; }, 30s))
      << demo->out_so_far() << demo->err_so_far();
  ASSERT_FALSE(children_left().empty());
  kill(demo->pid(), SIGTERM);
  ASSERT_TRUE(demo->wait_for(30s));
  EXPECT_EQ(demo->result().exit_code, 0) << demo->result().err;
  EXPECT_TRUE(children_left().empty());
  EXPECT_TRUE(tmpdir_empty());
}

TEST_F(DemoTest, ChildrenDieWithAKilledDemo) {
  auto demo = start_demo({"--connections", "6"});
  ASSERT_TRUE(wait_until(
      [&] { return demo->out_so_far().find("started workers") != std::string::npos; }, 30s))
      << demo->out_so_far() << demo->err_so_far();
  ASSERT_FALSE(children_left().empty());
  kill(demo->pid(), SIGKILL);
  ASSERT_TRUE(demo->wait_for(10s));
  EXPECT_TRUE(wait_until([&] { return children_left().empty(); }, 10s));
}

}  // namespace
}  // namespace leasehold::process_test
