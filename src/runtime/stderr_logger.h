// The Loggers of the `leasehold` binary: lines on stderr, through spdlog.
//
// The commands' logger writes each message as one line, "NAME: LEVEL:
// message" (`leasehold: warning: ...`); `serve` writes JSON lines. Each line
// is flushed as it is written, so that stdout carries only what the commands
// print. The spdlog logger behind it is not registered with spdlog,
// so nothing in the process reaches it except through this object. Safe for
// concurrent use.
#pragma once

#include <memory>
#include <string>

#include "leasehold/logger.h"

namespace leasehold::runtime {

// A logger that writes messages at `min_level` and above to stderr, each
// line starting with `name` and the level.
std::unique_ptr<Logger> make_stderr_logger(std::string name, LogLevel min_level);

// A logger for servers: one JSON object per line on stderr,
//   {"ts":"2026-12-01T09:30:00.123Z","level":"info","msg":"request","status":200,...}
// with the fields of log_fields() beside "msg" (REQUIRES: no field is named
// ts, level or msg). Strings are escaped as JSON.
std::unique_ptr<Logger> make_json_stderr_logger(LogLevel min_level);

}  // namespace leasehold::runtime
