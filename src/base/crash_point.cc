#include "base/crash_point.h"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <optional>
#include <string>

namespace leasehold {
namespace {

constexpr std::array<std::string_view, 9> kNames = {
    "movies.upload.after_create",  "movies.probe.before_status", "movies.trace.after_start",
    "movies.trace.before_enqueue", "movies.trace.after_claim",   "movies.trace.after_publish",
    "movies.delete.after_mark",    "movies.delete.after_rows",   "movies.delete.before_item",
};
static_assert(static_cast<size_t>(CrashPoint::kDeleteBeforeItem) + 1 == kNames.size());

struct Armed {
  bool set = false;                 // the variable is set
  std::optional<CrashPoint> point;  // and names this point
  std::string text;                 // as set
};

// The variable, read once (a function-local static: initialised once,
// whichever thread comes first).
const Armed& armed() {
  static const Armed a = [] {
    Armed out;
    const char* v = std::getenv(kCrashAtEnv);  // NOLINT(concurrency-mt-unsafe): read only
    if (v == nullptr || *v == '\0') return out;
    out.set = true;
    out.text = v;
    for (size_t i = 0; i < kNames.size(); ++i) {
      if (kNames[i] == out.text) out.point = static_cast<CrashPoint>(i);
    }
    return out;
  }();
  return a;
}

}  // namespace

std::span<const std::string_view> crash_point_names() { return kNames; }

std::string_view crash_point_name(CrashPoint point) { return kNames[static_cast<size_t>(point)]; }

void crash_point(CrashPoint point) {
  const Armed& a = armed();
  if (!a.point || *a.point != point) [[likely]] {
    return;
  }
  // write(2) and kill(2) only: whatever state the process is in, and
  // nothing buffered or flushed on the way out, as a killed process.
  const std::string line = "crash point " + a.text + ": killed\n";
  (void)!::write(STDERR_FILENO, line.data(), line.size());
  ::kill(::getpid(), SIGKILL);
  ::pause();  // SIGKILL cannot be caught; this is never reached
}

Status check_crash_point_env() {
  const Armed& a = armed();
  if (!a.set || a.point) return {};
  std::string known;
  for (std::string_view name : kNames) {
    if (!known.empty()) known += ", ";
    known += name;
  }
  return invalid_argument(std::string(kCrashAtEnv) + ": no crash point '" + a.text +
                          "'; the points are " + known);
}

}  // namespace leasehold
