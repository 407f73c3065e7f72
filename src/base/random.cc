#include "leasehold/random.h"

#include <openssl/rand.h>

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace leasehold {

uint64_t Random::next_u64() {
  uint64_t v;
  fill(std::as_writable_bytes(std::span(&v, 1)));
  return v;
}

int64_t Random::uniform(int64_t lo, int64_t hi) {
  assert(lo <= hi);
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  if (span == UINT64_MAX) return static_cast<int64_t>(next_u64());
  const uint64_t n = span + 1;
  // Rejection sampling keeps the distribution exactly uniform.
  const uint64_t limit = UINT64_MAX - (UINT64_MAX % n);
  uint64_t v;
  do {
    v = next_u64();
  } while (v >= limit);
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + v % n);
}

double Random::uniform01() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

void SystemRandom::fill(std::span<std::byte> out) {
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(out.size())) != 1) {
    std::fputs("leasehold: the system CSPRNG failed; refusing to continue\n", stderr);
    std::abort();
  }
}

namespace {
uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

SeededRandom::SeededRandom(uint64_t seed) {
  for (auto& s : s_) s = splitmix64(seed);
}

uint64_t SeededRandom::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

void SeededRandom::fill(std::span<std::byte> out) {
  size_t i = 0;
  while (i < out.size()) {
    const uint64_t v = next();
    const size_t n = std::min(sizeof v, out.size() - i);
    std::memcpy(out.data() + i, &v, n);
    i += n;
  }
}

std::string random_token(Random& random) {
  std::byte bytes[16];
  random.fill(bytes);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token(32, '0');
  for (size_t i = 0; i < 16; ++i) {
    const auto b = static_cast<unsigned>(bytes[i]);
    token[2 * i] = kHex[b >> 4];
    token[2 * i + 1] = kHex[b & 0xf];
  }
  return token;
}

bool is_well_formed_token(std::string_view token) {
  if (token.size() != 32) return false;
  for (char c : token) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace leasehold
