#include "runtime/stderr_logger.h"

#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <boost/json.hpp>
#include <cassert>
#include <chrono>
#include <ctime>
#include <string>
#include <type_traits>

#include "base/text.h"

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

// Appends "2026-12-01T09:30:00.123Z": UTC, milliseconds. Each thread
// formats a second's date and time once and reuses the text for the lines
// it writes within that second.
void append_utc_timestamp(std::string& out) {
  // A log line's time is for people reading it, not one the code acts on.
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  thread_local std::time_t formatted_second = -1;
  thread_local char date_time[24];
  thread_local size_t date_time_size = 0;
  if (seconds != formatted_second) {
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    date_time_size = std::strftime(date_time, sizeof(date_time), "%Y-%m-%dT%H:%M:%S", &utc);
    formatted_second = seconds;
  }
  out.append(date_time, date_time_size);
  const char millis[] = {'.', static_cast<char>('0' + ms / 100),
                         static_cast<char>('0' + ms / 10 % 10), static_cast<char>('0' + ms % 10),
                         'Z'};
  out.append(millis, sizeof(millis));
}

void append_json_value(std::string& out, const LogField& field) {
  std::visit(
      [&](auto v) {
        using T = decltype(v);
        if constexpr (std::is_same_v<T, std::string_view>) {
          append_json_string(v, out);
        } else if constexpr (std::is_same_v<T, bool>) {
          out += v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          out += std::to_string(v);
        } else {
          out += boost::json::serialize(boost::json::value(v));
        }
      },
      field.value);
}

// Writes the line itself, in order (ts, level, msg, then the fields), and
// hands spdlog only the finished text, so that the level check stays
// spdlog's and the writes stay one per line. Every request's access line
// comes through here: no JSON tree is built for it.
class JsonLogger final : public Logger {
 public:
  explicit JsonLogger(std::shared_ptr<spdlog::logger> logger) : logger_(std::move(logger)) {}

  bool enabled(LogLevel level) const override { return logger_->should_log(to_spdlog(level)); }
  void log(LogLevel level, std::string_view message) override { log_fields(level, message, {}); }
  void log_fields(LogLevel level, std::string_view message,
                  std::span<const LogField> fields) override {
    if (!enabled(level)) return;
    std::string line;
    line.reserve(160 + message.size());
    line += R"({"ts":")";
    append_utc_timestamp(line);
    line += R"(","level":")";
    line += level_name(level);
    line += R"(","msg":)";
    append_json_string(message, line);
    for (const LogField& field : fields) {
      assert(field.key != "ts" && field.key != "level" && field.key != "msg");
      line += ',';
      append_json_string(field.key, line);
      line += ':';
      append_json_value(line, field);
    }
    line += '}';
    logger_->log(to_spdlog(level), line);
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
