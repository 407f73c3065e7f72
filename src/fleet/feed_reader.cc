// The stream reader of the fleet: see feed_reader.h.
#include "fleet/feed_reader.h"

#include <algorithm>
#include <cassert>
#include <set>
#include <sstream>

#include "base/logging.h"
#include "fleet/balance.h"
#include "fleet/connections.h"
#include "fleet/members.h"
#include "fleet/placement.h"
#include "fleet/schema.h"

namespace leasehold::fleet {
namespace {

constexpr char kNoneYet[] = "-";
constexpr char kEnded[] = "END";
constexpr int kReadMax = 1000;

Key feed_key() { return Key{kFeedLeasePk, ""}; }

LeaseConfig feed_lease_config(LeaseConfig config) {
  config.table = kWorkersTable;
  return config;
}

// A connection whose lease is held: its holder streams it.
bool held(const Connection& c) { return !c.owner.empty() && c.expires_at_ms != 0; }

bool free_and_started(const Connection& c) {
  return c.desired_state == DesiredState::kStarted && !held(c);
}

std::optional<Connection> connection_in(const std::optional<Item>& image) {
  if (!image) return std::nullopt;
  Result<Connection> c = parse_connection(*image);
  if (!c.ok()) return std::nullopt;
  return std::move(*c);
}

}  // namespace

FeedReader::FeedReader(ItemStore& store, ChangeFeed& feed, Clock& clock, Random& random,
                       FeedReaderOptions options)
    : store_(store),
      feed_(feed),
      clock_(clock),
      options_(std::move(options)),
      leases_(store, clock, random, feed_lease_config(options_.lease)) {}

FeedReaderStats FeedReader::stats() const {
  return {stats_.records.load(), stats_.nudges.load(), stats_.checkpoints.load(),
          stats_.takeovers.load(), stats_.repositions.load()};
}

bool FeedReader::reading() const { return lease_ && lease_->valid_at(clock_.mono_now()); }

MonoTime FeedReader::step() {
  const MonoTime now = clock_.mono_now();
  if (!hold_lease(now)) return std::min(next_standby_, now + options_.read_every);
  if (now >= next_list_) list_shards(now);
  read_all();
  return std::min(renew_at_, clock_.mono_now() + options_.read_every);
}

// One read of each shard that is due, then the checkpoints. The members'
// figures are read afresh for it (once, if a free connection needs them).
void FeedReader::read_all() {
  loads_.reset();
  for (auto& [id, shard] : shards_) {
    if (!reading()) break;  // never past the lease's local deadline
    if (readable(shard) && !read_shard(id, shard)) break;
  }
  if (dirty_) checkpoint();
}

void FeedReader::stop() {
  if (!reading()) return;
  // Its own worker takes nothing more, whatever the figures read say (the
  // index they are read from may not show yet that it said so).
  stopping_ = true;
  loads_.reset();
  read_all();
  if (lease_) {
    const Status released = leases_.release(*lease_, ReleaseMode::kExpire);
    if (!released.ok()) {
      log_to(options_.logger, LogLevel::kInfo, "releasing the feed's lease: {}",
             released.message());
    }
    lease_.reset();
  }
}

// Keeps the lease (renewed every third of its ttl), or, every standby
// period, looks whether it is free and takes it.
bool FeedReader::hold_lease(MonoTime now) {
  if (lease_ && !lease_->valid_at(now)) {
    lose_lease(deadline_exceeded("the feed's lease passed its local deadline"));
  }
  if (lease_) {
    if (now < renew_at_) return true;
    Result<Lease> renewed = leases_.renew(*lease_);
    if (renewed.ok()) {
      lease_ = std::move(*renewed);
      renew_at_ = now + options_.lease_ttl / 3;
      return true;
    }
    if (renewed.status().code() == Code::kFailedPrecondition) {
      lose_lease(renewed.status());
      return false;
    }
    renew_at_ = now + options_.read_every;  // the store failed: again soon
    return lease_->valid_at(clock_.mono_now());
  }
  if (now < next_standby_) return false;
  next_standby_ = now + options_.standby_every;
  // A read first (half a unit): a refused acquisition would cost a write.
  Result<Item> item = store_.get(kWorkersTable, feed_key(), /*consistent=*/false);
  if (item.ok() && leases_.view_of(*item, feed_key(), kDefaultSlot).held) return false;
  if (!item.ok() && item.status().code() != Code::kNotFound) return false;
  AcquireOptions o;
  o.owner = options_.id;
  o.holder = options_.id;
  o.ttl = options_.lease_ttl;
  Result<Lease> taken = leases_.acquire(feed_key(), o);
  if (!taken.ok()) return false;
  lease_ = std::move(*taken);
  renew_at_ = now + options_.lease_ttl / 3;
  ++stats_.takeovers;
  if (!take_over()) return false;
  return reading();
}

// The checkpoints as the last reader left them. Without them it does not
// read: it would start from the newest records and skip what came after
// them. The lease goes back, for this reader or another to try again.
bool FeedReader::take_over() {
  shards_.clear();
  next_list_ = MonoTime{};
  dirty_ = false;
  Result<Item> item = store_.get(kWorkersTable, feed_key(), /*consistent=*/true);
  if (!item.ok()) {
    log_to(options_.logger, LogLevel::kWarn, "reading the change feed's checkpoints: {}",
           item.status().message());
    (void)leases_.release(*lease_, ReleaseMode::kExpire);
    lease_.reset();
    return false;
  }
  const std::string text = get_string_or(*item, kFeedShardsAttr);
  std::istringstream lines(text);
  std::string id, sequence;
  while (lines >> id >> sequence) shards_[id].sequence = sequence;
  first_ever_ = !item->contains(kFeedShardsAttr);
  log_to(options_.logger, LogLevel::kInfo, "reading the connections' change feed ({} shards known)",
         shards_.size());
  return true;
}

// Brings the shards up to date with the feed's list: new ones are read from
// their oldest record (the first reader ever: open ones from the newest),
// and those the feed no longer holds are forgotten.
void FeedReader::list_shards(MonoTime now) {
  Result<std::vector<FeedShard>> listed = feed_.shards();
  if (!listed.ok()) {
    log_to(options_.logger, LogLevel::kWarn, "listing the change feed's shards: {}",
           listed.status().message());
    next_list_ = now + options_.read_every * 4;
    return;
  }
  next_list_ = now + options_.list_every;
  const bool first_ever = first_ever_;
  std::map<std::string, Shard> now_listed;
  for (const FeedShard& s : *listed) {
    auto known = shards_.find(s.id);
    Shard shard = known != shards_.end() ? std::move(known->second) : Shard{};
    shard.parent = s.parent_id;
    if (known == shards_.end()) {
      shard.sequence = first_ever && s.closed ? kEnded : first_ever ? kNoneYet : "";
      dirty_ = true;
    }
    now_listed.emplace(s.id, std::move(shard));
  }
  if (now_listed.size() != shards_.size()) dirty_ = true;
  shards_ = std::move(now_listed);
}

// Not read to its end, and its parent is (or is gone from the feed).
bool FeedReader::readable(const Shard& shard) const {
  if (shard.sequence == kEnded) return false;
  if (shard.parent.empty()) return true;
  const auto parent = shards_.find(shard.parent);
  return parent == shards_.end() || parent->second.sequence == kEnded;
}

// One read of `shard`; false if the lease was lost meanwhile.
bool FeedReader::read_shard(const std::string& id, Shard& shard) {
  if (shard.position.empty()) {
    // "" (never read): from its oldest record; "-": from the newest on.
    const FeedStart start = shard.sequence.empty()       ? FeedStart::kOldest
                            : shard.sequence == kNoneYet ? FeedStart::kLatest
                                                         : FeedStart::kAfter;
    Result<std::string> position = feed_.position(id, start, shard.sequence);
    if (!position.ok() && position.status().code() == Code::kNotFound &&
        start == FeedStart::kAfter) {
      position = feed_.position(id, FeedStart::kOldest);  // that record was trimmed
    }
    if (!position.ok()) {
      if (position.status().code() == Code::kNotFound) {  // the shard is gone
        shard.sequence = kEnded;
        dirty_ = true;
        return true;
      }
      log_to(options_.logger, LogLevel::kWarn, "reading shard {} of the change feed: {}", id,
             position.status().message());
      return true;
    }
    shard.position = std::move(*position);
  }
  Result<FeedPage> page = feed_.read(shard.position, kReadMax);
  if (!page.ok()) {
    shard.position.clear();  // taken again, after the last record acted on
    if (page.status().code() == Code::kFailedPrecondition) {
      ++stats_.repositions;
    } else if (page.status().code() == Code::kNotFound) {
      shard.sequence.clear();  // trimmed: on from the oldest it holds
      dirty_ = true;
    } else {
      log_to(options_.logger, LogLevel::kWarn, "reading shard {} of the change feed: {}", id,
             page.status().message());
    }
    return true;
  }
  // Acted on only within the lease: a reader that lost it leaves the records
  // to its successor, which reads them from its checkpoint.
  if (!reading()) return false;
  act_on(page->records);
  if (!page->records.empty()) {
    shard.sequence = page->records.back().sequence;
    dirty_ = true;
  }
  shard.position = std::move(page->next);
  if (shard.position.empty()) {
    shard.sequence = kEnded;
    dirty_ = true;
  }
  return true;
}

void FeedReader::act_on(const std::vector<FeedRecord>& records) {
  std::set<std::string> holders;  // nudged once however many records name them
  for (const FeedRecord& r : records) {
    ++stats_.records;
    const std::optional<Connection> now = connection_in(r.new_image);
    if (!now) continue;  // deleted, or not a connection
    const std::optional<Connection> before = connection_in(r.old_image);
    if (held(*now)) {
      const bool changed = !before || before->desired_state != now->desired_state ||
                           before->ws_url != now->ws_url || before->seq_field != now->seq_field;
      if (changed && before && held(*before) && before->owner == now->owner) {
        holders.insert(now->owner);
      }
    } else if (free_and_started(*now) && !(before && free_and_started(*before))) {
      nudge_taker(now->id);
    }
  }
  for (const std::string& holder : holders) nudge(holder);
}

void FeedReader::nudge(const std::string& member, const std::string& take) {
  if (member == options_.id && options_.nudge_self) {
    options_.nudge_self(take);
    ++stats_.nudges;
  } else if (nudge_member(store_, member, take).ok()) {
    ++stats_.nudges;
  }
}

// The member that should take a connection that has just become free: of
// those below their share, the reader's own worker (told at once, where
// another hears at its next heartbeat), or else the first by rendezvous
// rank, as placement ranks them; else, of those with room, the first. The
// own worker is counted as it is (owned_now); the others' figures lag (a
// member that has just handed over still counts what it held), and the
// members may read them otherwise than this reader did, each waiting for
// one ranked first: so the first by rank of those with room is nudged too.
void FeedReader::nudge_taker(const std::string& connection) {
  if (!loads_) {
    Result<std::vector<Member>> members = list_members(store_, clock_, /*alive_only=*/true);
    if (!members.ok()) return;  // the poll finds it
    loads_.emplace();
    for (const Member& m : *members) {
      const bool own = m.id == options_.id;
      if (!m.taking || (stopping_ && own)) continue;
      const int64_t owned = own && options_.owned_now ? options_.owned_now() : m.owned;
      loads_->push_back({m.id, owned, m.capacity > 0 ? m.capacity : 1000});
    }
  }
  if (loads_->empty()) return;
  int64_t total = 1;
  std::vector<int64_t> capacities;
  for (const Load& l : *loads_) {
    total += l.owned;
    capacities.push_back(l.capacity);
  }
  Load* best = nullptr;
  Load* first = nullptr;  // by rank alone
  bool best_below_share = false;
  uint64_t best_rank = 0, first_weight = 0;
  for (size_t i = 0; i < loads_->size(); ++i) {
    Load& l = (*loads_)[i];
    if (l.owned >= l.capacity) continue;
    const bool below_share = l.owned < fair_share(total, capacities, i);
    const uint64_t weight = rendezvous_weight(l.id, connection);
    // Below its share, the reader's own worker ranks above every other.
    const bool own = below_share && l.id == options_.id && options_.nudge_self;
    const uint64_t rank = own ? UINT64_MAX : weight;
    if (best == nullptr || (below_share && !best_below_share) ||
        (below_share == best_below_share && rank > best_rank)) {
      best = &l;
      best_below_share = below_share;
      best_rank = rank;
    }
    if (first == nullptr || weight > first_weight) {
      first = &l;
      first_weight = weight;
    }
  }
  if (best == nullptr) return;
  ++best->owned;  // as it will be: the next free one may go to another
  nudge(best->id, connection);
  // Its own worker, counted as it is, has no figures of its own to go by.
  const bool first_counted_as_it_is = first->id == options_.id && options_.owned_now;
  if (first != best && !first_counted_as_it_is) nudge(first->id, connection);
}

void FeedReader::checkpoint() {
  if (!lease_) return;
  std::string text;
  for (const auto& [id, shard] : shards_) {
    if (shard.sequence.empty()) continue;  // nothing acted on yet: from its oldest again
    text += id + " " + shard.sequence + "\n";
  }
  Update update;
  update.set(kFeedShardsAttr, text).returning_updated_only();
  Result<Item> written = leases_.fenced_write(*lease_, update);
  if (written.ok()) {
    dirty_ = false;
    first_ever_ = false;
    ++stats_.checkpoints;
  } else if (written.status().code() == Code::kFailedPrecondition) {
    lose_lease(written.status());
  } else {
    log_to(options_.logger, LogLevel::kWarn, "writing the change feed's checkpoints: {}",
           written.status().message());
  }
}

void FeedReader::lose_lease(const Status& why) {
  log_to(options_.logger, LogLevel::kInfo, "stopped reading the connections' change feed: {}",
         why.message());
  lease_.reset();
  shards_.clear();
  dirty_ = false;
}

}  // namespace leasehold::fleet
