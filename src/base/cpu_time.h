// CPU time, user + system, of the whole process or of the calling thread:
// for benchmarks, which report what the client itself costs. This is not
// wall or monotonic time (clock.h): it reads the kernel's per-process and
// per-thread CPU accounting. Thread-safe; a ThreadCpuTimer measures the
// thread that made it.
#pragma once

#include <time.h>

#include "leasehold/clock.h"

namespace leasehold {

inline Duration cpu_time(clockid_t clock) {
  timespec ts{};
  ::clock_gettime(clock, &ts);
  return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

inline Duration process_cpu_time() { return cpu_time(CLOCK_PROCESS_CPUTIME_ID); }

// The CPU time the calling thread has used since construction.
class ThreadCpuTimer {
 public:
  ThreadCpuTimer() : start_(cpu_time(CLOCK_THREAD_CPUTIME_ID)) {}
  Duration elapsed() const { return cpu_time(CLOCK_THREAD_CPUTIME_ID) - start_; }

 private:
  Duration start_;
};

}  // namespace leasehold
