// A worker of the reference pattern's own code, which knows nothing of
// tokens or epochs, for the mixed-fleet tests. It shares the connections
// table with leasehold workers and does exactly what that code does:
//
//   acquire  condition attribute_not_exists(lease_owner) OR
//            lease_expires_at_ms < :now; sets lease_owner and
//            lease_expires_at_ms only
//   renew    condition lease_owner = :w; sets lease_expires_at_ms
//   release  condition lease_owner = :w; sets lease_expires_at_ms = 0
//   checkpoint last_seq, condition lease_owner = :w
//
// It streams what it owns into a JSONL sink in the fleet's line format, with
// epoch 0 (it has none). Like that code it trusts a lease until its own
// renewal fails, which is why leasehold names the owner in every condition.
//
// Usage: foreign_worker STORE_URI ID SINK_PATH [TTL_MS]
// Runs until SIGTERM, then releases what it owns and exits 0.
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "fleet/connections.h"
#include "fleet/message.h"
#include "fleet/schema.h"
#include "fleet/sink.h"
#include "leasehold/store.h"
#include "net/websocket.h"

namespace leasehold::fleet {
namespace {

std::atomic<bool> stopping{false};

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Owned {
  std::mutex mu;
  int64_t written = 0;
  std::vector<std::string> path;
  std::shared_ptr<net::WsStream> ws;
};

class Foreign {
 public:
  Foreign(ItemStore& store, net::WsClient& client, Sink& sink, std::string id, int64_t ttl_ms)
      : store_(store), client_(client), sink_(sink), id_(std::move(id)), ttl_ms_(ttl_ms) {}

  void run() {
    while (!stopping) {
      take_orphans();
      heartbeat_and_checkpoint();
      for (int i = 0; i < 10 && !stopping; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // its own tick, as written
      }
    }
    release_all();
  }

 private:
  void take_orphans() {
    const int64_t now = now_ms();
    QueryOptions q;
    q.limit = 100;
    auto page =
        store_.query_index(kConnectionsTable, kOrphanIndex, "STARTED", KeyRange::lt(now), q);
    if (!page.ok()) return;
    for (const Item& item : page->items) {
      auto c = parse_connection(item);
      if (!c.ok()) continue;
      {
        std::lock_guard lock(mu_);
        if (owned_.contains(c->id) || owned_.size() >= 3) continue;
      }
      const Condition takeable =
          cond::not_exists("lease_owner") || cond::lt("lease_expires_at_ms", now);
      auto taken = store_.update(
          kConnectionsTable, connection_key(c->id),
          Update().set("lease_owner", id_).set("lease_expires_at_ms", now + ttl_ms_), takeable);
      if (!taken.ok()) continue;
      auto fresh = parse_connection(*taken);
      if (!fresh.ok()) continue;
      start_stream(*fresh);
    }
  }

  void start_stream(const Connection& c) {
    auto owned = std::make_shared<Owned>();
    owned->written = c.last_seq;
    owned->path = split_seq_field(c.seq_field);
    net::WsHandlers h;
    const std::string conn = c.id;
    h.on_message = [this, owned, conn](std::string_view message, bool) {
      auto seq = find_seq(message, owned->path);
      std::lock_guard lock(owned->mu);
      if (!seq.ok() || *seq <= owned->written) return;
      std::string line;
      append_sink_line({conn, *seq, id_, 0, now_ms(), message}, line);
      line += '\n';
      size_t written_bytes = 0;
      if (sink_.write_lines(line, &written_bytes).ok()) owned->written = *seq;
    };
    h.on_closed = [](const Status&) {};
    auto ws = client_.connect(expand_url(c.ws_url, c.last_seq), std::move(h));
    if (!ws.ok()) return;
    owned->ws = *ws;
    std::lock_guard lock(mu_);
    owned_[c.id] = owned;
  }

  void heartbeat_and_checkpoint() {
    std::map<std::string, std::shared_ptr<Owned>> owned;
    {
      std::lock_guard lock(mu_);
      owned = owned_;
    }
    (void)sink_.flush();
    for (auto& [id, o] : owned) {
      int64_t written = 0;
      {
        std::lock_guard lock(o->mu);
        written = o->written;
      }
      auto renewed = store_.update(
          kConnectionsTable, connection_key(id),
          Update().set("lease_expires_at_ms", now_ms() + ttl_ms_).set("last_seq", written),
          cond::eq("lease_owner", id_));
      if (!renewed.ok()) {  // lost: stop streaming it
        o->ws->close();
        std::lock_guard lock(mu_);
        owned_.erase(id);
      }
    }
  }

  void release_all() {
    std::lock_guard lock(mu_);
    (void)sink_.flush();
    for (auto& [id, o] : owned_) {
      o->ws->close();
      std::lock_guard l(o->mu);
      (void)store_.update(
          kConnectionsTable, connection_key(id),
          Update().set("lease_expires_at_ms", int64_t{0}).set("last_seq", o->written),
          cond::eq("lease_owner", id_));
    }
    owned_.clear();
  }

  ItemStore& store_;
  net::WsClient& client_;
  Sink& sink_;
  const std::string id_;
  const int64_t ttl_ms_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Owned>> owned_;
};

}  // namespace
}  // namespace leasehold::fleet

int main(int argc, char** argv) {
  using namespace leasehold;
  if (argc < 4) {
    std::fprintf(stderr, "usage: foreign_worker STORE_URI ID SINK_PATH [TTL_MS]\n");
    return 2;
  }
  signal(SIGTERM, [](int) { fleet::stopping = true; });
  auto store = open_store(argv[1]);
  auto sink = fleet::open_sink(std::string("jsonl:") + argv[3]);
  auto client = net::WsClient::open({});
  if (!store.ok() || !sink.ok() || !client.ok()) {
    std::fprintf(stderr, "foreign_worker: cannot start\n");
    return 1;
  }
  const int64_t ttl_ms = argc > 4 ? std::stoll(argv[4]) : 4000;
  fleet::Foreign worker(**store, **client, **sink, argv[2], ttl_ms);
  std::fprintf(stderr, "foreign worker %s started\n", argv[2]);
  worker.run();
  return 0;
}
