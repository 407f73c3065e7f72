#include "leasehold/logger.h"

#include <string>

namespace leasehold {
namespace {

void append_value(std::string& out, const LogField& field) {
  struct Append {
    std::string& out;
    void operator()(std::string_view v) const { out.append(v); }
    void operator()(int64_t v) const { out.append(std::to_string(v)); }
    void operator()(double v) const { out.append(std::to_string(v)); }
    void operator()(bool v) const { out.append(v ? "true" : "false"); }
  };
  std::visit(Append{out}, field.value);
}

}  // namespace

void Logger::log_fields(LogLevel level, std::string_view message,
                        std::span<const LogField> fields) {
  std::string line(message);
  for (const LogField& field : fields) {
    line.append(" ").append(field.key).append("=");
    append_value(line, field);
  }
  log(level, line);
}

}  // namespace leasehold
