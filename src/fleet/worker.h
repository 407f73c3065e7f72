// Worker: one process's share of the stream fleet. It owns upstream
// WebSocket connections through leases on their items (table connections,
// fleet/schema.h), streams each to the sink, and checkpoints what the sink
// holds, so that whichever worker owns a connection next resumes where the
// last one stopped.
//
// Threads: the WebSocket client's I/O threads deliver messages; a control
// thread reconciles (every reconcile_every, with jitter): it reads the
// desired state of what it owns in one batch, takes orphans up to its fair
// share, hands over what is above it, and writes its membership figures; a
// keeper thread checkpoints (every checkpoint_every) and reconnects; two
// Renewers heartbeat the connections' leases in batches and the membership
// lease. No thread per connection.
//
// The rules that keep one writer per connection:
//   - before every sink write the lease is checked valid at the local
//     monotonic time, so a worker paused past its ttl writes nothing more
//     for a connection it lost; a write carries the lines of one batch of
//     one connection's messages (net/websocket.h), checked once the lines
//     are made, however long the messages waited;
//   - a loss (the Renewer's report, a foreign owner seen in the desired-state
//     read) closes the stream at once, and nothing more is written for it;
//   - a checkpoint is a fenced write (owner and token) of last_seq, made
//     after the sink is flushed, and never moves last_seq back;
//   - a handover (desired state STOPPED, removal, balance, stop()) closes the
//     stream, flushes, and releases the lease with the final checkpoint in
//     the same write (lease_expires_at_ms = 0, so the orphan index shows it
//     at once): the next owner starts exactly after the last message written.
//
// Sessions (session_ttl > 0): the membership lease is the worker's session,
// short and renewed often, and every connection lease it takes belongs to
// it (include/leasehold/lease.h, Sessions): a connection is trusted only
// while both its own lease and the session are valid, so its own lease may
// be long and renewed rarely, and lease-keeping writes are O(workers), not
// O(connections). A worker whose session expires (its own renewals failing
// past its local deadline, or a pause) loses every stream at once and
// starts a new session. A worker that finds another's session expired by
// its wall clock ends it in the store, then finds its connections through
// the index lease_session-lease_epoch-index and takes them as orphans whose
// owner died, each conditioned on the dead session's owner and token: a
// crashed worker's connections move about a session ttl after its last
// heartbeat, whatever their own ttl. Workers without sessions, and the
// reference pattern's own code, share the table safely: they wait for the
// connections' own expiry.
//
// Liveness (docs/fleet.md, Liveness): every lease this worker may hold and
// does not stream is released, taken back or left to a dead session's
// sweep within a reconcile period: releases that fail are retried,
// acquisitions that got no answer are looked for by their token, a session
// lost mid-acquisition loses that stream too, and a member names every
// earlier session of its ID that may still hold connections. Dead sessions
// are swept, less and less often, until nobody names them; their stopped
// connections are released on the dead holder's behalf. Backstops: the
// audit of this worker's own session, and the leader's reaper of sessions
// no member names. Dead members' items are removed after a while.
//
// Takeover after a crash: a lease that will expire before the next reconcile
// is tried at its expiry plus the clock-skew bound, so that failover costs
// about the ttl, not the ttl and a reconcile period. Which worker tries which
// orphan first, and when the others follow, is placement's (fleet/
// placement.h): one worker per orphan at first, not all of them at once.
//
// Thread-safe. stop() (also the destructor) hands every connection over.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fleet/members.h"
#include "fleet/sink.h"
#include "leasehold/clock.h"
#include "leasehold/lease.h"
#include "leasehold/logger.h"
#include "leasehold/random.h"
#include "leasehold/status.h"
#include "leasehold/store.h"

namespace leasehold::net {
class WsClient;
}
namespace leasehold::metrics {
class Registry;
}

namespace leasehold::fleet {

inline constexpr size_t kMaxConnectionsDefault = 1000;
inline constexpr size_t kMaxConnectionsLimit = 100'000;
inline constexpr size_t kWorkerIdBytesMax = 128;
// Reconnecting to an upstream that failed: the first wait, doubled on each
// failure up to the cap, each drawn between half and all of it.
inline constexpr std::chrono::milliseconds kReconnectBackoffMin{200};
inline constexpr std::chrono::milliseconds kReconnectBackoffMax{10'000};

// Bad upstream messages are logged at most this often per connection.
inline constexpr std::chrono::milliseconds kBadMessageLogEvery{10'000};

// With a session, connection leases are renewed rarely, so checkpoints have
// a period of their own.
inline constexpr std::chrono::milliseconds kSessionCheckpointEvery{5'000};

// With a session on a store whose reads cost (DynamoDB), how often a worker
// reads its connections' desired state when nothing nudged it
// (WorkerOptions::poll_every): `conn stop`, `set` and `rm` nudge the holder
// (fleet/members.h), which then reads it in its next reconcile; a writer
// that does not (another tool's) is seen within this.
inline constexpr std::chrono::milliseconds kPollEveryDefault{10'000};
// After a nudge, the desired state is read each reconcile for this long: the
// index it is read from may show the change a little after the nudge.
inline constexpr std::chrono::milliseconds kNudgeFollow{5'000};

// The backstops of liveness (WorkerOptions::audit_every, reap_every).
inline constexpr std::chrono::milliseconds kAuditEveryDefault{60'000};
inline constexpr std::chrono::milliseconds kReapEveryDefault{60'000};

struct WorkerOptions {
  std::string id;  // unique in the fleet: 1..128 bytes of [A-Za-z0-9._~-]
  size_t max_connections = kMaxConnectionsDefault;
  Duration lease_ttl = std::chrono::seconds(20);
  Duration renew_every = std::chrono::seconds(5);
  Duration reconcile_every = std::chrono::seconds(2);
  // Zero: renew_every, or kSessionCheckpointEvery with a session.
  Duration checkpoint_every{};
  // How often to read the desired state of the connections it owns when no
  // nudge came. Zero: every reconcile without a session or on a store whose
  // reads are local (SQLite), kPollEveryDefault otherwise.
  Duration poll_every{};
  // The worker's session (see the file comment): its ttl, zero for none,
  // and its renew period, zero for a third of its validity window.
  Duration session_ttl{};
  Duration session_renew_every{};
  // With a session on a store whose reads cost (DynamoDB), how often the
  // worker reads its own member item for a nudge between heartbeats, which
  // read it back anyway: a nudge is heard within this rather than within a
  // heartbeat period. Zero: 0.6 heartbeat periods, so that one read falls
  // between two heartbeats (the renewer spaces them 0.9 to 1.2 periods
  // apart); at or above the heartbeat period: only with heartbeats.
  Duration nudge_read_every{};
  // A connection without a message for this long counts as stalled (its
  // figures, health()); zero: never.
  Duration stall_after = std::chrono::seconds(60);
  // A connection not streaming for this long is named in the worker's
  // attention item (fleet/members.h), for the fleet summary.
  Duration attention_after = kAttentionAfter;
  // An upstream connection that stays open this long starts the reconnect
  // backoff (and clears the connection's last_error) afresh; one that ends
  // sooner is one more failure, so that a peer that accepts and closes at
  // once is retried ever more slowly rather than every 200 ms, and costs no
  // store write each time.
  Duration upstream_stable_after = std::chrono::seconds(10);
  // The clock-skew bound and safety margin; table and info_log are set here.
  LeaseConfig lease;
  Logger* logger = nullptr;  // not owned; null logs nothing
  // Where the worker's metrics go (not owned); null: a registry of its own.
  metrics::Registry* metrics = nullptr;
  // With a session, the backstops of liveness (docs/fleet.md, Liveness):
  // how often this worker checks its session's leases in the store against
  // the streams it runs (the audit), and how often the fleet's leader reads
  // every STARTED connection for leases of sessions no member names (the
  // reaper). Zero: kAuditEveryDefault, kReapEveryDefault.
  Duration audit_every{};
  Duration reap_every{};
  // With a session, on a store that keeps a change feed of the connections
  // table (DynamoDB Streams): whether this worker takes its turn reading it
  // (fleet/feed_reader.h), so that the fleet acts on a change within about
  // a second rather than at the next reconcile or poll.
  bool read_feed = true;
  // For the deterministic simulation: start() starts no thread, and poll()
  // does what the threads would have done by now. The Renewers are polled
  // too, so nothing runs but on the caller's thread.
  bool manual = false;
  // Tests only: called on the control thread at named points
  // ("acquire:before_insert"), so that a test can put a race there.
  std::function<void(std::string_view point)> sync_point;
};

// Checks the options on their own (id, limits, timing): kInvalidArgument.
Status validate_worker_options(const WorkerOptions& options);

struct WorkerStats {
  uint64_t owned = 0;
  uint64_t messages = 0;         // lines written to the sink
  uint64_t bad_messages = 0;     // not JSON, no sequence number, binary, going back
  uint64_t repeats_dropped = 0;  // a sequence number already written
  uint64_t acquired = 0;         // leases taken
  uint64_t takeovers = 0;        // of those, from an owner that did not hand over
  uint64_t handovers = 0;        // leases released with a final checkpoint
  uint64_t losses = 0;           // leases lost
  uint64_t checkpoints = 0;      // checkpoint writes that applied
  uint64_t reconnects = 0;       // upstream connections that ended and were retried
  uint64_t conflicts = 0;        // acquisitions of orphans that another worker won
  // Lease-keeping writes the store accepted: renewals of connection leases,
  // and of the membership lease (the session, with sessions).
  uint64_t connection_renewals = 0;
  uint64_t membership_renewals = 0;
  uint64_t sessions_started = 0;  // membership leases taken (1 unless lost)
  uint64_t sessions_ended = 0;    // other workers' expired sessions this one ended
  // Liveness (docs/fleet.md): releases that failed and were tried again
  // until they went through; leases of its own session the audit found it
  // did not stream; leases of sessions of no member the reaper found; dead
  // members' items removed.
  uint64_t releases_retried = 0;
  uint64_t audit_finds = 0;
  uint64_t reaper_finds = 0;
  uint64_t members_pruned = 0;
  // Nudges this worker heard: on its member item (with a heartbeat or a
  // read between heartbeats) or from its own feed reader.
  uint64_t nudges_heard = 0;
  // The change feed (fleet/feed_reader.h), while this worker read it:
  // records acted on, and the nudges they gave.
  uint64_t feed_records = 0;
  uint64_t feed_nudges = 0;
};

// Whether the worker does its job, for /healthz: it reaches the store, its
// sink takes writes, and its streams make progress.
struct WorkerHealth {
  bool ok = true;
  std::vector<std::string> problems;  // each in words; empty when ok
  int64_t store_silent_ms = 0;        // since the control loop last read the store
  uint64_t owned = 0;
  uint64_t streaming = 0;  // upstream connections open
  uint64_t stalled = 0;    // without a message for stall_after
};

// One owned connection, for tests and diagnostics.
struct OwnedConnection {
  std::string id;
  int64_t epoch = 0;
  int64_t written_seq = 0;       // the last sequence number in the sink
  int64_t checkpointed_seq = 0;  // last_seq as last written to the store
  bool streaming = false;        // the upstream connection is open
  uint64_t messages = 0;         // written since this worker took it
  uint64_t reconnects = 0;       // since this worker took it
};

class Worker {
 public:
  // Requires the connections and workers tables (ItemStore::require_table),
  // joins the fleet (kAlreadyExists
  // if a live worker has the same id) and starts the threads.
  // REQUIRES: everything given outlives the worker.
  static Result<std::unique_ptr<Worker>> start(ItemStore& store, Clock& clock, Random& random,
                                               net::WsClient& upstream, Sink& sink,
                                               WorkerOptions options);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Stops reading, flushes the sink, releases every lease with its final
  // checkpoint, leaves the fleet. Idempotent; returns once done.
  void stop();

  // With WorkerOptions::manual: renews and reports losses, checkpoints and
  // reconnects, and reconciles, whatever is due by the clock; returns when
  // something is next due. REQUIRES: manual, and one thread at a time.
  MonoTime poll();

  WorkerStats stats() const;
  WorkerHealth health() const;
  std::vector<OwnedConnection> owned() const;
  const std::string& id() const;

 private:
  class Impl;
  explicit Worker(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace leasehold::fleet
