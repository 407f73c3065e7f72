#include "runtime/stderr_logger.h"

#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <boost/json.hpp>
#include <cassert>
#include <chrono>
#include <ctime>

namespace leasehold::runtime {
namespace {

spdlog::level::level_enum to_spdlog(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return spdlog::level::debug;
    case LogLevel::kInfo:
      return spdlog::level::info;
    case LogLevel::kWarn:
      return spdlog::level::warn;
    case LogLevel::kError:
      return spdlog::level::err;
  }
  return spdlog::level::err;
}

// spdlog's logger and sink are thread-safe (the _mt sink holds a mutex), and
// its level check is one atomic load.
class SpdlogLogger final : public Logger {
 public:
  explicit SpdlogLogger(std::shared_ptr<spdlog::logger> logger) : logger_(std::move(logger)) {}

  bool enabled(LogLevel level) const override { return logger_->should_log(to_spdlog(level)); }
  void log(LogLevel level, std::string_view message) override {
    logger_->log(to_spdlog(level), message);
  }

 private:
  const std::shared_ptr<spdlog::logger> logger_;
};

std::string_view level_name(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "error";
}

// "2026-12-01T09:30:00.123Z": UTC, milliseconds.
std::string utc_timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[32];
  const size_t n = std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(text + n, sizeof(text) - n, ".%03dZ", static_cast<int>(ms));
  return text;
}

boost::json::value json_value(const LogField& field) {
  return std::visit([](auto v) { return boost::json::value(v); }, field.value);
}

// Formats the line itself and hands spdlog only the finished text, so that
// the level check stays spdlog's and the writes stay one per line.
class JsonLogger final : public Logger {
 public:
  explicit JsonLogger(std::shared_ptr<spdlog::logger> logger) : logger_(std::move(logger)) {}

  bool enabled(LogLevel level) const override { return logger_->should_log(to_spdlog(level)); }
  void log(LogLevel level, std::string_view message) override { log_fields(level, message, {}); }
  void log_fields(LogLevel level, std::string_view message,
                  std::span<const LogField> fields) override {
    if (!enabled(level)) return;
    boost::json::object line;
    line["ts"] = utc_timestamp();
    line["level"] = level_name(level);
    line["msg"] = message;
    for (const LogField& field : fields) {
      assert(field.key != "ts" && field.key != "level" && field.key != "msg");
      line[field.key] = json_value(field);
    }
    logger_->log(to_spdlog(level), boost::json::serialize(line));
  }

 private:
  const std::shared_ptr<spdlog::logger> logger_;
};

std::shared_ptr<spdlog::logger> stderr_spdlog(std::string name, std::string pattern,
                                              LogLevel min_level) {
  auto logger = std::make_shared<spdlog::logger>(std::move(name),
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_pattern(std::move(pattern));
  logger->set_level(to_spdlog(min_level));
  return logger;
}

}  // namespace

std::unique_ptr<Logger> make_json_stderr_logger(LogLevel min_level) {
  return std::make_unique<JsonLogger>(stderr_spdlog("leasehold", "%v", min_level));
}

std::unique_ptr<Logger> make_stderr_logger(std::string name, LogLevel min_level) {
  return std::make_unique<SpdlogLogger>(stderr_spdlog(std::move(name), "%n: %l: %v", min_level));
}

}  // namespace leasehold::runtime
