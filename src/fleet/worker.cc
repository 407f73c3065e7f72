// The worker: streams (I/O threads), the control loop (reconcile, balance,
// membership) and the keeper loop (checkpoints, reconnects).
#include "fleet/worker.h"

#include <algorithm>
#include <array>
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
#include "fleet/placement.h"
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
  // Upstream connections that ended in a row without one that stayed up for
  // kStableAfter: what the reconnect backoff grows with.
  int failures GUARDED_BY(mu) = 0;
  MonoTime opened_at GUARDED_BY(mu){};  // of the current upstream connection
  MonoTime reconnect_at GUARDED_BY(mu){};
  std::string last_error GUARDED_BY(mu);
  bool error_changed GUARDED_BY(mu) = false;  // last_error differs from the stored one
  MonoTime bad_logged_at GUARDED_BY(mu){};
  uint64_t bad_unlogged GUARDED_BY(mu) = 0;
  // The operator's figures, since this worker took the connection; written
  // to its item with the checkpoints.
  MonoTime acquired_at GUARDED_BY(mu){};
  uint64_t messages GUARDED_BY(mu) = 0;
  uint64_t reconnects GUARDED_BY(mu) = 0;
  int64_t last_message_at_ms GUARDED_BY(mu) = 0;  // wall; 0: none yet
  MonoTime last_message_mono GUARDED_BY(mu){};
  bool reconnects_changed GUARDED_BY(mu) = false;  // not yet on the item
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
                       .with({})),
        conflicts(r.counter("leasehold_fleet_acquire_conflicts_total",
                            "Acquisitions of orphaned connections that another worker won")
                      .with({})),
        connection_messages(r.collected(/*counter=*/true,
                                        "leasehold_fleet_connection_messages_total",
                                        "Messages written to the sink for a connection this "
                                        "worker owns, since it took it",
                                        {"conn"})),
        connection_reconnects(r.collected(true, "leasehold_fleet_connection_reconnects_total",
                                          "Upstream reconnects of a connection this worker "
                                          "owns, since it took it",
                                          {"conn"})),
        connection_message_age(r.collected(false,
                                           "leasehold_fleet_connection_last_message_age_seconds",
                                           "Time since the last message of a connection this "
                                           "worker owns (or since it took it, before the first)",
                                           {"conn"})) {}

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
  metrics::Counter& conflicts;
  metrics::Collected& connection_messages;
  metrics::Collected& connection_reconnects;
  metrics::Collected& connection_message_age;
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
  if (o.stall_after < Duration::zero()) {
    return invalid_argument("stall period must not be negative");
  }
  if (o.upstream_stable_after <= Duration::zero()) {
    return invalid_argument("upstream stable period must be positive");
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
    metrics::Collected* families[] = {&m_.connection_messages, &m_.connection_reconnects,
                                      &m_.connection_message_age};
    for (int i = 0; i < 3; ++i) {
      collect_ids_[i] = families[i]->add(
          [this, i](std::vector<metrics::Collected::Sample>& out) { collect_figures(out, i); });
    }
  }

  ~Impl() {
    stop();
    m_.connection_messages.remove(collect_ids_[0]);
    m_.connection_reconnects.remove(collect_ids_[1]);
    m_.connection_message_age.remove(collect_ids_[2]);
  }

  Status join();
  void start_threads();
  void stop();

  WorkerStats stats() const;
  WorkerHealth health() const;
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
  // The orphans found, with how long this worker has seen each free.
  std::vector<OrphanSeen> note_orphans(const std::vector<Connection>& orphans);
  // The other live members' figures, `taking` false for one whose figures
  // have not changed for a while (it stopped reconciling).
  std::vector<MemberFigures> note_members(const std::vector<Member>& members);
  bool may_balance(const Result<std::vector<Member>>& members,
                   const std::vector<OrphanSeen>& orphans);
  bool acquire(const Connection& seen);
  void write_figures();
  void rejoin_if_lost();

  // The keeper loop and its parts.
  void keeper_loop();
  // One stream's checkpoint write, planned under its lock.
  struct Checkpoint {
    std::shared_ptr<Stream> stream;
    Lease lease;
    int64_t seq = 0;          // the last sequence number flushed to the sink
    std::string error;        // last_error as planned
    uint64_t reconnects = 0;  // as planned
    Update update;
    Condition forward;  // last_seq only moves forward
  };
  void checkpoint_all();
  // Plans each stream's checkpoint, flushes the sink, then writes them: a
  // checkpoint covers only lines written before the flush began.
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
  Status write_batch(Stream& stream, SinkBatch& batch) REQUIRES(stream.mu);
  void on_closed(const std::shared_ptr<Stream>& stream, uint64_t generation, const Status& why);
  void lose(const std::shared_ptr<Stream>& stream, const Status& why);
  void hand_over(const std::vector<std::shared_ptr<Stream>>& streams, std::string_view why);
  void note_figures_at_balance(const std::vector<Member>* before);
  void forget(const std::string& id);
  bool still_valid(Stream& stream, MonoTime now) REQUIRES(stream.mu);
  void note_bad(Stream& stream, std::string_view what) REQUIRES(stream.mu);
  void note_sink(const Status& result, bool write) EXCLUDES(sink_mu_);
  bool stalled(const Stream& stream, MonoTime now) const REQUIRES(stream.mu);
  void collect_figures(std::vector<metrics::Collected::Sample>& out, int which) const;

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
      handovers_{0}, losses_{0}, checkpoints_{0}, reconnects_{0}, conflicts_{0};
  uint64_t renew_failures_seen_ = 0;  // control thread only
  // For health(): when the control loop last read the orphan index (mono
  // ns), and the sink's last failure, cleared by its next success.
  std::atomic<int64_t> store_read_at_ns_{0};
  const MonoTime started_at_ = clock_.mono_now();
  mutable Mutex sink_mu_;
  std::string sink_error_ GUARDED_BY(sink_mu_);
  std::atomic<bool> sink_failing_{false};
  std::atomic<bool> taking_{true};  // the last orphan query answered
  std::array<metrics::Collected::Id, 3> collect_ids_{};

  // Control thread only: when this worker first saw each orphan it found
  // free, and each other member's updated_at_ms with when it last changed.
  std::map<std::string, MonoTime, std::less<>> orphan_first_seen_;
  struct FiguresSeen {
    int64_t updated_at_ms = 0;
    MonoTime changed_at{};
  };
  std::map<std::string, FiguresSeen, std::less<>> figures_seen_;
  // Control thread only: what this worker last handed over to balance the
  // fleet, and when; if some of it is still free once stranded, the others
  // did not take it, and balancing waits (balance_backoff_, doubling).
  std::vector<std::string> balanced_away_;
  MonoTime balanced_at_{};
  Duration balance_backoff_{};
  MonoTime no_balance_until_{};
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
    std::vector<std::shared_ptr<Stream>> stop, changed;
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
        stop.push_back(stream);  // stopped, or removed (a tombstone)
      } else if (c->ws_url != stream->url_template ||
                 split_seq_field(c->seq_field) != stream->seq_path) {
        // Handed over, so that the new URL is streamed under a new epoch,
        // after this stream has closed and checkpointed.
        changed.push_back(stream);
      }
    }
    for (auto& [pk, stream] : by_pk) stop.push_back(stream);  // deleted
    hand_over(stop, "stopped or removed");
    hand_over(changed, "its URL or sequence field changed");
  }
}

// Takes orphans as placement says (fleet/placement.h), or hands the excess
// over to balance the fleet.
void Worker::Impl::balance_and_acquire() {
  const int64_t now_ms = to_unix_ms(clock_.wall_now());
  const MonoTime now = clock_.mono_now();
  const Duration skew = options_.lease.max_clock_skew;
  const int64_t horizon_ms = now_ms + to_ms(options_.reconcile_every + skew);
  QueryOptions q;
  q.limit = kQueryLimitMax;
  Result<Page> page = store_.query_index(kConnectionsTable, kOrphanIndex,
                                         std::string(desired_state_name(DesiredState::kStarted)),
                                         KeyRange::lt(horizon_ms), q);
  taking_ = page.ok();
  if (!page.ok()) {
    log_to(options_.logger, LogLevel::kWarn, "finding orphaned connections: {}",
           page.status().message());
    return;
  }
  store_read_at_ns_ = now.time_since_epoch().count();
  std::vector<Connection> orphans;
  MonoTime soonest = MonoTime::max();
  for (const Item& item : page->items) {
    Result<Connection> c = parse_connection(item);
    if (!c.ok() || find(c->id) != nullptr) continue;
    if (c->expires_at_ms < now_ms) {
      orphans.push_back(std::move(*c));
    } else {  // due to expire before the next reconcile: try then
      soonest = std::min(soonest, now + milliseconds(c->expires_at_ms - now_ms) + skew);
    }
  }
  const std::vector<OrphanSeen> seen = note_orphans(orphans);
  Result<std::vector<Member>> members = list_members(store_, clock_, /*alive_only=*/true);
  const std::vector<MemberFigures> others =
      members.ok() ? note_members(*members) : std::vector<MemberFigures>{};
  const int64_t owned = static_cast<int64_t>(snapshot().size());
  const int64_t capacity = static_cast<int64_t>(options_.max_connections);
  const PlacementOptions placement{options_.reconcile_every / 2, 4 * options_.reconcile_every};
  const Placement plan =
      place(options_.id, owned, capacity, others, seen, may_balance(members, seen), placement);
  if (plan.next_due != Duration::max()) soonest = std::min(soonest, now + plan.next_due);
  {
    MutexLock lock(mu_);
    next_attempt_ = std::min(next_attempt_, soonest);
  }
  if (plan.hand_over > 0) {
    std::vector<std::shared_ptr<Stream>> excess = snapshot();
    excess.resize(static_cast<size_t>(plan.hand_over));
    hand_over(excess, "balancing the fleet");
    balanced_away_.clear();
    for (const auto& s : excess) balanced_away_.push_back(s->id);
    balanced_at_ = now;
    note_figures_at_balance(members.ok() ? &*members : nullptr);
    return;
  }
  // Up to the share; beyond it, up to capacity, only orphans whose owner
  // died or that waited past stranded: recovery first, balance after.
  int64_t room = plan.share - owned;
  int64_t spare = capacity - std::max(owned, plan.share);
  for (const Attempt& a : plan.attempts) {
    if (room > 0) {
      if (acquire(orphans[a.orphan])) --room;
    } else if (a.beyond_share && spare > 0) {
      if (acquire(orphans[a.orphan])) --spare;
    }
  }
}

std::vector<OrphanSeen> Worker::Impl::note_orphans(const std::vector<Connection>& orphans) {
  const MonoTime now = clock_.mono_now();
  std::map<std::string, MonoTime, std::less<>> first_seen;
  std::vector<OrphanSeen> out;
  out.reserve(orphans.size());
  for (const Connection& c : orphans) {
    const auto it = orphan_first_seen_.find(c.id);
    const MonoTime first = it == orphan_first_seen_.end() ? now : it->second;
    first_seen.emplace(c.id, first);
    out.push_back({c.id, c.owner, /*crashed=*/c.expires_at_ms != 0, now - first});
  }
  orphan_first_seen_ = std::move(first_seen);  // forgets those no longer free
  return out;
}

std::vector<MemberFigures> Worker::Impl::note_members(const std::vector<Member>& members) {
  const MonoTime now = clock_.mono_now();
  // Figures are written every reconcile: unchanged for five, the member has
  // stopped reconciling (it crashed, or its control loop is stuck) and takes
  // nothing, whatever they say.
  const Duration stale_after = 5 * options_.reconcile_every;
  std::map<std::string, FiguresSeen, std::less<>> seen;
  std::vector<MemberFigures> out;
  for (const Member& m : members) {
    if (m.id == options_.id) continue;
    const auto it = figures_seen_.find(m.id);
    const FiguresSeen f = it == figures_seen_.end() || it->second.updated_at_ms != m.updated_at_ms
                              ? FiguresSeen{m.updated_at_ms, now}
                              : it->second;
    seen.emplace(m.id, f);
    out.push_back({m.id, m.owned,
                   m.capacity > 0 ? m.capacity : static_cast<int64_t>(kMaxConnectionsDefault),
                   m.taking && now - f.changed_at < stale_after});
  }
  figures_seen_ = std::move(seen);
  return out;
}

// Whether this worker may hand connections over to balance the fleet now:
// not while the members that take connections may not have counted what it
// handed over last (until each has written its figures again, its count
// leaves that out and the share comes out too small), and not for a while
// after a handover that nobody took.
bool Worker::Impl::may_balance(const Result<std::vector<Member>>& members,
                               const std::vector<OrphanSeen>& orphans) {
  const MonoTime now = clock_.mono_now();
  if (!balanced_away_.empty()) {
    bool stranded = false, waiting = false;
    for (const OrphanSeen& o : orphans) {
      if (std::find(balanced_away_.begin(), balanced_away_.end(), o.id) == balanced_away_.end()) {
        continue;
      }
      (o.free_for >= 4 * options_.reconcile_every ? stranded : waiting) = true;
    }
    if (stranded) {
      const Duration first = 10 * options_.reconcile_every;
      balance_backoff_ =
          std::min(balance_backoff_ == Duration::zero() ? first : 2 * balance_backoff_, 64 * first);
      no_balance_until_ = now + balance_backoff_;
      balanced_away_.clear();
      log_to(
          options_.logger, LogLevel::kWarn,
          "connections handed over to balance the fleet were not taken; balancing again in {} ms",
          to_ms(balance_backoff_));
    } else if (!waiting && now - balanced_at_ >= options_.reconcile_every) {
      balanced_away_.clear();  // taken
      balance_backoff_ = Duration::zero();
    }
  }
  if (now < no_balance_until_) return false;
  if (!members.ok()) return true;
  for (const Member& m : *members) {
    const auto at_balance = figures_at_balance_.find(m.id);
    const auto seen = figures_seen_.find(m.id);
    const bool stale_or_not_taking = !m.taking || seen == figures_seen_.end() ||
                                     now - seen->second.changed_at >= 5 * options_.reconcile_every;
    if (at_balance != figures_at_balance_.end() && at_balance->second == m.updated_at_ms &&
        !stale_or_not_taking) {
      return false;
    }
  }
  return true;
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
    if (lease.status().code() == Code::kAlreadyExists) {
      ++conflicts_;  // another worker took it first (or it was stopped)
      m_.conflicts.inc();
    } else {
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
    stream->acquired_at = clock_.mono_now();
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
      static_cast<int64_t>(messages), rate, to_unix_ms(clock_.wall_now()), taking_);
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
  const std::vector<std::shared_ptr<Stream>> streams = snapshot();
  checkpoint(streams);
  int64_t lag = 0;
  for (const auto& s : streams) {
    MutexLock l(s->mu);
    lag += s->written_seq - s->checkpointed_seq;
  }
  m_.checkpoint_lag.set(static_cast<double>(lag));
}

// Writes last_seq (and last_error and the figures, if they changed) of the
// streams, many per store call. Never moves last_seq back. What each covers
// is read before the flush: a line written while the flush runs may not be
// durable when it returns.
void Worker::Impl::checkpoint(const std::vector<std::shared_ptr<Stream>>& streams) {
  std::vector<Checkpoint> planned;
  bool covers_lines = false;
  for (const auto& s : streams) {
    if (std::optional<Checkpoint> c = plan_checkpoint(s)) {
      covers_lines = covers_lines || !c->forward.is_true();
      planned.push_back(std::move(*c));
    }
  }
  if (covers_lines) {
    const Status flushed = sink_.flush();
    note_sink(flushed, /*write=*/false);
    if (!flushed.ok()) {
      log_to(options_.logger, LogLevel::kError, "flushing the sink: {}", flushed.message());
      return;  // no checkpoint may cover what is not durable
    }
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
  bool figures = false;
  {
    MutexLock l(stream->mu);
    if (stream->state == State::kClosing || stream->state == State::kLost) return std::nullopt;
    const MonoTime now = clock_.mono_now();
    // Up long enough: the error it had before is over.
    if (stream->state == State::kStreaming &&
        now - stream->opened_at >= options_.upstream_stable_after && !stream->last_error.empty()) {
      stream->last_error.clear();
      stream->error_changed = true;
    }
    c.seq = stream->written_seq;
    checkpointed = stream->checkpointed_seq;
    c.error = stream->last_error;
    figures = c.seq > checkpointed || stream->reconnects_changed;
    if (!figures && !stream->error_changed) return std::nullopt;
    if (stream->error_changed) {
      c.update.set(kLastErrorAttr, c.error).set(kLastErrorAtMsAttr, to_unix_ms(clock_.wall_now()));
    }
    if (figures) {
      c.update.set(kMessagesAttr, static_cast<int64_t>(stream->messages))
          .set(kReconnectsAttr, static_cast<int64_t>(stream->reconnects))
          .set(kLastMessageAtMsAttr, stream->last_message_at_ms);
      c.reconnects = stream->reconnects;
    }
  }
  std::optional<Lease> lease = renewer_.get(stream->renew_id);
  if (!lease) return std::nullopt;
  c.stream = stream;
  c.lease = std::move(*lease);
  if (c.seq > checkpointed) {
    c.update.set(kLastSeqAttr, c.seq);
    c.forward = cond::lt(kLastSeqAttr, c.seq) || cond::not_exists(kLastSeqAttr);
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
  if (applied && c.stream->reconnects == c.reconnects) c.stream->reconnects_changed = false;
}

void Worker::Impl::reconnect_due() {
  const MonoTime now = clock_.mono_now();
  for (const auto& s : snapshot()) {
    {
      MutexLock l(s->mu);
      if (s->state != State::kWaiting || s->reconnect_at > now) continue;
    }
    // Resume from a checkpoint of everything written, as the URL says.
    checkpoint({s});
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
    // The failure count and last_error stay until it has stayed up a while
    // (upstream_stable_after): a peer that accepts and closes at once is a
    // failure like any other, and writes nothing to the store each time.
    s->state = State::kStreaming;
    s->opened_at = clock_.mono_now();
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
    const Status written = !still_valid(*stream, clock_.mono_now()) ? deadline_exceeded("")
                           : batch.empty()                          ? Status::ok_status()
                                                                    : write_batch(*stream, batch);
    if (written.code() == Code::kDeadlineExceeded) {
      stream->state = State::kLost;
      ++stream->generation;
      to_close = std::move(stream->ws);
      lost = true;
    } else if (written.ok()) {
      return;
    } else {
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

// The last moment of a stream's write, under the sink's lock
// (Sink::write): the lease is checked once more against the local deadline
// given, and the lines are stamped with the time they go out, so that no
// wait for the sink (another stream's write) carries a line past the
// deadline, and each line says when it was written.
class LeasedWrite final : public BeforeWrite {
 public:
  LeasedWrite(Clock& clock, MonoTime valid_until, SinkBatch& batch)
      : clock_(clock), valid_until_(valid_until), batch_(batch) {}

  Result<std::string_view> lines() override {
    if (clock_.mono_now() >= valid_until_) {
      return deadline_exceeded(
          "the lease reached its local deadline before the sink took the write");
    }
    written_at_ms_ = to_unix_ms(clock_.wall_now());
    batch_.stamp(written_at_ms_);
    return batch_.text();
  }
  int64_t written_at_ms() const { return written_at_ms_; }

 private:
  Clock& clock_;
  const MonoTime valid_until_;
  SinkBatch& batch_;
  int64_t written_at_ms_ = 0;
};

// One sink write of `batch`; written_seq moves to its last line that the
// sink took. kDeadlineExceeded, with nothing written, if the lease was past
// its local deadline when the sink was ready for it (and no renewal since
// moved it). REQUIRES: the stream is open for the batch's messages and its
// lease was found valid just now.
Status Worker::Impl::write_batch(Stream& stream, SinkBatch& batch) {
  assert(stream.state == State::kStreaming || stream.state == State::kConnecting);
  assert(!batch.empty() && batch.seq(0) > stream.written_seq);
  size_t bytes = 0;
  LeasedWrite write(clock_, stream.valid_until, batch);
  Status written = sink_.write(write, &bytes);
  int64_t written_at_ms = write.written_at_ms();
  if (written.code() == Code::kDeadlineExceeded && still_valid(stream, clock_.mono_now())) {
    LeasedWrite renewed(clock_, stream.valid_until, batch);  // renewed while it waited
    written = sink_.write(renewed, &bytes);
    written_at_ms = renewed.written_at_ms();
  }
  if (written.code() == Code::kDeadlineExceeded) return written;
  note_sink(written, /*write=*/true);
  const size_t lines = batch.lines_within(bytes);
  assert(written.ok() == (lines == batch.size()));
  if (lines > 0) {
    stream.written_seq = batch.seq(lines - 1);
    stream.messages += lines;
    stream.last_message_at_ms = written_at_ms;
    stream.last_message_mono = clock_.mono_now();
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
    const MonoTime now = clock_.mono_now();
    if (stream->state == State::kStreaming &&
        now - stream->opened_at >= options_.upstream_stable_after) {
      stream->failures = 0;  // it was up long enough to start the backoff afresh
    }
    stream->ws.reset();
    stream->state = State::kWaiting;
    ++stream->failures;
    ++stream->reconnects;
    stream->reconnects_changed = true;
    const Duration cap = std::min<Duration>(
        kReconnectBackoffMax, kReconnectBackoffMin * (1 << std::min(stream->failures - 1, 16)));
    stream->reconnect_at = now + jittered(cap * 3 / 4, 1.0 / 3);  // cap/2 .. cap
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
  note_sink(flushed, /*write=*/false);
  // Each lease goes back with its final checkpoint in the same write, many
  // per store call: a stopping worker of 1,000 connections on DynamoDB gives
  // them back in parallel rather than one round trip after another.
  struct Final {
    std::shared_ptr<Stream> stream;
    Lease lease;
    int64_t seq = 0;
  };
  std::vector<Final> finals;
  for (const auto& s : closing) {
    std::optional<Lease> lease = renewer_.remove(s->renew_id);
    if (!lease) continue;  // lost meanwhile: nothing to give back
    MutexLock l(s->mu);
    finals.push_back({s, std::move(*lease), s->written_seq});
  }
  for (size_t at = 0; at < finals.size(); at += kCheckpointBatchMax) {
    const size_t end = std::min(finals.size(), at + kCheckpointBatchMax);
    std::vector<Release> releases;
    for (size_t i = at; i < end; ++i) {
      // Unflushed lines may not be covered: then the lease goes back without them.
      Update final_checkpoint;
      if (flushed.ok() && finals[i].seq > 0) final_checkpoint.set(kLastSeqAttr, finals[i].seq);
      releases.push_back({&finals[i].lease, std::move(final_checkpoint)});
    }
    const std::vector<Status> released = conn_leases_.release_each(releases);
    for (size_t i = at; i < end; ++i) {
      const std::string& id = finals[i].stream->id;
      if (released[i - at].ok()) {
        ++handovers_;
        m_.handovers.inc();
        log_to(options_.logger, LogLevel::kInfo, "handed over {} at seq {} ({})", id, finals[i].seq,
               why);
      } else {
        log_to(options_.logger, LogLevel::kWarn, "handing over {}: {}", id,
               released[i - at].message());
      }
    }
  }
  {
    MutexLock lock(mu_);
    for (const auto& s : closing) streams_.erase(s->id);
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
  s.conflicts = conflicts_;
  return s;
}

// A failed write or flush makes the sink failing; only a write that goes
// through makes it well again (a flush may work on a full disk).
void Worker::Impl::note_sink(const Status& result, bool write) {
  if (result.ok()) {
    if (write) sink_failing_ = false;
    return;
  }
  sink_failing_ = true;
  MutexLock lock(sink_mu_);
  sink_error_ = result.message();
}

// No message for stall_after, counted from when this worker took it if none
// came since.
bool Worker::Impl::stalled(const Stream& stream, MonoTime now) const {
  if (options_.stall_after == Duration::zero()) return false;
  return now - std::max(stream.acquired_at, stream.last_message_mono) >= options_.stall_after;
}

WorkerHealth Worker::Impl::health() const {
  WorkerHealth h;
  const MonoTime now = clock_.mono_now();
  const int64_t read_at_ns = store_read_at_ns_.load();
  const MonoTime read_at = read_at_ns == 0 ? started_at_ : MonoTime(Duration(read_at_ns));
  h.store_silent_ms = to_ms(now - read_at);
  const Duration silence_max = 5 * options_.reconcile_every;
  if (now - read_at > silence_max) {
    h.problems.push_back("the store has not answered for " + std::to_string(h.store_silent_ms) +
                         " ms");
  }
  if (sink_failing_) {
    MutexLock lock(sink_mu_);
    h.problems.push_back("the sink fails: " + sink_error_);
  }
  for (const auto& s : snapshot()) {
    MutexLock l(s->mu);
    ++h.owned;
    if (s->state == State::kStreaming) ++h.streaming;
    if (stalled(*s, now)) ++h.stalled;
  }
  if (h.owned > 0 && h.stalled == h.owned) {
    h.problems.push_back("no connection it owns has had a message for " +
                         std::to_string(to_ms(options_.stall_after) / 1000) + " s");
  }
  h.ok = h.problems.empty();
  return h;
}

// The samples of one per-connection family: 0 messages, 1 reconnects, 2 the
// last message's age.
void Worker::Impl::collect_figures(std::vector<metrics::Collected::Sample>& out, int which) const {
  const MonoTime now = clock_.mono_now();
  for (const auto& s : snapshot()) {
    MutexLock l(s->mu);
    if (s->state == State::kClosing || s->state == State::kLost) continue;
    double value = 0;
    switch (which) {
      case 0:
        value = static_cast<double>(s->messages);
        break;
      case 1:
        value = static_cast<double>(s->reconnects);
        break;
      default:
        value = std::chrono::duration<double>(now - std::max(s->acquired_at, s->last_message_mono))
                    .count();
    }
    out.push_back({{s->id}, value});
  }
}

std::vector<OwnedConnection> Worker::Impl::owned() const {
  std::vector<OwnedConnection> out;
  for (const auto& s : snapshot()) {
    MutexLock l(s->mu);
    out.push_back({s->id, s->epoch, s->written_seq, s->checkpointed_seq,
                   s->state == State::kStreaming, s->messages, s->reconnects});
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
WorkerHealth Worker::health() const { return impl_->health(); }
std::vector<OwnedConnection> Worker::owned() const { return impl_->owned(); }
const std::string& Worker::id() const { return impl_->id(); }

}  // namespace leasehold::fleet
