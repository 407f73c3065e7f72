// The binary's loggers, read back from stderr: the JSON logger writes one
// parseable object per line with its fields, escaped, and nothing below its
// level; Logger's default log_fields() appends key=value.
#include "runtime/stderr_logger.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <vector>

#include "testing/capturing_logger.h"

namespace leasehold::runtime {
namespace {

// Sends fd 2 to a temporary file while alive; lines() reads what was written.
class StderrCapture {
 public:
  StderrCapture() : file_(std::tmpfile()), saved_(::dup(2)) {
    std::fflush(stderr);
    ::dup2(::fileno(file_), 2);
  }
  ~StderrCapture() {
    restore();
    std::fclose(file_);
  }
  std::vector<std::string> lines() {
    restore();
    std::rewind(file_);
    std::vector<std::string> out;
    char buffer[4096];
    while (std::fgets(buffer, sizeof(buffer), file_) != nullptr) {
      std::string line(buffer);
      if (!line.empty() && line.back() == '\n') line.pop_back();
      out.push_back(line);
    }
    return out;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(stderr);
    ::dup2(saved_, 2);
    ::close(saved_);
    saved_ = -1;
  }
  std::FILE* file_;
  int saved_;
};

TEST(JsonLoggerTest, WritesOneObjectPerLineWithItsFieldsEscaped) {
  StderrCapture capture;
  {
    auto log = make_json_stderr_logger(LogLevel::kInfo);
    EXPECT_FALSE(log->enabled(LogLevel::kDebug));
    log->log(LogLevel::kDebug, "not written");
    const LogField fields[] = {
        {"status", int64_t{200}}, {"path", std::string_view("/a\"b\n\x01é")}, {"ok", true}, {"ms", 1.5}};
    log->log_fields(LogLevel::kInfo, "request", fields);
    log->log(LogLevel::kWarn, "plain \"message\"");
  }
  const std::vector<std::string> lines = capture.lines();
  ASSERT_EQ(lines.size(), 2u);
  const boost::json::object first = boost::json::parse(lines[0]).as_object();
  EXPECT_EQ(first.at("level"), "info");
  EXPECT_EQ(first.at("msg"), "request");
  EXPECT_EQ(first.at("status"), 200);
  EXPECT_EQ(first.at("path"), "/a\"b\n\x01é");
  EXPECT_EQ(lines[0].rfind(R"({"ts":")", 0), 0u) << "ts, level and msg come first";
  EXPECT_NE(lines[0].find(R"("level":"info","msg":"request","status":200,)"), std::string::npos)
      << lines[0];
  EXPECT_EQ(first.at("ok"), true);
  EXPECT_EQ(first.at("ms"), 1.5);
  const std::string ts(first.at("ts").as_string());
  EXPECT_EQ(ts.size(), 24u) << ts;  // 2026-12-01T09:30:00.123Z
  EXPECT_EQ(ts.back(), 'Z');
  const boost::json::object second = boost::json::parse(lines[1]).as_object();
  EXPECT_EQ(second.at("level"), "warn");
  EXPECT_EQ(second.at("msg"), "plain \"message\"");
}

TEST(LoggerTest, TheDefaultLogFieldsAppendsKeyValuePairs) {
  CapturingLogger log;
  const LogField fields[] = {{"status", int64_t{404}}, {"route", std::string_view("/x")}};
  log.log_fields(LogLevel::kInfo, "request", fields);
  ASSERT_EQ(log.lines().size(), 1u);
  EXPECT_EQ(log.lines()[0].message, "request status=404 route=/x");
}

}  // namespace
}  // namespace leasehold::runtime
