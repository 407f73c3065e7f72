// Connections, the statement cache, the pool and error mapping of the SQLite
// backend (see sqlite_db.h).
#include "store/sqlite/sqlite_db.h"

#include <algorithm>
#include <climits>

#include "store/sqlite/sqlite_functions.h"

namespace leasehold::store::sqlite {
namespace {

int timeout_ms(Duration timeout) {
  if (timeout >= std::chrono::milliseconds(INT_MAX)) return INT_MAX;
  const int64_t ms = to_ms(timeout + std::chrono::microseconds(999));  // rounded up
  return static_cast<int>(std::clamp<int64_t>(ms, 0, INT_MAX));
}

int busy_timeout_ms(const SqliteOptions& options) { return timeout_ms(options.busy_timeout); }

std::string describe_path(const SqliteOptions& options) {
  return "SQLite database '" + options.path + "'";
}

}  // namespace

Status error_status(sqlite3* db, int rc, std::string_view what) {
  std::string message(what);
  message += ": ";
  message += db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return unavailable(message + " (another connection held the lock past the busy timeout)");
    case SQLITE_IOERR:
    case SQLITE_FULL:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_NOLFS:
    case SQLITE_PROTOCOL:
    case SQLITE_NOMEM:
    case SQLITE_AUTH:
      return unavailable(message);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return internal_error(message + " (the database file is corrupt)");
    default:
      return internal_error(message);
  }
}

Status commit_error_status(sqlite3* db, int rc, std::string_view what) {
  if ((rc & 0xff) != SQLITE_IOERR) return error_status(db, rc, what);
  std::string message(what);
  message += ": ";
  message += db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  return unknown_outcome(message + " (an I/O error while committing: the write may be durable)");
}

Result<std::unique_ptr<Connection>> Connection::open(const SqliteOptions& options) {
  // Memory statistics put a process-wide mutex on every SQLite allocation;
  // nothing here reads them. Possible only before SQLite initialises, so a
  // process that already uses SQLite keeps its own setting.
  static std::once_flag memstatus_off;
  std::call_once(memstatus_off, [] { sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); });
  sqlite3* db = nullptr;
  const int flags =
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
  const int rc = sqlite3_open_v2(options.path.c_str(), &db, flags, nullptr);
  // The handle must be closed even when opening failed.
  std::unique_ptr<Connection> c(new Connection(db));
  if (db == nullptr)
    return unavailable("cannot open " + describe_path(options) + ": out of memory");
  if (rc != SQLITE_OK) {
    return unavailable("cannot open " + describe_path(options) + " (does its directory exist " +
                       "and is it writable?): " + sqlite3_errmsg(db));
  }
  // SQLite silently falls back to read-only when the file is not writable.
  if (sqlite3_db_readonly(db, "main") != 0) {
    return unavailable(describe_path(options) + " is not writable");
  }
  Status configured = c->configure(options);
  if (!configured.ok()) return configured.with_context("cannot open " + describe_path(options));
  return c;
}

Status Connection::configure(const SqliteOptions& options) {
  sqlite3_busy_timeout(db_, busy_timeout_ms(options));
  LEASEHOLD_RETURN_IF_ERROR(switch_to_wal(options));
  LEASEHOLD_RETURN_IF_ERROR(
      exec(options.synchronous_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL"));
  return register_functions(db_);
}

// Switching a fresh file to WAL needs a moment of exclusive access, and
// SQLite reports a concurrent switch as SQLITE_BUSY without calling the busy
// handler, so processes starting together on a new file retry here (for as
// long as the busy timeout, counted in time slept).
Status Connection::switch_to_wal(const SqliteOptions& options) {
  LEASEHOLD_ASSIGN_OR_RETURN(sqlite3_stmt * wal, prepare("PRAGMA journal_mode=WAL"));
  const int slept_ms_max = busy_timeout_ms(options);
  for (int slept_ms = 0, delay_ms = 1;;
       slept_ms += delay_ms, delay_ms = std::min(delay_ms * 2, 50)) {
    StatementReset reset(wal);
    const int rc = sqlite3_step(wal);
    if (rc == SQLITE_ROW) {
      // The answer is the mode now in force; a file system that cannot host
      // the WAL's shared memory answers something else.
      const auto* mode = reinterpret_cast<const char*>(sqlite3_column_text(wal, 0));
      if (mode == nullptr || std::string_view(mode) != "wal") {
        return unavailable("the file system does not support WAL mode");
      }
      return {};
    }
    const int primary = rc & 0xff;
    if ((primary != SQLITE_BUSY && primary != SQLITE_LOCKED) || slept_ms >= slept_ms_max) {
      return error_status(db_, rc, "switching to WAL mode");
    }
    sqlite3_sleep(delay_ms);
  }
}

Connection::~Connection() {
  for (auto& [sql, s] : statements_) sqlite3_finalize(s);
  sqlite3_close_v2(db_);
}

Status Connection::exec(const std::string& sql) {
  char* error = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error);
  sqlite3_free(error);  // sqlite3_errmsg() still has it
  if (rc != SQLITE_OK) return error_status(db_, rc, "running SQL");
  return {};
}

Status Connection::exec_cached(const std::string& sql) {
  LEASEHOLD_ASSIGN_OR_RETURN(sqlite3_stmt * s, prepare(sql));
  StatementReset reset(s);
  const int rc = sqlite3_step(s);
  if (rc != SQLITE_DONE) return error_status(db_, rc, "running SQL");
  return {};
}

Status Connection::commit(std::string_view what) {
  const int rc = sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return commit_error_status(db_, rc, what);
  return {};
}

void Connection::set_busy_timeout(Duration timeout) {
  sqlite3_busy_timeout(db_, timeout_ms(timeout));
}

Result<sqlite3_stmt*> Connection::prepare(const std::string& sql) {
  const auto it = statements_.find(sql);
  if (it != statements_.end()) return it->second;
  if (statements_.size() >= kStatementsMax) {
    for (auto& [text, s] : statements_) sqlite3_finalize(s);
    statements_.clear();
  }
  sqlite3_stmt* s = nullptr;
  const int rc = sqlite3_prepare_v3(db_, sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &s, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(s);
    return error_status(db_, rc, "preparing a statement");
  }
  statements_.emplace(sql, s);
  return s;
}

void Connection::abandon_transaction() {
  if (sqlite3_get_autocommit(db_) == 0) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

ConnectionPool::ConnectionPool(SqliteOptions options, int connections_max,
                               std::unique_ptr<Connection> first)
    : options_(std::move(options)), connections_max_(connections_max) {
  if (first == nullptr) return;
  idle_.push_back(std::move(first));
  open_ = 1;
}

Result<ConnectionPool::Handle> ConnectionPool::acquire(Duration wait_max) {
  MutexLock lock(mu_);
  // Real time, as SQLite's own busy timeout is: a store is given no Clock.
  const MonoTime deadline =
      std::chrono::steady_clock::now() + std::min(options_.busy_timeout, wait_max);
  while (idle_.empty() && open_ >= connections_max_) {
    if (freed_.wait_until(mu_, deadline) == std::cv_status::timeout && idle_.empty() &&
        open_ >= connections_max_) {
      return unavailable("all " + std::to_string(connections_max_) +
                         " SQLite connections stayed busy past the busy timeout");
    }
  }
  if (!idle_.empty()) {
    std::unique_ptr<Connection> c = std::move(idle_.back());
    idle_.pop_back();
    return Handle(this, std::move(c));
  }
  ++open_;
  lock.unlock();
  auto opened = Connection::open(options_);
  if (!opened.ok()) {
    lock.lock();
    --open_;
    freed_.notify_one();
    return opened.status();
  }
  return Handle(this, std::move(opened).value());
}

void ConnectionPool::release(std::unique_ptr<Connection> c) {
  c->abandon_transaction();
  MutexLock lock(mu_);
  idle_.push_back(std::move(c));
  freed_.notify_one();
}

}  // namespace leasehold::store::sqlite
