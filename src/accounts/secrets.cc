#include "accounts/secrets.h"

#include <argon2.h>
#include <openssl/evp.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace leasehold::accounts {
namespace {

// Argon2's lanes; one, since a server hashes for many requests at once and
// gains nothing from threads inside one hash.
constexpr uint32_t kArgon2Lanes = 1;

std::string to_hex(std::span<const unsigned char> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(bytes.size() * 2, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xF];
  }
  return out;
}

struct DigestContextFree {
  void operator()(EVP_MD_CTX* context) const { EVP_MD_CTX_free(context); }
};

}  // namespace

std::string new_secret(Random& random) {
  std::array<std::byte, kSecretBytes> bytes;
  random.fill(bytes);
  return to_hex({reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()});
}

bool is_secret(std::string_view text) {
  if (text.size() != 2 * kSecretBytes) return false;
  for (const char c : text) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string sha256_hex(std::string_view text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest;
  unsigned int size = 0;
  // Fetched once: EVP_sha256() makes OpenSSL look the implementation up
  // again at every call, which cost more than hashing a token (every
  // authenticated request hashes one). Never freed: it lives as long as the
  // process.
  static EVP_MD* const sha256 = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  // One context per thread, used again for every hash, rather than one
  // allocated and freed by each EVP_Digest call; freed with its thread.
  thread_local const std::unique_ptr<EVP_MD_CTX, DigestContextFree> context(EVP_MD_CTX_new());
  // These fail only if OpenSSL cannot allocate (nor fetch); a hash that
  // could not be computed must not be mistaken for one.
  if (sha256 == nullptr || context == nullptr ||
      EVP_DigestInit_ex2(context.get(), sha256, nullptr) != 1 ||
      EVP_DigestUpdate(context.get(), text.data(), text.size()) != 1 ||
      EVP_DigestFinal_ex(context.get(), digest.data(), &size) != 1) {
    std::abort();
  }
  return to_hex({digest.data(), size});
}

Result<std::string> hash_password(std::string_view password, std::span<const std::byte> salt,
                                  const Argon2Cost& cost) {
  std::string encoded(argon2_encodedlen(cost.passes, cost.memory_kib, kArgon2Lanes, salt.size(),
                                        kPasswordHashBytes, Argon2_id),
                      '\0');
  const int rc = argon2id_hash_encoded(cost.passes, cost.memory_kib, kArgon2Lanes, password.data(),
                                       password.size(), salt.data(), salt.size(),
                                       kPasswordHashBytes, encoded.data(), encoded.size());
  if (rc != ARGON2_OK) {
    return internal_error(std::string("cannot hash the password: ") + argon2_error_message(rc));
  }
  encoded.resize(std::strlen(encoded.c_str()));
  return encoded;
}

Result<bool> verify_password(std::string_view encoded, std::string_view password) {
  const std::string terminated(encoded);  // argon2id_verify reads a C string
  const int rc = argon2id_verify(terminated.c_str(), password.data(), password.size());
  if (rc == ARGON2_OK) return true;
  if (rc == ARGON2_VERIFY_MISMATCH) return false;
  return internal_error(std::string("cannot check the password against its stored hash: ") +
                        argon2_error_message(rc));
}

}  // namespace leasehold::accounts
