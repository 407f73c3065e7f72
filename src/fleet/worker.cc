// The worker: streams (I/O threads), the control loop (reconcile, balance,
// membership) and the keeper loop (checkpoints, reconnects).
#include "fleet/worker.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <map>
#include <span>
#include <thread>

#include "base/logging.h"
#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "fleet/balance.h"
#include "fleet/connections.h"
#include "fleet/members.h"
#include "fleet/message.h"
#include "fleet/schema.h"
#include "leasehold/renewer.h"
#include "metrics/registry.h"
#include "net/websocket.h"

namespace leasehold::fleet {
namespace {

using std::chrono::milliseconds;

constexpr size_t kBatchGetMax = 100;  // DynamoDB's BatchGetItem limit
// Checkpoints written per store call (one SQLite transaction).
constexpr size_t kCheckpointBatchMax = 500;
// How long stop() waits for the upstream connections it closed to end.
constexpr milliseconds kStopWaitMax{5'000};

bool valid_id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '~' || c == '-';
}

// What a stream is doing. Only kConnecting and kStreaming write to the sink.
enum class State { kConnecting, kStreaming, kWaiting, kClosing, kLost };

// One owned connection.
struct Stream {
  Stream(std::string id_, std::string url_template_, std::vector<std::string> seq_path_)
      : id(std::move(id_)),
        url_template(std::move(url_template_)),
        seq_path(std::move(seq_path_)) {}

  const std::string id;
  const std::string url_template;
  const std::vector<std::string> seq_path;
  Renewer::Id renew_id = 0;  // set once, before the stream is shared

  Mutex mu;
  State state GUARDED_BY(mu) = State::kWaiting;
  uint64_t generation GUARDED_BY(mu) =
      0;  // of the upstream connection; stale callbacks are ignored
  std::shared_ptr<net::WsStream> ws GUARDED_BY(mu);
  int64_t epoch GUARDED_BY(mu) = 0;
  MonoTime valid_until GUARDED_BY(mu){};
  int64_t written_seq GUARDED_BY(mu) = 0;
  int64_t checkpointed_seq GUARDED_BY(mu) = 0;
  int failures GUARDED_BY(mu) = 0;  // upstream connections that failed in a row
  MonoTime reconnect_at GUARDED_BY(mu){};
  std::string last_error GUARDED_BY(mu);
  bool error_changed GUARDED_BY(mu) = false;  // last_error differs from the stored one
  MonoTime bad_logged_at GUARDED_BY(mu){};
  uint64_t bad_unlogged GUARDED_BY(mu) = 0;
};

// Upstream connections whose on_closed has not run yet, so that stop()
// returns only once no handler can reach the worker any more.
class OpenStreams {
 public:
  void add() {
    MutexLock lock(mu_);
    ++count_;
  }
  void done() {
    MutexLock lock(mu_);
    if (--count_ == 0) cv_.notify_all();
  }
  // False if some were still open at `deadline`.
  bool wait_for_none(MonoTime deadline) {
    MutexLock lock(mu_);
    while (count_ > 0) {
      if (cv_.wait_until(mu_, deadline) == std::cv_status::timeout) return count_ == 0;
    }
    return true;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  size_t count_ GUARDED_BY(mu_) = 0;
};

struct Metrics {
  explicit Metrics(metrics::Registry& r)
      : owned(
            r.gauge("leasehold_fleet_owned_connections", "Connections this worker owns").with({})),
        messages(
            r.counter("leasehold_fleet_messages_total", "Messages written to the sink").with({})),
        bad_messages(
            r.counter("leasehold_fleet_bad_messages_total",
                      "Upstream messages refused: not JSON, no sequence number, going back")
                .with({})),
        checkpoint_lag(r.gauge("leasehold_fleet_checkpoint_lag_messages",
                               "Messages in the sink that no checkpoint covers yet")
                           .with({})),
        renew_failures(r.counter("leasehold_fleet_renew_failures_total",
                                 "Lease renewals that failed and were retried")
                           .with({})),
        takeovers(r.counter("leasehold_fleet_takeovers_total",
                            "Connections taken from a worker that did not hand them over")
                      .with({})),
        handovers(r.counter("leasehold_fleet_handovers_total",
                            "Connections handed over with a final checkpoint")
                      .with({})),
        losses(r.counter("leasehold_fleet_leases_lost_total", "Connection leases lost").with({})),
        reconcile_seconds(
            r.histogram("leasehold_fleet_reconcile_seconds", "Time one reconcile took", {})
                .with({})),
        reconnects(r.counter("leasehold_fleet_upstream_reconnects_total",
                             "Upstream connections that ended and were retried")
                       .with({})) {}

  metrics::Gauge& owned;
  metrics::Counter& messages;
  metrics::Counter& bad_messages;
  metrics::Gauge& checkpoint_lag;
  metrics::Counter& renew_failures;
  metrics::Counter& takeovers;
  metrics::Counter& handovers;
  metrics::Counter& losses;
  metrics::Histogram& reconcile_seconds;
  metrics::Counter& reconnects;
};

LeaseConfig config_for(LeaseConfig config, std::string table, Logger* logger) {
  config.table = std::move(table);
  config.info_log = logger;
  return config;
}

}  // namespace

Status validate_worker_options(const WorkerOptions& o) {
  if (o.id.empty() || o.id.size() > kWorkerIdBytesMax ||
      !std::all_of(o.id.begin(), o.id.end(), valid_id_char)) {
    return invalid_argument("worker id must be 1.." + std::to_string(kWorkerIdBytesMax) +
                            " characters of A-Z a-z 0-9 . _ ~ -");
  }
  if (o.max_connections < 1 || o.max_connections > kMaxConnectionsLimit) {
    return invalid_argument("max connections must be 1.." + std::to_string(kMaxConnectionsLimit));
  }
  if (o.reconcile_every <= Duration::zero()) {
    return invalid_argument("reconcile period must be positive");
  }
  if (o.checkpoint_every < Duration::zero()) {
    return invalid_argument("checkpoint period must not be negative");
  }
  return {};
}

class Worker::Impl {
 public:
  Impl(ItemStore& store, Clock& clock, Random& random, net::WsClient& upstream, Sink& sink,
       WorkerOptions options)
      : store_(store),
        clock_(clock),
        random_(random),
        upstream_(upstream),
        sink_(sink),
        options_(std::move(options)),
        own_registry_(options_.metrics == nullptr ? std::make_unique<metrics::Registry>()
                                                  : nullptr),
        metrics_(options_.metrics != nullptr ? *options_.metrics : *own_registry_),
        conn_leases_(store, clock, random,
                     config_for(options_.lease, kConnectionsTable, options_.logger)),
        member_leases_(store, clock, random,
                       config_for(options_.lease, kWorkersTable, options_.logger)),
        renewer_(conn_leases_, clock, random, renewer_options(2)),
        member_renewer_(member_leases_, clock, random, renewer_options(1)) {
    if (options_.checkpoint_every == Duration::zero()) {
      options_.checkpoint_every = options_.renew_every;
    }
  }

  ~Impl() { stop(); }

  Status join();
  void start_threads();
  void stop();

  WorkerStats stats() const;
  std::vector<OwnedConnection> owned() const;
  const std::string& id() const { return options_.id; }

 private:
  RenewerOptions renewer_options(size_t threads) const {
    RenewerOptions o;
    o.renew_every = options_.renew_every;
    o.renew_threads = threads;
    o.info_log = options_.logger;
    return o;
  }

  // The control loop and its parts.
  void control_loop();
  void reconcile();
  void read_desired_state();
  void balance_and_acquire();
  bool acquire(const Connection& seen);
  void write_figures();
  void rejoin_if_lost();

  // The keeper loop and its parts.
  void keeper_loop();
  // One stream's checkpoint write, planned under its lock.
  struct Checkpoint {
    std::shared_ptr<Stream> stream;
    Lease lease;
    int64_t seq = 0;    // the last sequence number flushed to the sink
    std::string error;  // last_error as planned
    Update update;
    Condition forward;  // last_seq only moves forward
  };
  void checkpoint_all();
  void checkpoint(const std::vector<std::shared_ptr<Stream>>& streams);
  std::optional<Checkpoint> plan_checkpoint(const std::shared_ptr<Stream>& stream);
  void finish_checkpoint(const Checkpoint& c, const Result<Item>& written);
  void reconnect_due();
  void connect(const std::shared_ptr<Stream>& stream);

  // Streams.
  void on_messages(const std::shared_ptr<Stream>& stream, uint64_t generation,
                   std::span<const net::WsMessage> messages);
  void add_if_forward(Stream& stream, const Result<int64_t>& seq, std::string_view message,
                      int64_t written_at_ms, SinkBatch& batch) REQUIRES(stream.mu);
  Status write_batch(Stream& stream, const SinkBatch& batch) REQUIRES(stream.mu);
  void on_closed(const std::shared_ptr<Stream>& stream, uint64_t generation, const Status& why);
  void lose(const std::shared_ptr<Stream>& stream, const Status& why);
  void hand_over(const std::vector<std::shared_ptr<Stream>>& streams, std::string_view why);
  void note_figures_at_balance(const std::vector<Member>* before);
  void forget(const std::string& id);
  bool still_valid(Stream& stream, MonoTime now) REQUIRES(stream.mu);
  void note_bad(Stream& stream, std::string_view what) REQUIRES(stream.mu);

  std::vector<std::shared_ptr<Stream>> snapshot() const EXCLUDES(mu_);
  std::shared_ptr<Stream> find(const std::string& id) const EXCLUDES(mu_);
  Duration jittered(Duration d, double fraction) EXCLUDES(random_mu_);
  void wake_keeper() EXCLUDES(mu_);

  ItemStore& store_;
  Clock& clock_;
  Random& random_;
  net::WsClient& upstream_;
  Sink& sink_;
  WorkerOptions options_;
  const std::unique_ptr<metrics::Registry> own_registry_;
  metrics::Registry& metrics_;
  Metrics m_{metrics_};
  LeaseManager conn_leases_;
  LeaseManager member_leases_;
  Renewer renewer_;
  Renewer member_renewer_;

  mutable Mutex mu_;
  CondVar control_cv_;
  CondVar keeper_cv_;
  bool stopping_ GUARDED_BY(mu_) = false;
  bool stopped_ GUARDED_BY(mu_) = false;
  bool keeper_woken_ GUARDED_BY(mu_) = false;
  std::map<std::string, std::shared_ptr<Stream>> streams_ GUARDED_BY(mu_);
  std::optional<Renewer::Id> member_id_ GUARDED_BY(mu_);
  // When the control loop should next try a lease due to expire.
  MonoTime next_attempt_ GUARDED_BY(mu_) = MonoTime::max();
  uint64_t messages_at_last_figures_ GUARDED_BY(mu_) = 0;
  MonoTime last_figures_at_ GUARDED_BY(mu_){};

  Mutex random_mu_;

  std::atomic<uint64_t> messages_{0}, bad_messages_{0}, repeats_{0}, acquired_{0}, takeovers_{0},
      handovers_{0}, losses_{0}, checkpoints_{0}, reconnects_{0};
  uint64_t renew_failures_seen_ = 0;  // control thread only
  // After this worker last handed connections over to balance the fleet:
  // each other member's `updated_at_ms` as it then read (control thread
  // only). A member has written its figures since once the value differs,
  // whatever its clock says of the time; one that joined since is not here.
  std::map<std::string, int64_t, std::less<>> figures_at_balance_;

  const std::shared_ptr<OpenStreams> open_ = std::make_shared<OpenStreams>();
  std::thread control_;
  std::thread keeper_;
};

// ---------------------------------------------------------------- start and stop

Status Worker::Impl::join() {
  // Created on SQLite; on DynamoDB only `store init` creates tables.
  RETURN_IF_ERROR(store_.require_table(connections_table_spec()));
  RETURN_IF_ERROR(store_.require_table(workers_table_spec()));
  RETURN_IF_ERROR(conn_leases_.check_timing(options_.lease_ttl, options_.renew_every));
  AcquireOptions o;
  o.owner = options_.id;
  o.holder = options_.id;
  o.ttl = options_.lease_ttl;
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  o.extra_update.set("kind", std::string(kWorkerKind)).set("started_at_ms", now_ms);
  o.extra_update.append(
      member_figures(0, static_cast<int64_t>(options_.max_connections), 0, 0, now_ms));
  Result<Lease> lease = member_leases_.acquire(worker_key(options_.id), o);
  if (!lease.ok()) {
    if (lease.status().code() == Code::kAlreadyExists) {
      return already_exists("worker id '" + options_.id + "' is in use by a live worker");
    }
    return lease.status().with_context("joining the fleet");
  }
  const Renewer::Id id = member_renewer_.add(*lease, [this](const Lease&, const Status& why) {
    log_to(options_.logger, LogLevel::kWarn, "membership lease lost: {}", why.message());
    MutexLock lock(mu_);
    member_id_.reset();
  });
  MutexLock lock(mu_);
  member_id_ = id;
  last_figures_at_ = clock_.mono_now();
  return {};
}

void Worker::Impl::start_threads() {
  renewer_.start();
  member_renewer_.start();
  control_ = std::thread([this] { control_loop(); });
  keeper_ = std::thread([this] { keeper_loop(); });
}

void Worker::Impl::stop() {
  {
    MutexLock lock(mu_);
    if (stopped_) return;
    stopped_ = stopping_ = true;
  }
  control_cv_.notify_all();
  keeper_cv_.notify_all();
  if (control_.joinable()) control_.join();
  if (keeper_.joinable()) keeper_.join();
  hand_over(snapshot(), "the worker is stopping");
  if (!open_->wait_for_none(std::chrono::steady_clock::now() + kStopWaitMax)) {
    log_to(options_.logger, LogLevel::kError, "upstream connections still open after {} ms",
           to_ms(kStopWaitMax));
  }
  std::optional<Renewer::Id> member;
  {
    MutexLock lock(mu_);
    member = member_id_;
    member_id_.reset();
  }
  if (member) {
    if (std::optional<Lease> lease = member_renewer_.remove(*member)) {
      const Status released = member_leases_.release(*lease, ReleaseMode::kExpire);
      if (!released.ok()) {
        log_to(options_.logger, LogLevel::kWarn, "leaving the fleet: {}", released.message());
      }
    }
  }
  renewer_.stop();
  member_renewer_.stop();
  log_to(options_.logger, LogLevel::kInfo, "worker {} stopped", options_.id);
}

// ---------------------------------------------------------------- control loop

void Worker::Impl::control_loop() {
  while (true) {
    const MonoTime started = clock_.mono_now();
    reconcile();
    m_.reconcile_seconds.observe(
        std::chrono::duration<double>(clock_.mono_now() - started).count());
    const MonoTime next = started + jittered(options_.reconcile_every, 0.2);
    MutexLock lock(mu_);
    while (!stopping_) {
      const MonoTime due = std::min(next, next_attempt_);
      if (clock_.mono_now() >= due) break;
      control_cv_.wait_until(mu_, due);
    }
    if (stopping_) return;
    next_attempt_ = MonoTime::max();
  }
}

void Worker::Impl::reconcile() {
  rejoin_if_lost();
  read_desired_state();
  balance_and_acquire();
  write_figures();
  const RenewerStats rs = renewer_.stats();
  if (rs.failures > renew_failures_seen_) {
    m_.renew_failures.inc(static_cast<double>(rs.failures - renew_failures_seen_));
    renew_failures_seen_ = rs.failures;
  }
}

// A membership lost to a store outage is taken again once the store answers.
void Worker::Impl::rejoin_if_lost() {
  {
    MutexLock lock(mu_);
    if (member_id_) return;
  }
  const Status joined = join();
  if (!joined.ok()) {
    log_to(options_.logger, LogLevel::kWarn, "rejoining the fleet: {}", joined.message());
  }
}

// One batch read of everything owned: STOPPED or removed connections are
// handed over, and one that another owner holds is lost at once.
void Worker::Impl::read_desired_state() {
  const std::vector<std::shared_ptr<Stream>> streams = snapshot();
  for (size_t at = 0; at < streams.size(); at += kBatchGetMax) {
    std::vector<Key> keys;
    std::map<std::string, std::shared_ptr<Stream>> by_pk;
    for (size_t i = at; i < std::min(streams.size(), at + kBatchGetMax); ++i) {
      keys.push_back(connection_key(streams[i]->id));
      by_pk[keys.back().pk] = streams[i];
    }
    Result<std::vector<Item>> items = store_.batch_get(kConnectionsTable, keys);
    if (!items.ok()) {
      log_to(options_.logger, LogLevel::kWarn, "reading desired state: {}",
             items.status().message());
      return;
    }
    std::vector<std::shared_ptr<Stream>> stop;
    for (const Item& item : *items) {
      Result<Connection> c = parse_connection(item);
      if (!c.ok()) continue;
      auto found = by_pk.find(connection_key(c->id).pk);
      if (found == by_pk.end()) continue;
      std::shared_ptr<Stream> stream = found->second;
      by_pk.erase(found);
      if (c->owner != options_.id) {
        lose(stream, failed_precondition("connection " + c->id + " is now owned by " + c->owner));
      } else if (c->desired_state != DesiredState::kStarted) {
        stop.push_back(stream);
      }
    }
    for (auto& [pk, stream] : by_pk) stop.push_back(stream);  // removed
    hand_over(stop, "stopped or removed");
  }
}

// Takes orphans up to this worker's fair share, or hands the excess over.
void Worker::Impl::balance_and_acquire() {
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  const Duration skew = options_.lease.max_clock_skew;
  const int64_t horizon_ms = now_ms + to_ms(options_.reconcile_every + skew);
  QueryOptions q;
  q.limit = kQueryLimitMax;
  Result<Page> page = store_.query_index(kConnectionsTable, kOrphanIndex,
                                         std::string(desired_state_name(DesiredState::kStarted)),
                                         KeyRange::lt(horizon_ms), q);
  if (!page.ok()) {
    log_to(options_.logger, LogLevel::kWarn, "finding orphaned connections: {}",
           page.status().message());
    return;
  }
  std::vector<Connection> orphans;
  MonoTime soonest = MonoTime::max();
  for (const Item& item : page->items) {
    Result<Connection> c = parse_connection(item);
    if (!c.ok() || find(c->id) != nullptr) continue;
    if (c->expires_at_ms < now_ms) {
      orphans.push_back(std::move(*c));
    } else {  // due to expire before the next reconcile: try then
      soonest =
          std::min(soonest, clock_.mono_now() + milliseconds(c->expires_at_ms - now_ms) + skew);
    }
  }
  Result<std::vector<Member>> members = list_members(store_, clock_, /*alive_only=*/true);
  const int64_t owned = static_cast<int64_t>(snapshot().size());
  const int64_t capacity = static_cast<int64_t>(options_.max_connections);
  std::vector<int64_t> capacities{capacity};
  std::vector<int64_t> others_owned;
  int64_t total = owned + static_cast<int64_t>(orphans.size());
  if (members.ok()) {
    for (const Member& m : *members) {
      if (m.id == options_.id) continue;
      capacities.push_back(m.capacity > 0 ? m.capacity
                                          : static_cast<int64_t>(kMaxConnectionsDefault));
      others_owned.push_back(m.owned);
      total += m.owned;
    }
  }
  const int64_t share = fair_share(total, capacities, 0);
  {
    MutexLock lock(mu_);
    next_attempt_ = std::min(next_attempt_, soonest);
  }
  // Hand the excess over only if another worker has room below its share
  // (a worker that died still counts until its membership expires, and has
  // no room), only once no orphan waits, and only once every other worker
  // has written its figures since this worker last handed some over: until
  // then their counts leave out what they have just taken, and the share
  // they give is too small.
  bool someone_has_room = false;
  bool counts_are_fresh = true;
  for (size_t i = 0; i < others_owned.size(); ++i) {
    someone_has_room = someone_has_room || others_owned[i] < fair_share(total, capacities, i + 1);
  }
  if (members.ok()) {
    for (const Member& m : *members) {
      const auto seen = figures_at_balance_.find(m.id);
      if (seen != figures_at_balance_.end() && seen->second == m.updated_at_ms) {
        counts_are_fresh = false;
      }
    }
  }
  if (owned > share && someone_has_room && orphans.empty() && counts_are_fresh) {
    std::vector<std::shared_ptr<Stream>> excess = snapshot();
    excess.resize(static_cast<size_t>(owned - share));
    hand_over(excess, "balancing the fleet");
    note_figures_at_balance(members.ok() ? &*members : nullptr);
    return;
  }
  // Orphans up to the share; beyond it, up to capacity, only those whose
  // owner died (expired, not handed over): recovery first, balance after.
  int64_t room = share - owned;
  int64_t spare = capacity - std::max(owned, share);
  for (const Connection& c : orphans) {
    const bool crashed = c.expires_at_ms != 0;
    if (room > 0) {
      if (acquire(c)) --room;
    } else if (crashed && spare > 0) {
      if (acquire(c)) --spare;
    }
  }
}

// Acquires `seen` (as the index showed it), reads it back consistently (the
// index may lag the checkpoint), and starts streaming from last_seq.
bool Worker::Impl::acquire(const Connection& seen) {
  AcquireOptions o;
  o.owner = options_.id;
  o.holder = options_.id;
  o.ttl = options_.lease_ttl;
  o.extra_condition =
      cond::eq(kDesiredStateAttr, std::string(desired_state_name(DesiredState::kStarted)));
  Result<Lease> lease = conn_leases_.acquire(connection_key(seen.id), o);
  if (!lease.ok()) {
    if (lease.status().code() != Code::kAlreadyExists) {
      log_to(options_.logger, LogLevel::kWarn, "acquiring {}: {}", seen.id,
             lease.status().message());
    }
    return false;
  }
  Result<Item> item = store_.get(kConnectionsTable, connection_key(seen.id), /*consistent=*/true);
  Result<Connection> now = item.ok() ? parse_connection(*item) : Result<Connection>(item.status());
  if (!now.ok() || now->owner != options_.id || now->token != lease->token) {
    log_to(options_.logger, LogLevel::kWarn, "connection {} changed while it was acquired",
           seen.id);
    (void)conn_leases_.release(*lease, ReleaseMode::kExpire);
    return false;
  }
  auto stream = std::make_shared<Stream>(now->id, now->ws_url, split_seq_field(now->seq_field));
  {
    MutexLock l(stream->mu);
    stream->epoch = lease->epoch;
    stream->valid_until = lease->valid_until;
    stream->written_seq = stream->checkpointed_seq = now->last_seq;
    stream->last_error = now->last_error;
  }
  std::weak_ptr<Stream> weak = stream;
  stream->renew_id = renewer_.add(*lease, [this, weak](const Lease&, const Status& why) {
    if (auto s = weak.lock()) lose(s, why);
  });
  {
    MutexLock lock(mu_);
    streams_[stream->id] = stream;
  }
  ++acquired_;
  const bool takeover = !seen.owner.empty() && seen.expires_at_ms != 0;
  if (takeover) {
    ++takeovers_;
    m_.takeovers.inc();
  }
  m_.owned.set(static_cast<double>(snapshot().size()));
  log_to(options_.logger, LogLevel::kInfo, "acquired {} (epoch {}, from seq {}{})", stream->id,
         lease->epoch, now->last_seq, takeover ? ", taken over from " + seen.owner : "");
  connect(stream);
  return true;
}

// This worker's figures on its membership item, for the others' balancing
// and for the fleet API.
void Worker::Impl::write_figures() {
  std::optional<Renewer::Id> member;
  double rate = 0;
  const uint64_t messages = messages_.load();
  {
    MutexLock lock(mu_);
    member = member_id_;
    const MonoTime now = clock_.mono_now();
    const double seconds = std::chrono::duration<double>(now - last_figures_at_).count();
    if (seconds > 0) rate = static_cast<double>(messages - messages_at_last_figures_) / seconds;
    messages_at_last_figures_ = messages;
    last_figures_at_ = now;
  }
  if (!member) return;
  std::optional<Lease> lease = member_renewer_.get(*member);
  if (!lease) return;
  const Update figures = member_figures(
      static_cast<int64_t>(snapshot().size()), static_cast<int64_t>(options_.max_connections),
      static_cast<int64_t>(messages), rate, to_unix_ms(clock_.wall_now()));
  Result<Item> written = member_leases_.fenced_write(*lease, figures);
  if (!written.ok()) {
    log_to(options_.logger, LogLevel::kDebug, "writing membership figures: {}",
           written.status().message());
  }
}

// ---------------------------------------------------------------- keeper loop

void Worker::Impl::keeper_loop() {
  MonoTime next_checkpoint = clock_.mono_now() + options_.checkpoint_every;
  while (true) {
    {
      MutexLock lock(mu_);
      while (!stopping_ && !keeper_woken_) {
        MonoTime due = next_checkpoint;
        for (const auto& [id, s] : streams_) {
          MutexLock l(s->mu);
          if (s->state == State::kWaiting) due = std::min(due, s->reconnect_at);
        }
        if (clock_.mono_now() >= due) break;
        keeper_cv_.wait_until(mu_, due);
      }
      if (stopping_) return;
      keeper_woken_ = false;
    }
    // Lost streams are forgotten (their leases are gone; nothing to write).
    for (const auto& s : snapshot()) {
      bool lost = false;
      {
        MutexLock l(s->mu);
        lost = s->state == State::kLost;
      }
      if (lost) forget(s->id);
    }
    if (clock_.mono_now() >= next_checkpoint) {
      checkpoint_all();
      next_checkpoint = clock_.mono_now() + options_.checkpoint_every;
    }
    reconnect_due();
  }
}

void Worker::Impl::checkpoint_all() {
  const Status flushed = sink_.flush();
  if (!flushed.ok()) {
    log_to(options_.logger, LogLevel::kError, "flushing the sink: {}", flushed.message());
    return;  // no checkpoint may cover what is not durable
  }
  const std::vector<std::shared_ptr<Stream>> streams = snapshot();
  checkpoint(streams);
  int64_t lag = 0;
  for (const auto& s : streams) {
    MutexLock l(s->mu);
    lag += s->written_seq - s->checkpointed_seq;
  }
  m_.checkpoint_lag.set(static_cast<double>(lag));
}

// Writes last_seq (and last_error, if it changed) of streams whose sink lines
// are flushed, many per store call. Never moves last_seq back.
void Worker::Impl::checkpoint(const std::vector<std::shared_ptr<Stream>>& streams) {
  std::vector<Checkpoint> planned;
  for (const auto& s : streams) {
    if (std::optional<Checkpoint> c = plan_checkpoint(s)) planned.push_back(std::move(*c));
  }
  for (size_t at = 0; at < planned.size(); at += kCheckpointBatchMax) {
    const size_t end = std::min(planned.size(), at + kCheckpointBatchMax);
    std::vector<FencedWrite> writes;
    writes.reserve(end - at);
    for (size_t i = at; i < end; ++i) {
      writes.push_back({&planned[i].lease, planned[i].update, planned[i].forward});
    }
    const std::vector<Result<Item>> written = conn_leases_.fenced_write_each(writes);
    for (size_t i = at; i < end; ++i) finish_checkpoint(planned[i], written[i - at]);
  }
}

std::optional<Worker::Impl::Checkpoint> Worker::Impl::plan_checkpoint(
    const std::shared_ptr<Stream>& stream) {
  Checkpoint c;
  int64_t checkpointed = 0;
  {
    MutexLock l(stream->mu);
    if (stream->state == State::kClosing || stream->state == State::kLost) return std::nullopt;
    c.seq = stream->written_seq;
    checkpointed = stream->checkpointed_seq;
    c.error = stream->last_error;
    if (c.seq <= checkpointed && !stream->error_changed) return std::nullopt;
    if (stream->error_changed) {
      c.update.set("last_error", c.error).set("last_error_at_ms", to_unix_ms(clock_.wall_now()));
    }
  }
  std::optional<Lease> lease = renewer_.get(stream->renew_id);
  if (!lease) return std::nullopt;
  c.stream = stream;
  c.lease = std::move(*lease);
  if (c.seq > checkpointed) {
    c.update.set("last_seq", c.seq);
    c.forward = cond::lt("last_seq", c.seq) || cond::not_exists("last_seq");
  }
  return c;
}

void Worker::Impl::finish_checkpoint(const Checkpoint& c, const Result<Item>& written) {
  const bool applied = written.ok();
  // The lease is still ours and only `forward` failed: a checkpoint at or
  // past c.seq is there already (a write whose answer was lost).
  const bool already = written.status().code() == Code::kConditionFailed;
  if (!applied && !already) {
    log_to(options_.logger, LogLevel::kWarn, "checkpoint of {}: {}", c.stream->id,
           written.status().message());
    return;
  }
  if (applied) ++checkpoints_;
  MutexLock l(c.stream->mu);
  c.stream->checkpointed_seq = std::max(c.stream->checkpointed_seq, c.seq);
  if (applied && c.stream->last_error == c.error) c.stream->error_changed = false;
}

void Worker::Impl::reconnect_due() {
  const MonoTime now = clock_.mono_now();
  for (const auto& s : snapshot()) {
    {
      MutexLock l(s->mu);
      if (s->state != State::kWaiting || s->reconnect_at > now) continue;
    }
    // Resume from a checkpoint of everything written, as the URL says.
    if (sink_.flush().ok()) checkpoint({s});
    connect(s);
  }
}

void Worker::Impl::connect(const std::shared_ptr<Stream>& stream) {
  uint64_t generation = 0;
  std::string url;
  {
    MutexLock l(stream->mu);
    if (stream->state == State::kClosing || stream->state == State::kLost) return;
    generation = ++stream->generation;
    stream->state = State::kConnecting;
    url = expand_url(stream->url_template, stream->checkpointed_seq);
  }
  std::weak_ptr<Stream> weak = stream;
  std::shared_ptr<OpenStreams> open = open_;
  net::WsHandlers handlers;
  handlers.on_open = [this, weak, generation] {
    auto s = weak.lock();
    if (!s) return;
    MutexLock l(s->mu);
    if (s->generation != generation || s->state != State::kConnecting) return;
    s->state = State::kStreaming;
    s->failures = 0;
    if (!s->last_error.empty()) {
      s->last_error.clear();
      s->error_changed = true;
    }
  };
  handlers.on_messages = [this, weak, generation](std::span<const net::WsMessage> messages) {
    if (auto s = weak.lock()) on_messages(s, generation, messages);
  };
  handlers.on_closed = [this, weak, generation, open](const Status& why) {
    if (auto s = weak.lock()) on_closed(s, generation, why);
    open->done();  // the last this handler does with the worker
  };
  open_->add();
  Result<std::shared_ptr<net::WsStream>> ws = upstream_.connect(url, std::move(handlers));
  if (!ws.ok()) open_->done();  // no handler will run
  MutexLock l(stream->mu);
  if (!ws.ok()) {  // a URL that cannot work: say so, and try again later
    stream->state = State::kWaiting;
    stream->last_error = ws.status().message();
    stream->error_changed = true;
    stream->reconnect_at = clock_.mono_now() + kReconnectBackoffMax;
    return;
  }
  if (stream->generation == generation &&
      (stream->state == State::kConnecting || stream->state == State::kStreaming)) {
    stream->ws = *ws;
    return;
  }
  // Closed or lost while connecting: this connection is not wanted.
  l.unlock();
  (*ws)->close();
}

// ---------------------------------------------------------------- streams

bool Worker::Impl::still_valid(Stream& stream, MonoTime now) {
  if (now < stream.valid_until) return true;
  // Past the deadline last seen: a renewal may have moved it.
  std::optional<Lease> lease = renewer_.get(stream.renew_id);
  if (!lease || !lease->valid_at(now)) return false;
  stream.valid_until = lease->valid_until;
  return true;
}

// One batch of a stream's messages (net/websocket.h) becomes one sink write
// of the lines of those that go forward. The rules that keep one writer per
// connection hold for every line of it because everything from the state
// check to the write is done under the stream's lock, which lose(),
// hand_over() and checkpoints take as well:
//   - the stream is open and the messages came on its current upstream
//     connection, else nothing is written (a close or a loss comes first,
//     or waits until this write is done and counted in written_seq);
//   - the lease is checked valid after the lines are made, at the monotonic
//     time just before the write, however long the messages waited;
//   - a line goes in only if its sequence number is above the last one
//     written or batched, so repeats are dropped and nothing goes back;
//   - written_seq moves to the last line wholly in the sink, which is all a
//     checkpoint (after a flush) may cover.
void Worker::Impl::on_messages(const std::shared_ptr<Stream>& stream, uint64_t generation,
                               std::span<const net::WsMessage> messages) {
  // Parsed before the lock: finding a sequence number needs nothing of the
  // stream's state.
  thread_local std::vector<Result<int64_t>> seqs;
  seqs.clear();
  for (const net::WsMessage& m : messages) {
    seqs.push_back(m.text ? find_seq(m.bytes, stream->seq_path)
                          : Result<int64_t>(invalid_argument("a binary message")));
  }
  thread_local SinkBatch batch;
  batch.clear();
  std::shared_ptr<net::WsStream> to_close;
  bool lost = false;
  {
    MutexLock l(stream->mu);
    if (stream->generation != generation ||
        (stream->state != State::kStreaming && stream->state != State::kConnecting)) {
      return;
    }
    const int64_t written_at_ms = to_unix_ms(clock_.wall_now());
    for (size_t i = 0; i < messages.size(); ++i) {
      add_if_forward(*stream, seqs[i], messages[i].bytes, written_at_ms, batch);
    }
    if (!still_valid(*stream, clock_.mono_now())) {
      stream->state = State::kLost;
      ++stream->generation;
      to_close = std::move(stream->ws);
      lost = true;
    } else if (batch.empty()) {
      return;
    } else {
      const Status written = write_batch(*stream, batch);
      if (written.ok()) return;
      // The sink failed: stop this stream and retry later, from what was written.
      log_to(options_.logger, LogLevel::kError, "sink: {}", written.message());
      stream->state = State::kWaiting;
      stream->reconnect_at = clock_.mono_now() + kReconnectBackoffMax;
      ++stream->generation;
      to_close = std::move(stream->ws);
    }
  }
  if (to_close) to_close->close();
  if (lost) {
    ++losses_;
    m_.losses.inc();
    log_to(options_.logger, LogLevel::kWarn, "lost {}: its lease is past its local deadline",
           stream->id);
  }
  wake_keeper();
}

// Adds the message's line to `batch` if its sequence number is above the
// last one written or batched; counts the others.
void Worker::Impl::add_if_forward(Stream& stream, const Result<int64_t>& seq,
                                  std::string_view message, int64_t written_at_ms,
                                  SinkBatch& batch) {
  if (!seq.ok()) return note_bad(stream, seq.status().message());
  const int64_t last = batch.empty() ? stream.written_seq : batch.last_seq();
  if (*seq == last) {
    ++repeats_;
    return;
  }
  if (*seq < last) {
    return note_bad(stream, "sequence number " + std::to_string(*seq) + " goes back from " +
                                std::to_string(last));
  }
  batch.add({stream.id, *seq, options_.id, stream.epoch, written_at_ms, message});
}

// One sink write of `batch`; written_seq moves to its last line that the
// sink took. REQUIRES: the stream is open for the batch's messages and its
// lease was found valid just now.
Status Worker::Impl::write_batch(Stream& stream, const SinkBatch& batch) {
  assert(stream.state == State::kStreaming || stream.state == State::kConnecting);
  assert(!batch.empty() && batch.seq(0) > stream.written_seq);
  size_t bytes = 0;
  const Status written = sink_.write(batch.text(), &bytes);
  const size_t lines = batch.lines_within(bytes);
  assert(written.ok() == (lines == batch.size()));
  if (lines > 0) {
    stream.written_seq = batch.seq(lines - 1);
    messages_ += lines;
    m_.messages.inc(static_cast<double>(lines));
  }
  return written;
}

void Worker::Impl::note_bad(Stream& stream, std::string_view what) {
  ++bad_messages_;
  m_.bad_messages.inc();
  const MonoTime now = clock_.mono_now();
  if (stream.bad_logged_at != MonoTime{} && now - stream.bad_logged_at < kBadMessageLogEvery) {
    ++stream.bad_unlogged;
    return;
  }
  log_to(options_.logger, LogLevel::kWarn,
         "connection {}: message refused: {} ({} more since last said)", stream.id, what,
         stream.bad_unlogged);
  stream.bad_logged_at = now;
  stream.bad_unlogged = 0;
}

void Worker::Impl::on_closed(const std::shared_ptr<Stream>& stream, uint64_t generation,
                             const Status& why) {
  {
    MutexLock l(stream->mu);
    if (stream->generation != generation ||
        (stream->state != State::kStreaming && stream->state != State::kConnecting)) {
      return;
    }
    stream->ws.reset();
    stream->state = State::kWaiting;
    ++stream->failures;
    const Duration cap = std::min<Duration>(
        kReconnectBackoffMax, kReconnectBackoffMin * (1 << std::min(stream->failures - 1, 16)));
    stream->reconnect_at = clock_.mono_now() + jittered(cap * 3 / 4, 1.0 / 3);  // cap/2 .. cap
    if (stream->last_error != why.message()) {
      stream->last_error = why.message();
      stream->error_changed = true;
    }
  }
  ++reconnects_;
  m_.reconnects.inc();
  log_to(options_.logger, LogLevel::kInfo, "connection {}: upstream closed: {}", stream->id,
         why.message());
  wake_keeper();
}

// The lease is gone: close at once, write nothing more, forget the stream.
void Worker::Impl::lose(const std::shared_ptr<Stream>& stream, const Status& why) {
  std::shared_ptr<net::WsStream> ws;
  {
    MutexLock l(stream->mu);
    if (stream->state == State::kLost || stream->state == State::kClosing) return;
    stream->state = State::kLost;
    ++stream->generation;
    ws = std::move(stream->ws);
  }
  if (ws) ws->close();
  ++losses_;
  m_.losses.inc();
  log_to(options_.logger, LogLevel::kWarn, "lost {}: {}", stream->id, why.message());
  wake_keeper();
}

// Closes the streams, flushes once, then releases each lease with its final
// checkpoint in the same write.
// After a handover to balance: the other members' figures as they stand
// now, so that the next balancing waits until each has written them again
// (as read before the handover if they cannot be read now).
void Worker::Impl::note_figures_at_balance(const std::vector<Member>* before) {
  const Result<std::vector<Member>> now = list_members(store_, clock_, /*alive_only=*/true);
  const std::vector<Member>* members = now.ok() ? &*now : before;
  figures_at_balance_.clear();
  if (members == nullptr) return;
  for (const Member& m : *members) {
    if (m.id != options_.id) figures_at_balance_.insert_or_assign(m.id, m.updated_at_ms);
  }
}

void Worker::Impl::hand_over(const std::vector<std::shared_ptr<Stream>>& streams,
                             std::string_view why) {
  std::vector<std::shared_ptr<Stream>> closing;
  for (const auto& s : streams) {
    std::shared_ptr<net::WsStream> ws;
    {
      MutexLock l(s->mu);
      if (s->state == State::kLost || s->state == State::kClosing) continue;
      s->state = State::kClosing;
      ++s->generation;
      ws = std::move(s->ws);
    }
    if (ws) ws->close();  // returns once no message is being written for it
    closing.push_back(s);
  }
  if (closing.empty()) return;
  const Status flushed = sink_.flush();
  for (const auto& s : closing) {
    std::optional<Lease> lease = renewer_.remove(s->renew_id);
    int64_t seq = 0;
    {
      MutexLock l(s->mu);
      seq = s->written_seq;
    }
    if (lease) {
      // Unflushed lines may not be covered: then the lease goes back without them.
      Update final_checkpoint;
      if (flushed.ok() && seq > 0) final_checkpoint.set("last_seq", seq);
      const Status released = conn_leases_.release(*lease, ReleaseMode::kExpire, final_checkpoint);
      if (released.ok()) {
        ++handovers_;
        m_.handovers.inc();
        log_to(options_.logger, LogLevel::kInfo, "handed over {} at seq {} ({})", s->id, seq, why);
      } else {
        log_to(options_.logger, LogLevel::kWarn, "handing over {}: {}", s->id, released.message());
      }
    }
    MutexLock lock(mu_);
    streams_.erase(s->id);
  }
  m_.owned.set(static_cast<double>(snapshot().size()));
}

void Worker::Impl::forget(const std::string& id) {
  std::shared_ptr<Stream> stream;
  {
    MutexLock lock(mu_);
    auto it = streams_.find(id);
    if (it == streams_.end()) return;
    stream = it->second;
    streams_.erase(it);
  }
  (void)renewer_.remove(stream->renew_id);
  m_.owned.set(static_cast<double>(snapshot().size()));
}

// ---------------------------------------------------------------- helpers

std::vector<std::shared_ptr<Stream>> Worker::Impl::snapshot() const {
  MutexLock lock(mu_);
  std::vector<std::shared_ptr<Stream>> out;
  out.reserve(streams_.size());
  for (const auto& [id, s] : streams_) out.push_back(s);
  return out;
}

std::shared_ptr<Stream> Worker::Impl::find(const std::string& id) const {
  MutexLock lock(mu_);
  auto it = streams_.find(id);
  return it == streams_.end() ? nullptr : it->second;
}

Duration Worker::Impl::jittered(Duration d, double fraction) {
  MutexLock lock(random_mu_);
  const double f = 1 + fraction * (2 * random_.uniform01() - 1);
  return std::chrono::duration_cast<Duration>(d * f);
}

void Worker::Impl::wake_keeper() {
  {
    MutexLock lock(mu_);
    keeper_woken_ = true;
  }
  keeper_cv_.notify_all();
}

WorkerStats Worker::Impl::stats() const {
  WorkerStats s;
  s.owned = snapshot().size();
  s.messages = messages_;
  s.bad_messages = bad_messages_;
  s.repeats_dropped = repeats_;
  s.acquired = acquired_;
  s.takeovers = takeovers_;
  s.handovers = handovers_;
  s.losses = losses_;
  s.checkpoints = checkpoints_;
  s.reconnects = reconnects_;
  return s;
}

std::vector<OwnedConnection> Worker::Impl::owned() const {
  std::vector<OwnedConnection> out;
  for (const auto& s : snapshot()) {
    MutexLock l(s->mu);
    out.push_back(
        {s->id, s->epoch, s->written_seq, s->checkpointed_seq, s->state == State::kStreaming});
  }
  return out;
}

// ---------------------------------------------------------------- Worker

Result<std::unique_ptr<Worker>> Worker::start(ItemStore& store, Clock& clock, Random& random,
                                              net::WsClient& upstream, Sink& sink,
                                              WorkerOptions options) {
  RETURN_IF_ERROR(validate_worker_options(options));
  auto impl = std::make_unique<Impl>(store, clock, random, upstream, sink, std::move(options));
  RETURN_IF_ERROR(impl->join());
  impl->start_threads();
  return std::unique_ptr<Worker>(new Worker(std::move(impl)));
}

Worker::Worker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Worker::~Worker() = default;
void Worker::stop() { impl_->stop(); }
WorkerStats Worker::stats() const { return impl_->stats(); }
std::vector<OwnedConnection> Worker::owned() const { return impl_->owned(); }
const std::string& Worker::id() const { return impl_->id(); }

}  // namespace leasehold::fleet
