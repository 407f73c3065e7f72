#include "base/packed.h"

#include <openssl/evp.h>
#include <zlib.h>

#include <cassert>

namespace leasehold {

std::string pack_text(std::string_view text) {
  uLongf size = compressBound(static_cast<uLong>(text.size()));
  std::string deflated(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(deflated.data()), &size,
                reinterpret_cast<const Bytef*>(text.data()), static_cast<uLong>(text.size()),
                Z_BEST_COMPRESSION) != Z_OK) {
    return {};
  }
  std::string out(4 * ((size + 2) / 3), '\0');
  const int written = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                      reinterpret_cast<const unsigned char*>(deflated.data()),
                                      static_cast<int>(size));
  assert(static_cast<size_t>(written) == out.size());
  return out;
}

std::optional<std::string> unpack_text(std::string_view packed, size_t unpacked_max) {
  // Deflate shrinks text by at most about 1,000 times; longer packed text
  // than its unpacked bound is not worth decoding.
  if (packed.empty() || packed.size() % 4 != 0 || packed.size() > unpacked_max + 64) {
    return std::nullopt;
  }
  std::string deflated(packed.size() / 4 * 3, '\0');
  const int decoded = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(deflated.data()),
                                      reinterpret_cast<const unsigned char*>(packed.data()),
                                      static_cast<int>(packed.size()));
  if (decoded < 0) return std::nullopt;
  // EVP_DecodeBlock counts the padding as zero bytes.
  const size_t padding = packed.ends_with("==") ? 2 : packed.ends_with('=') ? 1 : 0;
  std::string text(unpacked_max, '\0');
  uLongf size = static_cast<uLongf>(text.size());
  if (uncompress(reinterpret_cast<Bytef*>(text.data()), &size,
                 reinterpret_cast<const Bytef*>(deflated.data()),
                 static_cast<uLong>(static_cast<size_t>(decoded) - padding)) != Z_OK) {
    return std::nullopt;
  }
  text.resize(size);
  return text;
}

}  // namespace leasehold
