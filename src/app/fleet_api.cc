#include "app/fleet_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <boost/json.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "app/request_parsing.h"
#include "base/logging.h"
#include "base/mutex.h"
#include "fleet/connections.h"
#include "fleet/members.h"
#include "fleet/schema.h"
#include "fleet/summary.h"
#include "server/errors.h"
#include "server/json.h"
#include "server/target.h"

namespace leasehold::app {

using server::Access;
using server::failed_response;
using server::json_response;
using server::kJsonBodyBytesMax;
using server::read_json_object;
using server::Request;
using server::Response;
using server::RouteOptions;
using server::Router;

namespace {

namespace json = boost::json;

constexpr char kConnectionsPath[] = "/api/fleet/connections";
constexpr char kRedactedQuery[] = "?\u2026";  // "?…"

// The free connections the summary names, longest free first.
constexpr size_t kSummaryFreeMax = 20;
// Counts never counted (no worker has led since they were added) are
// counted by the server, at most this often.
constexpr std::chrono::seconds kRecountTryEvery{60};
// Pages of connections kept (each query its own), the least used dropped.
constexpr size_t kPagesKeptMax = 64;

// How long an answer read from the store stands before the store is read
// again: at least `at_least`, and on a store that bills reads long enough
// that reading it again costs no more than `units_per_minute` (what its
// last read cost, in read units, sets the pace). Every open page asking
// then costs what one does, and one costs a bounded amount however large
// the fleet: at 100,000 connections, a page of them is read less often.
struct ReadPacing {
  Duration at_least{};
  double units_per_minute = 0;  // 0: no bound

  Duration fresh_for(double units) const {
    if (units_per_minute <= 0 || units <= 0) return at_least;
    const auto paced = std::chrono::duration_cast<Duration>(
        std::chrono::duration<double, std::ratio<60>>(units / units_per_minute));
    return std::max(at_least, paced);
  }
};

// The summary (and the workers, read with it) at most once a second; on a
// store that bills reads (DynamoDB), at most every 2 s and 20 read units a
// minute. A page of connections, read at each request on a store whose
// reads are local; otherwise at most every 5 s and 24 read units a minute.
// With the accounts' check (10 s, 2 read units), one open Fleet page costs
// at most about 56 read units a minute on DynamoDB, whatever the size of
// the fleet (docs/benchmarks.md).
ReadPacing summary_pacing(const ItemStore& store) {
  if (store.reads_are_local()) return {std::chrono::seconds(1), 0};
  return {std::chrono::seconds(2), 20};
}
ReadPacing page_pacing(const ItemStore& store) {
  if (store.reads_are_local()) return {Duration::zero(), 0};
  return {std::chrono::seconds(5), 24};
}

// The read units the store says it has spent on the fleet's tables (0 for
// one that bills none). Around a read, what other requests spent on them
// meanwhile counts too, which can only make the next read later; the
// accounts' and the movies' reads do not.
double read_units_spent(const ItemStore& store) {
  double units = 0;
  for (const CapacityUse& use : store.consumed_capacity()) {
    if (use.table == fleet::kConnectionsTable || use.table == fleet::kWorkersTable) {
      units += use.read_units;
    }
  }
  return units;
}

// The last summary read, shared by the server's threads.
struct SummaryCache {
  Mutex mu;
  MonoTime read_at GUARDED_BY(mu){};
  Duration fresh_for GUARDED_BY(mu){};
  std::optional<Response> answer GUARDED_BY(mu);
  fleet::FleetSummary summary GUARDED_BY(mu);
  MonoTime recount_tried_at GUARDED_BY(mu){};
  bool recount_tried GUARDED_BY(mu) = false;
};

// The pages of connections last read, by query (`?attention=1` among
// them), while the pacing lets them stand.
struct PageCache {
  struct Entry {
    fleet::ConnectionPage page;
    int64_t read_at_ms = 0;  // wall time of the read
    MonoTime read_at{};
    Duration fresh_for{};
    MonoTime used_at{};
  };
  Mutex mu;
  std::map<std::string, Entry, std::less<>> entries GUARDED_BY(mu);
};

// The connection figures of the last summary read from the store, for the
// metrics (FleetFigures): atomics, so that rendering the metrics never waits
// for a read under way.
struct SummaryFigures {
  std::atomic<bool> read{false};
  std::atomic<int64_t> started{0};
  std::atomic<int64_t> streaming{0};
  std::atomic<int64_t> not_streaming{0};
};

// What the handlers share: the store's pacing and what was read.
struct FleetReads {
  ReadPacing summary_pacing;
  ReadPacing page_pacing;
  SummaryCache summary;
  PageCache pages;
  SummaryFigures figures;
};

// What the handlers use; held by value in each route's handler.
struct FleetDeps {
  ItemStore& store;
  Clock& clock;
  Logger& log;
  std::shared_ptr<FleetReads> reads;
};

int64_t now_ms(Clock& clock) { return to_unix_ms(clock.wall_now()); }

// A connection as the API shows it; never the lease token. The URL's query
// only for admins (`full_url`).
json::object connection_json(const fleet::Connection& c, bool full_url) {
  return {{"id", c.id},
          {"desired_state", fleet::desired_state_name(c.desired_state)},
          {"ws_url", full_url ? c.ws_url : redact_url_query(c.ws_url)},
          {"owner", c.owner},
          {"expires_at_ms", c.expires_at_ms},
          {"last_seq", c.last_seq},
          {"epoch", c.epoch},
          {"last_error", c.last_error},
          {"last_error_at_ms", c.last_error_at_ms},
          {"heartbeat_at_ms", c.heartbeat_at_ms},
          {"messages", c.messages},
          {"reconnects", c.reconnects},
          {"last_message_at_ms", c.last_message_at_ms}};
}

json::object stream_counts_json(const fleet::StreamCounts& s);

json::object member_json(const fleet::Member& m) {
  json::object out{{"id", m.id},
                   {"alive", m.alive},
                   {"owned", m.owned},
                   {"capacity", m.capacity},
                   {"messages", m.messages},
                   {"messages_per_s", m.messages_per_s},
                   {"started_at_ms", m.started_at_ms},
                   {"updated_at_ms", m.updated_at_ms},
                   {"expires_at_ms", m.expires_at_ms},
                   {"heartbeat_at_ms", m.heartbeat_at_ms},
                   {"session_number", m.session_epoch},
                   {"session_ttl_ms", m.session_ttl_ms}};
  if (m.streams) {
    for (auto& [key, value] : stream_counts_json(*m.streams)) out.emplace(key, value);
  }
  return out;
}

json::object stream_counts_json(const fleet::StreamCounts& s) {
  return {{"streaming", s.streaming},
          {"reconnecting", s.reconnecting},
          {"stalled", s.stalled},
          {"erroring", s.erroring}};
}

// What the summary says of a worker: what changes when its load or its
// streams do, not with every heartbeat, so that an answer stays the same
// (and a poll gets 304) while nothing happens.
json::object summary_worker_json(const fleet::Member& m) {
  json::object out{{"id", m.id}, {"alive", m.alive}, {"owned", m.owned}, {"capacity", m.capacity}};
  if (m.streams) {
    for (auto& [key, value] : stream_counts_json(*m.streams)) out.emplace(key, value);
  }
  return out;
}

int64_t started_of(const fleet::FleetSummary& s) { return std::max<int64_t>(0, s.counts.started); }
int64_t not_streaming_of(const fleet::FleetSummary& s) {
  return std::max<int64_t>(0, started_of(s) - s.streams.streaming);
}

json::object fleet_summary_json(const fleet::FleetSummary& s) {
  const int64_t started = started_of(s);
  json::object connections{{"total", started + std::max<int64_t>(0, s.counts.stopped)},
                           {"started", started},
                           {"stopped", std::max<int64_t>(0, s.counts.stopped)},
                           {"counted_at_ms", s.counts.counted_at_ms},
                           {"owned", s.owned},
                           {"streams_known", s.streams_known}};
  for (auto& [key, value] : stream_counts_json(s.streams)) connections.emplace(key, value);
  connections.emplace("not_streaming", not_streaming_of(s));
  json::array free;
  for (const fleet::FreeConnection& f : s.free) {
    free.push_back(json::object{
        {"id", f.id}, {"free_since_ms", f.free_since_ms}, {"last_error", f.last_error}});
  }
  json::array attention;
  for (const fleet::HeldTrouble& t : s.troubled) {
    attention.push_back(json::object{{"id", t.trouble.id},
                                     {"owner", t.owner},
                                     {"reason", t.trouble.reason},
                                     {"since_ms", t.trouble.since_ms}});
  }
  return {{"connections", std::move(connections)},
          {"workers", server::json_array(s.members, summary_worker_json)},
          {"free", std::move(free)},
          {"more_free", s.more_free},
          {"attention", std::move(attention)}};
}

// The parameters of a page of the list; nullopt when the request names
// none of them (the whole list, as before pages).
Result<std::optional<fleet::ListQuery>> list_query(const Request& request) {
  fleet::ListQuery q;
  bool paged = false;
  const auto param = [&](std::string_view name) -> Result<std::optional<std::string>> {
    LEASEHOLD_ASSIGN_OR_RETURN(std::optional<std::string> v,
                               server::query_value(request.query, name));
    paged = paged || v.has_value();
    return v;
  };
  LEASEHOLD_ASSIGN_OR_RETURN(std::optional<std::string> limit, param("limit"));
  LEASEHOLD_ASSIGN_OR_RETURN(std::optional<std::string> after, param("after"));
  LEASEHOLD_ASSIGN_OR_RETURN(std::optional<std::string> state, param("state"));
  LEASEHOLD_ASSIGN_OR_RETURN(std::optional<std::string> owner, param("owner"));
  LEASEHOLD_ASSIGN_OR_RETURN(std::optional<std::string> prefix, param("prefix"));
  if (!paged) return std::optional<fleet::ListQuery>();
  LEASEHOLD_ASSIGN_OR_RETURN(q.limit,
                             server::query_count(limit, "limit", q.limit, fleet::kListPageMax));
  if (after && after->empty()) return invalid_argument("after: empty; leave it out for page one");
  if (state) {
    if (*state == "STARTED") {
      q.state = fleet::DesiredState::kStarted;
    } else if (*state == "STOPPED") {
      q.state = fleet::DesiredState::kStopped;
    } else {
      return invalid_argument("state: expected STARTED or STOPPED");
    }
  }
  q.after = after.value_or("");
  q.owner = owner.value_or("");
  q.prefix = prefix.value_or("");
  LEASEHOLD_RETURN_IF_ERROR(fleet::validate_list_query(q));
  return std::optional<fleet::ListQuery>(std::move(q));
}

// Link: <PATH?...&after=NEXT>; rel="next", with the page's own parameters
// (IDs and states need no escaping).
void link_next(Response& response, const fleet::ListQuery& q, const std::string& next_after) {
  if (next_after.empty()) return;
  std::string target = std::string(kConnectionsPath) + "?limit=" + std::to_string(q.limit);
  if (q.state) target += "&state=" + std::string(fleet::desired_state_name(*q.state));
  if (!q.owner.empty()) target += "&owner=" + q.owner;
  if (!q.prefix.empty()) target += "&prefix=" + q.prefix;
  target += "&after=" + next_after;
  response.set_header("Link", "<" + target + ">; rel=\"next\"");
}

Response list_attention(const Request& request, const FleetDeps& d);
// A page as read from the store, and when (the server's wall time).
struct ReadPage {
  fleet::ConnectionPage page;
  int64_t read_at_ms = 0;
};
template <class Read>
Result<ReadPage> cached_page(const FleetDeps& d, const std::string& key, Read read);
void forget_reads(const FleetDeps& d);

// A page's answer, tagged (a poll that finds it as it was is 304), saying
// when it was read: Leasehold-Read-At-Ms, the server's Unix ms, on the 304
// too, so that rates are counted over the times the store was read.
Response page_answer(Response r, const Request& request, int64_t read_at_ms) {
  r = server::revalidated(std::move(r), request);
  r.set_header("Leasehold-Read-At-Ms", std::to_string(read_at_ms));
  return r;
}

// What names a page in the cache: its query, whole.
std::string page_key(const fleet::ListQuery& q) {
  return fmt::format("page {} {} {} {} {}", q.limit,
                     q.state ? fleet::desired_state_name(*q.state) : "", q.owner, q.prefix,
                     q.after);
}

// The whole list with the server's time, or a page of it without: a page
// is tagged, so that a poll that finds nothing changed is 304, and a
// browser that revalidates for the page hands it the body it kept, whose
// time would be past.
Response list_connections(const Request& request, const FleetDeps& d) {
  Result<std::optional<std::string>> attention = server::query_value(request.query, "attention");
  if (!attention.ok()) return failed_response(attention.status(), request, d.log);
  if (*attention) {
    if (**attention != "1") {
      return failed_response(invalid_argument("attention: expected 1"), request, d.log);
    }
    return list_attention(request, d);
  }
  Result<std::optional<fleet::ListQuery>> query = list_query(request);
  if (!query.ok()) return failed_response(query.status(), request, d.log);
  fleet::Connections connections(d.store, d.clock);
  const bool admin = request.caller->admin;
  const auto to_json = [admin](const fleet::Connection& c) { return connection_json(c, admin); };
  if (!*query) {
    Result<std::vector<fleet::Connection>> listed = connections.list();
    if (!listed.ok()) return failed_response(listed.status(), request, d.log);
    return json_response(200, json::object{{"now_ms", now_ms(d.clock)},
                                           {"connections", server::json_array(*listed, to_json)}});
  }
  Result<ReadPage> read = cached_page(
      d, page_key(**query), [&connections, &query] { return connections.list_page(**query); });
  if (!read.ok()) return failed_response(read.status(), request, d.log);
  const fleet::ConnectionPage& page = read->page;
  Response r =
      json_response(200, json::object{{"connections", server::json_array(page.items, to_json)},
                                      {"next_after", page.next_after}});
  link_next(r, **query, page.next_after);
  return page_answer(std::move(r), request, read->read_at_ms);
}

Response add_connection(Request& request, const FleetDeps& d) {
  json::object body;
  if (auto refused = read_json_object(request, body)) return *refused;
  Result<fleet::NewConnection> wanted = parse_new_connection(body);
  if (!wanted.ok()) return failed_response(wanted.status(), request, d.log);
  Result<fleet::Connection> added = fleet::Connections(d.store, d.clock).add(*wanted);
  forget_reads(d);
  if (!added.ok()) return failed_response(added.status(), request, d.log);
  return json_response(201, connection_json(*added, /*full_url=*/true));
}

Response set_desired(const Request& request, fleet::DesiredState state, const FleetDeps& d) {
  Result<fleet::Connection> set =
      fleet::Connections(d.store, d.clock).set_desired(request.params.at("id"), state);
  forget_reads(d);
  if (!set.ok()) return failed_response(set.status(), request, d.log);
  return json_response(200, connection_json(*set, request.caller->admin));
}

Response remove_connection(const Request& request, const FleetDeps& d) {
  const std::string& id = request.params.at("id");
  Result<fleet::Connection> removed = fleet::Connections(d.store, d.clock).remove(id);
  forget_reads(d);
  if (!removed.ok()) return failed_response(removed.status(), request, d.log);
  return json_response(200, json::object{{"id", id}, {"removed", true}});
}

// The summary, read from the store as its pacing allows (SummaryCache).
// Counts never counted are counted first, by the request that finds them
// so, outside the cache's lock: counting reads every connection (a second
// or more at 100,000), and other requests are answered meanwhile, with the
// counts as they stand. Fills `summary` and `answer`.
Status cached_summary(const FleetDeps& d, fleet::FleetSummary* summary, Response* answer) {
  SummaryCache& cache = d.reads->summary;
  bool recount = false;
  {
    MutexLock lock(cache.mu);
    const MonoTime now = d.clock.mono_now();
    if (!cache.answer || now - cache.read_at >= cache.fresh_for) {
      const double units_before = read_units_spent(d.store);
      Result<fleet::FleetSummary> s = fleet::read_summary(d.store, d.clock, kSummaryFreeMax);
      if (!s.ok()) return s.status();
      if (s->counts.counted_at_ms == 0 &&
          (!cache.recount_tried || now - cache.recount_tried_at >= kRecountTryEvery)) {
        cache.recount_tried = true;
        cache.recount_tried_at = now;
        recount = true;
      }
      cache.answer = json_response(200, fleet_summary_json(*s));
      SummaryFigures& figures = d.reads->figures;
      figures.started = started_of(*s);
      figures.streaming = s->streams.streaming;
      figures.not_streaming = not_streaming_of(*s);
      figures.read = true;
      cache.summary = *std::move(s);
      cache.read_at = now;
      cache.fresh_for = d.reads->summary_pacing.fresh_for(read_units_spent(d.store) - units_before);
    }
    if (!recount) {
      if (summary != nullptr) *summary = cache.summary;
      if (answer != nullptr) *answer = *cache.answer;
      return {};
    }
  }
  const Status counted = fleet::recount_connections(d.store, d.clock);
  if (!counted.ok()) {
    log_to(&d.log, LogLevel::kWarn, "counting the connections: {}", counted.message());
  }
  {
    MutexLock lock(cache.mu);
    cache.answer.reset();  // read again, with the counts
  }
  return cached_summary(d, summary, answer);
}

// The page `key` names, as `read` reads it, kept while the pacing lets it
// stand (PageCache). The cache's lock is held while it reads, so that
// pages polled at once read the store once.
template <class Read>
Result<ReadPage> cached_page(const FleetDeps& d, const std::string& key, Read read) {
  if (d.reads->page_pacing.at_least <= Duration::zero() &&
      d.reads->page_pacing.units_per_minute <= 0) {
    const int64_t read_at_ms = now_ms(d.clock);
    LEASEHOLD_ASSIGN_OR_RETURN(fleet::ConnectionPage page, read());
    return ReadPage{std::move(page), read_at_ms};
  }
  PageCache& cache = d.reads->pages;
  MutexLock lock(cache.mu);
  const MonoTime now = d.clock.mono_now();
  if (const auto it = cache.entries.find(key);
      it != cache.entries.end() && now - it->second.read_at < it->second.fresh_for) {
    it->second.used_at = now;
    return ReadPage{it->second.page, it->second.read_at_ms};
  }
  const int64_t read_at_ms = now_ms(d.clock);
  const double units_before = read_units_spent(d.store);
  Result<fleet::ConnectionPage> page = read();
  if (!page.ok()) return page.status();
  if (cache.entries.size() >= kPagesKeptMax && !cache.entries.contains(key)) {
    cache.entries.erase(std::ranges::min_element(
        cache.entries, {}, [](const auto& entry) { return entry.second.used_at; }));
  }
  cache.entries.insert_or_assign(
      key, PageCache::Entry{
               *page, read_at_ms, now,
               d.reads->page_pacing.fresh_for(read_units_spent(d.store) - units_before), now});
  return ReadPage{*std::move(page), read_at_ms};
}

// After a change made here: the next poll reads what it changed.
void forget_reads(const FleetDeps& d) {
  {
    MutexLock lock(d.reads->summary.mu);
    d.reads->summary.answer.reset();
  }
  MutexLock lock(d.reads->pages.mu);
  d.reads->pages.entries.clear();
}

Response fleet_summary(const Request& request, const FleetDeps& d) {
  Response answer;
  const Status read = cached_summary(d, nullptr, &answer);
  if (!read.ok()) return failed_response(read, request, d.log);
  return server::revalidated(std::move(answer), request);
}

// ?attention=1: the connections the summary says need attention (those no
// live worker holds, then those the workers name), longest first, each
// read from its item: one page, bounded by what the summary names.
Response list_attention(const Request& request, const FleetDeps& d) {
  fleet::FleetSummary s;
  const Status read = cached_summary(d, &s, nullptr);
  if (!read.ok()) return failed_response(read, request, d.log);
  std::vector<std::string> ids;
  for (const fleet::FreeConnection& f : s.free) ids.push_back(f.id);
  for (const fleet::HeldTrouble& t : s.troubled) ids.push_back(t.trouble.id);
  std::string key = "attention";
  for (const std::string& id : ids) key += " " + id;
  Result<ReadPage> read_page = cached_page(d, key, [&]() -> Result<fleet::ConnectionPage> {
    LEASEHOLD_ASSIGN_OR_RETURN(std::vector<fleet::Connection> read_items,
                               fleet::Connections(d.store, d.clock).get_many(ids));
    return fleet::ConnectionPage{std::move(read_items), ""};
  });
  if (!read_page.ok()) return failed_response(read_page.status(), request, d.log);
  const bool admin = request.caller->admin;
  Response r = json_response(
      200, json::object{{"connections", server::json_array(read_page->page.items,
                                                           [admin](const fleet::Connection& c) {
                                                             return connection_json(c, admin);
                                                           })},
                        {"next_after", ""}});
  return page_answer(std::move(r), request, read_page->read_at_ms);
}

// The workers (every member, live or not), with the server's time: read
// at each request where reads are local, else as the summary read them
// (the same members), so that polling them costs nothing more.
Response list_workers(const Request& request, const FleetDeps& d) {
  std::vector<fleet::Member> members;
  if (d.store.reads_are_local()) {
    Result<std::vector<fleet::Member>> listed =
        fleet::list_members(d.store, d.clock, /*alive_only=*/false);
    if (!listed.ok()) return failed_response(listed.status(), request, d.log);
    members = *std::move(listed);
  } else {
    fleet::FleetSummary s;
    const Status read = cached_summary(d, &s, nullptr);
    if (!read.ok()) return failed_response(read, request, d.log);
    members = std::move(s.members);
  }
  return json_response(200, json::object{{"now_ms", now_ms(d.clock)},
                                         {"workers", server::json_array(members, member_json)}});
}

}  // namespace

std::string redact_url_query(std::string_view url) {
  const size_t query = url.find('?');
  if (query == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, query)) + kRedactedQuery;
}

namespace {

// The summary's figures as gauges, read from the last summary read.
void add_figures(metrics::Registry& registry, const std::shared_ptr<FleetReads>& reads) {
  const auto gauge = [&](const char* name, const char* help,
                         std::atomic<int64_t> SummaryFigures::*v) {
    registry.collected(/*counter=*/false, name, help, {})
        .add([reads, v](std::vector<metrics::Collected::Sample>& out) {
          if (reads->figures.read)
            out.push_back({{}, static_cast<double>((reads->figures.*v).load())});
        });
  };
  gauge(kStartedGauge, "Connections whose desired state is STARTED (the fleet summary's)",
        &SummaryFigures::started);
  gauge(kStreamingGauge, "Connections the live workers stream (the fleet summary's)",
        &SummaryFigures::streaming);
  gauge(kNotStreamingGauge,
        "STARTED connections not streaming: no live worker holds them, or it is not connected "
        "(the fleet summary's)",
        &SummaryFigures::not_streaming);
}

}  // namespace

FleetFigures add_fleet_routes(Router& router, ItemStore& store, Clock& clock, Logger& log,
                              metrics::Registry* metrics) {
  auto reads = std::make_shared<FleetReads>();
  reads->summary_pacing = summary_pacing(store);
  reads->page_pacing = page_pacing(store);
  if (metrics != nullptr) add_figures(*metrics, reads);
  const FleetDeps d{store, clock, log, std::move(reads)};
  const RouteOptions user{.access = Access::kUser};
  const RouteOptions admin{.access = Access::kAdmin};
  const RouteOptions admin_json{.access = Access::kAdmin, .body_bytes_max = kJsonBodyBytesMax};
  const std::string connection = std::string(kConnectionsPath) + "/{id}";
  router.add(
      "GET", kConnectionsPath, [d](Request& r) { return list_connections(r, d); }, user);
  router.add(
      "POST", kConnectionsPath, [d](Request& r) { return add_connection(r, d); }, admin_json);
  router.add(
      "POST", connection + "/start",
      [d](Request& r) { return set_desired(r, fleet::DesiredState::kStarted, d); }, admin);
  router.add(
      "POST", connection + "/stop",
      [d](Request& r) { return set_desired(r, fleet::DesiredState::kStopped, d); }, admin);
  router.add(
      "DELETE", connection, [d](Request& r) { return remove_connection(r, d); }, admin);
  router.add(
      "GET", "/api/fleet/workers", [d](Request& r) { return list_workers(r, d); }, user);
  router.add(
      "GET", "/api/fleet/summary", [d](Request& r) { return fleet_summary(r, d); }, user);
  return [d] { return cached_summary(d, nullptr, nullptr); };
}

}  // namespace leasehold::app
