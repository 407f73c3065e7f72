// The Logger of the `leasehold` binary: lines on stderr, through spdlog.
//
// Each message is one line, "NAME: LEVEL: message" (`leasehold: warning:
// ...`), flushed as it is written, so that stdout carries only what the
// commands print. The spdlog logger behind it is not registered with spdlog,
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

}  // namespace leasehold::runtime
