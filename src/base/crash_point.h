// Crash points: named places between two steps of a multi-step operation
// where a test may have the process killed, to show that what the first
// step left is finished or undone by someone else (as RocksDB's kill points
// and FoundationDB's buggify do). A test starts the binary with
//   LEASEHOLD_CRASH_AT=<name>
// and the process kills itself with SIGKILL the first time it reaches that
// point, after one line on stderr naming it ("crash point <name>: killed").
// Without the variable a crash point costs one branch.
//
// The points are listed here, in one place, each with where it is; nothing
// else names them. The environment is the process's own state, read once,
// at the first crash point or check_crash_point_env(): this is the one
// place outside main() that reads it for itself, as a test facility that no
// caller can pass down through every layer it crosses.
//
// Thread-safe.
#pragma once

#include <span>
#include <string_view>

#include "leasehold/status.h"

namespace leasehold {

inline constexpr char kCrashAtEnv[] = "LEASEHOLD_CRASH_AT";

enum class CrashPoint {
  // app/movies_api.cc, an upload: the movie was created `processing`, its
  // probe job not yet queued.
  kUploadAfterCreate,
  // movies.cc, Movies::probe: the frame times are written, the movie is
  // still `processing`.
  kProbeBeforeStatus,
  // movies_trace.cc, Movies::start_trace: the movie is `queued` under its
  // tracing lease; neither the job's start in the audit nor its message yet.
  kTraceAfterStart,
  // The same, its start in the audit, its message not queued.
  kTraceBeforeEnqueue,
  // trace_worker.cc: a worker claimed the job (`tracing`), and has neither
  // removed its message nor traced anything.
  kTraceAfterClaim,
  // trace_worker.cc: the job's end is published (`traced`), its audit not
  // written (job_audit_pending is set).
  kTraceAfterPublish,
  // app/movies_api.cc, a removal: the movie is marked `deleting`, its
  // removal job not yet queued.
  kDeleteAfterMark,
  // movies.cc, Movies::finish_remove: the frames, times and audit are
  // removed; the files and the item are not.
  kDeleteAfterRows,
  // The same, the files removed too; the item is not.
  kDeleteBeforeItem,
};

// Every crash point's name ("movies.upload.after_create", ...), in the
// order of the enum.
std::span<const std::string_view> crash_point_names();
std::string_view crash_point_name(CrashPoint point);

// Kills the process (SIGKILL) if LEASEHOLD_CRASH_AT names `point`;
// otherwise returns at once.
void crash_point(CrashPoint point);

// kInvalidArgument, naming the known points, if LEASEHOLD_CRASH_AT is set
// to a name that is not one of them; OK if it is unset or names one. For
// the binary's start, so that a misspelt point is an error rather than a
// test that waits for a crash that never comes.
Status check_crash_point_env();

}  // namespace leasehold
