// `leasehold demo` as a process: the scripted run ends with a summary of no
// gap and exit 0, removes its directory and leaves no child behind; the
// sample movie it uploads is ready for the user `demo`, read through the
// API after signing in with the password the demo printed; stopped
// with SIGTERM it stops its children, and killed with SIGKILL its children
// die with it. Its temporary directory is put under the test's own (TMPDIR),
// and every child's command line names the store in it, which is how the
// tests find the children in /proc.
#include <signal.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <utility>

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

  // `curl ARGS... URL`, keeping cookies in the test's jar as a browser
  // does: the status and the body, status 0 if no answer came.
  std::pair<int, std::string> curl(std::vector<std::string> args, const std::string& url) const {
    const std::string jar = (dir() / "cookies.txt").string();
    std::vector<std::string> argv = {"curl", "-s", "--max-time", "10", "-b",
                                     jar,    "-c", jar,          "-w", "\n%{http_code}"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back(url);
    const RunResult r = run(argv);
    const size_t newline = r.out.rfind('\n');
    if (r.exit_code != 0 || newline == std::string::npos) return {0, r.out + r.err};
    return {std::stoi(r.out.substr(newline + 1)), r.out.substr(0, newline)};
  }
};

TEST_F(DemoTest, NoWaitEndsWithNoGapAndLeavesNothingBehind) {
  auto demo = start_demo({"--no-wait"});
  ASSERT_TRUE(demo->wait_for(kScriptTimeout)) << demo->out_so_far() << demo->err_so_far();
  const RunResult r = demo->result();
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("The dashboard: http://127.0.0.1:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("A sample movie: http://127.0.0.1:"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("sample movie could not"), std::string::npos) << r.err;
  // The API token the demo uploaded with (64 hex digits) is never printed.
  EXPECT_FALSE(std::regex_search(r.out + r.err, std::regex("[0-9a-f]{64}"))) << r.out << r.err;
  EXPECT_NE(r.out.find("killing (SIGKILL) w1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("every connection of w1 owned again"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("every connection of w2 owned again"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("summary: 0 gaps,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("duplicates only on the killed worker's connections"), std::string::npos)
      << r.out;
  EXPECT_TRUE(children_left().empty());
  EXPECT_TRUE(tmpdir_empty());
}

TEST_F(DemoTest, TheSampleMovieIsReadyForTheDemoUser) {
  auto demo = start_demo({"--connections", "6"});
  const std::regex printed(
      "The dashboard: http://([^/]+)/\\n.*\\n  password +(\\S+)\\n[\\s\\S]*"
      "A sample movie: http://([^/]+)/movies/([0-9a-z]+) ");
  std::smatch m;
  std::string out;
  ASSERT_TRUE(eventually(
      [&] {
        out = demo->out_so_far();
        return std::regex_search(out, m, printed) ||
               demo->err_so_far().find("sample movie could not") != std::string::npos ||
               demo->wait_for(0ms);
      },
      60s))
      << out << demo->err_so_far();
  ASSERT_TRUE(std::regex_search(out, m, printed)) << out << demo->err_so_far();
  const std::string origin = "http://" + m[1].str(), password = m[2].str(), id = m[4].str();
  EXPECT_EQ(m[3].str(), m[1].str());

  // Signed in with the printed password, as the sign-in page does.
  const auto [signed_in, me] =
      curl({"-X", "POST", "-H", "Content-Type: application/json", "-H", "Origin: " + origin,
            "--data-binary", "{\"name\":\"demo\",\"password\":\"" + password + "\"}"},
           origin + "/api/session");
  ASSERT_EQ(signed_in, 200) << me;
  const auto [status, body] = curl({}, origin + "/api/movies/" + id);
  ASSERT_EQ(status, 200) << body;
  const boost::json::object movie = parse_object(body);
  EXPECT_EQ(movie.at("status"), "ready") << body;
  EXPECT_EQ(movie.at("name"), "Sample: moving spots") << body;
  EXPECT_EQ(movie.at("owner_display_name"), "Demo User") << body;
  EXPECT_EQ(movie.at("width"), 640) << body;
  EXPECT_EQ(movie.at("height"), 360) << body;
  EXPECT_EQ(movie.at("frame_count"), 250) << body;
  const auto [listed, list] = curl({}, origin + "/api/movies");
  ASSERT_EQ(listed, 200) << list;
  EXPECT_EQ(boost::json::parse(list).as_array().size(), 1u) << list;
  EXPECT_EQ(curl({"-o", "/dev/null"}, origin + "/api/movies/" + id + "/frames/249.jpg").first, 200);
  // The printed address is the movie's Analyze page.
  const auto [page_status, page] = curl({}, origin + "/movies/" + id);
  EXPECT_EQ(page_status, 200);
  EXPECT_NE(page.find("/js/shell.js"), std::string::npos) << page;

  kill(demo->pid(), SIGTERM);
  ASSERT_TRUE(demo->wait_for(30s));
  EXPECT_EQ(demo->result().exit_code, 0) << demo->result().err;
  EXPECT_EQ(demo->result().err.find("sample movie could not"), std::string::npos)
      << demo->result().err;
  EXPECT_TRUE(tmpdir_empty());
}

TEST_F(DemoTest, SigtermStopsEveryChildAndRemovesTheDirectory) {
  auto demo = start_demo({"--connections", "6"});
  ASSERT_TRUE(eventually(
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
  ASSERT_TRUE(eventually(
      [&] { return demo->out_so_far().find("started workers") != std::string::npos; }, 30s))
      << demo->out_so_far() << demo->err_so_far();
  ASSERT_FALSE(children_left().empty());
  kill(demo->pid(), SIGKILL);
  ASSERT_TRUE(demo->wait_for(10s));
  EXPECT_TRUE(eventually([&] { return children_left().empty(); }, 10s));
}

}  // namespace
}  // namespace leasehold::process_test
