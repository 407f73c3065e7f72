// Service: the movie tracing service of one process, wired the same way by
// `leasehold serve` (which adds the HTTP API, app/movies_api.h) and by
// `leasehold trace-worker`: the two job queues on the store (traces and
// probes, StoreQueue), Movies over them, the probe and trace workers that
// run in this process, and its Sweeper (movies/sweeper.h), which repairs
// the movies crashes left unfinished, whichever process left them.
//
// stop() stops the sweeper and the workers: a trace under way is published
// as interrupted (TraceWorker::stop) and a probe under way is handed back
// to the queue.
//
// Thread-safe: movies(), probe_queue() and the wake calls may be used from
// any thread; stop() from one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "leasehold/clock.h"
#include "leasehold/lease.h"
#include "leasehold/logger.h"
#include "leasehold/queue.h"
#include "leasehold/random.h"
#include "leasehold/status.h"
#include "leasehold/store.h"
#include "movies/media.h"
#include "movies/movies.h"
#include "movies/probe_worker.h"
#include "movies/sweeper.h"
#include "movies/trace_worker.h"

namespace leasehold::movies {

inline constexpr size_t kWorkersMax = 64;  // of each kind, in one process

struct ServiceOptions {
  // Where movie files are kept: a folder, which must exist, or
  // "s3://BUCKET/PREFIX[?endpoint=URL]" (media.h).
  std::string media_dir;
  // Where the jobs queue: empty for the store (StoreQueue), or an SQS URI
  // "sqs://REGION/NAME[?endpoint=URL]" for the SQS queues NAME-movie-trace
  // and NAME-movie-probe (sqs_job_queue_name()), which must exist
  // (create_sqs_job_queues()).
  std::string queue;
  // How long an idle worker's receive waits on SQS for a job (long polling):
  // fewer requests, and a stop() that waits as long for a receive to end.
  Duration sqs_receive_wait = std::chrono::seconds(2);
  Duration analysis_ttl = kDefaultLeaseTtl;
  // The tracing lease's ttl: from the trace's start until a worker claims
  // it, and then as the worker renews it.
  Duration tracing_ttl = kDefaultLeaseTtl;
  size_t trace_workers = 1;  // 0..kWorkersMax
  size_t probe_workers = 1;  // 0..kWorkersMax
  int trace_nice = 10;       // TraceWorkerOptions::nice
  Duration trace_progress_deadline =
      std::chrono::minutes(2);  // TraceWorkerOptions::progress_deadline
  // How often this process sweeps the movies (Sweeper; zero: never) and
  // the sweep's grace (SweepOptions::grace).
  Duration sweep_every = std::chrono::minutes(1);
  Duration sweep_grace = kDefaultSweepGrace;
  // Names the workers: "<prefix>-trace0", "<prefix>-probe0", ... Unique
  // among the processes of a fleet (host name and process ID, say).
  std::string worker_prefix;
  // The clock-skew bound and safety margin of the leases.
  LeaseConfig lease;
  Logger* logger = nullptr;  // not owned; null logs nothing
  // Where the workers count jobs and probes (not owned); null: nowhere.
  metrics::Registry* metrics = nullptr;
};

// The SQS queue of a job kind (kTraceQueueName, kProbeQueueName) under
// the URI's NAME: "NAME-movie-trace".
std::string sqs_job_queue_name(std::string_view name, std::string_view kind);

// Creates the SQS job queues of `queue_uri` and their dead-letter queues,
// idempotently (SqsQueue::create); kInvalidArgument for a malformed URI.
Status create_sqs_job_queues(std::string_view queue_uri);

// What create_sqs_job_queues() makes, named as under the URI's NAME + "-".
struct SqsJobQueueSpec {
  std::string name;              // "movie-trace"
  std::string dead_letter_name;  // "movie-trace-dead"
  int max_receives = 0;          // deliveries before a job becomes a dead letter
  int64_t dead_letter_retention_seconds = 0;
};
std::vector<SqsJobQueueSpec> sqs_job_queue_specs();

class Service {
 public:
  // Requires the movie tables and the queue table (or the SQS queues), opens the queues and
  // Movies, and starts the workers. kInvalidArgument for bad options (a ttl
  // that leaves no room for the skew bound, a media folder that is not one,
  // too many workers); the store's errors.
  // REQUIRES: store, clock, random and the logger outlive the service.
  static Result<std::unique_ptr<Service>> start(ItemStore& store, Clock& clock, Random& random,
                                                ServiceOptions options);
  ~Service();  // stop()
  Service(const Service&) = delete;
  Service& operator=(const Service&) = delete;

  Movies& movies() { return *movies_; }
  MediaStore& media() { return *media_; }
  Queue& probe_queue() { return *probe_queue_; }
  Queue& trace_queue() { return *trace_queue_; }
  // A probe or trace job was queued by this process: its workers ask the
  // queue at once.
  void probe_queued();
  void trace_queued();
  // Stops every worker and returns once they have ended. Idempotent.
  void stop();

  std::vector<TraceWorkerStats> trace_stats() const;

 private:
  Service() = default;

  std::unique_ptr<MediaStore> media_;  // first made, last gone
  std::unique_ptr<Queue> trace_queue_, probe_queue_;
  std::unique_ptr<Movies> movies_;
  std::vector<std::unique_ptr<TraceWorker>> trace_workers_;
  std::vector<std::unique_ptr<ProbeWorker>> probe_workers_;
  std::unique_ptr<Sweeper> sweeper_;  // null when this process does not sweep
};

}  // namespace leasehold::movies
