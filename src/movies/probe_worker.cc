#include "movies/probe_worker.h"

#include <functional>
#include <stop_token>
#include <thread>

#include "base/logging.h"
#include "base/mutex.h"
#include "metrics/registry.h"
#include "movies/job_messages.h"
#include "movies/schema.h"

namespace leasehold::movies {
namespace {

using internal::MovieJob;

// Runs `extend` every `period` on `clock`, from a thread of its own, until
// it is destroyed.
class Extender {
 public:
  Extender(Clock& clock, Duration period, std::function<void()> extend)
      : clock_(clock), period_(period), extend_(std::move(extend)), thread_([this] { run(); }) {}
  ~Extender() {
    {
      MutexLock lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  Extender(const Extender&) = delete;
  Extender& operator=(const Extender&) = delete;

 private:
  void run() EXCLUDES(mu_) {
    MutexLock lock(mu_);
    while (!done_) {
      const MonoTime due = clock_.mono_now() + period_;
      while (!done_ && clock_.mono_now() < due) cv_.wait_until(mu_, clock_, due);
      if (done_) return;
      lock.unlock();
      extend_();
      lock.lock();
    }
  }

  Clock& clock_;
  const Duration period_;
  const std::function<void()> extend_;
  Mutex mu_;
  CondVar cv_;
  bool done_ GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: it starts once the rest is made
};

}  // namespace

Status enqueue_probe(Queue& queue, const std::string& id) {
  return queue.send(internal::movie_job_body({.movie_id = id, .remove = false})).status();
}

Status enqueue_remove(Queue& queue, const std::string& id) {
  return queue.send(internal::movie_job_body({.movie_id = id, .remove = true})).status();
}

class ProbeWorker::Impl {
 public:
  Impl(Movies& movies, Queue& queue, Clock& clock, ProbeWorkerOptions options)
      : movies_(movies),
        queue_(queue),
        clock_(clock),
        options_(std::move(options)),
        outcomes_(options_.metrics == nullptr
                      ? nullptr
                      : &options_.metrics->counter("leasehold_movies_probes_total",
                                                   "Probe and removal jobs by what became of "
                                                   "them: probed (ready or invalid), removed, "
                                                   "stale, or failed",
                                                   {"outcome"})) {}

  void start() {
    thread_ = std::thread([this] { loop(); });
  }
  void wake() {
    MutexLock lock(mu_);
    woken_ = true;
    cv_.notify_all();
  }
  void stop() {
    {
      MutexLock lock(mu_);
      stopping_ = true;
      cv_.notify_all();
    }
    stop_.request_stop();
    if (thread_.joinable()) thread_.join();
  }
  ProbeWorkerStats stats() const {
    MutexLock lock(mu_);
    return stats_;
  }

 private:
  void loop();
  void wait_idle();
  void handle(const Message& message);
  Status run_keeping_hidden(const MovieJob& job, const std::string& receipt);
  void count(uint64_t ProbeWorkerStats::*field, const char* outcome = nullptr) {
    if (outcomes_ != nullptr && outcome != nullptr) outcomes_->with({outcome}).inc();
    MutexLock lock(mu_);
    ++(stats_.*field);
  }

  Movies& movies_;
  Queue& queue_;
  Clock& clock_;
  const ProbeWorkerOptions options_;
  metrics::Family<metrics::Counter>* const outcomes_;  // null without a registry
  std::stop_source stop_;

  mutable Mutex mu_;
  CondVar cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool woken_ GUARDED_BY(mu_) = false;
  ProbeWorkerStats stats_ GUARDED_BY(mu_);
  std::thread thread_;
};

void ProbeWorker::Impl::loop() {
  while (!stop_.stop_requested()) {
    Result<std::vector<Message>> got = queue_.receive(1, options_.visibility);
    if (!got.ok()) {
      log_to(options_.logger, LogLevel::kWarn, "probe worker {}: receive failed: {}", options_.id,
             got.status().to_string());
    }
    if (!got.ok() || got->empty()) {
      wait_idle();
      continue;
    }
    for (const Message& m : *got) handle(m);
  }
}

// Waits idle_wait on the worker's clock, or until woken or stopped.
void ProbeWorker::Impl::wait_idle() {
  const MonoTime due = clock_.mono_now() + options_.idle_wait;
  MutexLock lock(mu_);
  while (!stopping_ && !woken_ && clock_.mono_now() < due) cv_.wait_until(mu_, clock_, due);
  woken_ = false;
}

// Runs the job while a thread of its own keeps it hidden from other workers
// (a probe may take minutes; the visibility is short so that a dead
// worker's job comes back soon), and says on the movie that its probe is
// alive, so that the sweep leaves it be.
Status ProbeWorker::Impl::run_keeping_hidden(const MovieJob& job, const std::string& receipt) {
  // Its thread ends as soon as the probe is done, when `keeper` goes.
  const Extender keeper(clock_, options_.visibility / 3, [this, &job, &receipt] {
    const Result<int64_t> extended = queue_.extend_visibility(receipt, options_.visibility);
    if (!extended.ok()) {
      log_to(options_.logger, LogLevel::kInfo, "probe worker {}: visibility not extended: {}",
             options_.id, extended.status().to_string());
    }
    if (!job.remove) (void)movies_.probe_alive(job.movie_id);
  });
  if (job.remove) return movies_.finish_remove(job.movie_id);
  Result<MovieDetail> probed = movies_.probe(job.movie_id, stop_.get_token());
  if (!probed.ok()) return probed.status();
  log_to(options_.logger, LogLevel::kInfo, "probe worker {}: movie {} is {}", options_.id,
         job.movie_id, probed->status);
  if (probed->status != kStatusReady) return {};
  // Then its proxy, for going to any frame fast (the movie is ready, and
  // shown from its own file, meanwhile). A proxy not made is not the
  // probe's failure: the frames are still shown, only slower.
  const Status proxy = movies_.make_proxy(job.movie_id, stop_.get_token());
  if (!proxy.ok() && !stop_.stop_requested()) {
    log_to(options_.logger, LogLevel::kWarn, "probe worker {}: movie {}: {}", options_.id,
           job.movie_id, proxy.to_string());
  }
  return {};
}

void ProbeWorker::Impl::handle(const Message& message) {
  count(&ProbeWorkerStats::messages);
  const MovieJob job = internal::parse_movie_job(message.body);
  if (job.movie_id.empty()) {
    log_to(options_.logger, LogLevel::kWarn, "probe worker {}: message {} is not a movie job",
           options_.id, message.id);
    (void)queue_.remove(message.receipt);
    return;
  }
  const Status done = run_keeping_hidden(job, message.receipt);
  if (stop_.stop_requested() && !job.remove) {
    // Nothing was written: the job is another worker's to take now.
    (void)queue_.extend_visibility(message.receipt, std::chrono::milliseconds(1));
    return;
  }
  if (done.ok()) {
    if (job.remove) {
      count(&ProbeWorkerStats::removed, "removed");
      log_to(options_.logger, LogLevel::kInfo, "probe worker {}: movie {} removed", options_.id,
             job.movie_id);
    } else {
      count(&ProbeWorkerStats::probed, "probed");
    }
  } else if (done.code() == Code::kFailedPrecondition || done.code() == Code::kNotFound) {
    count(&ProbeWorkerStats::stale, "stale");
  } else {
    count(&ProbeWorkerStats::failed, "failed");
    log_to(options_.logger, LogLevel::kWarn, "probe worker {}: {} of movie {} failed: {}",
           options_.id, job.remove ? "removal" : "probe", job.movie_id, done.to_string());
    return;  // the job comes back after its visibility
  }
  const Status removed = queue_.remove(message.receipt);
  if (!removed.ok()) {
    log_to(options_.logger, LogLevel::kInfo, "probe worker {}: message {} not removed: {}",
           options_.id, message.id, removed.to_string());
  }
}

Result<std::unique_ptr<ProbeWorker>> ProbeWorker::start(Movies& movies, Queue& queue, Clock& clock,
                                                        ProbeWorkerOptions options) {
  if (options.visibility <= Duration::zero() || options.idle_wait <= Duration::zero()) {
    return invalid_argument("probe visibility and idle wait must be positive");
  }
  auto impl = std::make_unique<Impl>(movies, queue, clock, std::move(options));
  impl->start();
  return std::unique_ptr<ProbeWorker>(new ProbeWorker(std::move(impl)));
}

ProbeWorker::ProbeWorker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProbeWorker::~ProbeWorker() { stop(); }
void ProbeWorker::wake() { impl_->wake(); }
void ProbeWorker::stop() { impl_->stop(); }
ProbeWorkerStats ProbeWorker::stats() const { return impl_->stats(); }

}  // namespace leasehold::movies
