// The worker's parts, shared by the files that define them (not part of
// the fleet's interface; fleet/worker.h is):
//   worker.cc          start, join, stop, poll, figures and health, the facade
//   worker_control.cc  the control loop: desired state, placement, membership
//   worker_sessions.cc its session, and the sessions that have ended
//   worker_liveness.cc releases retried, the audit, the reaper, pruning
//   worker_keeper.cc   the keeper loop: checkpoints and reconnects
//   worker_streams.cc  the streams: connecting, writing, closing, handing over
// Threads and the rules that keep one writer per connection are in
// fleet/worker.h.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "base/mutex.h"
#include "base/thread_annotations.h"
#include "fleet/connections.h"
#include "fleet/feed_reader.h"
#include "fleet/members.h"
#include "fleet/message.h"
#include "fleet/placement.h"
#include "fleet/positions.h"
#include "fleet/schema.h"
#include "fleet/worker.h"
#include "leasehold/renewer.h"
#include "metrics/registry.h"
#include "net/websocket.h"

namespace leasehold::fleet {
namespace worker_parts {

// A worker's figures go to its member item at least every this many
// reconcile periods, and in the reconcile that changes what others act on.
inline constexpr int kFiguresEvery = 3;

// Checkpoints (and final checkpoints of a hand-over) written per store call
// (one SQLite transaction).
inline constexpr size_t kCheckpointBatchMax = 500;

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
  // The worker's session the lease belongs to (Impl::session_gen_), 0 for
  // none; set once, before the stream is shared.
  uint64_t session_gen = 0;

  Mutex mu;
  State state GUARDED_BY(mu) = State::kWaiting;
  uint64_t generation GUARDED_BY(mu) =
      0;  // of the upstream connection; stale callbacks are ignored
  std::shared_ptr<net::WsStream> ws GUARDED_BY(mu);
  int64_t epoch GUARDED_BY(mu) = 0;
  MonoTime valid_until GUARDED_BY(mu){};
  int64_t written_seq GUARDED_BY(mu) = 0;
  int64_t checkpointed_seq GUARDED_BY(mu) = 0;
  // What the sink holds for certain (flushed): a reconnect resumes after it.
  int64_t resume_seq GUARDED_BY(mu) = 0;
  // Upstream connections that ended in a row without one that stayed up for
  // kStableAfter: what the reconnect backoff grows with.
  int failures GUARDED_BY(mu) = 0;
  MonoTime opened_at GUARDED_BY(mu){};  // of the current upstream connection
  MonoTime closed_at GUARDED_BY(mu){};  // when the last one ended or failed to open
  MonoTime reconnect_at GUARDED_BY(mu){};
  std::string last_error GUARDED_BY(mu);
  bool error_changed GUARDED_BY(mu) = false;  // last_error differs from the stored one
  MonoTime bad_logged_at GUARDED_BY(mu){};
  uint64_t bad_unlogged GUARDED_BY(mu) = 0;
  // The operator's figures, since this worker took the connection; written
  // with the checkpoints (to its item, or with a session to its positions).
  MonoTime acquired_at GUARDED_BY(mu){};
  uint64_t messages GUARDED_BY(mu) = 0;
  uint64_t reconnects GUARDED_BY(mu) = 0;
  int64_t last_message_at_ms GUARDED_BY(mu) = 0;  // wall; 0: none yet
  MonoTime last_message_mono GUARDED_BY(mu){};
  // Taken over: when the holder before wrote its last message (wall ms, as
  // it recorded it), until this worker writes its first; 0: nothing to
  // measure (not a takeover, no record, or measured).
  int64_t taken_after_message_at_ms GUARDED_BY(mu) = 0;
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
  // False if some were still open when `clock` reached `deadline`.
  bool wait_for_none(Clock& clock, MonoTime deadline) {
    MutexLock lock(mu_);
    while (count_ > 0) {
      if (cv_.wait_until(mu_, clock, deadline) == std::cv_status::timeout) return count_ == 0;
    }
    return true;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  size_t count_ GUARDED_BY(mu_) = 0;
};

// 0.1 s to 10 min: a takeover waits out the dead holder's session or lease
// (seconds with the defaults, an hour or two at most without a session).
inline std::vector<double> takeover_gap_buckets() {
  return {0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600};
}

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
        takeover_gap(r.histogram("leasehold_fleet_takeover_gap_seconds",
                                 "On a takeover, the time from the previous holder's last message "
                                 "on the connection to this worker's first",
                                 {}, takeover_gap_buckets())
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
                                           {"conn"})),
        connection_checkpoint_lag(
            r.collected(false, "leasehold_fleet_connection_checkpoint_lag_messages",
                        "Messages of a connection this worker owns in the sink that no "
                        "checkpoint covers yet (a crash now would have them read again)",
                        {"conn"})),
        lease_writes(r.collected(true, "leasehold_fleet_lease_writes_total",
                                 "Lease-keeping writes the store accepted: renewals of the "
                                 "session (or membership lease) and of connection leases, "
                                 "acquisitions, releases, sessions of others ended",
                                 {"kind"})),
        checkpoint_writes(r.collected(true, "leasehold_fleet_checkpoint_writes_total",
                                      "Checkpoint writes the store accepted (handovers' final "
                                      "checkpoints go with their releases)",
                                      {})) {}

  metrics::Gauge& owned;
  metrics::Counter& messages;
  metrics::Counter& bad_messages;
  metrics::Gauge& checkpoint_lag;
  metrics::Counter& renew_failures;
  metrics::Counter& takeovers;
  metrics::Counter& handovers;
  metrics::Counter& losses;
  metrics::Histogram& reconcile_seconds;
  metrics::Histogram& takeover_gap;
  metrics::Counter& reconnects;
  metrics::Counter& conflicts;
  metrics::Collected& connection_messages;
  metrics::Collected& connection_reconnects;
  metrics::Collected& connection_message_age;
  metrics::Collected& connection_checkpoint_lag;
  metrics::Collected& lease_writes;
  metrics::Collected& checkpoint_writes;
};

LeaseConfig config_for(LeaseConfig config, std::string table, Logger* logger);

}  // namespace worker_parts

class Worker::Impl {
 public:
  using State = worker_parts::State;
  using Stream = worker_parts::Stream;
  using Metrics = worker_parts::Metrics;
  using OpenStreams = worker_parts::OpenStreams;

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
                     worker_parts::config_for(options_.lease, kConnectionsTable, options_.logger)),
        member_leases_(store, clock, random,
                       worker_parts::config_for(options_.lease, kWorkersTable, options_.logger)),
        renewer_(conn_leases_, clock, random, renewer_options(2, options_.renew_every)),
        member_renewer_(
            member_leases_, clock, random,
            renewer_options(1, sessions() ? session_renew_every() : options_.renew_every)) {
    if (options_.checkpoint_every == Duration::zero()) {
      options_.checkpoint_every = sessions() ? kSessionCheckpointEvery : options_.renew_every;
    }
    positions_parts_ = positions_parts(options_.max_connections);
    metrics::Collected* families[] = {&m_.connection_messages, &m_.connection_reconnects,
                                      &m_.connection_message_age, &m_.connection_checkpoint_lag};
    for (int i = 0; i < 4; ++i) {
      collect_ids_[i] = families[i]->add(
          [this, i](std::vector<metrics::Collected::Sample>& out) { collect_figures(out, i); });
    }
    collect_ids_[4] = m_.lease_writes.add(
        [this](std::vector<metrics::Collected::Sample>& out) { collect_lease_writes(out); });
    collect_ids_[5] =
        m_.checkpoint_writes.add([this](std::vector<metrics::Collected::Sample>& out) {
          out.push_back({{}, static_cast<double>(checkpoints_.load())});
        });
  }

  ~Impl() {
    stop();
    m_.connection_messages.remove(collect_ids_[0]);
    m_.connection_reconnects.remove(collect_ids_[1]);
    m_.connection_message_age.remove(collect_ids_[2]);
    m_.connection_checkpoint_lag.remove(collect_ids_[3]);
    m_.lease_writes.remove(collect_ids_[4]);
    m_.checkpoint_writes.remove(collect_ids_[5]);
  }

  // The tables and the timing, once.
  Status prepare();
  // Joins the fleet (starts a session); with sessions, waits out the
  // session of a run of this worker that died, if it was not renewed since.
  Status join_at_start();
  void start_threads();
  void stop();
  MonoTime poll();

  WorkerStats stats() const;
  WorkerHealth health() const;
  std::vector<OwnedConnection> owned() const;
  const std::string& id() const { return options_.id; }

 private:
  RenewerOptions renewer_options(size_t threads, Duration renew_every) const {
    RenewerOptions o;
    o.renew_every = renew_every;
    o.renew_threads = threads;
    o.info_log = options_.logger;
    return o;
  }

  // Sessions (fleet/worker.h).
  bool sessions() const { return options_.session_ttl > Duration::zero(); }
  Duration session_renew_every() const;
  // Whether this worker reads its member item for nudges between heartbeats
  // (WorkerOptions::nudge_read_every), and how often.
  bool reads_nudges() const;
  Duration nudge_read_every() const;
  struct SessionNow {
    uint64_t gen = 0;
    std::string token;
    MonoTime valid_until{};
  };
  // The session, if this worker holds one it may trust now.
  std::optional<SessionNow> current_session() EXCLUDES(session_mu_);
  // The local deadline of session `gen`: long past if it is not the
  // current one, or lost.
  MonoTime session_valid_until(uint64_t gen) EXCLUDES(session_mu_);
  // A stream's deadline: its lease's, and its session's if it has one.
  MonoTime deadline_of(const Stream& stream, const Lease& lease);
  void on_session_lost(const Status& why);
  // A stream of a session that is lost: it is closed, and its lease never
  // renewed again (it goes with the session).
  void lose_with_session(const std::shared_ptr<Stream>& stream, const Status& why);
  Status join();
  Status wait_for_previous_run();

  // Sessions that have ended, and what they still hold (worker_sessions.cc).
  struct DeadSession;
  // Adds the sessions the members name as dead (ending those found expired)
  // and this worker's own earlier ones; forgets those long unnamed.
  void note_dead_sessions(const std::vector<Member>& members);
  // The STARTED connections held under sessions that have ended, swept as
  // their schedules say, as orphans whose owner died; `owner_back` gets
  // those whose owner has joined again since. Their other connections are
  // released (retire()).
  std::vector<Connection> dead_session_orphans(const std::vector<Member>& members,
                                               std::set<std::string, std::less<>>& owner_back);
  // Calls `each` with every item the session index shows under `token`,
  // page by page.
  Status each_in_session(const std::string& token, const std::function<void(const Item&)>& each);
  Status sweep_session(const std::string& token, const DeadSession& dead,
                       const std::vector<Member>& members, std::vector<Connection>& out,
                       size_t& held);
  void retire(const Connection& connection, const std::string& token, const DeadSession& dead,
              const std::vector<Member>& members);
  void drop_swept_previous_sessions();

  // Liveness (worker_liveness.cc): every lease this worker may hold and
  // does not stream is released, by retrying what failed, by the audit of
  // its own session, and, fleet-wide, by the leader's reaper.
  void release_later(const std::string& id, const Lease& lease, Update final_checkpoint);
  void retry_releases();
  void watch_acquisition(const std::string& id, Lease attempt);
  void check_watched();
  bool release_pending(const std::string& id) const;
  void audit_own_session();
  void audit_item(const std::string& token, const Item& item, size_t& found);
  void reap(const std::vector<Member>& members);
  void prune_members(const std::vector<Member>& members);
  void recount();
  void write_attention();
  bool leads(const std::vector<Member>& members) const;
  void sync(std::string_view point) const;
  Duration audit_every() const;
  Duration reap_every() const;
  Duration member_keep() const;

  // The control loop and its parts.
  void control_loop();
  void feed_loop() EXCLUDES(mu_);
  void say_not_taking();
  // One reconcile, and when the next is due.
  void control_step();
  MonoTime control_due() EXCLUDES(mu_);
  bool react_now();
  // When its member item is next read for nudges (reads_nudges()): the
  // read period after the last look, a heartbeat's or a read's.
  MonoTime nudge_read_due() EXCLUDES(mu_);
  void read_nudges() EXCLUDES(mu_);
  void reconcile();
  // Whether this reconcile reads the desired state: a nudge on its member
  // item (in `members`, this reconcile's list), the poll period, the audit.
  bool desired_state_due(const std::vector<Member>* members);
  Duration poll_every() const;
  void read_desired_state(const std::vector<Member>* members);
  // What this reconcile read of the session's index (control thread only).
  struct SessionView {
    std::string token;
    std::vector<Item> items;
  };
  void judge_shown(const SessionView& view, std::vector<std::shared_ptr<Stream>>& streams);
  struct Judged {
    std::vector<std::shared_ptr<Stream>> stop, changed;
  };
  void judge_desired(const std::shared_ptr<Stream>& stream, const Connection& c, Judged& judged);
  void act_on(const Judged& judged);
  void balance_and_acquire(Result<std::vector<Member>> members);
  void add_session_orphans(const std::vector<Member>& members, std::vector<Connection>& orphans,
                           std::set<std::string, std::less<>>& owner_back, MonoTime& soonest);
  // The orphans found, with how long this worker has seen each free.
  std::vector<OrphanSeen> note_orphans(const std::vector<Connection>& orphans,
                                       const std::set<std::string, std::less<>>& owner_back);
  // The other live members' figures, `taking` false for one whose figures
  // have not changed for a while (it stopped reconciling).
  std::vector<MemberFigures> note_members(const std::vector<Member>& members);
  bool may_balance(const std::vector<MemberFigures>& others,
                   const std::vector<OrphanSeen>& orphans);
  PlacementOptions placement_options() const;
  // Takes `seen` as the index showed it. `own_session` for one the audit
  // found held under this worker's own session, unstreamed: taken back
  // only while it is still that lease (the same token, not released).
  bool acquire(const Connection& seen, bool own_session = false);
  bool adopt(const Connection& seen, const Lease& lease, const std::optional<SessionNow>& session,
             bool from_session);
  // Where session `session` had got to in connection `id` under lease
  // `epoch` (its positions, read once a reconcile): all zero if it wrote
  // none.
  Position prior_position(const std::string& session, const std::string& id, int64_t epoch);
  void note_acquired(const Connection& seen, const std::string& id, int64_t epoch, int64_t from_seq,
                     bool from_session);
  std::string fresh_token() EXCLUDES(random_mu_);
  void write_figures();
  void rejoin_if_lost();

  // The keeper loop and its parts.
  void keeper_loop();
  MonoTime keeper_due() REQUIRES(mu_);
  void keeper_work();
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
  // checkpoint covers only lines written before the flush began. With a
  // session, the positions of all its streams go to its positions items
  // (fleet/positions.h) and a stream's item gets only its last_error.
  void checkpoint(const std::vector<std::shared_ptr<Stream>>& streams);
  std::optional<Checkpoint> plan_checkpoint(const std::shared_ptr<Stream>& stream,
                                            bool item_figures);
  // Each to its stream's item, many per store call.
  void write_checkpoints(const std::vector<Checkpoint>& planned);
  struct PlannedPosition {
    std::shared_ptr<Stream> stream;
    Position position;
    bool changed = false;  // since the last positions write
  };
  std::vector<PlannedPosition> plan_positions(const SessionNow& session, bool& covers_lines);
  void write_positions(const SessionNow& session, const std::vector<PlannedPosition>& planned);
  // Where the sink holds a stream up to, once flushed: a reconnect resumes
  // after it.
  void note_flushed(const std::shared_ptr<Stream>& stream, int64_t seq);
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
  void remember_figures(const std::vector<Member>& members);
  // Its member item as a heartbeat or a read between heartbeats showed it:
  // a nudge there not heard before is acted on.
  void hear_nudges(const Item& member) EXCLUDES(mu_);
  void act_on_nudge(const std::string& take) EXCLUDES(mu_);
  bool hinted(std::string_view id) EXCLUDES(mu_);
  void forget(const std::string& id);
  bool still_valid(Stream& stream, MonoTime now) REQUIRES(stream.mu);
  void note_bad(Stream& stream, std::string_view what) REQUIRES(stream.mu);
  void note_sink(const Status& result, bool write) EXCLUDES(sink_mu_);
  bool stalled(const Stream& stream, MonoTime now) const REQUIRES(stream.mu);
  // How its connections stream now, for its figures (fleet/members.h).
  StreamCounts stream_counts() const;
  void collect_figures(std::vector<metrics::Collected::Sample>& out, int which) const;
  void collect_lease_writes(std::vector<metrics::Collected::Sample>& out) const;

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
  // When the control loop should next reconcile, and next try a lease due
  // to expire.
  MonoTime next_reconcile_ GUARDED_BY(mu_) = MonoTime::min();
  MonoTime next_attempt_ GUARDED_BY(mu_) = MonoTime::max();
  MonoTime next_checkpoint_ GUARDED_BY(mu_){};
  // Keeper thread only: the session the positions were last written for,
  // whether its part 0 is written, and the last write's number.
  std::string positions_session_;
  bool positions_started_ = false;
  int64_t positions_gen_ = 0;
  size_t positions_parts_ = 1;  // set once, in the constructor
  // Control thread only: the positions of other sessions read this
  // reconcile, by session token (prior_position()).
  std::map<std::string, Positions, std::less<>> positions_read_;
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
  std::atomic<uint64_t> sessions_started_{0}, sessions_ended_{0};
  std::atomic<uint64_t> releases_retried_{0}, audit_finds_{0}, reaper_finds_{0}, members_pruned_{0};
  std::atomic<uint64_t> nudges_acted_{0};

  // The current session: a generation that every new session raises, its
  // token and its renewer entry (none while it is lost). A leaf lock.
  Mutex session_mu_;
  uint64_t session_gen_ GUARDED_BY(session_mu_) = 0;
  std::string session_token_ GUARDED_BY(session_mu_);
  std::optional<Renewer::Id> session_id_ GUARDED_BY(session_mu_);
  // Control thread only: the sessions found dead, by token. Each is swept
  // (its index read) every reconcile while it holds connections, then less
  // and less often, and forgotten once no member has named it for a while:
  // never marked done for good, since the index may lag a lease taken just
  // before the session died, and a connection stopped then may be started
  // again.
  struct DeadSession {
    std::string owner;
    MonoTime first_seen{};
    MonoTime named_at{};  // last named by a member, or found by the reaper
    MonoTime next_sweep{};
    Duration backoff{};    // between sweeps that find nothing, doubling
    int empty_sweeps = 0;  // in a row
    bool named = false;    // by a member's item, so every member sweeps it
  };
  std::map<std::string, DeadSession, std::less<>> dead_sessions_;
  // Control thread only: this worker's earlier sessions that may still hold
  // connections, as its item names them (members.h), newest first.
  std::vector<std::string> previous_sessions_;
  // Leases this worker may hold and does not stream, whose release failed:
  // tried again every reconcile until done (a release conditioned on the
  // owner and token is safe at any time). The control thread's, and stop()'s
  // once that thread has ended.
  struct PendingRelease {
    std::string id;
    Lease lease;
    Update final_checkpoint;
    MonoTime since{};
  };
  std::vector<PendingRelease> pending_releases_;
  // Control thread only: acquisitions that got no answer, and may land yet
  // (LeaseManager::acquire's `late`): each looked for by its token, less
  // and less often, until no request sent then can land any more.
  struct Watched {
    std::string id;
    Lease attempt;
    MonoTime since{};
    MonoTime next_look{};
    Duration backoff{};
  };
  std::vector<Watched> watched_;
  MonoTime next_audit_{};  // control thread only
  // Control thread only: the nudges last seen on its member item (-1: none
  // read yet), until when a nudge is followed, and the next poll.
  int64_t nudges_seen_ = -1;
  // Control thread only: the store's change stamp at the last look, and the
  // free STARTED connections it found then, with their lease epochs
  // (react_now()).
  std::optional<ChangeStamp> stamp_seen_;
  std::set<std::string, std::less<>> free_seen_;
  MonoTime follow_nudge_until_{};
  MonoTime next_poll_{};
  // The most nudges its member item has shown (-1: none read yet), and
  // whether one came that a reconcile has not followed yet.
  std::atomic<int64_t> nudges_heard_{-1};
  // When the member item was last read for nudges: by a heartbeat or by
  // read_nudges().
  MonoTime nudges_looked_at_ GUARDED_BY(mu_){};
  std::atomic<bool> nudge_heard_{false};
  // Connections nudges named for this worker to take, each until when
  // (kNudgeFollow after the nudge): its own feed reader names each one it
  // places here, a heartbeat the last written to its item.
  std::map<std::string, MonoTime, std::less<>> take_hints_ GUARDED_BY(mu_);
  // Control thread only: this reconcile's read of its session's index.
  std::optional<SessionView> session_view_;
  MonoTime next_reap_{};     // control thread only
  MonoTime next_recount_{};  // control thread only
  // Control thread only (and stop(), after it): what its attention item
  // says, under which session, and since when each connection in it has
  // been in trouble.
  std::string attention_written_;
  std::string attention_session_;
  std::map<std::string, Trouble, std::less<>> troubles_seen_;
  MonoTime figures_written_at_{};  // control thread only
  std::string figures_shown_;      // control thread only: what it last wrote that others act on
  std::array<metrics::Collected::Id, 6> collect_ids_{};

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
  // After this worker last handed connections over to balance the fleet,
  // or last saw connections free: each other member's `updated_at_ms` as it
  // then read (control thread only). A member has written its figures since
  // once the value differs, whatever its clock says of the time; one that
  // joined since is not here.
  std::map<std::string, int64_t, std::less<>> figures_at_balance_;
  // The last reconcile saw connections free and did not take them all
  // (control thread only).
  bool left_orphans_ = false;

  const std::shared_ptr<OpenStreams> open_ = std::make_shared<OpenStreams>();
  std::thread control_;
  std::thread keeper_;
  // The change feed's reader, if this worker takes its turn (read_feed),
  // and its thread; feed_reader_ is the thread's alone until it is joined.
  std::unique_ptr<FeedReader> feed_reader_;
  std::thread feed_;
};

}  // namespace leasehold::fleet
