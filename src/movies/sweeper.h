// Sweeper: runs the movies' sweep (Movies::sweep) every `every`, from a
// thread of its own, in each process that runs the movie service
// (movies/service.h: `leasehold serve` and `leasehold trace-worker`), so
// that a movie a crash left `processing`, `queued`, `tracing` or `deleting`
// is finished or failed within a bound by whichever process looks first.
// Nothing elects one sweeper: every repair is one write conditioned on what
// its sweep read, so sweeps of many processes, or a sweep and a worker,
// change a movie once. Each sweep starts at a random point of its period
// (from 0.5 to 1.5 periods after the last), so that processes started
// together do not sweep together.
//
// A movie stuck since time T is repaired by T + grace + 1.5 periods (its
// probe, removal or message queued again; a queued job's lease expiry counts
// as T), and a probe or a job that does not come back from that is failed
// a grace and a period later per repair (movies/movies.h).
//
// Threads: one thread of its own; stats() and sweep_now() from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "leasehold/clock.h"
#include "leasehold/logger.h"
#include "leasehold/queue.h"
#include "leasehold/random.h"
#include "leasehold/status.h"
#include "movies/movies.h"

namespace leasehold::metrics {
class Registry;
}

namespace leasehold::movies {

struct SweeperOptions {
  std::string id;  // for the log
  // The period between two sweeps, on average. Positive.
  Duration every = std::chrono::minutes(1);
  SweepOptions sweep;
  Logger* logger = nullptr;  // not owned; null logs nothing
  // Where the sweeper counts its sweeps by outcome
  // (leasehold_movies_sweeps_total{outcome}) and its repairs by kind
  // (leasehold_movies_sweep_repairs_total{repair}); not owned; null counts
  // nothing but stats().
  metrics::Registry* metrics = nullptr;
};

struct SweeperStats {
  uint64_t sweeps = 0;   // sweeps that ended, well or not
  uint64_t failed = 0;   // of which the store or a queue failed
  uint64_t repairs = 0;  // movies repaired (SweepReport::repairs)
};

class Sweeper {
 public:
  // Starts the thread. kInvalidArgument for a period or grace that is not
  // positive. The waits are measured on `clock`.
  // REQUIRES: movies, probe_queue, clock and random outlive the sweeper.
  static Result<std::unique_ptr<Sweeper>> start(Movies& movies, Queue& probe_queue, Clock& clock,
                                                Random& random, SweeperOptions options);
  ~Sweeper();  // stop()
  Sweeper(const Sweeper&) = delete;
  Sweeper& operator=(const Sweeper&) = delete;

  // Sweeps now rather than at the end of the wait.
  void sweep_now();
  // Stops and returns once the thread has ended (a sweep under way first
  // ends). Idempotent.
  void stop();

  SweeperStats stats() const;

 private:
  class Impl;
  explicit Sweeper(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace leasehold::movies
