#include "bench/baselines/sqlite_raw_baseline.h"

#include <sqlite3.h>

#include <atomic>
#include <memory>
#include <thread>

namespace leasehold::bench {
namespace {

// What a lease renewal means, written by hand: extend the expiry if the
// owner and token are still ours, the lease has not expired, and no later
// heartbeat is stored.
constexpr char kRenewSql[] =
    "UPDATE \"items_%s\" SET data = json_set(data, '$.lease_heartbeat_at_ms', ?1, "
    "'$.lease_expires_at_ms', ?2) WHERE pk = ?3 AND sk = '' "
    "AND json_extract(data, '$.lease_owner') = ?5 "
    "AND json_extract(data, '$.lease_token') = ?4 "
    "AND json_extract(data, '$.lease_expires_at_ms') > ?1 "
    "AND json_extract(data, '$.lease_heartbeat_at_ms') <= ?1";

struct Closer {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};

struct RenewLoopOutcome {
  int64_t done = 0;
  std::string error;
};

void renew_loop(const std::string& path, const std::string& sql,
                const std::vector<RawLease>& leases, size_t first, size_t stride, MonoTime until,
                int64_t ttl_ms, RenewLoopOutcome& out) {
  sqlite3* raw_db = nullptr;
  sqlite3_open_v2(path.c_str(), &raw_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  std::unique_ptr<sqlite3, Closer> db(raw_db);
  sqlite3_busy_timeout(db.get(), 5000);
  sqlite3_exec(db.get(), "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL", nullptr, nullptr,
               nullptr);
  sqlite3_stmt* raw_stmt = nullptr;
  if (sqlite3_prepare_v3(db.get(), sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &raw_stmt,
                         nullptr) != SQLITE_OK) {
    out.error = sqlite3_errmsg(db.get());
    return;
  }
  std::unique_ptr<sqlite3_stmt, Closer> stmt(raw_stmt);
  RealClock clock;
  for (size_t i = first; clock.mono_now() < until; i += stride) {
    if (i >= leases.size()) i = first;
    const RawLease& lease = leases[i];
    const int64_t now_ms = to_unix_ms(clock.wall_now());
    sqlite3_bind_int64(stmt.get(), 1, now_ms);
    sqlite3_bind_int64(stmt.get(), 2, now_ms + ttl_ms);
    sqlite3_bind_text(stmt.get(), 3, lease.pk.data(), static_cast<int>(lease.pk.size()),
                      SQLITE_STATIC);
    sqlite3_bind_text(stmt.get(), 4, lease.token.data(), static_cast<int>(lease.token.size()),
                      SQLITE_STATIC);
    sqlite3_bind_text(stmt.get(), 5, lease.owner.data(), static_cast<int>(lease.owner.size()),
                      SQLITE_STATIC);
    const int rc = sqlite3_step(stmt.get());
    sqlite3_reset(stmt.get());
    if (rc != SQLITE_DONE || sqlite3_changes(db.get()) != 1) {
      out.error =
          rc != SQLITE_DONE ? sqlite3_errmsg(db.get()) : "a renewal's condition did not hold";
      return;
    }
    ++out.done;
  }
}

class SqliteRawBaseline final : public RawBaseline {
 public:
  SqliteRawBaseline(std::string path, std::string table)
      : path_(std::move(path)), table_(std::move(table)) {}

  Result<RawRun> renew(const std::vector<RawLease>& leases, int64_t threads, Duration duration,
                       int64_t ttl_ms) override {
    std::vector<char> sql(sizeof kRenewSql + table_.size());
    std::snprintf(sql.data(), sql.size(), kRenewSql, table_.c_str());
    const MonoTime until = RealClock().mono_now() + duration;
    std::vector<RenewLoopOutcome> outcomes(threads);
    std::vector<std::thread> workers;
    for (int64_t t = 0; t < threads; ++t) {
      workers.emplace_back(renew_loop, path_, std::string(sql.data()), std::cref(leases), t,
                           threads, until, ttl_ms, std::ref(outcomes[t]));
    }
    for (auto& w : workers) w.join();
    RawRun run;
    for (const auto& o : outcomes) {
      if (!o.error.empty()) return internal_error("raw SQLite baseline: " + o.error);
      run.renewals += o.done;
    }
    return run;
  }

 private:
  const std::string path_;
  const std::string table_;
};

}  // namespace

std::unique_ptr<RawBaseline> make_sqlite_raw_baseline(std::string path, std::string table) {
  return std::make_unique<SqliteRawBaseline>(std::move(path), std::move(table));
}

}  // namespace leasehold::bench
