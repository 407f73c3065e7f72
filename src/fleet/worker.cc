// The worker: start and stop, its figures and health, and the Worker
// facade. The rest of Worker::Impl is in worker_control.cc, worker_keeper.cc
// and worker_streams.cc (worker_impl.h).
#include "fleet/worker.h"

#include <algorithm>
#include <cassert>

#include "base/logging.h"
#include "fleet/connections.h"
#include "fleet/schema.h"
#include "fleet/worker_impl.h"

namespace leasehold::fleet {
namespace {

// How long stop() waits for the upstream connections it closed to end.
constexpr std::chrono::milliseconds kStopWaitMax{5'000};

// While it waits out its previous run's session, a starting worker looks
// this often at whether that session is being renewed (by a live worker of
// the same id).
constexpr std::chrono::milliseconds kRenewLookEvery{250};

bool valid_id_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '~' || c == '-';
}

}  // namespace

using worker_parts::State;
using worker_parts::Stream;

LeaseConfig worker_parts::config_for(LeaseConfig config, std::string table, Logger* logger) {
  config.table = std::move(table);
  config.info_log = logger;
  return config;
}

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
  if (o.poll_every < Duration::zero()) {
    return invalid_argument("poll period must not be negative");
  }
  if (o.attention_after < Duration::zero()) {
    return invalid_argument("attention period must not be negative");
  }
  if (o.stall_after < Duration::zero()) {
    return invalid_argument("stall period must not be negative");
  }
  if (o.session_ttl < Duration::zero() || o.session_renew_every < Duration::zero()) {
    return invalid_argument("session ttl and renew period must not be negative");
  }
  if (o.nudge_read_every < Duration::zero()) {
    return invalid_argument("nudge read period must not be negative");
  }
  if (o.upstream_stable_after <= Duration::zero()) {
    return invalid_argument("upstream stable period must be positive");
  }
  return {};
}

// ---------------------------------------------------------------- start and stop

Status Worker::Impl::prepare() {
  // Created on SQLite; on DynamoDB only `store init` creates tables.
  LEASEHOLD_RETURN_IF_ERROR(store_.require_table(connections_worker_spec()));
  LEASEHOLD_RETURN_IF_ERROR(store_.require_table(workers_table_spec()));
  LEASEHOLD_RETURN_IF_ERROR(conn_leases_.check_timing(options_.lease_ttl, options_.renew_every));
  if (sessions()) {
    LEASEHOLD_RETURN_IF_ERROR(
        member_leases_.check_timing(options_.session_ttl, session_renew_every())
            .with_context("session"));
  }
  return {};
}

Status Worker::Impl::join_at_start() {
  const Status joined = join();
  if (joined.code() != Code::kAlreadyExists || !sessions() || options_.manual) return joined;
  return wait_for_previous_run();
}

// The id is held: by a run of this worker that died moments ago (a crash
// and a restart), whose session has not expired yet, or by another live
// worker given the same id. The first is waited out, a session ttl at most;
// the second renews its session meanwhile, and is refused.
Status Worker::Impl::wait_for_previous_run() {
  Result<Item> held = store_.get(kWorkersTable, worker_key(options_.id), /*consistent=*/true);
  if (!held.ok()) return held.status().with_context("joining the fleet");
  const int64_t heartbeat_ms = get_int_or(*held, "lease_heartbeat_at_ms");
  const int64_t expires_ms = get_int_or(*held, "lease_expires_at_ms");
  const int64_t wait_ms = std::clamp<int64_t>(expires_ms - to_unix_ms(clock_.wall_now()), 0,
                                              to_ms(options_.session_ttl)) +
                          to_ms(options_.lease.max_clock_skew + options_.lease.safety_margin);
  log_to(options_.logger, LogLevel::kInfo,
         "worker id '{}' is held by a session last renewed at {}; waiting {} ms for it to expire",
         options_.id, format_utc_ms(heartbeat_ms), wait_ms);
  const MonoTime until = clock_.mono_now() + std::chrono::milliseconds(wait_ms);
  Mutex mu;
  CondVar cv;
  while (true) {
    {
      MutexLock lock(mu);
      const MonoTime look = std::min(until, clock_.mono_now() + kRenewLookEvery);
      while (clock_.mono_now() < look) cv.wait_until(mu, clock_, look);
    }
    Result<Item> now = store_.get(kWorkersTable, worker_key(options_.id), /*consistent=*/true);
    if (now.ok() && get_string_or(*now, "lease_token") == get_string_or(*held, "lease_token") &&
        get_int_or(*now, "lease_heartbeat_at_ms") != heartbeat_ms) {
      return already_exists("worker id '" + options_.id +
                            "' is in use by a live worker: its session was renewed at " +
                            format_utc_ms(get_int_or(*now, "lease_heartbeat_at_ms")));
    }
    if (clock_.mono_now() >= until) return join();
  }
}

void Worker::Impl::start_threads() {
  if (options_.manual) return;
  renewer_.start();
  member_renewer_.start();
  control_ = std::thread([this] { control_loop(); });
  keeper_ = std::thread([this] { keeper_loop(); });
  ChangeFeed* feed =
      sessions() && options_.read_feed ? store_.change_feed(kConnectionsTable) : nullptr;
  if (feed != nullptr) {
    FeedReaderOptions o;
    o.id = options_.id;
    o.lease = options_.lease;
    o.logger = options_.logger;
    o.nudge_self = [this](const std::string& take) { act_on_nudge(take); };
    o.owned_now = [this] { return static_cast<int64_t>(snapshot().size()); };
    feed_reader_ = std::make_unique<FeedReader>(store_, *feed, clock_, random_, o);
    feed_ = std::thread([this] { feed_loop(); });
  }
}

// Reads the change feed while this worker holds its lease, and waits its
// turn while another does (fleet/feed_reader.h).
void Worker::Impl::feed_loop() {
  while (true) {
    const MonoTime next = feed_reader_->step();
    MutexLock lock(mu_);
    while (!stopping_ && clock_.mono_now() < next) control_cv_.wait_until(mu_, clock_, next);
    if (stopping_) return;
  }
}

MonoTime Worker::Impl::poll() {
  assert(options_.manual);
  {
    MutexLock lock(mu_);
    if (stopped_) return MonoTime::max();
  }
  MonoTime next = std::min(member_renewer_.poll(), renewer_.poll());
  MonoTime keeper_at;
  {
    MutexLock lock(mu_);
    keeper_at = keeper_woken_ ? MonoTime::min() : keeper_due();
    keeper_woken_ = false;
  }
  if (clock_.mono_now() >= keeper_at) keeper_work();
  const bool listens = reads_nudges();
  if (listens && clock_.mono_now() >= nudge_read_due()) read_nudges();
  if (clock_.mono_now() >= control_due()) control_step();
  const MonoTime read_due = listens ? nudge_read_due() : MonoTime::max();
  MutexLock lock(mu_);
  return std::min({next, keeper_due(), next_reconcile_, next_attempt_, read_due});
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
  if (feed_.joinable()) feed_.join();
  // It takes nothing more: the others, and the feed's reader, do not count
  // on it for what it now hands over.
  say_not_taking();
  hand_over(snapshot(), "the worker is stopping");
  retry_releases();  // once more, for what could not be given back before
  // The feed's reader (this one or another's) tells the others at once.
  if (feed_reader_) feed_reader_->stop();
  if (!open_->wait_for_none(clock_, clock_.mono_now() + kStopWaitMax)) {
    log_to(options_.logger, LogLevel::kError, "upstream connections still open after {} ms",
           to_ms(kStopWaitMax));
  }
  // Everything handed over with its last checkpoint on its own item: the
  // session's positions are of no more use. Not so if the session was lost
  // (a store outage, a pause) before the stop: its streams went with it
  // unhanded, their items still name it, and its positions are where they
  // got to, which whoever takes them reads. (The leader removes them with
  // the member, and a dead session's sweep once nothing names it.)
  const std::optional<SessionNow> session = current_session();
  if (!positions_session_.empty() && pending_releases_.empty() && session &&
      session->token == positions_session_) {
    const Status removed = remove_positions(store_, positions_session_);
    if (!removed.ok()) {
      log_to(options_.logger, LogLevel::kWarn, "leaving the fleet: {}", removed.message());
    }
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
  // Nothing it held needs attention any more: it handed everything over.
  if (!attention_written_.empty()) {
    (void)store_.remove(kWorkersTable, attention_key(options_.id), Condition());
  }
  renewer_.stop();
  member_renewer_.stop();
  log_to(options_.logger, LogLevel::kInfo, "worker {} stopped", options_.id);
}

// Before a stopping worker hands over: its figures say it takes nothing
// more, in a write of their own (the next heartbeat may not come), so that
// the others' placement and the feed's reader count it out. Figures carried
// for the heartbeat, which would say otherwise, are dropped.
void Worker::Impl::say_not_taking() {
  if (snapshot().empty()) return;
  std::optional<Renewer::Id> member;
  {
    MutexLock lock(mu_);
    member = member_id_;
  }
  if (!member) return;
  member_renewer_.carry(*member, Update());
  const std::optional<Lease> lease = member_renewer_.get(*member);
  if (!lease) return;
  Update update;
  update.set("taking", false)
      .set("updated_at_ms", to_unix_ms(clock_.wall_now()))
      .returning_updated_only();
  const Result<Item> written = member_leases_.fenced_write(*lease, update);
  if (!written.ok()) {
    log_to(options_.logger, LogLevel::kDebug, "saying it takes nothing more: {}",
           written.status().message());
  }
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
  s.connection_renewals = renewer_.stats().renewals;
  s.membership_renewals = member_renewer_.stats().renewals;
  s.sessions_started = sessions_started_;
  s.sessions_ended = sessions_ended_;
  s.releases_retried = releases_retried_;
  s.audit_finds = audit_finds_;
  s.reaper_finds = reaper_finds_;
  s.members_pruned = members_pruned_;
  s.nudges_heard = nudges_acted_;
  if (feed_reader_) {
    const FeedReaderStats feed = feed_reader_->stats();
    s.feed_records = feed.records;
    s.feed_nudges = feed.nudges;
  }
  return s;
}

// A failed write or flush makes the sink failing; only a write that goes
// through makes it well again (a flush may work on a full disk).
void Worker::Impl::note_sink(const Status& result, bool write) {
  if (result.ok()) {
    // Read first: every write passes here, from every I/O thread, and a
    // store to the shared flag each time would bounce its cache line.
    if (write && sink_failing_.load(std::memory_order_relaxed)) sink_failing_ = false;
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

StreamCounts Worker::Impl::stream_counts() const {
  StreamCounts counts;
  const MonoTime now = clock_.mono_now();
  for (const auto& s : snapshot()) {
    MutexLock l(s->mu);
    if (s->state == State::kClosing || s->state == State::kLost) continue;
    if (s->state == State::kStreaming) ++counts.streaming;
    if (s->state == State::kWaiting || (s->state == State::kConnecting && s->failures > 0)) {
      ++counts.reconnecting;
    }
    if (stalled(*s, now)) ++counts.stalled;
    if (!s->last_error.empty()) ++counts.erroring;
  }
  return counts;
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
      case 3:
        value = static_cast<double>(s->written_seq - s->checkpointed_seq);
        break;
      default:
        value = std::chrono::duration<double>(now - std::max(s->acquired_at, s->last_message_mono))
                    .count();
    }
    out.push_back({{s->id}, value});
  }
}

void Worker::Impl::collect_lease_writes(std::vector<metrics::Collected::Sample>& out) const {
  const WorkerStats s = stats();
  out.push_back({{sessions() ? "session_renewal" : "membership_renewal"},
                 static_cast<double>(s.membership_renewals)});
  out.push_back({{"connection_renewal"}, static_cast<double>(s.connection_renewals)});
  out.push_back({{"acquisition"}, static_cast<double>(s.acquired + s.sessions_started)});
  out.push_back({{"release"}, static_cast<double>(s.handovers)});
  out.push_back({{"session_end"}, static_cast<double>(s.sessions_ended)});
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
  LEASEHOLD_RETURN_IF_ERROR(validate_worker_options(options));
  auto impl = std::make_unique<Impl>(store, clock, random, upstream, sink, std::move(options));
  LEASEHOLD_RETURN_IF_ERROR(impl->prepare());
  LEASEHOLD_RETURN_IF_ERROR(impl->join_at_start());
  impl->start_threads();
  return std::unique_ptr<Worker>(new Worker(std::move(impl)));
}

Worker::Worker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Worker::~Worker() = default;
void Worker::stop() { impl_->stop(); }
MonoTime Worker::poll() { return impl_->poll(); }
WorkerStats Worker::stats() const { return impl_->stats(); }
WorkerHealth Worker::health() const { return impl_->health(); }
std::vector<OwnedConnection> Worker::owned() const { return impl_->owned(); }
const std::string& Worker::id() const { return impl_->id(); }

}  // namespace leasehold::fleet
