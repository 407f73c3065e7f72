// WalIndexHeader: the SQLite store's change stamp, read from the header of
// the database's wal-index (the "-shm" file) in shared memory, as SQLite's
// own readers read it before a transaction: no lock, no system call.
//
// Every commit writes a new header (it holds the WAL's last frame and its
// salts), and a reader of the database sees a commit only once its header is
// there; so a header read twice unchanged means that no transaction became
// visible in between, from any connection of any process. The layout and the
// way to read it consistently (two copies, written in one order and read in
// the other, with a checksum) are SQLite's, described in its file format
// documents: https://www.sqlite.org/walformat.html.
//
// The header is read through SQLite's own mapping of the wal-index, which
// its VFS hands out (xShmMap) and keeps while a connection of this process
// has the database open. Opening the file a second time would not do: POSIX
// drops every lock a process holds on a file when it closes any descriptor
// of it, SQLite's included.
#pragma once

#include <sqlite3.h>

#include <memory>
#include <optional>

#include "leasehold/status.h"
#include "leasehold/store.h"

namespace leasehold::store::sqlite {

class WalIndexHeader {
 public:
  // The wal-index of the database of `db`, a connection in WAL mode that has
  // read it. kUnavailable if its VFS shares no memory for it (not WAL mode,
  // or a VFS without shared memory).
  // REQUIRES: a connection to the database stays open in this process for
  // as long as the result is used (the mapping is SQLite's).
  static Result<std::unique_ptr<WalIndexHeader>> map(sqlite3* db);

  // The header's commit position (last frame, salts, change counter), or
  // nullopt if no consistent header can be read at this moment: a commit is
  // writing it.
  std::optional<ChangeStamp> stamp() const;

 private:
  explicit WalIndexHeader(const volatile void* header) : header_(header) {}

  const volatile void* const header_;
};

}  // namespace leasehold::store::sqlite
