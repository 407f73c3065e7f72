// ProbeWorker: probes uploaded movies off the request path, and finishes
// their removal. An upload creates its movie `processing` (Movies::create)
// and queues a probe job (enqueue_probe); a ProbeWorker receives it, runs
// Movies::probe (which decodes the whole file, seconds to minutes), and the
// movie becomes `ready` or `invalid`. A removal marks the movie `deleting`
// (Movies::remove) and queues a removal job (enqueue_remove), which runs
// Movies::finish_remove: the movie's rows, audit, file and item go, however
// many, off the request. A removal job that fails, or whose worker dies, is
// delivered again and carries on where it stopped.
//
// The job goes through a Queue (at-least-once, kProbeQueueName), so a
// process that dies while probing leaves the job to be delivered again to
// another one once its visibility ends: the visibility is short, and
// extended every third of it while the probe runs, when the worker also
// says on the movie that its probe is alive (Movies::probe_alive). A job
// lost altogether (never queued, or a dead letter) is queued again by the
// sweep (Movies::sweep). A repeated job is a
// no-op: probe()
// is one conditional write on `status = processing`, and a job whose movie
// is no longer processing (probed already, or removed) is deleted unread.
// A job whose probe fails on the store stays in the queue for redelivery.
//
// Threads: one thread of its own receives and probes; stats() and wake()
// may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "leasehold/clock.h"
#include "leasehold/logger.h"
#include "leasehold/queue.h"
#include "leasehold/status.h"
#include "movies/movies.h"

namespace leasehold::metrics {
class Registry;
}

namespace leasehold::movies {

// The queue probe jobs go through (QueueOptions::name).
inline constexpr char kProbeQueueName[] = "movie-probe";

// Queues the probe of movie `id`: the queue's errors (kUnavailable: not
// queued; kUnknownOutcome: perhaps queued).
Status enqueue_probe(Queue& queue, const std::string& id);
// Queues the end of the removal of movie `id` (Movies::finish_remove); errors
// as for enqueue_probe.
Status enqueue_remove(Queue& queue, const std::string& id);

struct ProbeWorkerOptions {
  std::string id;  // for the log
  // How long a received job stays hidden from other workers unless extended
  // (every third of it while its probe runs): about how long a job waits
  // for another worker after its worker died.
  Duration visibility = std::chrono::seconds(60);
  // How long the worker waits before asking an empty queue again, unless
  // woken.
  Duration idle_wait = std::chrono::seconds(1);
  Logger* logger = nullptr;  // not owned; null logs nothing
  // Where the worker counts probe jobs by outcome
  // (leasehold_movies_probes_total{outcome}); not owned; null counts
  // nothing but stats().
  metrics::Registry* metrics = nullptr;
};

struct ProbeWorkerStats {
  uint64_t messages = 0;  // jobs received
  uint64_t probed = 0;    // movies probed (ready or invalid)
  uint64_t removed = 0;   // removals finished
  uint64_t stale = 0;     // jobs of movies no longer processing (or deleting): deleted
  uint64_t failed = 0;    // probes that failed on the store: left for redelivery
};

class ProbeWorker {
 public:
  // Starts the thread. kInvalidArgument for a non-positive visibility or
  // idle wait. The waits (idle, visibility) are measured on `clock`.
  // REQUIRES: movies, queue and clock outlive the worker.
  static Result<std::unique_ptr<ProbeWorker>> start(Movies& movies, Queue& queue, Clock& clock,
                                                    ProbeWorkerOptions options);
  ~ProbeWorker();  // stop()
  ProbeWorker(const ProbeWorker&) = delete;
  ProbeWorker& operator=(const ProbeWorker&) = delete;

  // Asks the queue now instead of at the end of the idle wait (a job was
  // just queued in this process).
  void wake();
  // Stops receiving and returns once the thread has ended. A probe under way
  // is stopped with nothing written, and its job made visible again at once
  // for another worker. Idempotent.
  void stop();

  ProbeWorkerStats stats() const;

 private:
  class Impl;
  explicit ProbeWorker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace leasehold::movies
