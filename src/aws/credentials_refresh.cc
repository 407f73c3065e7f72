// The cache that refreshes temporary credentials ahead of their expiry.
//
// botocore's RefreshableCredentials (botocore/credentials.py, _refresh) has
// two windows before the expiry: in the advisory one (15 minutes) one caller
// refreshes while the others go on with the current credentials; in the
// mandatory one (10 minutes) every caller waits for the refresh. Here the
// advisory refresh runs on a thread of the source's own, so that no caller
// waits for it, not even the one that noticed: a slow endpoint then delays
// nobody until the credentials are nearly spent.
#include <algorithm>
#include <thread>

#include "aws/credentials_internal.h"
#include "base/mutex.h"

namespace leasehold::aws::credentials_internal {
namespace {

class RefreshingSource final : public CredentialsSource {
 public:
  RefreshingSource(std::string what, CredentialsFetch fetch, CredentialsOptions options,
                   std::optional<ExpiringCredentials> first)
      : what_(std::move(what)), fetch_(std::move(fetch)), options_(std::move(options)) {
    if (first) {
      MutexLock lock(mu_);
      hold(std::move(*first), options_.clock->wall_now());
    }
  }

  ~RefreshingSource() override {
    std::thread thread;
    {
      MutexLock lock(mu_);
      stopping_ = true;
      thread = std::move(thread_);
    }
    changed_.notify_all();
    // A fetch under way ends within its own timeout.
    if (thread.joinable()) thread.join();
  }

  Result<Credentials> get() override {
    MutexLock lock(mu_);
    const WallTime now = options_.clock->wall_now();
    if (held_) {
      if (!held_->expires || now + advisory_ < *held_->expires) return held_->credentials;
      if (now + mandatory_ < *held_->expires) {
        start_fetch();  // in the background; these still serve meanwhile
        return held_->credentials;
      }
    }
    // Expired, nearly so, or never fetched: wait for one fetch (the one
    // under way, if any), then take whatever it left.
    if (!start_fetch()) return current(now);
    const uint64_t seen = fetches_done_;
    while (fetches_done_ == seen) changed_.wait(mu_);
    return current(options_.clock->wall_now());
  }

 private:
  // Asks the thread for a fetch unless one is pending or a failed one is too
  // recent. True when a fetch is pending on return.
  bool start_fetch() REQUIRES(mu_) {
    if (fetch_wanted_ || fetching_) return true;
    if (retry_at_ && options_.clock->mono_now() < *retry_at_) return false;
    fetch_wanted_ = true;
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    changed_.notify_all();
    return true;
  }

  // The held credentials if they have not expired at `now`, else why not.
  Result<Credentials> current(WallTime now) REQUIRES(mu_) {
    if (held_ && (!held_->expires || now < *held_->expires)) return held_->credentials;
    if (!last_error_.ok()) return last_error_;
    return unavailable(what_ + ": the credentials expired and no new ones came");
  }

  // Keeps `c`, with windows scaled to its lifetime so that credentials that
  // live less than the advisory window are not fetched again at once.
  void hold(ExpiringCredentials c, WallTime fetched_at) REQUIRES(mu_) {
    advisory_ = options_.advisory_refresh;
    mandatory_ = options_.mandatory_refresh;
    if (c.expires) {
      const Duration lifetime = *c.expires - fetched_at;
      advisory_ = std::min(advisory_, lifetime / 2);
      mandatory_ = std::min(mandatory_, lifetime / 4);
    }
    held_ = std::move(c);
  }

  void run() {
    MutexLock lock(mu_);
    while (true) {
      while (!fetch_wanted_ && !stopping_) changed_.wait(mu_);
      if (stopping_) return;
      fetch_wanted_ = false;
      fetching_ = true;
      lock.unlock();
      Result<ExpiringCredentials> fetched = fetch_();
      const WallTime now = options_.clock->wall_now();
      lock.lock();
      fetching_ = false;
      ++fetches_done_;
      if (fetched.ok() && fetched->expires && *fetched->expires <= now) {
        fetched = unavailable(what_ + " gave credentials that had expired already");
      }
      if (fetched.ok()) {
        hold(std::move(*fetched), now);
        last_error_ = Status::ok_status();
        retry_at_.reset();
      } else {
        last_error_ = fetched.status();
        retry_at_ = options_.clock->mono_now() + options_.retry_after_failure;
      }
      changed_.notify_all();
    }
  }

  const std::string what_;
  const CredentialsFetch fetch_;
  const CredentialsOptions options_;
  Mutex mu_;
  CondVar changed_;
  std::optional<ExpiringCredentials> held_ GUARDED_BY(mu_);
  Duration advisory_ GUARDED_BY(mu_) = {};
  Duration mandatory_ GUARDED_BY(mu_) = {};
  Status last_error_ GUARDED_BY(mu_);
  bool fetch_wanted_ GUARDED_BY(mu_) = false;
  bool fetching_ GUARDED_BY(mu_) = false;
  uint64_t fetches_done_ GUARDED_BY(mu_) = 0;
  std::optional<MonoTime> retry_at_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_ GUARDED_BY(mu_);  // started with the first fetch
};

}  // namespace

std::shared_ptr<CredentialsSource> refreshing_source(std::string what, CredentialsFetch fetch,
                                                     const CredentialsOptions& options,
                                                     std::optional<ExpiringCredentials> first) {
  return std::make_shared<RefreshingSource>(std::move(what), std::move(fetch), with_clock(options),
                                            std::move(first));
}

CredentialsOptions with_clock(CredentialsOptions options) {
  if (!options.clock) options.clock = std::make_shared<RealClock>();
  return options;
}

}  // namespace leasehold::aws::credentials_internal
