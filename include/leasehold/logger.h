// Logger: where leasehold's library code writes what it handles on its own
// and a caller would not otherwise see (a write whose outcome was unknown and
// had to be read back, renewals retried, a lease declared lost).
//
// The model is LevelDB's Options::info_log: the library never reaches for a
// global logger; a Logger is handed to it through its options
// (LeaseConfig::info_log, RenewerOptions::info_log), not owned, and null
// means that nothing is logged. The program's entry point decides where lines
// go (the `leasehold` binary writes them to stderr through spdlog).
//
// Library code asks enabled() before it builds a message, so that a level
// that is off costs a virtual call and no formatting or allocation.
// Messages never carry secrets: no lease tokens, no credentials.
//
// Every Logger implementation must be safe for concurrent use: a Renewer's
// threads and the caller's log through the same one.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <variant>

namespace leasehold {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

// One named value of a structured log line ("status": 200).
struct LogField {
  std::string_view key;
  std::variant<std::string_view, int64_t, double, bool> value;
};

class Logger {
 public:
  virtual ~Logger() = default;

  // True if a message at `level` would be written. Cheap; called before
  // every message is built.
  virtual bool enabled(LogLevel level) const = 0;

  // Writes one message (one line, without a trailing newline).
  virtual void log(LogLevel level, std::string_view message) = 0;

  // Writes one message with named values. A structured logger keeps them
  // apart (one JSON object per line); the default appends them to the
  // message as key=value.
  virtual void log_fields(LogLevel level, std::string_view message,
                          std::span<const LogField> fields);
};

// Writes nothing.
class NullLogger final : public Logger {
 public:
  bool enabled(LogLevel) const override { return false; }
  void log(LogLevel, std::string_view) override {}
};

}  // namespace leasehold
