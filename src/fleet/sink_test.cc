// Tests for the sinks: whole lines, in the file at once, from many threads,
// and how much a failed write left.
#include "fleet/sink.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>
#include <vector>

#include "testing/temp_dir.h"

namespace leasehold::fleet {
namespace {

std::vector<std::string> lines_of(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

class SinkTest : public ::testing::Test {
 protected:
  const leasehold::testing::TempDir tmp_{"sink_test_"};
  const std::filesystem::path dir_ = tmp_.path();
};

TEST_F(SinkTest, LinesAreInTheFileAsSoonAsWrittenAndAppended) {
  const std::string path = (dir_ / "out.jsonl").string();
  {
    auto sink = open_sink("jsonl:" + path);
    ASSERT_TRUE(sink.ok()) << sink.status().to_string();
    size_t bytes = 0;
    ASSERT_TRUE((*sink)->write_lines("{\"a\":1}\n", &bytes).ok());
    EXPECT_EQ(bytes, 8u);
    // Not flushed, not closed: already there for a reader (and after a kill).
    EXPECT_EQ(lines_of(path), std::vector<std::string>{"{\"a\":1}"});
    ASSERT_TRUE((*sink)->flush().ok());
    EXPECT_EQ((*sink)->describe(), "jsonl:" + path);
  }
  auto again = open_sink("jsonl:" + path);
  ASSERT_TRUE(again.ok());
  size_t bytes = 0;
  ASSERT_TRUE((*again)->write_lines("{\"a\":2}\n{\"a\":3}\n", &bytes).ok());
  EXPECT_EQ(bytes, 16u);
  EXPECT_EQ(lines_of(path), (std::vector<std::string>{"{\"a\":1}", "{\"a\":2}", "{\"a\":3}"}));
}

// A write that fails part way says how far it got: the worker counts as
// written only the lines wholly before that.
TEST_F(SinkTest, AFailedWriteSaysHowMuchReachedTheSink) {
  const std::string path = (dir_ / "small.jsonl").string();
  auto sink = open_sink("jsonl:" + path);
  ASSERT_TRUE(sink.ok());
  // The file may grow to 20 bytes, then write(2) fails with EFBIG (SIGXFSZ
  // ignored, as the worker's caller would see a full disk).
  struct rlimit old_limit {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old_limit), 0);
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = old_limit;
  small.rlim_cur = 20;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  size_t bytes = 0;
  const Status written = (*sink)->write_lines("0123456789abcd\n0123456789abcd\n", &bytes);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &old_limit), 0);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(written.code(), Code::kUnavailable) << written.to_string();
  EXPECT_EQ(bytes, 20u);
  // The part of the second line is taken back out: the next write starts a
  // line of its own rather than running on from it.
  EXPECT_EQ(std::filesystem::file_size(path), 15u);
  ASSERT_TRUE((*sink)->write_lines("{\"next\":1}\n", &bytes).ok());
  EXPECT_EQ(lines_of(path), (std::vector<std::string>{"0123456789abcd", "{\"next\":1}"}));
}

// The last moment before a write: its error writes nothing; its lines are
// what goes out.
class Gate final : public BeforeWrite {
 public:
  explicit Gate(Result<std::string_view> answer) : answer_(std::move(answer)) {}
  Result<std::string_view> lines() override {
    ++calls;
    return answer_;
  }
  int calls = 0;

 private:
  Result<std::string_view> answer_;
};

TEST_F(SinkTest, WhatGoesOutIsDecidedAtTheLastMoment) {
  const std::string path = (dir_ / "gate.jsonl").string();
  auto sink = open_sink("jsonl:" + path);
  ASSERT_TRUE(sink.ok());
  size_t bytes = 7;
  Gate refuse(Result<std::string_view>(deadline_exceeded("the lease is past its deadline")));
  EXPECT_EQ((*sink)->write(refuse, &bytes).code(), Code::kDeadlineExceeded);
  EXPECT_EQ(refuse.calls, 1);
  EXPECT_EQ(bytes, 0u);
  EXPECT_EQ(std::filesystem::file_size(path), 0u);
  Gate pass(Result<std::string_view>(std::string_view("{\"a\":1}\n")));
  ASSERT_TRUE((*sink)->write(pass, &bytes).ok());
  EXPECT_EQ(bytes, 8u);
  EXPECT_EQ(lines_of(path), std::vector<std::string>{"{\"a\":1}"});
}

// A flush never waits for a write: a writer that checked its lease and is
// about to write must not be held up behind an fdatasync, nor the reverse.
TEST_F(SinkTest, AFlushDoesNotWaitForAWriteInProgress) {
  const std::string path = (dir_ / "flush.jsonl").string();
  auto sink = open_sink("jsonl:" + path);
  ASSERT_TRUE(sink.ok());
  std::promise<void> inside, release;
  std::shared_future<void> released = release.get_future().share();
  class Blocking final : public BeforeWrite {
   public:
    Blocking(std::promise<void>& inside, std::shared_future<void> released)
        : inside_(inside), released_(std::move(released)) {}
    Result<std::string_view> lines() override {
      inside_.set_value();
      released_.wait();
      return std::string_view("{\"a\":1}\n");
    }

   private:
    std::promise<void>& inside_;
    std::shared_future<void> released_;
  } blocking(inside, released);
  std::thread writer([&] {
    size_t bytes = 0;
    EXPECT_TRUE((*sink)->write(blocking, &bytes).ok());
  });
  inside.get_future().wait();  // the writer holds the write lock now
  auto flushed = std::async(std::launch::async, [&] { return (*sink)->flush(); });
  const bool returned = flushed.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  release.set_value();
  writer.join();
  ASSERT_TRUE(returned) << "flush waited for the write";
  EXPECT_TRUE(flushed.get().ok());
}

TEST_F(SinkTest, LinesFromManyThreadsNeverInterleave) {
  const std::string path = (dir_ / "many.jsonl").string();
  auto sink = open_sink("jsonl:" + path);
  ASSERT_TRUE(sink.ok());
  constexpr int kThreads = 4, kLines = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::string line = std::string(100 + t * 300, static_cast<char>('a' + t)) + '\n';
      size_t bytes = 0;
      for (int i = 0; i < kLines; ++i) ASSERT_TRUE((*sink)->write_lines(line, &bytes).ok());
    });
  }
  for (auto& t : threads) t.join();
  const auto lines = lines_of(path);
  ASSERT_EQ(lines.size(), size_t{kThreads * kLines});
  for (const auto& line : lines) {
    ASSERT_FALSE(line.empty());
    EXPECT_EQ(line, std::string(line.size(), line[0])) << "interleaved";
    EXPECT_EQ(line.size(), 100u + static_cast<size_t>(line[0] - 'a') * 300);
  }
}

TEST_F(SinkTest, BadSpecsAreRefusedAndCreateNothing) {
  for (const char* bad : {"", "jsonl:", "file:/x", "STDOUT", "jsonl"}) {
    EXPECT_EQ(open_sink(bad).status().code(), Code::kInvalidArgument) << bad;
    EXPECT_EQ(validate_sink_spec(bad).code(), Code::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(validate_sink_spec("stdout").ok());
  EXPECT_EQ(open_sink("jsonl:" + (dir_ / "no" / "such" / "dir.jsonl").string()).status().code(),
            Code::kUnavailable);
  EXPECT_TRUE(std::filesystem::is_empty(dir_));
}

}  // namespace
}  // namespace leasehold::fleet
