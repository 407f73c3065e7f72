#include "store/sqlite/wal_index.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace leasehold::store::sqlite {
namespace {

// SQLite's WalIndexHdr (wal.c), in the machine's byte order. The wal-index
// begins with two copies of it.
struct Header {
  uint32_t version;  // kVersion
  uint32_t unused;
  uint32_t change;  // counts transactions
  uint8_t is_init;  // 1 once initialised
  uint8_t big_endian_checksums;
  uint16_t page_size;
  uint32_t last_frame;  // mxFrame: the WAL's last committed frame
  uint32_t pages;
  uint32_t frame_checksum[2];
  uint32_t salt[2];      // new with each restart of the WAL
  uint32_t checksum[2];  // over the fields above, in the machine's order
};
static_assert(sizeof(Header) == 48);
static_assert(offsetof(Header, checksum) == 40);

constexpr uint32_t kVersion = 3007000;  // WALINDEX_MAX_VERSION, unchanged since 3.7.0
// The wal-index is mapped in regions of this size (WALINDEX_PGSZ); the
// header opens the first.
constexpr int kRegionBytes = 32768;

// SQLite's walChecksumBytes() for the machine's byte order, over the header
// before its checksum.
bool checksum_holds(const Header& h) {
  uint32_t words[10];
  std::memcpy(words, &h, sizeof words);
  uint32_t s1 = 0, s2 = 0;
  for (size_t i = 0; i < 10; i += 2) {
    s1 += words[i] + s2;
    s2 += words[i + 1] + s1;
  }
  return s1 == h.checksum[0] && s2 == h.checksum[1];
}

// A copy of the header at `from`, which a writer may be changing meanwhile.
Header read_copy(const volatile unsigned char* from) {
  Header h;
  auto* to = reinterpret_cast<unsigned char*>(&h);
  for (size_t i = 0; i < sizeof h; ++i) to[i] = from[i];
  return h;
}

}  // namespace

Result<std::unique_ptr<WalIndexHeader>> WalIndexHeader::map(sqlite3* db) {
  sqlite3_file* file = nullptr;
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK ||
      file == nullptr || file->pMethods == nullptr || file->pMethods->iVersion < 2 ||
      file->pMethods->xShmMap == nullptr) {
    return unavailable("the database's VFS shares no memory for a wal-index");
  }
  // Not extending: the region exists once a connection has read the
  // database in WAL mode, and SQLite hands out the mapping it already has.
  volatile void* region = nullptr;
  const int rc = file->pMethods->xShmMap(file, 0, kRegionBytes, /*bExtend=*/0, &region);
  if (rc != SQLITE_OK || region == nullptr) {
    return unavailable("the database has no wal-index to read (not in WAL mode?)");
  }
  return std::unique_ptr<WalIndexHeader>(new WalIndexHeader(region));
}

std::optional<ChangeStamp> WalIndexHeader::stamp() const {
  // As walIndexTryHdr() does: the first copy, then the second. A commit
  // writes them in the other order, so two equal copies with a good checksum
  // are one header, whole.
  const auto* bytes = static_cast<const volatile unsigned char*>(header_);
  const Header first = read_copy(bytes);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const Header second = read_copy(bytes + sizeof(Header));
  if (std::memcmp(&first, &second, sizeof first) != 0) return std::nullopt;
  if (first.is_init != 1 || first.version != kVersion || !checksum_holds(first)) {
    return std::nullopt;
  }
  // The last frame moves with every commit, and the salts with every
  // restart of the WAL (when the last frame starts again from 0).
  return ChangeStamp{(uint64_t{first.change} << 32) | first.last_frame,
                     (uint64_t{first.salt[0]} << 32) | first.salt[1]};
}

}  // namespace leasehold::store::sqlite
