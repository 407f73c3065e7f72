#include "base/retry.h"

#include <algorithm>
#include <cassert>

namespace leasehold {
namespace {

// 2^kDoublingsMax times any base is past any sane delay_max, and the shift
// below stays clear of overflow.
constexpr int kDoublingsMax = 30;

Duration base_of(const RetryOptions& options, RetryCause cause) {
  return cause == RetryCause::kThrottling ? options.throttling_base_delay : options.base_delay;
}

}  // namespace

Status validate_retry_options(const RetryOptions& o) {
  if (o.attempts_max < 1) return invalid_argument("retries: attempts_max must be at least 1");
  if (o.base_delay <= Duration::zero() || o.throttling_base_delay <= Duration::zero() ||
      o.delay_max <= Duration::zero()) {
    return invalid_argument("retries: the delays must be positive");
  }
  if (o.base_delay > o.delay_max || o.throttling_base_delay > o.delay_max) {
    return invalid_argument("retries: a base delay must not exceed delay_max");
  }
  if (o.quota_tokens < 0 || o.retry_cost < 0 || o.timeout_retry_cost < 0 || o.success_refill < 0) {
    return invalid_argument("retries: the quota's numbers must not be negative");
  }
  return Status::ok_status();
}

Duration retry_pause_max(const RetryOptions& options, RetryCause cause, int retry) {
  assert(retry >= 1);
  const int doublings = std::min(retry - 1, kDoublingsMax);
  const Duration base = base_of(options, cause);
  // base * 2^doublings, without overflowing: past delay_max / 2^doublings it is capped anyway.
  if (base > options.delay_max / (int64_t{1} << doublings)) return options.delay_max;
  return std::min(options.delay_max, base * (int64_t{1} << doublings));
}

Duration retry_pause(const RetryOptions& options, RetryCause cause, int retry, Random& random) {
  return Duration(random.uniform(0, retry_pause_max(options, cause, retry).count()));
}

std::string describe_stop(RetryStop stop, int attempts) {
  assert(stop != RetryStop::kNone);
  const std::string made =
      "after " + std::to_string(attempts) + (attempts == 1 ? " attempt" : " attempts");
  switch (stop) {
    case RetryStop::kQuota:
      return made + " (the retry quota is spent: the service has been failing)";
    case RetryStop::kDeadline:
      return "at the deadline " + made;
    case RetryStop::kAttempts:
    case RetryStop::kNone:
      break;
  }
  return made;
}

Retrier::Retrier(RetryOptions options, Clock& clock, Random& random)
    : options_(std::move(options)), clock_(clock), random_(random) {
  assert(validate_retry_options(options_).ok());
  quota_left_ = options_.quota_tokens;
}

Duration Retrier::draw_pause(RetryCause cause, int retry) {
  MutexLock lock(random_mu_);
  return retry_pause(options_, cause, retry, random_);
}

RetryStop Retrier::retry(Call& call, RetryCause cause) {
  if (call.attempts_ >= options_.attempts_max) return RetryStop::kAttempts;
  const Duration pause = draw_pause(cause, call.attempts_);
  if (call.deadline_ != MonoTime::max() && pause >= call.deadline_ - clock_.mono_now()) {
    return RetryStop::kDeadline;
  }
  const int cost =
      cause == RetryCause::kTimeout ? options_.timeout_retry_cost : options_.retry_cost;
  {
    MutexLock lock(mu_);
    if (cost > quota_left_) return RetryStop::kQuota;
    quota_left_ -= cost;
  }
  call.tokens_taken_ = cost;
  sleep_for(clock_, pause);
  ++call.attempts_;
  return RetryStop::kNone;
}

void Retrier::pause(RetryCause cause, int retry) { sleep_for(clock_, draw_pause(cause, retry)); }

void Retrier::succeeded(const Call& call) {
  const int refill = call.attempts_ > 1 ? call.tokens_taken_ : options_.success_refill;
  MutexLock lock(mu_);
  quota_left_ = std::min(options_.quota_tokens, quota_left_ + refill);
}

int Retrier::quota_left() const {
  MutexLock lock(mu_);
  return quota_left_;
}

}  // namespace leasehold
