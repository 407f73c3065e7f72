#include "movies/probe_worker.h"

#include <boost/json.hpp>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <thread>

#include "base/logging.h"
#include "base/mutex.h"
#include "metrics/registry.h"

namespace leasehold::movies {
namespace {

namespace json = boost::json;

constexpr size_t kMovieIdBytesMax = 64;

// The movie a probe job names, or empty if the body is not a probe job.
std::string movie_of(std::string_view body) {
  boost::system::error_code ec;
  const json::value v = json::parse(body, ec);
  const json::object* o = ec ? nullptr : v.if_object();
  const json::value* id = o != nullptr ? o->if_contains("movie_id") : nullptr;
  if (id == nullptr || !id->is_string()) return {};
  const json::string& s = id->as_string();
  if (s.empty() || s.size() > kMovieIdBytesMax) return {};
  return std::string(s);
}

}  // namespace

Status enqueue_probe(Queue& queue, const std::string& id) {
  return queue.send(json::serialize(json::object{{"movie_id", id}})).status();
}

class ProbeWorker::Impl {
 public:
  Impl(Movies& movies, Queue& queue, ProbeWorkerOptions options)
      : movies_(movies),
        queue_(queue),
        options_(std::move(options)),
        outcomes_(options_.metrics == nullptr
                      ? nullptr
                      : &options_.metrics->counter("leasehold_movies_probes_total",
                                                   "Probe jobs by what became of them: probed "
                                                   "(ready or invalid), stale, or failed",
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
  Result<MovieDetail> probe_keeping_hidden(const std::string& id, const std::string& receipt);
  void count(uint64_t ProbeWorkerStats::*field, const char* outcome = nullptr) {
    if (outcomes_ != nullptr && outcome != nullptr) outcomes_->with({outcome}).inc();
    MutexLock lock(mu_);
    ++(stats_.*field);
  }

  Movies& movies_;
  Queue& queue_;
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

// Waits idle_wait, or until woken or stopped. Slept on the real steady clock,
// as the trace worker's wait is.
void ProbeWorker::Impl::wait_idle() {
  const auto due = std::chrono::steady_clock::now() + options_.idle_wait;
  MutexLock lock(mu_);
  while (!stopping_ && !woken_ && std::chrono::steady_clock::now() < due) cv_.wait_until(mu_, due);
  woken_ = false;
}

// Probes while a thread of its own keeps the job hidden from other workers
// (a probe may take minutes; the visibility is short so that a dead
// worker's job comes back soon).
Result<MovieDetail> ProbeWorker::Impl::probe_keeping_hidden(const std::string& id,
                                                            const std::string& receipt) {
  std::jthread keeper([this, &receipt](std::stop_token done) {
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    while (true) {
      // Wakes at the period, or at once when the probe is done.
      (void)cv.wait_for(lock, done, options_.visibility / 3, [] { return false; });
      if (done.stop_requested()) return;
      const Result<int64_t> extended = queue_.extend_visibility(receipt, options_.visibility);
      if (!extended.ok()) {
        log_to(options_.logger, LogLevel::kInfo, "probe worker {}: visibility not extended: {}",
               options_.id, extended.status().to_string());
      }
    }
  });
  return movies_.probe(id, stop_.get_token());
}

void ProbeWorker::Impl::handle(const Message& message) {
  count(&ProbeWorkerStats::messages);
  const std::string id = movie_of(message.body);
  if (id.empty()) {
    log_to(options_.logger, LogLevel::kWarn, "probe worker {}: message {} is not a probe job",
           options_.id, message.id);
    (void)queue_.remove(message.receipt);
    return;
  }
  Result<MovieDetail> probed = probe_keeping_hidden(id, message.receipt);
  if (stop_.stop_requested()) {
    // Nothing was written: the job is another worker's to take now.
    (void)queue_.extend_visibility(message.receipt, std::chrono::milliseconds(1));
    return;
  }
  const Code code = probed.ok() ? Code::kOk : probed.status().code();
  if (code == Code::kOk) {
    count(&ProbeWorkerStats::probed, "probed");
    log_to(options_.logger, LogLevel::kInfo, "probe worker {}: movie {} is {}", options_.id, id,
           probed->status);
  } else if (code == Code::kFailedPrecondition || code == Code::kNotFound) {
    count(&ProbeWorkerStats::stale, "stale");
  } else {
    count(&ProbeWorkerStats::failed, "failed");
    log_to(options_.logger, LogLevel::kWarn, "probe worker {}: movie {} not probed: {}",
           options_.id, id, probed.status().to_string());
    return;  // the job comes back after its visibility
  }
  const Status removed = queue_.remove(message.receipt);
  if (!removed.ok()) {
    log_to(options_.logger, LogLevel::kInfo, "probe worker {}: message {} not removed: {}",
           options_.id, message.id, removed.to_string());
  }
}

Result<std::unique_ptr<ProbeWorker>> ProbeWorker::start(Movies& movies, Queue& queue,
                                                        ProbeWorkerOptions options) {
  if (options.visibility <= Duration::zero() || options.idle_wait <= Duration::zero()) {
    return invalid_argument("probe visibility and idle wait must be positive");
  }
  auto impl = std::make_unique<Impl>(movies, queue, std::move(options));
  impl->start();
  return std::unique_ptr<ProbeWorker>(new ProbeWorker(std::move(impl)));
}

ProbeWorker::ProbeWorker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProbeWorker::~ProbeWorker() { stop(); }
void ProbeWorker::wake() { impl_->wake(); }
void ProbeWorker::stop() { impl_->stop(); }
ProbeWorkerStats ProbeWorker::stats() const { return impl_->stats(); }

}  // namespace leasehold::movies
