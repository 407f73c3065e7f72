#include "runtime/stderr_logger.h"

#include <spdlog/logger.h>
#include <spdlog/sinks/stdout_sinks.h>

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

}  // namespace

std::unique_ptr<Logger> make_stderr_logger(std::string name, LogLevel min_level) {
  auto logger = std::make_shared<spdlog::logger>(std::move(name),
                                                 std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_pattern("%n: %l: %v");
  logger->set_level(to_spdlog(min_level));
  return std::make_unique<SpdlogLogger>(std::move(logger));
}

}  // namespace leasehold::runtime
