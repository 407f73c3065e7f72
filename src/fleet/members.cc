// Membership items and the list of workers.
#include "fleet/members.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace leasehold::fleet {
namespace {

constexpr std::string_view kWorkerPrefix = "WORKER#";
constexpr char kLegacyPreviousSessionAttr[] = "previous_session";

// The tokens of a space-separated list, as written by join_sessions().
std::vector<std::string> split_sessions(std::string_view text) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < text.size()) {
    const size_t end = std::min(text.find(' ', at), text.size());
    if (end > at) out.emplace_back(text.substr(at, end - at));
    at = end + 1;
  }
  return out;
}

// Appends `token` to `out` unless it is empty, there already, or the list is
// full.
void add_session(std::vector<std::string>& out, std::string token) {
  if (token.empty() || out.size() >= kPreviousSessionsMax) return;
  if (std::find(out.begin(), out.end(), token) != out.end()) return;
  out.push_back(std::move(token));
}

// The earlier sessions an item names, newest first.
std::vector<std::string> previous_sessions_of(const Item& item) {
  std::vector<std::string> out;
  for (std::string& t : split_sessions(get_string_or(item, kPreviousSessionsAttr))) {
    add_session(out, std::move(t));
  }
  add_session(out, get_string_or(item, kLegacyPreviousSessionAttr));
  return out;
}

}  // namespace

std::string join_sessions(const std::vector<std::string>& tokens) {
  std::string out;
  for (const std::string& t : tokens) {
    if (!out.empty()) out += ' ';
    out += t;
  }
  return out;
}

std::vector<std::string> sessions_named(const Item& item, std::string_view id) {
  std::vector<std::string> out;
  if (get_string_or(item, "lease_owner") == id)
    add_session(out, get_string_or(item, "lease_token"));
  for (std::string& t : previous_sessions_of(item)) add_session(out, std::move(t));
  return out;
}

Status prune_member(ItemStore& store, const Member& member, int64_t now_ms,
                    int64_t idle_before_ms) {
  if (member.expires_at_ms >= now_ms || member.heartbeat_at_ms >= idle_before_ms) {
    return failed_precondition("worker " + member.id + " was renewed too recently to be removed");
  }
  // The lease read: its owner and token, not live, and renewed no later
  // than when it was read.
  const Condition unchanged = cond::eq("lease_owner", member.id) &&
                              cond::eq("lease_token", member.session) &&
                              cond::lt("lease_expires_at_ms", now_ms) &&
                              cond::le("lease_heartbeat_at_ms", member.heartbeat_at_ms);
  const Status removed = store.remove(kWorkersTable, worker_key(member.id), unchanged);
  if (removed.ok() || removed.code() == Code::kNotFound) return {};
  if (removed.code() == Code::kConditionFailed) {
    return failed_precondition("worker " + member.id + " changed since it was read");
  }
  return removed.with_context("removing worker " + member.id);
}

Status nudge_member(ItemStore& store, std::string_view id, std::string_view take) {
  Update update;
  update.add(kNudgesAttr, 1).returning_updated_only();
  if (!take.empty()) update.set(kTakeHintAttr, std::string(take));
  const Result<Item> written =
      store.update(kWorkersTable, worker_key(id), update, cond::exists("Pk"));
  if (written.ok() || written.status().code() == Code::kConditionFailed) return {};
  return written.status().with_context("nudging worker " + std::string(id));
}

TableSpec workers_table_spec() {
  return TableSpec{
      kWorkersTable, "Pk", "", {IndexSpec{kWorkersIndex, "kind", "Pk", AttrType::kString}}};
}

Key worker_key(std::string_view id) {
  return Key{std::string(kWorkerPrefix) + std::string(id), ""};
}

Update member_figures(int64_t owned, int64_t capacity, int64_t messages, double messages_per_s,
                      int64_t now_ms, bool taking) {
  Update u;
  u.set("owned", owned)
      .set("capacity", capacity)
      .set("messages", messages)
      .set("messages_per_s", static_cast<int64_t>(std::llround(messages_per_s * 1000)))
      .set("updated_at_ms", now_ms)
      .set("taking", taking);
  return u;
}

Key attention_key(std::string_view id) {
  return Key{std::string(kAttentionPrefix) + std::string(id), ""};
}

std::string format_troubles(const std::vector<Trouble>& troubles) {
  std::string out;
  for (const Trouble& t : troubles) {
    out += t.id + " " + t.reason + " " + std::to_string(t.since_ms) + "\n";
  }
  return out;
}

std::vector<Trouble> parse_troubles(std::string_view text) {
  std::vector<Trouble> out;
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    const std::string_view line = text.substr(0, end);
    text.remove_prefix(std::min(end + 1, text.size()));
    const size_t a = line.find(' ');
    const size_t b = a == std::string_view::npos ? a : line.find(' ', a + 1);
    if (b == std::string_view::npos) continue;
    Trouble t{std::string(line.substr(0, a)), std::string(line.substr(a + 1, b - a - 1)), 0};
    const std::string_view since = line.substr(b + 1);
    const auto [stop, ec] = std::from_chars(since.data(), since.data() + since.size(), t.since_ms);
    if (ec != std::errc() || stop != since.data() + since.size() || t.id.empty()) continue;
    out.push_back(std::move(t));
  }
  return out;
}

Update stream_figures(const StreamCounts& counts) {
  Update u;
  u.set("streaming", counts.streaming)
      .set("reconnecting", counts.reconnecting)
      .set("stalled", counts.stalled)
      .set("erroring", counts.erroring);
  return u;
}

Result<std::vector<Member>> list_members(ItemStore& store, Clock& clock, bool alive_only) {
  const int64_t now_ms = to_unix_ms(clock.wall_now());
  std::vector<Member> members;
  QueryOptions options;
  options.limit = kQueryLimitMax;
  do {
    Result<Page> page =
        store.query_index(kWorkersTable, kWorkersIndex, kWorkerKind, KeyRange::all(), options);
    if (!page.ok()) return page.status().with_context("listing workers");
    for (const Item& item : page->items) {
      const std::string* pk = get_string(item, "Pk");
      if (pk == nullptr || !pk->starts_with(kWorkerPrefix)) continue;
      Member m;
      m.id = pk->substr(kWorkerPrefix.size());
      m.expires_at_ms = get_int_or(item, "lease_expires_at_ms");
      m.alive = m.expires_at_ms > now_ms;
      if (alive_only && !m.alive) continue;
      m.owned = get_int_or(item, "owned");
      m.capacity = get_int_or(item, "capacity");
      m.messages = get_int_or(item, "messages");
      m.messages_per_s = static_cast<double>(get_int_or(item, "messages_per_s")) / 1000;
      if (item.contains("streaming")) {
        m.streams = StreamCounts{get_int_or(item, "streaming"), get_int_or(item, "reconnecting"),
                                 get_int_or(item, "stalled"), get_int_or(item, "erroring")};
      }
      m.started_at_ms = get_int_or(item, "started_at_ms");
      m.updated_at_ms = get_int_or(item, "updated_at_ms");
      m.session_epoch = get_int_or(item, "lease_epoch");
      m.session_ttl_ms = get_int_or(item, "session_ttl_ms");
      m.heartbeat_at_ms = get_int_or(item, "lease_heartbeat_at_ms");
      m.nudges = get_int_or(item, kNudgesAttr);
      m.session = get_string_or(item, "lease_token");
      m.previous_sessions = previous_sessions_of(item);
      const auto taking = item.find("taking");
      m.taking = taking == item.end() || !std::holds_alternative<bool>(taking->second) ||
                 std::get<bool>(taking->second);
      members.push_back(std::move(m));
    }
    options.cursor = page->next_cursor;
  } while (!options.cursor.empty());
  std::sort(members.begin(), members.end(),
            [](const Member& a, const Member& b) { return a.id < b.id; });
  return members;
}

}  // namespace leasehold::fleet
