// Random: the only source of randomness in leasehold.
//
// SystemRandom draws from OpenSSL's CSPRNG and is what tokens come from in
// production. SeededRandom is a small deterministic generator (xoshiro256**)
// so that a simulation run can be replayed from its seed. SystemRandom is safe
// for concurrent use; SeededRandom is not (a simulation owns one per run).
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>

namespace leasehold {

class Random {
 public:
  virtual ~Random() = default;

  // Fills `out` with random bytes.
  virtual void fill(std::span<std::byte> out) = 0;

  uint64_t next_u64();
  // A uniform integer in [lo, hi]. REQUIRES: lo <= hi.
  int64_t uniform(int64_t lo, int64_t hi);
  // A uniform double in [0, 1).
  double uniform01();
  // True with probability p.
  bool chance(double p) { return uniform01() < p; }
};

class SystemRandom final : public Random {
 public:
  // Aborts if the CSPRNG cannot be seeded: a token that is not unguessable
  // must never be handed out.
  void fill(std::span<std::byte> out) override;
};

class SeededRandom final : public Random {
 public:
  explicit SeededRandom(uint64_t seed);
  void fill(std::span<std::byte> out) override;

 private:
  uint64_t next();
  uint64_t s_[4];
};

// 128 random bits as 32 lowercase hex digits: the form of every lease token.
std::string random_token(Random& random);

// True if `token` has the form random_token() produces.
bool is_well_formed_token(std::string_view token);

}  // namespace leasehold
