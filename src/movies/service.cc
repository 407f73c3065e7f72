#include "movies/service.h"

#include "movies/schema.h"
#include "sqs/sqs_queue.h"

namespace leasehold::movies {
namespace {

// How long an idle worker waits before asking the queue again: one query a
// second per worker on the store while nothing happens.
constexpr Duration kIdleWait = std::chrono::seconds(1);

// Deliveries a job gets before it becomes a dead letter, on either queue.
const int kJobReceivesMax = QueueOptions{}.max_receives;

Result<std::unique_ptr<Queue>> open_job_queue(ItemStore& store, Clock& clock, Random& random,
                                              const ServiceOptions& o, std::string_view kind) {
  if (o.queue.empty()) {
    LEASEHOLD_ASSIGN_OR_RETURN(
        std::unique_ptr<StoreQueue> queue,
        StoreQueue::open(store, clock, random,
                         QueueOptions{.name = std::string(kind), .max_receives = kJobReceivesMax}));
    return std::unique_ptr<Queue>(std::move(queue));
  }
  LEASEHOLD_ASSIGN_OR_RETURN(sqs::SqsQueueOptions options, sqs::parse_sqs_uri(o.queue));
  options.queue_name = sqs_job_queue_name(options.queue_name, kind);
  options.receive_wait = o.sqs_receive_wait;
  options.clock = &clock;
  LEASEHOLD_ASSIGN_OR_RETURN(std::unique_ptr<sqs::SqsQueue> queue,
                             sqs::SqsQueue::open(std::move(options)));
  return std::unique_ptr<Queue>(std::move(queue));
}

}  // namespace

std::string sqs_job_queue_name(std::string_view name, std::string_view kind) {
  return std::string(name) + "-" + std::string(kind);
}

Status create_sqs_job_queues(std::string_view queue_uri) {
  LEASEHOLD_ASSIGN_OR_RETURN(const sqs::SqsQueueOptions options, sqs::parse_sqs_uri(queue_uri));
  for (std::string_view kind : {kTraceQueueName, kProbeQueueName}) {
    sqs::SqsQueueOptions one = options;
    one.queue_name = sqs_job_queue_name(options.queue_name, kind);
    LEASEHOLD_RETURN_IF_ERROR(sqs::SqsQueue::create(one, kJobReceivesMax));
  }
  return {};
}

std::vector<SqsJobQueueSpec> sqs_job_queue_specs() {
  std::vector<SqsJobQueueSpec> out;
  for (std::string_view kind : {kTraceQueueName, kProbeQueueName}) {
    out.push_back({.name = std::string(kind),
                   .dead_letter_name = std::string(kind) + "-dead",
                   .max_receives = kJobReceivesMax,
                   .dead_letter_retention_seconds = sqs::kDeadLetterRetentionSeconds});
  }
  return out;
}

Result<std::unique_ptr<Service>> Service::start(ItemStore& store, Clock& clock, Random& random,
                                                ServiceOptions o) {
  if (o.trace_workers > kWorkersMax || o.probe_workers > kWorkersMax) {
    return invalid_argument("at most " + std::to_string(kWorkersMax) +
                            " trace workers and as many probe workers");
  }
  if (o.queue.empty()) LEASEHOLD_RETURN_IF_ERROR(store.require_table(StoreQueue::table_spec()));
  // Not make_unique: the constructor is private, so that start() is the
  // only way to get a Service, and every Service runs.
  std::unique_ptr<Service> s(new Service());
  LEASEHOLD_ASSIGN_OR_RETURN(
      s->media_, open_media(o.media_dir, {.temp_parent = {}, .clock = &clock, .log = o.logger}));
  LEASEHOLD_ASSIGN_OR_RETURN(s->trace_queue_,
                             open_job_queue(store, clock, random, o, kTraceQueueName));
  LEASEHOLD_ASSIGN_OR_RETURN(s->probe_queue_,
                             open_job_queue(store, clock, random, o, kProbeQueueName));
  MoviesOptions mo;
  mo.media = s->media_.get();
  mo.analysis_ttl = o.analysis_ttl;
  mo.tracing_ttl = o.tracing_ttl;
  mo.lease = o.lease;
  mo.logger = o.logger;
  LEASEHOLD_ASSIGN_OR_RETURN(s->movies_, Movies::open(store, clock, random, *s->trace_queue_, mo));
  for (size_t i = 0; i < o.probe_workers; ++i) {
    ProbeWorkerOptions po;
    po.id = o.worker_prefix + "-probe" + std::to_string(i);
    po.idle_wait = kIdleWait;
    po.logger = o.logger;
    po.metrics = o.metrics;
    LEASEHOLD_ASSIGN_OR_RETURN(auto worker,
                               ProbeWorker::start(*s->movies_, *s->probe_queue_, clock, po));
    s->probe_workers_.push_back(std::move(worker));
  }
  for (size_t i = 0; i < o.trace_workers; ++i) {
    TraceWorkerOptions to;
    to.id = o.worker_prefix + "-trace" + std::to_string(i);
    to.tracing_ttl = o.tracing_ttl;
    to.media = s->media_.get();
    // Jobs queued in this process wake the worker at once (trace_queued);
    // the wait only decides how soon one queued elsewhere is seen.
    to.idle_wait = kIdleWait;
    to.nice = o.trace_nice;
    to.progress_deadline = o.trace_progress_deadline;
    to.lease = o.lease;
    to.logger = o.logger;
    to.metrics = o.metrics;
    LEASEHOLD_ASSIGN_OR_RETURN(
        auto worker, TraceWorker::start(store, clock, random, *s->trace_queue_, std::move(to)));
    s->trace_workers_.push_back(std::move(worker));
  }
  if (o.sweep_every > Duration::zero()) {
    SweeperOptions so;
    so.id = o.worker_prefix + "-sweep";
    so.every = o.sweep_every;
    so.sweep.grace = o.sweep_grace;
    so.logger = o.logger;
    so.metrics = o.metrics;
    LEASEHOLD_ASSIGN_OR_RETURN(
        s->sweeper_, Sweeper::start(*s->movies_, *s->probe_queue_, clock, random, std::move(so)));
  }
  return s;
}

Service::~Service() { stop(); }

void Service::probe_queued() {
  for (const auto& w : probe_workers_) w->wake();
}

void Service::trace_queued() {
  for (const auto& w : trace_workers_) w->wake();
}

void Service::stop() {
  if (sweeper_) sweeper_->stop();
  for (const auto& w : trace_workers_) w->stop();
  for (const auto& w : probe_workers_) w->stop();
}

std::vector<TraceWorkerStats> Service::trace_stats() const {
  std::vector<TraceWorkerStats> out;
  for (const auto& w : trace_workers_) out.push_back(w->stats());
  return out;
}

}  // namespace leasehold::movies
