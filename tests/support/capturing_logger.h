// CapturingLogger: a Logger for tests that keeps every message it is given,
// from a chosen level up. Thread-safe, as every Logger must be.
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "leasehold/logger.h"

namespace leasehold {

class CapturingLogger final : public Logger {
 public:
  struct Line {
    LogLevel level;
    std::string message;
  };

  explicit CapturingLogger(LogLevel min_level = LogLevel::kDebug) : min_level_(min_level) {}

  bool enabled(LogLevel level) const override { return level >= min_level_; }
  void log(LogLevel level, std::string_view message) override {
    std::lock_guard lock(mu_);
    lines_.push_back({level, std::string(message)});
  }

  std::vector<Line> lines() const {
    std::lock_guard lock(mu_);
    return lines_;
  }
  // The first message containing `part`, or "" if none does.
  std::string find(std::string_view part) const {
    std::lock_guard lock(mu_);
    for (const Line& line : lines_) {
      if (line.message.find(part) != std::string::npos) return line.message;
    }
    return "";
  }

 private:
  const LogLevel min_level_;
  mutable std::mutex mu_;
  std::vector<Line> lines_;  // by mu_
};

}  // namespace leasehold
