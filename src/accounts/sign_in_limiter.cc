#include "accounts/sign_in_limiter.h"

#include <algorithm>
#include <cassert>

namespace leasehold::accounts {

SignInLimiter::SignInLimiter(Clock& clock, SignInLimits limits) : clock_(clock), limits_(limits) {
  assert(limits_.failures_per_name_max >= 1 && limits_.failures_per_address_max >= 1);
  assert(limits_.keys_max >= 1);
}

namespace {
std::string_view address_key(std::string_view address) {
  return address.substr(0, kAddressKeyBytesMax);
}
}  // namespace

SignInLimiter::Admission SignInLimiter::admit(std::string_view name, std::string_view address) {
  const MonoTime now = clock_.mono_now();
  const std::string_view address_k = address_key(address);
  MutexLock lock(mu_);
  std::optional<Duration> wait;
  if (!name.empty()) wait = wait_for(by_name_, name, limits_.failures_per_name_max, now);
  const std::optional<Duration> address_wait =
      wait_for(by_address_, address_k, limits_.failures_per_address_max, now);
  if (address_wait) wait = std::max(wait.value_or(Duration::zero()), *address_wait);
  if (wait) return Admission{false, *wait, {}};
  if (!name.empty()) record(by_name_, name, now);
  record(by_address_, address_k, now);
  return Admission{true, {}, now};
}

void SignInLimiter::succeeded(std::string_view name, std::string_view address,
                              const Admission& admission) {
  MutexLock lock(mu_);
  if (auto it = by_name_.find(name); it != by_name_.end()) by_name_.erase(it);
  forget_one(by_address_, address_key(address), admission.at);
}

void SignInLimiter::abandoned(std::string_view name, std::string_view address,
                              const Admission& admission) {
  MutexLock lock(mu_);
  if (!name.empty()) forget_one(by_name_, name, admission.at);
  forget_one(by_address_, address_key(address), admission.at);
}

std::optional<Duration> SignInLimiter::wait_for(const Counts& counts, std::string_view key, int max,
                                                MonoTime now) const {
  const auto it = counts.find(key);
  if (it == counts.end()) return std::nullopt;
  const Failures& failures = it->second;
  // Failures older than the window no longer count; the one that must age
  // out for the count to drop below max is the (size - max)-th oldest
  // still in the window.
  const auto first_live = std::find_if(failures.begin(), failures.end(), [&](MonoTime t) {
    return t + limits_.failure_window > now;
  });
  const auto live = static_cast<int>(failures.end() - first_live);
  if (live < max) return std::nullopt;
  const MonoTime unlock_at = *(first_live + (live - max)) + limits_.failure_window;
  return std::max(unlock_at - now, Duration(std::chrono::milliseconds(1)));
}

void SignInLimiter::record(Counts& counts, std::string_view key, MonoTime at) {
  auto it = counts.find(key);
  if (it == counts.end()) {
    make_room(counts, at);
    it = counts.emplace(std::string(key), Failures{}).first;
  }
  drop_expired(it->second, at);
  it->second.push_back(at);
}

void SignInLimiter::forget_one(Counts& counts, std::string_view key, MonoTime at) {
  const auto it = counts.find(key);
  if (it == counts.end()) return;
  Failures& failures = it->second;
  if (const auto f = std::find(failures.begin(), failures.end(), at); f != failures.end()) {
    failures.erase(f);
  }
  if (failures.empty()) counts.erase(it);
}

void SignInLimiter::drop_expired(Failures& failures, MonoTime now) const {
  while (!failures.empty() && failures.front() + limits_.failure_window <= now) {
    failures.pop_front();
  }
}

void SignInLimiter::make_room(Counts& counts, MonoTime now) {
  if (counts.size() < limits_.keys_max) return;
  // Rare (keys_max names or addresses failed within one window), so a full
  // sweep is fine: first whatever has aged out, then the stalest entries.
  for (auto it = counts.begin(); it != counts.end();) {
    drop_expired(it->second, now);
    it = it->second.empty() ? counts.erase(it) : std::next(it);
  }
  while (counts.size() >= limits_.keys_max) {
    const auto stalest = std::min_element(counts.begin(), counts.end(), [](auto& a, auto& b) {
      return a.second.back() < b.second.back();
    });
    counts.erase(stalest);
  }
}

}  // namespace leasehold::accounts
