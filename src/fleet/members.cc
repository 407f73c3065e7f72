// Membership items and the list of workers.
#include "fleet/members.h"

#include <algorithm>
#include <cmath>

namespace leasehold::fleet {
namespace {

constexpr std::string_view kWorkerPrefix = "WORKER#";

}  // namespace

TableSpec workers_table_spec() {
  return TableSpec{kWorkersTable,
                   "Pk",
                   "",
                   {IndexSpec{kWorkersIndex, "kind", "lease_expires_at_ms", AttrType::kInt}}};
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

Result<std::vector<Member>> list_members(ItemStore& store, Clock& clock, bool alive_only) {
  const int64_t now_ms = to_unix_ms(clock.wall_now());
  const KeyRange range = alive_only ? KeyRange::gt(now_ms) : KeyRange::all();
  std::vector<Member> members;
  QueryOptions options;
  options.limit = kQueryLimitMax;
  do {
    Result<Page> page =
        store.query_index(kWorkersTable, kWorkersIndex, kWorkerKind, range, options);
    if (!page.ok()) return page.status().with_context("listing workers");
    for (const Item& item : page->items) {
      const std::string* pk = get_string(item, "Pk");
      if (pk == nullptr || !pk->starts_with(kWorkerPrefix)) continue;
      Member m;
      m.id = pk->substr(kWorkerPrefix.size());
      m.expires_at_ms = get_int_or(item, "lease_expires_at_ms");
      m.alive = m.expires_at_ms > now_ms;
      m.owned = get_int_or(item, "owned");
      m.capacity = get_int_or(item, "capacity");
      m.messages = get_int_or(item, "messages");
      m.messages_per_s = static_cast<double>(get_int_or(item, "messages_per_s")) / 1000;
      m.started_at_ms = get_int_or(item, "started_at_ms");
      m.updated_at_ms = get_int_or(item, "updated_at_ms");
      m.session_epoch = get_int_or(item, "lease_epoch");
      m.session_ttl_ms = get_int_or(item, "session_ttl_ms");
      m.heartbeat_at_ms = get_int_or(item, "lease_heartbeat_at_ms");
      m.session = get_string_or(item, "lease_token");
      m.previous_session = get_string_or(item, "previous_session");
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
