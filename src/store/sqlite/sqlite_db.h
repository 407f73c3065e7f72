// Thin RAII over the SQLite C API for the SQLite backend: one Connection per
// sqlite3 handle with its own cache of prepared statements, a bounded
// ConnectionPool that hands each connection to one thread at a time, and the
// mapping of SQLite result codes onto leasehold's Status codes.
//
// A Connection is not thread-safe (it is opened with SQLITE_OPEN_NOMUTEX);
// the pool guarantees that only one caller uses it at a time. The pool itself
// is safe for concurrent use.
#pragma once

#include <sqlite3.h>

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mutex.h"
#include "store/sqlite/sqlite_store.h"

namespace leasehold::store::sqlite {

// Prepared statements kept per connection; past this the cache is emptied,
// which only costs re-preparing.
inline constexpr size_t kStatementsMax = 256;

// Maps a SQLite result code to a Status. Busy/locked (after the busy
// timeout), I/O errors, a full disk, a file that cannot be opened or written
// are kUnavailable: SQLite commits atomically, so nothing was applied.
// Corruption and everything unexpected are kInternal. The message carries
// `what` and sqlite3_errmsg(db), never item values.
Status error_status(sqlite3* db, int rc, std::string_view what);

// The same for a statement that commits (COMMIT, or a write in autocommit
// mode), where an I/O error is kUnknownOutcome instead: the commit's frames
// may be in the WAL already (a failed fsync leaves them there), and the next
// process to open the file recovers them. Busy, a full disk and the rest
// still mean that nothing was committed.
Status commit_error_status(sqlite3* db, int rc, std::string_view what);

class Connection {
 public:
  // Opens `options.path` read-write (creating it if missing), in WAL mode,
  // with the busy timeout and synchronous level of `options`, and with the
  // leasehold SQL functions registered. kUnavailable names the path.
  static Result<std::unique_ptr<Connection>> open(const SqliteOptions& options);

  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  sqlite3* db() const { return db_; }

  // Runs SQL that takes no parameters and returns no rows (DDL, BEGIN, ...).
  Status exec(const std::string& sql);
  // The same for one statement that runs often (a read transaction's BEGIN
  // and COMMIT), through the statement cache, so that it is not parsed
  // again every time.
  Status exec_cached(const std::string& sql);
  // Commits the open transaction; see commit_error_status().
  Status commit(std::string_view what);

  // How long a statement waits for another connection's lock (SQLite's busy
  // timeout), rounded up to whole milliseconds.
  void set_busy_timeout(Duration timeout);

  // The cached prepared statement for `sql`, prepared on first use. The
  // statement is owned by the connection. REQUIRES: reset before reuse (see
  // StatementReset).
  Result<sqlite3_stmt*> prepare(const std::string& sql);

  // Rolls back a transaction that an error left open, so that the next
  // caller starts clean.
  void abandon_transaction();

 private:
  explicit Connection(sqlite3* db) : db_(db) {}
  Status configure(const SqliteOptions& options);
  Status switch_to_wal(const SqliteOptions& options);

  sqlite3* db_;
  std::unordered_map<std::string, sqlite3_stmt*> statements_;
};

// Resets a statement (and clears its bindings, which may point at the
// caller's stack) when it leaves scope, so that a cached statement never
// holds a read snapshot or a dangling pointer.
class StatementReset {
 public:
  explicit StatementReset(sqlite3_stmt* s) : s_(s) {}
  ~StatementReset() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  StatementReset(const StatementReset&) = delete;
  StatementReset& operator=(const StatementReset&) = delete;

 private:
  sqlite3_stmt* s_;
};

// At most a given number of connections, opened on demand. A caller
// waits up to the busy timeout for a free one, then gets kUnavailable.
class ConnectionPool {
 public:
  // A connection borrowed from the pool; returned when destroyed.
  class Handle {
   public:
    Handle(ConnectionPool* pool, std::unique_ptr<Connection> c) : pool_(pool), c_(std::move(c)) {}
    Handle(Handle&&) = default;
    Handle& operator=(Handle&&) = delete;
    ~Handle() {
      if (c_) pool_->release(std::move(c_));
    }
    Connection& operator*() const { return *c_; }
    Connection* operator->() const { return c_.get(); }

   private:
    ConnectionPool* pool_;
    std::unique_ptr<Connection> c_;
  };

  // At most `connections_max`, and `first` (if not null) already open.
  ConnectionPool(SqliteOptions options, int connections_max, std::unique_ptr<Connection> first);

  // Waits up to the busy timeout, or `wait_max` if shorter, for a free
  // connection.
  Result<Handle> acquire(Duration wait_max = Duration::max());

 private:
  void release(std::unique_ptr<Connection> c);

  const SqliteOptions options_;
  const int connections_max_;
  Mutex mu_;
  CondVar freed_;
  std::vector<std::unique_ptr<Connection>> idle_ GUARDED_BY(mu_);
  int open_ GUARDED_BY(mu_) = 0;
};

}  // namespace leasehold::store::sqlite
