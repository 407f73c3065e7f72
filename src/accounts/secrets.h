// The cryptography of accounts: API tokens and session IDs (random bytes as
// hex, stored only as their SHA-256, from OpenSSL), and password hashes
// (Argon2id from libargon2, in its encoded form "$argon2id$v=19$m=...",
// which carries its own salt and cost).
//
// Pure functions, safe to call from any thread; the Random passed in is the
// caller's to serialise.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "leasehold/random.h"
#include "leasehold/status.h"

namespace leasehold::accounts {

inline constexpr size_t kSecretBytes = 32;
inline constexpr size_t kSaltBytes = 16;
inline constexpr size_t kPasswordHashBytes = 32;

struct Argon2Cost {
  uint32_t memory_kib = 19 * 1024;
  uint32_t passes = 2;
};

// kSecretBytes from `random` as 2 * kSecretBytes lowercase hex digits.
std::string new_secret(Random& random);
// True if `text` has the form new_secret() gives.
bool is_secret(std::string_view text);
// The SHA-256 of `text` as 64 lowercase hex digits.
std::string sha256_hex(std::string_view text);

// The Argon2id encoded hash of `password` with `salt` (kSaltBytes).
// kInternal if libargon2 refuses (out of memory).
Result<std::string> hash_password(std::string_view password, std::span<const std::byte> salt,
                                  const Argon2Cost& cost);
// Whether `password` matches `encoded` (whose cost and salt it carries), in
// time that does not depend on where they differ. kInternal if `encoded` is
// not an Argon2id hash.
Result<bool> verify_password(std::string_view encoded, std::string_view password);

}  // namespace leasehold::accounts
