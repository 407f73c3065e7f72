// Tests of what only the SQLite backend has: one file shared by processes,
// its on-disk layout, its query plans, and how it fails. Everything the
// backends share is in tests/conformance/.
#include "store/sqlite/sqlite_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include "store/sqlite/sqlite_functions.h"
#include "store/sqlite/sqlite_schema.h"
#include "testing/temp_dir.h"

namespace leasehold::store {
namespace {

using leasehold::testing::TempDir;
using ::testing::HasSubstr;
using ::testing::Not;

namespace fs = std::filesystem;

std::unique_ptr<ItemStore> open_or_die(const std::string& path,
                                       Duration busy_timeout = std::chrono::seconds(5)) {
  SqliteOptions options;
  options.path = path;
  options.busy_timeout = busy_timeout;
  auto opened = open_sqlite_store(options);
  EXPECT_TRUE(opened.ok()) << opened.status().to_string();
  return opened.ok() ? std::move(opened).value() : nullptr;
}

// A raw connection, as another program (or the benchmark baseline) has.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  }
  ~RawDb() { sqlite3_close_v2(db_); }
  sqlite3* get() const { return db_; }
  int exec(const std::string& sql) {
    return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  }
  // EXPLAIN QUERY PLAN's details, one per line.
  std::string plan(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    const int rc = sqlite3_prepare_v2(db_, ("EXPLAIN QUERY PLAN " + sql).c_str(), -1, &s, nullptr);
    if (rc != SQLITE_OK) return std::string("<prepare failed: ") + sqlite3_errmsg(db_) + ">";
    std::string out;
    while (sqlite3_step(s) == SQLITE_ROW) {
      out += reinterpret_cast<const char*>(sqlite3_column_text(s, 3));
      out += "\n";
    }
    sqlite3_finalize(s);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

const TableSpec kLeases{"leases",
                        "pk",
                        "",
                        {{"orphans", "desired_state", "lease_expires_at_ms", AttrType::kInt},
                         {"by-name", "desired_state", "name", AttrType::kString}}};

// ---------------------------------------------------------------- processes

// One child: read-modify-write increments conditional on the version read.
// Reports each version it wrote through `fd`. Exit codes say what went wrong.
int increment_in_child(const std::string& path, int fd, int increments) {
  SqliteOptions options;
  options.path = path;
  options.busy_timeout = std::chrono::seconds(30);
  auto store = open_sqlite_store(options);
  if (!store.ok()) return 10;
  for (int done = 0; done < increments;) {
    Result<Item> read = (*store)->get("counters", {"c", ""}, true);
    if (!read.ok()) return 11;
    const int64_t v = *get_int(*read, "version");
    Result<Item> wrote =
        (*store)->update("counters", {"c", ""}, Update().add("count", 1).set("version", v + 1),
                         cond::eq("version", v));
    if (!wrote.ok()) {
      if (wrote.status().code() != Code::kConditionFailed) return 12;
      continue;
    }
    if (*get_int(*wrote, "version") != v + 1 || *get_int(*wrote, "count") != v + 1) return 13;
    const int64_t written = v + 1;
    if (write(fd, &written, sizeof written) != sizeof written) return 14;
    ++done;
  }
  return 0;
}

std::vector<int> wait_all(const std::vector<pid_t>& children) {
  std::vector<int> codes;
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    codes.push_back(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
  }
  return codes;
}

TEST(SqliteStore, ProcessesIncrementingOneItemLoseNoUpdate) {
  TempDir dir;
  const std::string path = dir.file("shared.db");
  {
    // Closed before fork(): a SQLite connection must not cross a fork.
    auto store = open_or_die(path);
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->ensure_table({"counters", "id", "", {}}).ok());
    ASSERT_TRUE(
        store->put("counters", {{"id", "c"}, {"version", int64_t{0}}, {"count", int64_t{0}}}, {})
            .ok());
  }
  constexpr int kProcesses = 6, kIncrements = 40;
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      _exit(increment_in_child(path, fds[1], kIncrements));
    }
    children.push_back(pid);
  }
  close(fds[1]);
  std::vector<int64_t> versions;
  int64_t v = 0;
  while (read(fds[0], &v, sizeof v) == sizeof v) versions.push_back(v);
  close(fds[0]);
  EXPECT_THAT(wait_all(children), ::testing::Each(0));
  // Every version 1..N was written exactly once: no lost and no double write.
  std::sort(versions.begin(), versions.end());
  std::vector<int64_t> expected(kProcesses * kIncrements);
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<int64_t>(i + 1);
  EXPECT_EQ(versions, expected);
  auto store = open_or_die(path);
  ASSERT_TRUE(store);
  const Result<Item> counter = store->get("counters", {"c", ""}, true);
  ASSERT_TRUE(counter.ok());
  EXPECT_EQ(*get_int(*counter, "count"), kProcesses * kIncrements);
}

TEST(SqliteStore, ProcessesCreatingOneFileAndTableAtOnceAllSucceed) {
  TempDir dir;
  const std::string path = dir.file("fresh.db");
  constexpr int kProcesses = 5;
  std::vector<pid_t> children;
  for (int p = 0; p < kProcesses; ++p) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      SqliteOptions options;
      options.path = path;
      options.busy_timeout = std::chrono::seconds(30);
      auto store = open_sqlite_store(options);
      if (!store.ok()) _exit(10);
      TableSpec spec = kLeases;
      spec.indexes.push_back({"own-" + std::to_string(p), "h", "r", AttrType::kInt});
      _exit((*store)->ensure_table(spec).ok() ? 0 : 11);
    }
    children.push_back(pid);
  }
  EXPECT_THAT(wait_all(children), ::testing::Each(0));
  auto store = open_or_die(path);
  ASSERT_TRUE(store);
  for (int p = 0; p < kProcesses; ++p) {
    EXPECT_TRUE(
        store->query_index("leases", "own-" + std::to_string(p), "x", KeyRange::all(), {}).ok());
  }
  EXPECT_TRUE(store->query_index("leases", "orphans", "x", KeyRange::all(), {}).ok());
}

TEST(SqliteStore, StoresOnOneFileShareTablesAndLaterIndexes) {
  TempDir dir;
  auto a = open_or_die(dir.file("s.db"));
  auto b = open_or_die(dir.file("s.db"));
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->ensure_table({"t", "pk", "", {}}).ok());
  ASSERT_TRUE(a->put("t", {{"pk", "x"}, {"h", "H"}, {"r", int64_t{1}}}, {}).ok());
  EXPECT_TRUE(b->get("t", {"x", ""}, true).ok());  // no ensure_table on b
  EXPECT_EQ(b->query_index("t", "late", "H", KeyRange::all(), {}).status().code(), Code::kNotFound);
  ASSERT_TRUE(a->ensure_table({"t", "pk", "", {{"late", "h", "r", AttrType::kInt}}}).ok());
  const Result<Page> page = b->query_index("t", "late", "H", KeyRange::all(), {});
  ASSERT_TRUE(page.ok()) << page.status().to_string();
  EXPECT_EQ(page->items.size(), 1u);
  EXPECT_EQ(b->ensure_table({"t", "other", "", {}}).code(), Code::kInvalidArgument);
}

// The stamp is the wal-index header: every commit moves it, whichever
// connection makes it (another store, plain SQL), and a WAL that restarts
// after a checkpoint does not bring an old stamp back.
TEST(SqliteStore, EveryCommitFromAnyConnectionMovesTheChangeStamp) {
  TempDir dir;
  auto a = open_or_die(dir.file("s.db"));
  auto b = open_or_die(dir.file("s.db"));
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->ensure_table({"t", "pk", "", {}}).ok());
  RawDb raw(dir.file("s.db"));
  std::vector<ChangeStamp> seen;
  const auto stamp = [&] {
    const std::optional<ChangeStamp> now = a->change_stamp();
    EXPECT_TRUE(now.has_value());
    EXPECT_EQ(b->change_stamp(), now) << "two stores on one file see one header";
    return now.value_or(ChangeStamp{});
  };
  seen.push_back(stamp());
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE(b->put("t", {{"pk", "x"}, {"n", int64_t{i}}}, {}).ok());
    seen.push_back(stamp());
    ASSERT_TRUE(a->get("t", {"x", ""}, true).ok());
    EXPECT_EQ(stamp(), seen.back()) << "a read moved it";
    if (i % 10 == 9) {
      ASSERT_EQ(raw.exec("PRAGMA wal_checkpoint(TRUNCATE)"), SQLITE_OK);
    } else {
      ASSERT_EQ(raw.exec("CREATE TABLE IF NOT EXISTS plain(v); INSERT INTO plain VALUES (1)"),
                SQLITE_OK);
      seen.push_back(stamp());
    }
  }
  std::vector<ChangeStamp> distinct = seen;
  std::ranges::sort(distinct, {}, [](const ChangeStamp& s) { return std::pair(s.high, s.low); });
  EXPECT_EQ(std::ranges::adjacent_find(distinct), distinct.end()) << "a stamp came back";
}

// ---------------------------------------------------------------- layout and plans

// The raw renew statement documented at the top of sqlite_store.cc (the
// benchmark's baseline) works on what the store writes.
TEST(SqliteStore, DocumentedLayoutTakesTheRawRenewStatement) {
  TempDir dir;
  auto store = open_or_die(dir.file("l.db"));
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->ensure_table(kLeases).ok());
  ASSERT_TRUE(store
                  ->put("leases",
                        {{"pk", "CONN#1"},
                         {"lease_token", "t1"},
                         {"desired_state", "STARTED"},
                         {"lease_expires_at_ms", int64_t{1000}},
                         {"lease_heartbeat_at_ms", int64_t{500}}},
                        {})
                  .ok());
  RawDb raw(dir.file("l.db"));
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(
                raw.get(),
                "UPDATE \"items_leases\" SET data = json_set(data, '$.lease_expires_at_ms', ?, "
                "'$.lease_heartbeat_at_ms', ?) WHERE pk = ? AND sk = '' AND "
                "json_extract(data, '$.lease_token') = ? AND "
                "json_extract(data,'$.lease_expires_at_ms') > ?",
                -1, &s, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(raw.get());
  const auto renew = [&](const char* token) {
    sqlite3_bind_int64(s, 1, 2000);
    sqlite3_bind_int64(s, 2, 1500);
    sqlite3_bind_text(s, 3, "CONN#1", -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 4, token, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 5, 900);
    EXPECT_EQ(sqlite3_step(s), SQLITE_DONE);
    sqlite3_reset(s);
    return sqlite3_changes(raw.get());
  };
  EXPECT_EQ(renew("wrong"), 0);
  EXPECT_EQ(renew("t1"), 1);
  sqlite3_finalize(s);
  const Result<Item> item = store->get("leases", {"CONN#1", ""}, true);
  ASSERT_TRUE(item.ok());
  EXPECT_EQ(*get_int(*item, "lease_expires_at_ms"), 2000);
  EXPECT_EQ(*get_int(*item, "lease_heartbeat_at_ms"), 1500);
  // ... and the index, maintained by SQLite itself, followed.
  const Result<Page> page =
      store->query_index("leases", "orphans", "STARTED", KeyRange::eq(int64_t{2000}), {});
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->items.size(), 1u);
}

TEST(SqliteStore, QueriesAreIndexRangeScans) {
  TempDir dir;
  auto store = open_or_die(dir.file("p.db"));
  ASSERT_TRUE(store && store->ensure_table(kLeases).ok());
  RawDb raw(dir.file("p.db"));
  ASSERT_TRUE(sqlite::register_functions(raw.get()).ok());
  using Kind = KeyRange::Kind;
  for (size_t ordinal : {0u, 1u}) {
    const std::string index = "items_leases__ix" + std::to_string(ordinal);
    const std::string hash = "ix" + std::to_string(ordinal) + "_hash=?";
    const std::string range = "ix" + std::to_string(ordinal) + "_range";
    for (Kind kind : {Kind::kAll, Kind::kEq, Kind::kLt, Kind::kLe, Kind::kGt, Kind::kGe,
                      Kind::kBetween, Kind::kBeginsWith}) {
      for (bool cursor : {false, true}) {
        for (bool descending : {false, true}) {
          const std::string plan =
              raw.plan(sqlite::query_index_sql(kLeases, ordinal, kind, cursor, true, descending));
          SCOPED_TRACE(plan);
          EXPECT_THAT(plan, HasSubstr("SEARCH items_leases USING INDEX " + index + " (" + hash));
          if (kind != Kind::kAll || cursor) {
            EXPECT_THAT(plan, HasSubstr(range));  // a range scan, not the whole hash
          }
          EXPECT_THAT(plan, Not(HasSubstr("SCAN")));
          EXPECT_THAT(plan, Not(HasSubstr("TEMP B-TREE")));  // no sort: index order
        }
      }
    }
  }
  for (bool cursor : {false, true}) {
    for (bool descending : {false, true}) {
      const std::string plan =
          raw.plan(sqlite::query_sql(kLeases, Kind::kBetween, cursor, false, descending));
      SCOPED_TRACE(plan);
      EXPECT_THAT(plan, HasSubstr("USING PRIMARY KEY (pk=? AND sk>? AND sk<?)"));
      EXPECT_THAT(plan, Not(HasSubstr("TEMP B-TREE")));
    }
  }
  const sqlite::TableSql sql(kLeases);
  for (const std::string* s : {&sql.get, &sql.put_update, &sql.update_update, &sql.remove}) {
    EXPECT_THAT(raw.plan(*s), HasSubstr("USING PRIMARY KEY (pk=? AND sk=?)")) << *s;
  }
}

// ---------------------------------------------------------------- failures

TEST(SqliteStore, UnwritablePlacesAreUnavailableAndCreateNothing) {
  TempDir dir;
  const std::string missing = dir.file("no/such/dir/x.db");
  Result<std::unique_ptr<ItemStore>> opened = open_sqlite_store({.path = missing});
  EXPECT_EQ(opened.status().code(), Code::kUnavailable);
  EXPECT_THAT(opened.status().message(), HasSubstr(missing));
  EXPECT_FALSE(fs::exists(dir.file("no")));

  std::ofstream(dir.file("plain")) << "";
  opened = open_sqlite_store({.path = dir.file("plain/x.db")});
  EXPECT_EQ(opened.status().code(), Code::kUnavailable);
  EXPECT_TRUE(fs::is_regular_file(dir.file("plain")));

  const std::string in_proc = "/proc/leasehold-test-" + std::to_string(getpid()) + ".db";
  opened = open_sqlite_store({.path = in_proc});
  EXPECT_EQ(opened.status().code(), Code::kUnavailable);
  EXPECT_FALSE(fs::exists(in_proc));

  if (geteuid() != 0) {  // root writes through permission bits
    ASSERT_EQ(mkdir(dir.file("ro").c_str(), 0555), 0);
    opened = open_sqlite_store({.path = dir.file("ro/x.db")});
    EXPECT_EQ(opened.status().code(), Code::kUnavailable);
    EXPECT_TRUE(fs::is_empty(dir.file("ro")));
    ASSERT_TRUE(open_or_die(dir.file("file.db")));
    fs::permissions(dir.file("file.db"), fs::perms::owner_read);
    opened = open_sqlite_store({.path = dir.file("file.db")});
    EXPECT_EQ(opened.status().code(), Code::kUnavailable);
  }
}

TEST(SqliteStore, OptionsThatCannotWorkAreRefused) {
  TempDir dir;
  EXPECT_EQ(open_sqlite_store({.path = ""}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(open_sqlite_store({.path = ":memory:"}).status().code(), Code::kInvalidArgument);
  EXPECT_EQ(open_sqlite_store({.path = dir.file("x.db"), .connections_max = 0}).status().code(),
            Code::kInvalidArgument);
  EXPECT_FALSE(fs::exists(dir.file("x.db")));
  EXPECT_EQ(open_sqlite_store({.path = dir.file("y.db")}).status().code(), Code::kOk);
}

TEST(SqliteStore, IndexAttributeNamesMustBeSqlSafe) {
  TempDir dir;
  auto store = open_or_die(dir.file("n.db"));
  ASSERT_TRUE(store);
  for (const char* attr : {"a-b", "a\"b", "a'b", "a b", "é", "a]b", "a.b"}) {
    EXPECT_EQ(store->ensure_table({"t", "pk", "", {{"i", attr, "r", AttrType::kInt}}}).code(),
              Code::kInvalidArgument)
        << attr;
    EXPECT_EQ(store->ensure_table({"t", "pk", "", {{"i", "h", attr, AttrType::kInt}}}).code(),
              Code::kInvalidArgument)
        << attr;
  }
  EXPECT_EQ(store->get("t", {"x", ""}, true).status().code(), Code::kNotFound);
  EXPECT_TRUE(store->ensure_table({"t", "pk", "", {{"i", "Az_09", "r", AttrType::kInt}}}).ok());
}

TEST(SqliteStore, LockHeldPastTheBusyTimeoutIsUnavailableAndAppliesNothing) {
  TempDir dir;
  auto store = open_or_die(dir.file("b.db"), std::chrono::milliseconds(50));
  ASSERT_TRUE(store && store->ensure_table({"t", "pk", "", {}}).ok());
  ASSERT_TRUE(store->put("t", {{"pk", "a"}, {"v", int64_t{1}}}, {}).ok());
  RawDb raw(dir.file("b.db"));
  ASSERT_EQ(raw.exec("BEGIN IMMEDIATE"), SQLITE_OK);
  EXPECT_EQ(store->update("t", {"a", ""}, Update().set("v", 2), {}).status().code(),
            Code::kUnavailable);
  EXPECT_EQ(store->put("t", {{"pk", "a"}, {"v", int64_t{3}}}, {}).code(), Code::kUnavailable);
  EXPECT_EQ(store->remove("t", {"a", ""}, {}).code(), Code::kUnavailable);
  EXPECT_EQ(store->ensure_table({"t2", "pk", "", {}}).code(), Code::kUnavailable);
  const std::vector<UpdateRequest> requests{{{"a", ""}, Update().set("v", 4), {}},
                                            {{"b", ""}, Update().set("v", 4), {}}};
  for (const auto& r : store->update_each("t", requests)) {
    EXPECT_EQ(r.status().code(), Code::kUnavailable);
  }
  // Readers are not blocked (WAL), and nothing was applied.
  const Result<Item> item = store->get("t", {"a", ""}, true);
  ASSERT_TRUE(item.ok());
  EXPECT_EQ(*get_int(*item, "v"), 1);
  ASSERT_EQ(raw.exec("ROLLBACK"), SQLITE_OK);
  EXPECT_TRUE(store->update("t", {"a", ""}, Update().set("v", 5), {}).ok());
  EXPECT_EQ(store->get("t", {"b", ""}, true).status().code(), Code::kNotFound);
}

// Writers that hold every write connection while they wait for another
// process's write lock leave reads free: reads have connections of their
// own. The writer waits for the lock until the test releases it, so the
// reads can only have finished while it still waits.
TEST(SqliteStore, ReadsDoNotWaitForConnectionsThatWritesHold) {
  TempDir dir;
  SqliteOptions options;
  options.path = dir.file("r.db");
  options.connections_max = 1;
  options.busy_timeout = std::chrono::seconds(30);  // the writer waits until the end
  auto opened = open_sqlite_store(options);
  ASSERT_TRUE(opened.ok());
  ItemStore& store = **opened;
  EXPECT_TRUE(store.reads_are_local());
  ASSERT_TRUE(store.ensure_table({"t", "pk", "", {}}).ok());
  ASSERT_TRUE(store.put("t", {{"pk", "a"}, {"v", int64_t{1}}}, {}).ok());
  RawDb raw(dir.file("r.db"));
  ASSERT_EQ(raw.exec("BEGIN IMMEDIATE"), SQLITE_OK);
  std::atomic<bool> written{false};
  std::thread writer([&] {
    EXPECT_TRUE(store.update("t", {"a", ""}, Update().set("v", 2), {}).ok());
    written = true;
  });
  // Reads for 200 ms, so that the writer has long taken the one write
  // connection while they go on (it cannot give it back before the lock is
  // released below); with one pool for both, they would wait for it.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  for (int reads = 0; reads < 10 || std::chrono::steady_clock::now() < until; ++reads) {
    const Result<Item> item = store.get("t", {"a", ""}, true);
    ASSERT_TRUE(item.ok()) << item.status().to_string();
    EXPECT_EQ(*get_int(*item, "v"), 1);
    const Key keys[] = {{"a", ""}, {"b", ""}};
    EXPECT_EQ(store.batch_get("t", keys)->size(), 1u);
    EXPECT_TRUE(store.query("t", "a", KeyRange::all(), {}).ok());
  }
  EXPECT_FALSE(written.load());
  ASSERT_EQ(raw.exec("ROLLBACK"), SQLITE_OK);
  writer.join();
  EXPECT_TRUE(written.load());
  EXPECT_EQ(*get_int(*store.get("t", {"a", ""}, true), "v"), 2);
}

// The waits of update_each (for a connection, then for the write lock) end
// at its timeout, not at the store's busy timeout, and the connection's own
// busy timeout is back afterwards. The bounds are far apart (a 50 ms timeout
// against a 1 s busy timeout), so a loaded machine cannot blur them.
TEST(SqliteStore, UpdateEachWaitsForTheLockOnlyUntilItsTimeout) {
  TempDir dir;
  auto store = open_or_die(dir.file("t.db"), std::chrono::seconds(1));
  ASSERT_TRUE(store && store->ensure_table({"t", "pk", "", {}}).ok());
  RawDb raw(dir.file("t.db"));
  ASSERT_EQ(raw.exec("BEGIN IMMEDIATE"), SQLITE_OK);
  const std::vector<UpdateRequest> requests{{{"a", ""}, Update().set("v", 1), {}}};
  const auto elapsed_ms = [](auto&& call) {
    const auto start = std::chrono::steady_clock::now();
    call();
    return to_ms(std::chrono::steady_clock::now() - start);
  };
  const int64_t bounded_ms = elapsed_ms([&] {
    for (const auto& r : store->update_each("t", requests, std::chrono::milliseconds(50))) {
      EXPECT_EQ(r.status().code(), Code::kUnavailable) << r.status().to_string();
    }
  });
  EXPECT_LT(bounded_ms, 500);
  const int64_t unbounded_ms = elapsed_ms([&] {
    EXPECT_EQ(store->update("t", {"a", ""}, Update().set("v", 2), {}).status().code(),
              Code::kUnavailable);
  });
  EXPECT_GE(unbounded_ms, 500) << "the connection kept the call's shorter busy timeout";
  ASSERT_EQ(raw.exec("ROLLBACK"), SQLITE_OK);
}

// A VFS over the default one whose next fsync of a WAL file fails, once
// armed: the commit's frames are then in the WAL, unsynced, and SQLite
// reports an I/O error. Installed as the default VFS for one test.
class FailingWalSyncVfs {
 public:
  FailingWalSyncVfs() : real_(sqlite3_vfs_find(nullptr)) {
    vfs_ = *real_;
    vfs_.zName = "leasehold-failing-wal-sync";
    vfs_.pAppData = this;
    vfs_.xOpen = &open;
    EXPECT_EQ(sqlite3_vfs_register(&vfs_, /*makeDflt=*/1), SQLITE_OK);
  }
  ~FailingWalSyncVfs() {
    sqlite3_vfs_unregister(&vfs_);
    sqlite3_vfs_register(real_, 1);
  }
  void fail_next_wal_sync() { armed_ = true; }

 private:
  // Opens the real file in place, then gives WAL files a copy of its methods
  // whose xSync can fail; every other method is the real one.
  static int open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* file, int flags,
                  int* out_flags) {
    auto* self = static_cast<FailingWalSyncVfs*>(vfs->pAppData);
    const int rc = self->real_->xOpen(self->real_, name, file, flags, out_flags);
    if (rc != SQLITE_OK || (flags & SQLITE_OPEN_WAL) == 0 || file->pMethods == nullptr) return rc;
    self->real_methods_ = file->pMethods;
    self->methods_ = *file->pMethods;
    self->methods_.xSync = &sync;
    file->pMethods = &self->methods_;
    instance_ = self;
    return rc;
  }
  static int sync(sqlite3_file* file, int flags) {
    if (instance_->armed_.exchange(false)) return SQLITE_IOERR_FSYNC;
    return instance_->real_methods_->xSync(file, flags);
  }

  static inline FailingWalSyncVfs* instance_ = nullptr;
  sqlite3_vfs* real_;
  sqlite3_vfs vfs_{};
  const sqlite3_io_methods* real_methods_ = nullptr;
  sqlite3_io_methods methods_{};
  std::atomic<bool> armed_{false};
};

// With synchronous=FULL every commit syncs the WAL. An I/O error there
// leaves the commit's frames in the WAL, where the next opener may recover
// them: the honest answer is "unknown outcome", never "nothing applied".
TEST(SqliteStore, AnIoErrorWhileCommittingIsAnUnknownOutcome) {
  FailingWalSyncVfs vfs;
  TempDir dir;
  SqliteOptions options;
  options.path = dir.file("io.db");
  options.synchronous_full = true;
  auto opened = open_sqlite_store(options);
  ASSERT_TRUE(opened.ok()) << opened.status().to_string();
  ItemStore& store = **opened;
  ASSERT_TRUE(store.ensure_table({"t", "pk", "", {}}).ok());
  vfs.fail_next_wal_sync();
  const Result<Item> one = store.update("t", {"a", ""}, Update().add("n", 1), {});
  EXPECT_EQ(one.status().code(), Code::kUnknownOutcome) << one.status().to_string();
  vfs.fail_next_wal_sync();
  const std::vector<UpdateRequest> requests{{{"b", ""}, Update().add("n", 1), {}}};
  for (const auto& r : store.update_each("t", requests)) {
    EXPECT_EQ(r.status().code(), Code::kUnknownOutcome) << r.status().to_string();
  }
}

TEST(SqliteStore, CorruptItemsAreInternalErrors) {
  TempDir dir;
  auto store = open_or_die(dir.file("c.db"));
  ASSERT_TRUE(store && store->ensure_table({"t", "pk", "", {}}).ok());
  ASSERT_TRUE(store->put("t", {{"pk", "a"}, {"v", int64_t{1}}}, {}).ok());
  RawDb raw(dir.file("c.db"));
  ASSERT_EQ(raw.exec("UPDATE \"items_t\" SET data = '[not an item' WHERE pk = 'a'"), SQLITE_OK);
  EXPECT_EQ(store->get("t", {"a", ""}, true).status().code(), Code::kInternal);
  EXPECT_EQ(store->update("t", {"a", ""}, Update().set("v", 2), {}).status().code(),
            Code::kInternal);
  EXPECT_EQ(store->query("t", "a", KeyRange::all(), {}).status().code(), Code::kInternal);
}

TEST(SqliteStore, ErrorMessagesDoNotCarryItemValues) {
  TempDir dir;
  auto store = open_or_die(dir.file("m.db"));
  ASSERT_TRUE(store && store->ensure_table({"t", "pk", "", {}}).ok());
  ASSERT_TRUE(store->put("t", {{"pk", "a"}, {"secret", "hunter2"}}, {}).ok());
  const Status bad_add = store->update("t", {"a", ""}, Update().add("secret", 1), {}).status();
  EXPECT_EQ(bad_add.code(), Code::kInvalidArgument);
  EXPECT_THAT(bad_add.message(), HasSubstr("secret"));        // names the attribute ...
  EXPECT_THAT(bad_add.message(), Not(HasSubstr("hunter2")));  // ... not its value
}

TEST(SqliteStore, MoreThreadsThanConnectionsShareThePool) {
  TempDir dir;
  SqliteOptions options;
  options.path = dir.file("pool.db");
  options.connections_max = 2;
  auto opened = open_sqlite_store(options);
  ASSERT_TRUE(opened.ok());
  ItemStore& store = **opened;
  ASSERT_TRUE(store.ensure_table({"t", "pk", "", {}}).ok());
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        if (!store.update("t", {"n", ""}, Update().add("count", 1), {}).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(*get_int(*store.get("t", {"n", ""}, true), "count"), 400);
}

}  // namespace
}  // namespace leasehold::store
