// log_to(): how leasehold code writes to an injected Logger
// (leasehold/logger.h) with fmt-style formatting.
//
//   log_to(config_.info_log, LogLevel::kInfo, "lease on '{}' lost: {}", key.pk, why.message());
//
// Nothing is formatted, and nothing allocated, unless the logger is set and
// enabled at that level: the arguments are only referred to until then.
// Safe to call from any thread (Logger implementations are thread-safe).
#pragma once

#include <fmt/format.h>

#include <utility>

#include "leasehold/logger.h"

namespace leasehold {

// Writes the formatted message to `logger` if it is non-null and enabled at
// `level`.
template <typename... Args>
void log_to(Logger* logger, LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (logger == nullptr || !logger->enabled(level)) return;
  logger->log(level, fmt::format(format, std::forward<Args>(args)...));
}

template <typename... Args>
void log_to(Logger& logger, LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  log_to(&logger, level, format, std::forward<Args>(args)...);
}

}  // namespace leasehold
