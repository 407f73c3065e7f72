// SignInLimiter: how many failed sign-ins this process allows per user name
// and per client address within a sliding window, on an injected Clock
// (monotonic time).
//
// An attempt is admitted only while both its name and its address have
// fewer than their maximum of failures within the window, and it counts as
// a failure from the moment it is admitted until it is reported a success:
// so attempts running at the same time cannot get past the limit together.
// A refused attempt is not counted (a refused guesser does not push the
// unlock further away) and says how long to wait. A success forgets its
// name's failures but not its address's: one account that an address knows
// the password of must not reset the count of its guesses at others.
//
// Memory is bounded: past keys_max names (or addresses) with failures in
// the window, the entries whose last failure is oldest are forgotten.
//
// Thread-safe.
#pragma once

#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/mutex.h"
#include "leasehold/clock.h"

namespace leasehold::accounts {

struct SignInLimits {
  int failures_per_name_max = 5;
  int failures_per_address_max = 20;
  Duration failure_window = std::chrono::minutes(1);
  size_t keys_max = 100'000;  // per map: names, addresses
};

// Client addresses longer than this are counted by their first this many
// bytes (an IPv6 address with a zone is at most 45 + a few).
inline constexpr size_t kAddressKeyBytesMax = 128;

class SignInLimiter {
 public:
  // What admit() decided.
  struct Admission {
    bool admitted = false;
    Duration retry_after{};  // when refused: how long until an attempt may be made
    MonoTime at{};           // when admitted: the failure it counts as, for succeeded()
  };

  // REQUIRES: clock outlives this; the maxima are at least 1.
  SignInLimiter(Clock& clock, SignInLimits limits);

  // Admits an attempt (and counts it as a failure) or refuses it. An empty
  // `name` is counted by address only.
  Admission admit(std::string_view name, std::string_view address);
  // The attempt `admission` admitted succeeded: forgets the name's
  // failures and takes this attempt off the address's count.
  void succeeded(std::string_view name, std::string_view address, const Admission& admission);
  // The attempt did not get an answer (the store failed): takes it off both
  // counts, as if it had never been made.
  void abandoned(std::string_view name, std::string_view address, const Admission& admission);

 private:
  // Failures within the window, oldest first.
  using Failures = std::deque<MonoTime>;
  using Counts = std::map<std::string, Failures, std::less<>>;

  // How long until `failures` drops below `max`, or nullopt if it is below.
  std::optional<Duration> wait_for(const Counts& counts, std::string_view key, int max,
                                   MonoTime now) const REQUIRES(mu_);
  void record(Counts& counts, std::string_view key, MonoTime at) REQUIRES(mu_);
  void forget_one(Counts& counts, std::string_view key, MonoTime at) REQUIRES(mu_);
  void drop_expired(Failures& failures, MonoTime now) const;
  void make_room(Counts& counts, MonoTime now) REQUIRES(mu_);

  Clock& clock_;
  const SignInLimits limits_;
  Mutex mu_;
  Counts by_name_ GUARDED_BY(mu_);
  Counts by_address_ GUARDED_BY(mu_);
};

}  // namespace leasehold::accounts
