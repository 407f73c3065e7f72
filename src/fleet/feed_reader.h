// FeedReader: reads the connections table's change feed (DynamoDB Streams)
// for the fleet, and tells the worker that must act on a change at once,
// where it would otherwise see it at its next reconcile or poll:
//
//   - a connection held by a worker whose desired state, URL or sequence
//     field changed (conn stop, rm, set, or another tool's write): a nudge
//     to its holder;
//   - a STARTED connection that has just become free (conn add, conn start,
//     a release: a worker that stops hands its connections over): a nudge
//     to the member that should take it, the first by rendezvous rank of
//     those below their share (fleet/placement.h), as the members' figures
//     say.
//
// A nudge raises `nudges` on the member's item (fleet/members.h), which the
// member reads back with its session's next heartbeat; the reader's own
// worker is told in-process instead (FeedReaderOptions::nudge_self), at
// once, and is the taker of a free connection whenever it is below its
// share, so that what the reader sees is acted on without waiting for a
// heartbeat where it can be. Polling stays the
// safety net: a record missed (a reader that died before its checkpoint
// covered it, say) is still seen at the next reconcile or poll.
//
// One reader at a time in the fleet: the worker holding the feed's lease,
// an item of fleet_workers (`FEED#connections`, with no `kind`, so not a
// member). So no shard has more than one reader but in the moments a lease
// changes hands (AWS allows two). The same item holds the reader's
// checkpoints, written under the lease's token:
//
//   feed_shards   a line per shard: "<shard id> <sequence>", where the
//                 sequence is the last record acted on, "-" for none yet
//                 (read from the newest on), or "END" once read to its end
//
// Shards are read parents first: a child only once its parent is read to
// its end (or is no longer in the feed), so that a key's records are acted
// on in order. A reader that takes the lease over reads each shard on from
// its checkpoint: what its predecessor acted on after it is acted on again
// (a nudge too many), and nothing is lost. The first reader ever starts at
// the newest records: what was written before it is the poll's to find.
// A position that expired is taken again after the last record acted on;
// records trimmed before they were read are skipped (the poll's again).
//
// One thread calls step() and stop(); stats() may be called from any.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "leasehold/clock.h"
#include "leasehold/lease.h"
#include "leasehold/logger.h"
#include "leasehold/random.h"
#include "leasehold/store.h"

namespace leasehold::fleet {

inline constexpr char kFeedLeasePk[] = "FEED#connections";
inline constexpr char kFeedShardsAttr[] = "feed_shards";

struct FeedReaderOptions {
  std::string id;  // the worker's: the feed lease's owner
  // The feed lease: renewed every third of it; a successor takes over
  // this long after a reader died.
  Duration lease_ttl = std::chrono::seconds(10);
  // How often each shard is read. AWS allows five reads a second per shard,
  // shared by its readers.
  Duration read_every = std::chrono::milliseconds(250);
  // How often the feed's shards are listed (DescribeStream: AWS allows ten
  // a second per account), and how often a reader without the lease looks
  // whether it has expired.
  Duration list_every = std::chrono::seconds(30);
  Duration standby_every = std::chrono::seconds(2);
  LeaseConfig lease;  // clock skew and margin; the table is set by the reader
  Logger* logger = nullptr;
  // Tells the reader's own worker what a nudge would (`take`: the free
  // connection it should take, or empty), without a write. Null: it is
  // nudged through the store like any other member.
  std::function<void(const std::string& take)> nudge_self;
  // How many connections its own worker owns now: counted for it in place
  // of its figures, which lag (those of the others are all there is). Null:
  // its figures.
  std::function<int64_t()> owned_now;
};

struct FeedReaderStats {
  uint64_t records = 0;      // acted on
  uint64_t nudges = 0;       // sent
  uint64_t checkpoints = 0;  // written
  uint64_t takeovers = 0;    // times this reader took the feed's lease
  uint64_t repositions = 0;  // positions taken again after they expired
};

class FeedReader {
 public:
  // REQUIRES: store, feed, clock and random outlive the reader.
  FeedReader(ItemStore& store, ChangeFeed& feed, Clock& clock, Random& random,
             FeedReaderOptions options);

  // Takes or keeps the feed's lease, reads each shard that is due, acts on
  // what it read and writes the checkpoints; returns when it is next due.
  MonoTime step();
  // One last read (what this worker's own stop wrote is acted on), then
  // the lease is released, for another reader to take at once.
  void stop();

  bool reading() const;  // holds the feed's lease
  FeedReaderStats stats() const;

 private:
  // A member that takes connections, as its figures say.
  struct Load {
    std::string id;
    int64_t owned = 0;
    int64_t capacity = 0;
  };
  struct Shard {
    std::string parent;
    std::string sequence;  // the last record acted on; "-": none; "END": read to its end
    std::string position;  // where to read on; empty: none taken yet
  };

  bool hold_lease(MonoTime now);
  bool take_over();
  void list_shards(MonoTime now);
  void read_all();
  bool readable(const Shard& shard) const;
  bool read_shard(const std::string& id, Shard& shard);
  void act_on(const std::vector<FeedRecord>& records);
  void nudge_taker(const std::string& connection);
  void nudge(const std::string& member, const std::string& take = {});
  void checkpoint();
  void lose_lease(const Status& why);

  ItemStore& store_;
  ChangeFeed& feed_;
  Clock& clock_;
  const FeedReaderOptions options_;
  LeaseManager leases_;
  std::optional<Lease> lease_;
  MonoTime renew_at_{};
  MonoTime next_standby_{};
  MonoTime next_list_{};
  std::map<std::string, Shard> shards_;
  bool dirty_ = false;       // checkpoints not yet written
  bool first_ever_ = false;  // no reader has written checkpoints yet
  bool stopping_ = false;    // in stop(): its own worker takes nothing more
  // The members' figures, read when a free connection is to be placed
  // (once per step), and what was placed with them since.
  std::optional<std::vector<Load>> loads_;
  struct Counters {
    std::atomic<uint64_t> records{0}, nudges{0}, checkpoints{0}, takeovers{0}, repositions{0};
  } stats_;
};

}  // namespace leasehold::fleet
