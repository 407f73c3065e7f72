// The SQLite backend: the embedded default, one file shared by many
// processes on one machine.
//
// The database runs in WAL mode with a busy timeout, so readers never block
// the writer and concurrent writers from other processes wait their turn
// instead of failing. Every logical table is one SQLite table holding the key
// columns and the item as JSON; each index is a pair of generated columns
// with a real SQLite index over them, so query_index() is an index range
// scan. A conditional write is one SQL statement whose WHERE clause calls the
// shared condition evaluator (store/eval.h) through a registered SQL
// function, so it is atomic across processes and means exactly what it means
// on every other backend. Attribute names and values are always bound as
// parameters, never spliced into SQL.
//
// The store is safe for concurrent use by many threads (small pools of
// connections, one per concurrent caller) and many processes. Reads (get,
// batch_get, query, query_index) borrow from a pool of their own, so that a
// read never waits for a connection held by a write that waits for another
// process's write lock: in WAL mode a read waits on nothing but its own
// work, and reads_are_local() says so.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "leasehold/clock.h"
#include "leasehold/store.h"

namespace leasehold::store {

struct SqliteOptions {
  std::string path;  // a file path; created if missing
  // How long a writer waits for another process's write lock before the
  // operation fails with kUnavailable.
  Duration busy_timeout = std::chrono::seconds(5);
  // synchronous=FULL makes every commit durable across power loss; the
  // default (NORMAL, in WAL mode) is durable across process crashes.
  bool synchronous_full = false;
  // Upper bound on pooled connections for writes (and table changes);
  // concurrent callers beyond it wait.
  int connections_max = 16;
  // The same for reads, from connections of their own.
  int read_connections_max = 8;
};

// Opens (creating if needed) the database. kUnavailable if the file cannot
// be opened or written.
Result<std::unique_ptr<ItemStore>> open_sqlite_store(const SqliteOptions& options);

}  // namespace leasehold::store
