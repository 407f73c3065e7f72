#include "app/fleet_api.h"

#include <boost/json.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <utility>

#include "base/logging.h"
#include "base/mutex.h"
#include "fleet/connections.h"
#include "fleet/members.h"
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

// The summary is read from the store once a second at most, however many
// pages ask: each open page costs what one does.
constexpr std::chrono::milliseconds kSummaryFreshFor{1000};
// The free connections it names, longest free first.
constexpr size_t kSummaryFreeMax = 20;
// Counts never counted (no worker has led since they were added) are
// counted by the server, at most this often.
constexpr std::chrono::seconds kRecountTryEvery{60};

// The last summary read, shared by the server's threads.
struct SummaryCache {
  Mutex mu;
  MonoTime read_at GUARDED_BY(mu){};
  std::optional<Response> answer GUARDED_BY(mu);
  fleet::FleetSummary summary GUARDED_BY(mu);
  MonoTime recount_tried_at GUARDED_BY(mu){};
  bool recount_tried GUARDED_BY(mu) = false;
};

// What the handlers use; held by value in each route's handler.
struct FleetDeps {
  ItemStore& store;
  Clock& clock;
  Logger& log;
  std::shared_ptr<SummaryCache> summary;
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

json::object fleet_summary_json(const fleet::FleetSummary& s) {
  const int64_t started = std::max<int64_t>(0, s.counts.started);
  json::object connections{{"total", started + std::max<int64_t>(0, s.counts.stopped)},
                           {"started", started},
                           {"stopped", std::max<int64_t>(0, s.counts.stopped)},
                           {"counted_at_ms", s.counts.counted_at_ms},
                           {"owned", s.owned},
                           {"streams_known", s.streams_known}};
  for (auto& [key, value] : stream_counts_json(s.streams)) connections.emplace(key, value);
  connections.emplace("not_streaming", std::max<int64_t>(0, started - s.streams.streaming));
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

// The body of POST /api/fleet/connections: {"id", "url", "seq_field"?,
// "stopped"?} and nothing else. Each message starts with the field it is
// about ("url: ..."), so that a form can show it beside that field.
Result<fleet::NewConnection> parse_new_connection(const json::object& body) {
  LEASEHOLD_RETURN_IF_ERROR(server::check_fields(body, {"id", "url", "seq_field", "stopped"}));
  fleet::NewConnection c;
  LEASEHOLD_RETURN_IF_ERROR(server::read_string_field(body, "id", true, c.id));
  LEASEHOLD_RETURN_IF_ERROR(server::read_string_field(body, "url", true, c.url));
  LEASEHOLD_RETURN_IF_ERROR(server::read_string_field(body, "seq_field", false, c.seq_field));
  if (const json::value* stopped = body.if_contains("stopped")) {
    if (!stopped->is_bool()) return invalid_argument("stopped: expected true or false");
    c.stopped = stopped->as_bool();
  }
  LEASEHOLD_RETURN_IF_ERROR(fleet::validate_connection_id(c.id).with_context("id"));
  LEASEHOLD_RETURN_IF_ERROR(fleet::validate_url_template(c.url).with_context("url"));
  LEASEHOLD_RETURN_IF_ERROR(fleet::validate_seq_field(c.seq_field).with_context("seq_field"));
  return c;
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
  Result<fleet::ConnectionPage> page = connections.list_page(**query);
  if (!page.ok()) return failed_response(page.status(), request, d.log);
  Response r =
      json_response(200, json::object{{"connections", server::json_array(page->items, to_json)},
                                      {"next_after", page->next_after}});
  link_next(r, **query, page->next_after);
  return server::revalidated(std::move(r), request);
}

Response add_connection(Request& request, const FleetDeps& d) {
  json::object body;
  if (auto refused = read_json_object(request, body)) return *refused;
  Result<fleet::NewConnection> wanted = parse_new_connection(body);
  if (!wanted.ok()) return failed_response(wanted.status(), request, d.log);
  Result<fleet::Connection> added = fleet::Connections(d.store, d.clock).add(*wanted);
  if (!added.ok()) return failed_response(added.status(), request, d.log);
  return json_response(201, connection_json(*added, /*full_url=*/true));
}

Response set_desired(const Request& request, fleet::DesiredState state, const FleetDeps& d) {
  Result<fleet::Connection> set =
      fleet::Connections(d.store, d.clock).set_desired(request.params.at("id"), state);
  if (!set.ok()) return failed_response(set.status(), request, d.log);
  return json_response(200, connection_json(*set, request.caller->admin));
}

Response remove_connection(const Request& request, const FleetDeps& d) {
  const std::string& id = request.params.at("id");
  Result<fleet::Connection> removed = fleet::Connections(d.store, d.clock).remove(id);
  if (!removed.ok()) return failed_response(removed.status(), request, d.log);
  return json_response(200, json::object{{"id", id}, {"removed", true}});
}

// The summary, read from the store a second at most (SummaryCache). Counts
// never counted are counted first, by the request that finds them so,
// outside the cache's lock: counting reads every connection (a second or
// more at 100,000), and other requests are answered meanwhile, with the
// counts as they stand. Fills `summary` and `answer`.
Status cached_summary(const FleetDeps& d, fleet::FleetSummary* summary, Response* answer) {
  SummaryCache& cache = *d.summary;
  bool recount = false;
  {
    MutexLock lock(cache.mu);
    const MonoTime now = d.clock.mono_now();
    if (!cache.answer || now - cache.read_at >= kSummaryFreshFor) {
      Result<fleet::FleetSummary> s = fleet::read_summary(d.store, d.clock, kSummaryFreeMax);
      if (!s.ok()) return s.status();
      if (s->counts.counted_at_ms == 0 &&
          (!cache.recount_tried || now - cache.recount_tried_at >= kRecountTryEvery)) {
        cache.recount_tried = true;
        cache.recount_tried_at = now;
        recount = true;
      }
      cache.answer = json_response(200, fleet_summary_json(*s));
      cache.summary = *std::move(s);
      cache.read_at = now;
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
  Result<std::vector<fleet::Connection>> read_items =
      fleet::Connections(d.store, d.clock).get_many(ids);
  if (!read_items.ok()) return failed_response(read_items.status(), request, d.log);
  const bool admin = request.caller->admin;
  Response r = json_response(
      200, json::object{{"connections", server::json_array(*read_items,
                                                           [admin](const fleet::Connection& c) {
                                                             return connection_json(c, admin);
                                                           })},
                        {"next_after", ""}});
  return server::revalidated(std::move(r), request);
}

Response list_workers(const Request& request, const FleetDeps& d) {
  Result<std::vector<fleet::Member>> members =
      fleet::list_members(d.store, d.clock, /*alive_only=*/false);
  if (!members.ok()) return failed_response(members.status(), request, d.log);
  return json_response(200, json::object{{"now_ms", now_ms(d.clock)},
                                         {"workers", server::json_array(*members, member_json)}});
}

}  // namespace

std::string redact_url_query(std::string_view url) {
  const size_t query = url.find('?');
  if (query == std::string_view::npos) return std::string(url);
  return std::string(url.substr(0, query)) + kRedactedQuery;
}

void add_fleet_routes(Router& router, ItemStore& store, Clock& clock, Logger& log) {
  const FleetDeps d{store, clock, log, std::make_shared<SummaryCache>()};
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
}

}  // namespace leasehold::app
